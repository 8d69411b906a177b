"""``plan --dataset STATS``: the token budget, the cut-off length and the step count from a dataset stats file
(``trainfit data --json``), as the rendered launcher will count them.

* Packing on (the default): every optimizer step trains ``global batch`` packed rows of ``seq_len`` tokens, and an
  epoch is the stats' packed-row count at that cut-off. The compute budget is rows x seq_len x epochs.
* Packing off: every row is one sample (cut to ``seq_len``, padded to its micro-batch's longest); an epoch is the
  samples. The compute budget is the samples' tokens after the cut (micro-batch 1; larger micro-batches add the
  padding the stats report).
* The cut-off: ``--seq-len`` when given, else the smallest cut-off in the stats at or above the chosen percentile of
  sample lengths (``--seq-len-percentile``, default p99), and the share of samples it truncates is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from trainfit.dataset.stats import DatasetStats
from trainfit.errors import DatasetError
from trainfit.i18n import _
from trainfit.dataset import stats_or_scan
from trainfit import inputs
from trainfit.json_types import JSON, JSONLike

PERCENTILE_CHOICES = ("p50", "p90", "p95", "p99", "max")
DATA_FORMATS = ("messages", "sharegpt", "alpaca", "alpaca-query")


@dataclass(frozen=True, kw_only=True)
class DataBudget:
    """What a plan trains, read from a dataset stats file."""

    stats_file: str
    files: tuple[str, ...]
    seq_len: int
    seq_len_from: str
    """How the cut-off was chosen ("--seq-len", or "p99 of the data" ...)."""
    packing: bool
    epochs: float
    rows_per_epoch: int
    """Packed rows of ``seq_len`` tokens (packing) or samples (no packing) per epoch."""
    data_tokens_per_epoch: int
    """Sample tokens per epoch after the cut."""
    truncated_share: float
    packing_efficiency: float | None
    longest_gib_len: int
    """The longest row a micro-batch holds: ``seq_len`` packed, the longest sample (cut) without packing."""
    data_format: str | None = None
    """The one format of every row (messages, sharegpt, alpaca, alpaca-query), None when mixed or not recorded:
    what ``render`` tells LLaMA-Factory in ``dataset_info.json``."""
    columns: dict[str, str] = field(default_factory=dict)
    """The ``--columns`` mapping of ``trainfit data`` (canonical key -> the file's column)."""
    keys: tuple[str, ...] = ()
    """Top-level columns the rows have (from the stats)."""
    padding_waste: dict[str, float] = field(default_factory=dict)
    """Micro-batch -> share of processed tokens that are padding without packing (the stats' figures at their
    cut-off), so ``diagnose`` can compare a run's padding with the plan's."""
    counted_here: bool = False
    """True when ``--dataset`` named the dataset itself and it was counted in place (``--tokenizer``)."""

    @property
    def tokens(self) -> float:
        """Tokens the GPUs process over all epochs (the plan's hours are these over tokens/s)."""
        if self.packing:
            return float(self.rows_per_epoch * self.seq_len * self.epochs)
        return float(self.data_tokens_per_epoch * self.epochs)

    def steps(self, global_batch: int) -> int:
        """Optimizer steps the launcher runs: rows over all epochs per global batch."""
        return max(1, math.ceil(self.rows_per_epoch * self.epochs / max(1, global_batch)))

    def describe(self) -> str:
        what = (_("{rows:,} packed rows of {seq_len:,} tokens ({filled:.1%} filled)").format(
            rows=self.rows_per_epoch, seq_len=self.seq_len, filled=self.packing_efficiency) if self.packing
            else _("{rows:,} samples, no packing").format(rows=self.rows_per_epoch))
        src = _("counted in place") if self.counted_here else _("stats {file}").format(file=self.stats_file)
        return _("data {files} ({src}): {what} per epoch x {epochs:g}; {tokens:,} sample tokens per epoch; cut-off "
                 "{seq_len:,} ({how}) truncates {truncated:.1%} of samples").format(
            files=", ".join(self.files), src=src, what=what, epochs=self.epochs, tokens=self.data_tokens_per_epoch,
            seq_len=self.seq_len, how=self.seq_len_from, truncated=self.truncated_share)

    def padding_at(self, micro_batch: int) -> float | None:
        """The stats' padding share at ``micro_batch``, or at the largest micro-batch below it (a lower bound);
        None when the stats have none."""
        sizes = sorted(int(k) for k in self.padding_waste if k.isdecimal() and int(k) <= micro_batch)
        return self.padding_waste.get(str(sizes[-1])) if sizes else None

    def memory_note(self) -> str:
        """What ``memory --dataset`` sizes: the longest row a micro-batch holds, and why."""
        if self.packing:
            return _("sized at the longest row: {longest:,} tokens (packing fills rows of the cut-off {seq_len:,}, "
                     "{how})").format(longest=self.longest_gib_len, seq_len=self.seq_len, how=self.seq_len_from)
        if self.longest_gib_len < self.seq_len:
            return _("sized at the longest row: {longest:,} tokens (no packing: the longest sample of the data; a "
                     "micro-batch pads to its longest sample)").format(longest=self.longest_gib_len)
        return _("sized at the longest row: {longest:,} tokens (no packing: the longest sample of the data, cut to "
                 "the cut-off {seq_len:,}; a micro-batch pads to its longest sample)").format(
            longest=self.longest_gib_len, seq_len=self.seq_len)

    def to_dict(self) -> dict[str, JSONLike]:
        d: dict[str, JSONLike] = dict(self.__dict__)
        d["files"] = list(self.files)
        d["columns"] = dict(self.columns)
        d["keys"] = list(self.keys)
        d["padding_waste"] = dict(self.padding_waste)
        d["summary"] = self.describe()
        return d

    @classmethod
    def from_dict(cls, d: JSON) -> "DataBudget":
        """A plan file's ``data`` record, checked (plan files are user input)."""
        if not isinstance(d, dict):
            raise ValueError(_("data must be an object"))
        files = d.get("files")
        if not isinstance(files, list) or not all(isinstance(f, str) and len(f) < 4096 for f in files):
            raise ValueError(_("data.files must be a list of file names"))
        for name in ("stats_file", "seq_len_from"):
            if not isinstance(d.get(name), str) or len(d[name]) > 4096:
                raise ValueError(_("data.{name} must be a string").format(name=name))
        if not isinstance(d.get("packing"), bool):
            raise ValueError(_("data.packing must be true or false"))
        eff = d.get("packing_efficiency")
        fmt = d.get("data_format")
        if fmt is not None and fmt not in DATA_FORMATS:
            raise ValueError(_("data.data_format must be one of {choices}").format(choices=", ".join(DATA_FORMATS)))
        cols = d.get("columns") or {}
        if not isinstance(cols, dict) or not all(isinstance(k, str) and isinstance(v, str) and len(v) < 300
                                                 for k, v in cols.items()):
            raise ValueError(_("data.columns must map names to column names"))
        waste = d.get("padding_waste") or {}
        if not isinstance(waste, dict) or not all(
                isinstance(k, str) and k.isdecimal() and isinstance(v, (int, float)) and not isinstance(v, bool)
                and 0 <= v < 1 for k, v in waste.items()):
            raise ValueError(_("data.padding_waste must map micro-batch sizes to shares in [0, 1)"))
        keys = d.get("keys") or []
        if not isinstance(keys, list) or not all(isinstance(k, str) and len(k) <= 100 for k in keys[:64]):
            raise ValueError(_("data.keys must be a list of column names"))
        return cls(stats_file=d["stats_file"], files=tuple(files), seq_len_from=d["seq_len_from"], packing=d["packing"],
                   seq_len=inputs.as_seq_len("data.seq_len", d.get("seq_len")),
                   epochs=inputs.as_float("data.epochs", d.get("epochs"), lo=0, hi=10_000, lo_open=True),
                   rows_per_epoch=inputs.as_int("data.rows_per_epoch", d.get("rows_per_epoch"), lo=1, hi=10**15),
                   data_tokens_per_epoch=inputs.as_int("data.data_tokens_per_epoch", d.get("data_tokens_per_epoch"),
                                                       lo=1, hi=10**18),
                   truncated_share=inputs.as_float("data.truncated_share", d.get("truncated_share"), lo=0, hi=1),
                   packing_efficiency=None if eff is None else inputs.as_float("data.packing_efficiency", eff, lo=0, hi=1),
                   longest_gib_len=inputs.as_seq_len("data.longest_gib_len", d.get("longest_gib_len")),
                   data_format=fmt, columns=dict(cols), keys=tuple(keys[:64]),
                   padding_waste={k: float(v) for k, v in waste.items()},
                   counted_here=bool(d.get("counted_here")))


def budget_from_stats(stats: DatasetStats, stats_file: str, *, seq_len: int | None, percentile: str | None,
                      packing: bool, epochs: float, counted_here: bool = False) -> DataBudget:
    """The :class:`DataBudget` of a stats file for a cut-off (given, or chosen from a percentile)."""
    if seq_len is not None:
        cut, how = seq_len, "--seq-len"
    else:
        pct = percentile or "p99"
        if pct not in PERCENTILE_CHOICES:
            raise DatasetError(_("--seq-len-percentile must be one of {choices}").format(
                choices=", ".join(PERCENTILE_CHOICES)))
        want = stats.percentile_len(pct)
        have = sorted({stats.seq_len, *(c["seq_len"] for c in stats.cutoffs)})
        cut = next((c for c in have if c >= want), have[-1])
        how = _("the smallest cut-off in the stats at or above the {pct} sample length ({want:,} tokens)").format(
            pct=pct, want=want)
    if not packing and cut >= stats.max_len:  # no sample is cut: the figures hold at any such cut-off
        fig = {"tokens_after_cut": stats.tokens_total, "truncated_share": 0.0, "packed_sequences": None,
               "packing_efficiency": None}
    else:
        fig = stats.at(cut)
    rows = fig["packed_sequences"] if packing else stats.samples_per_epoch()
    longest = cut if packing else min(cut, stats.max_len)
    return DataBudget(stats_file=stats_file, files=tuple(stats.files), seq_len=cut, seq_len_from=how, packing=packing,
                      epochs=epochs, rows_per_epoch=max(1, int(rows)), data_tokens_per_epoch=int(fig["tokens_after_cut"]),
                      truncated_share=float(fig["truncated_share"]),
                      packing_efficiency=float(fig["packing_efficiency"]) if packing else None,
                      longest_gib_len=max(1, int(longest)), data_format=stats.single_format(),
                      columns=dict(stats.columns), keys=tuple(stats.keys), counted_here=counted_here,
                      padding_waste={str(k): float(v) for k, v in stats.padding_waste.items()})


def budget_from_values(values: Mapping[str, object]) -> DataBudget | None:
    """The :class:`~trainfit.dataset.budget.DataBudget` of ``--dataset`` (None without it)."""
    path = values.get("dataset")
    if not path:
        for name in ("seq_len_percentile", "tokenizer"):
            if values.get(name):
                from trainfit.errors import WorkloadError

                raise WorkloadError(_("{flag} needs --dataset").format(flag="--" + name.replace("_", "-")),
                                    fix=_("pass --dataset stats.json (or --dataset train.jsonl --tokenizer DIR)"))
        return None
    from trainfit.errors import WorkloadError

    for name in ("tokens", "dataset_tokens"):
        if values.get(name) is not None:
            flag = "--" + name.replace("_", "-")
            raise WorkloadError(_("{flag} and --dataset both say how many tokens to train on").format(flag=flag),
                                fix=_("drop {flag} (the dataset's tokens x --epochs are the budget)").format(flag=flag))
    packing = values.get("packing")
    stats, counted = stats_or_scan(path, tokenizer=values.get("tokenizer"), seq_len=values.get("seq_len"))
    from dataclasses import replace
    from pathlib import Path

    # the job files name the data by absolute path (a stats file records the paths `trainfit data` was given)
    stats = replace(stats, files=tuple(str(Path(f).resolve()) if Path(f).is_file() else f for f in stats.files))
    return budget_from_stats(stats, path, seq_len=values.get("seq_len"), percentile=values.get("seq_len_percentile"),
                             packing=True if packing is None else bool(packing), epochs=values.get("epochs") or 1.0,
                             counted_here=counted)
