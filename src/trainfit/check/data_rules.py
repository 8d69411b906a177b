"""``check --dataset STATS``'s rule (``data``): a job's cut-off, packing and step count against the data's stats
(``trainfit data``). Split out of :mod:`trainfit.check.rules`, which runs it with the others."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from trainfit.check.facts import JobFacts
from trainfit.i18n import _
from trainfit.rules.types import INFO, WARNING, Violation
from trainfit.errors import DatasetError

if TYPE_CHECKING:
    from trainfit.check.rules import CheckOptions
    from trainfit.dataset.stats import DatasetStats
    from trainfit.workload import Workload

#: ``check --dataset``: a cut-off that truncates more than this share of the samples is a warning (the planner's
#: default cut-off, the p99 length, truncates at most 1 %).
DATA_TRUNCATED_WARN = 0.01
#: Without packing, padding above this share of the processed tokens is a warning.
DATA_PADDING_WARN = 0.20


def _truncated_range(st: DatasetStats, cut: int) -> tuple[float, float]:
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


def _padding_findings(st: DatasetStats, wl: Workload) -> list[Violation]:
    """A job without packing: the stats' padding share at the job's micro-batch (or the nearest smaller one)."""
    keys = sorted(int(k) for k in st.padding_waste if str(k).isdecimal())
    mb = max((k for k in keys if k <= wl.micro_batch), default=None)
    waste = st.padding_waste.get(str(mb)) if mb is not None else None
    if waste is None or waste <= DATA_PADDING_WARN:
        return []
    if mb == wl.micro_batch:
        msg = _("packing off at micro-batch {mb}: {waste:.0%} of the tokens the GPUs process are padding, "
                "padding each micro-batch to its longest sample (stats at cut-off {cut:,})")
    else:
        msg = _("packing off at micro-batch {mb}: {waste:.0%} of the tokens the GPUs process are padding (at "
                "least: the stats' figure for micro-batch {stats_mb}), padding each micro-batch to its longest "
                "sample (stats at cut-off {cut:,})")
    return [Violation(rule="data", severity=WARNING,
                      message=msg.format(mb=wl.micro_batch, waste=waste, stats_mb=mb, cut=st.seq_len),
                      fix=_("turn packing on (ms-swift --packing true, LLaMA-Factory packing: true), or micro-batch 1 "
                            "with more gradient accumulation"))]


def rule_data(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """``check --dataset STATS``: the job's cut-off, packing and step count against the data's stats (``trainfit
    data``): the share of samples the cut-off truncates, the padding a job without packing processes, and how many
    epochs of the data ``max_steps`` x global batch covers."""
    st = o.dataset
    if st is None:
        return []
    from trainfit.check.readback import read_epochs, read_max_steps, read_settings

    wl = read_settings(f, o)
    if wl is None:
        return [Violation(rule="data", severity=INFO,
                          message=_("--dataset: the file's training settings could not be read, so they were not "
                                    "compared with the data"),
                          fix=_("pass the launch script or config (swift_sft.sh, llamafactory.yaml, launch.sh)"))]
    out: list[Violation] = []
    cut = wl.seq_len
    lo, hi = _truncated_range(st, cut)
    share = f"{lo:.1%}" if lo == hi else f"{lo:.1%}-{hi:.1%}"
    if lo > DATA_TRUNCATED_WARN:
        p99 = st.percentiles.get("p99")
        out.append(Violation(
            rule="data", severity=WARNING,
            message=_("cut-off {cut:,} (max_length / cutoff_len) truncates {share} of the samples of {files} (p99 "
                      "{p99:,} tokens, longest {longest:,}); the truncated tails are not trained").format(
                cut=cut, share=share, files=", ".join(st.files)[:200], p99=p99, longest=st.max_len),
            fix=_("raise the cut-off (`trainfit plan --dataset` picks the p99 by default), or drop the long samples")))
    else:
        f.notes.append(_("data: cut-off {cut:,} truncates {share} of the samples").format(cut=cut, share=share))
    if not wl.packing:
        out += _padding_findings(st, wl)
    try:
        rows = st.at(cut)["packed_sequences"] if wl.packing else st.samples_per_epoch()
    except DatasetError:
        rows = None  # packed rows at this cut-off are not in the stats
    steps = read_max_steps(f)
    gb = wl.global_batch
    if rows and steps:
        per_epoch = max(1, math.ceil(rows / gb))
        epochs = steps * gb / rows
        what = (_("{rows:,} packed rows of {cut:,} tokens") if wl.packing else _("{rows:,} samples")).format(
            rows=rows, cut=cut)
        whole = max(1, round(epochs))
        if steps == math.ceil(whole * rows / gb):  # whole epochs, the last step a partial batch
            epochs = float(whole)
        if epochs < 0.99:
            out.append(Violation(
                rule="data", severity=WARNING,
                message=_("max_steps {steps:,} x global batch {gb} = {total:,} rows: {epochs:.2f} of one epoch of the "
                          "data ({what}, {per_epoch:,} steps per epoch); the job stops before it has seen all of "
                          "it").format(steps=steps, gb=gb, total=steps * gb, epochs=epochs, what=what,
                                       per_epoch=per_epoch),
                fix=_("set max_steps {per_epoch:,} per epoch (x epochs), or `trainfit plan --dataset` and "
                      "re-render").format(per_epoch=per_epoch)))
        elif abs(epochs - round(epochs)) > 0.05:
            out.append(Violation(
                rule="data", severity=INFO,
                message=_("max_steps {steps:,} x global batch {gb} covers {epochs:.2f} epochs of the data ({what}, "
                          "{per_epoch:,} steps per epoch): the last epoch is partial").format(
                    steps=steps, gb=gb, epochs=epochs, what=what, per_epoch=per_epoch),
                fix=_("set max_steps to a multiple of {per_epoch:,}, or keep it if a partial epoch is meant").format(
                    per_epoch=per_epoch)))
        else:
            f.notes.append(_("data: max_steps {steps:,} = {epochs:.2f} epoch(s) of {what} at global batch {gb}").format(
                steps=steps, epochs=epochs, what=what, gb=gb))
    elif rows and read_epochs(f):
        n = read_epochs(f)
        f.notes.append(_("data: {n:g} epoch(s) = {steps:,.0f} optimizer steps at global batch {gb}").format(
            n=n, steps=math.ceil(rows / gb) * n, gb=gb))
    return out


__all__ = ["DATA_PADDING_WARN", "DATA_TRUNCATED_WARN", "rule_data"]
