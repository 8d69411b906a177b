"""``check --dataset STATS``'s rule (``data``): a job's cut-off, packing and step count against the data's stats
(``trainfit data``). Split out of :mod:`trainfit.check.rules`, which runs it with the others."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from trainfit.check.facts import JobFacts
from trainfit.rules.types import INFO, WARNING, Violation

if TYPE_CHECKING:
    from trainfit.check.rules import CheckOptions

#: ``check --dataset``: a cut-off that truncates more than this share of the samples is a warning (the planner's
#: default cut-off, the p99 length, truncates at most 1 %).
DATA_TRUNCATED_WARN = 0.01
#: Without packing, padding above this share of the processed tokens is a warning.
DATA_PADDING_WARN = 0.20


def _truncated_range(st: Any, cut: int) -> tuple[float, float]:
    """(low, high) share of samples longer than ``cut``: exact where the stats have figures at that cut-off, else
    bounded by the neighbouring cut-offs in the stats (a longer cut-off truncates fewer samples)."""
    have = {st.seq_len: st.truncated_share, **{c["seq_len"]: c["truncated_share"] for c in st.cutoffs}}
    if cut in have:
        return have[cut], have[cut]
    if cut >= st.max_len:
        return 0.0, 0.0
    below = [k for k in have if k < cut]
    above = [k for k in have if k > cut]
    hi = have[max(below)] if below else 1.0
    lo = have[min(above)] if above else 0.0
    return lo, hi


def rule_data(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """``check --dataset STATS``: the job's cut-off, packing and step count against the data's stats (``trainfit
    data``): the share of samples the cut-off truncates, the padding a job without packing processes, and how many
    epochs of the data ``max_steps`` x global batch covers."""
    st = o.dataset
    if st is None:
        return []
    from trainfit.check.readback import read_epochs, read_max_steps, read_settings
    from trainfit.errors import DatasetError

    wl = read_settings(f, o)
    if wl is None:
        return [Violation(rule="data", severity=INFO,
                          message="--dataset: the file's training settings could not be read, so they were not "
                                  "compared with the data",
                          fix="pass the launch script or config (swift_sft.sh, llamafactory.yaml, launch.sh)")]
    out: list[Violation] = []
    cut = wl.seq_len
    lo, hi = _truncated_range(st, cut)
    share = f"{lo:.1%}" if lo == hi else f"{lo:.1%}-{hi:.1%}"
    if lo > DATA_TRUNCATED_WARN:
        p99 = st.percentiles.get("p99")
        out.append(Violation(
            rule="data", severity=WARNING,
            message=f"cut-off {cut:,} (max_length / cutoff_len) truncates {share} of the samples of "
                    f"{', '.join(st.files)[:200]} (p99 {p99:,} tokens, longest {st.max_len:,}); the truncated tails "
                    "are not trained",
            fix="raise the cut-off (`trainfit plan --dataset` picks the p99 by default), or drop the long samples"))
    else:
        f.notes.append(f"data: cut-off {cut:,} truncates {share} of the samples")
    if not wl.packing:
        keys = sorted(int(k) for k in st.padding_waste if str(k).isdecimal())
        mb = max((k for k in keys if k <= wl.micro_batch), default=None)
        waste = st.padding_waste.get(str(mb)) if mb is not None else None
        if waste is not None and waste > DATA_PADDING_WARN:
            at = "" if mb == wl.micro_batch else f" (at least: the stats' figure for micro-batch {mb})"
            out.append(Violation(
                rule="data", severity=WARNING,
                message=f"packing off at micro-batch {wl.micro_batch}: {waste:.0%} of the tokens the GPUs process are "
                        f"padding{at}, padding each micro-batch to its longest sample (stats at cut-off "
                        f"{st.seq_len:,})",
                fix="turn packing on (ms-swift --packing true, LLaMA-Factory packing: true), or micro-batch 1 with "
                    "more gradient accumulation"))
    try:
        rows = st.at(cut)["packed_sequences"] if wl.packing else st.samples_per_epoch()
    except DatasetError:
        rows = None  # packed rows at this cut-off are not in the stats
    steps = read_max_steps(f)
    gb = wl.global_batch
    if rows and steps:
        per_epoch = max(1, math.ceil(rows / gb))
        epochs = steps * gb / rows
        what = f"{rows:,} {'packed rows of ' + format(cut, ',') + ' tokens' if wl.packing else 'samples'}"
        whole = max(1, round(epochs))
        if steps == math.ceil(whole * rows / gb):  # whole epochs, the last step a partial batch
            epochs = float(whole)
        if epochs < 0.99:
            out.append(Violation(
                rule="data", severity=WARNING,
                message=f"max_steps {steps:,} x global batch {gb} = {steps * gb:,} rows: {epochs:.2f} of one epoch of "
                        f"the data ({what}, {per_epoch:,} steps per epoch); the job stops before it has seen all of it",
                fix=f"set max_steps {per_epoch:,} per epoch (x epochs), or `trainfit plan --dataset` and re-render"))
        elif abs(epochs - round(epochs)) > 0.05:
            out.append(Violation(
                rule="data", severity=INFO,
                message=f"max_steps {steps:,} x global batch {gb} covers {epochs:.2f} epochs of the data ({what}, "
                        f"{per_epoch:,} steps per epoch): the last epoch is partial",
                fix=f"set max_steps to a multiple of {per_epoch:,}, or keep it if a partial epoch is meant"))
        else:
            f.notes.append(f"data: max_steps {steps:,} = {epochs:.2f} epoch(s) of {what} at global batch {gb}")
    elif rows and read_epochs(f):
        n = read_epochs(f)
        f.notes.append(f"data: {n:g} epoch(s) = {math.ceil(rows / gb) * n:,.0f} optimizer steps at global batch {gb}")
    return out


__all__ = ["DATA_PADDING_WARN", "DATA_TRUNCATED_WARN", "rule_data"]
