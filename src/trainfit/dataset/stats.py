"""Length statistics of a training dataset, as the launcher will see it: tokens per sample (whole sample and the
loss part), the distribution, what a cut-off length truncates, how well packing fills a sequence, and what
padding wastes without packing.

Packing is counted with the greedy knapsack LLaMA-Factory runs for ``packing: true`` (sort the lengths; fill each
sequence with the longest sample that still fits, again and again; ``greedy_knapsack`` in
https://github.com/hiyouga/LLaMA-Factory/blob/main/src/llamafactory/data/processor/processor_utils.py). ms-swift's
``--packing true`` bins with ``binpacking.to_constant_volume`` (a greedy decreasing bin packing of the same family;
https://github.com/modelscope/ms-swift/blob/main/swift/llm/dataset/utils.py), so its sequence count can differ by
a fraction of a percent. Samples longer than the cut-off are counted as cut to it.

Padding without packing: the rows in shuffled order (seed 0, like a sampler), ``micro_batch`` at a time, each padded
to the longest in its micro-batch (the collators of both launchers pad to the longest).
"""

from __future__ import annotations

import bisect
import math
import random
from array import array
from dataclasses import dataclass, field
from typing import TypedDict

from trainfit.errors import DatasetError
from trainfit.json_types import JSON, JSONLike

SCHEMA = "trainfit.datastats/1"
PERCENTILES = (50, 90, 95, 99)
MICRO_BATCHES = (1, 2, 4, 8, 16)


def percentile(sorted_vals: array | list, q: float) -> int:
    """Nearest-rank percentile of sorted values (0 for none)."""
    if not sorted_vals:
        return 0
    k = max(0, min(len(sorted_vals) - 1, math.ceil(q / 100 * len(sorted_vals)) - 1))
    return int(sorted_vals[k])


def pack_count(lengths: list[int] | array, capacity: int) -> int:
    """Sequences of ``capacity`` tokens the greedy knapsack fills with these sample lengths (each cut to
    ``capacity``): take the longest remaining sample that fits, until none fits, then start a new sequence."""
    counts: dict[int, int] = {}
    for n in lengths:
        n = min(int(n), capacity)
        if n > 0:
            counts[n] = counts.get(n, 0) + 1
    distinct = sorted(counts)
    bins = 0
    while distinct:
        bins += 1
        room = capacity
        while True:
            i = bisect.bisect_right(distinct, room) - 1
            if i < 0:
                break
            n = distinct[i]
            take = min(counts[n], room // n)
            counts[n] -= take
            room -= take * n
            if counts[n] == 0:
                del distinct[i]
            if room == 0:
                break
    return bins


def padded_tokens(lengths: list[int] | array, micro_batch: int, capacity: int, seed: int = 0) -> int:
    """Tokens the GPUs process without packing: shuffled micro-batches padded to their longest sample."""
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    total = 0
    for s in range(0, len(order), micro_batch):
        chunk = order[s:s + micro_batch]
        total += len(chunk) * min(capacity, max(int(lengths[i]) for i in chunk))
    return total


class Cutoff(TypedDict):
    """Truncation and packing figures at one cut-off length (:meth:`DatasetStats.at`)."""

    seq_len: int
    truncated_share: float
    tokens_after_cut: int
    packed_sequences: int
    packing_efficiency: float


class RowProblem(TypedDict):
    """One malformed row: its file, line and what is wrong."""

    file: str
    line: int
    why: str


@dataclass(frozen=True, kw_only=True)
class DatasetStats:
    """What ``trainfit data`` measured (or estimated from a sample) for one dataset, one tokenizer, one cut-off."""

    files: tuple[str, ...]
    tokenizer: str
    template: str | None
    """Where the chat template came from; None = plain text (--no-template)."""
    seq_len: int
    """The cut-off length the truncation, packing and padding figures are for."""
    rows: int
    """Rows in the files (valid + skipped)."""
    samples: int
    """Samples counted (all valid rows, or the sample's size)."""
    skipped: int
    sampled: bool
    tokens_total: int
    """Tokens of all samples, uncut (estimated over all rows when sampled)."""
    loss_tokens_total: int
    tokens_after_cut: int
    """Tokens the launcher trains on per epoch with samples cut to ``seq_len``."""
    mean: float
    std: float
    percentiles: dict[str, int]
    max_len: int
    min_len: int
    loss_mean: float
    histogram: list[tuple[int, int]]
    """(upper edge in tokens, samples); edges are powers of two."""
    truncated_share: float
    packed_sequences: int
    """Sequences of ``seq_len`` the packing fills (per epoch, over all rows)."""
    packing_efficiency: float
    """Real tokens / (packed sequences x seq_len)."""
    padding_waste: dict[str, float]
    """Micro-batch -> share of processed tokens that are padding without packing."""
    cutoffs: list[Cutoff] = field(default_factory=list)
    """The same truncation and packing figures at other cut-off lengths (powers of two from 256 to the first at or
    above the longest sample): {"seq_len", "truncated_share", "tokens_after_cut", "packed_sequences",
    "packing_efficiency"}, so ``plan --dataset --seq-len N`` can choose without reading the data again."""
    tokens_ci95: tuple[float, float] | None = None
    """95 % interval of ``tokens_total`` when it is estimated from a sample."""
    errors: list[RowProblem] = field(default_factory=list)
    """The first malformed rows: {"file", "line", "why"}."""
    formats: dict[str, int] = field(default_factory=dict)
    """Counted rows per format (messages, sharegpt, alpaca: instruction/input/output, alpaca-query: query/response),
    so ``render`` can describe the file to LLaMA-Factory (empty in stats files written before it was recorded)."""
    columns: dict[str, str] = field(default_factory=dict)
    """The ``--columns`` mapping the rows were read with (canonical key -> column name)."""
    keys: list[str] = field(default_factory=list)
    """Top-level columns seen in the counted rows (at most 64), so ``render`` names only columns the file has."""

    def single_format(self) -> str | None:
        """The one format every counted row has (None when they differ or it was not recorded)."""
        return next(iter(self.formats)) if len(self.formats) == 1 else None

    def to_dict(self) -> dict[str, JSONLike]:
        d: dict[str, JSONLike] = {"schema": SCHEMA}
        for k, v in self.__dict__.items():
            d[k] = list(v) if isinstance(v, tuple) else v
        d["histogram"] = [list(h) for h in self.histogram]
        return d

    @classmethod
    def from_dict(cls, d: JSON) -> "DatasetStats":
        from trainfit.i18n import _

        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            raise DatasetError(_("not a trainfit dataset stats file (schema trainfit.datastats/1)"),
                               fix=_("write one with `trainfit data FILE --tokenizer DIR --json > stats.json`"))
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        try:
            kw["files"] = tuple(str(f) for f in kw["files"])
            kw["histogram"] = [(int(a), int(b)) for a, b in kw.get("histogram", [])]
            kw["cutoffs"] = [{"seq_len": int(c["seq_len"]), "truncated_share": float(c["truncated_share"]),
                              "tokens_after_cut": int(c["tokens_after_cut"]),
                              "packed_sequences": int(c["packed_sequences"]),
                              "packing_efficiency": float(c["packing_efficiency"])} for c in kw.get("cutoffs", [])]
            kw["formats"] = {str(k): int(v) for k, v in dict(kw.get("formats") or {}).items()}
            kw["columns"] = {str(k): str(v) for k, v in dict(kw.get("columns") or {}).items()}
            kw["keys"] = [str(k) for k in list(kw.get("keys") or [])[:64]]
            if kw.get("tokens_ci95") is not None:
                lo, hi = kw["tokens_ci95"]
                kw["tokens_ci95"] = (float(lo), float(hi))
            for name in ("seq_len", "rows", "samples", "skipped", "tokens_total", "loss_tokens_total",
                         "tokens_after_cut", "packed_sequences", "max_len", "min_len"):
                v = kw[name]
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise ValueError(_("{name} must be a non-negative integer").format(name=name))
            for name in ("packing_efficiency", "truncated_share"):
                v = float(kw[name])
                if not 0.0 <= v <= 1.0:
                    raise ValueError(_("{name} must be within 0..1").format(name=name))
            if kw["seq_len"] < 1 or kw["samples"] < 1:
                raise ValueError(_("seq_len and samples must be positive"))
            return cls(**kw)
        except (KeyError, TypeError, ValueError) as e:
            raise DatasetError(_("dataset stats file is incomplete or wrong: {error}").format(error=e),
                               fix=_("write it again with `trainfit data ... --json`")) from None

    def at(self, seq_len: int) -> Cutoff:
        """Truncation and packing figures at cut-off ``seq_len`` (the main one or one of :attr:`cutoffs`)."""
        if seq_len == self.seq_len:
            return {"seq_len": self.seq_len, "truncated_share": self.truncated_share,
                    "tokens_after_cut": self.tokens_after_cut, "packed_sequences": self.packed_sequences,
                    "packing_efficiency": self.packing_efficiency}
        for c in self.cutoffs:
            if c.get("seq_len") == seq_len:
                return c
        from trainfit.i18n import _

        have = sorted({self.seq_len, *(c["seq_len"] for c in self.cutoffs)})
        raise DatasetError(_("the dataset stats have no figures for a cut-off of {seq_len:,} tokens (they have "
                             "{have})").format(seq_len=seq_len, have=", ".join(f"{x:,}" for x in have)),
                           fix=_("pass one of those to --seq-len, or run `trainfit data ... --seq-len {seq_len}` "
                                 "again").format(seq_len=seq_len))

    def percentile_len(self, name: str) -> int:
        """Tokens of the longest sample at a percentile name (p50 ... p99, max)."""
        return self.max_len if name == "max" else int(self.percentiles[name])

    def samples_per_epoch(self) -> int:
        return self.rows - self.skipped

    def steps_per_epoch(self, global_batch: int, packing: bool, seq_len: int | None = None) -> int:
        """Optimizer steps per epoch as the launcher counts them: packed sequences, or samples, per global batch."""
        units = self.at(seq_len or self.seq_len)["packed_sequences"] if packing else self.samples_per_epoch()
        return max(1, math.ceil(units / max(1, global_batch)))


def summarize(lengths: array, loss_lengths: array, *, seq_len: int, rows: int, skipped: int, population: int,
              files: tuple[str, ...], tokenizer: str, template: str | None,
              errors: list[RowProblem], formats: dict[str, int] | None = None,
              columns: dict[str, str] | None = None, keys: list[str] | None = None) -> DatasetStats:
    """Stats of counted samples; when they are a sample of ``population`` rows, totals are scaled with a 95 %
    interval (finite-population correction)."""
    n = len(lengths)
    srt = sorted(lengths)
    total = sum(lengths)
    loss_total = sum(loss_lengths)
    cut_total = sum(min(x, seq_len) for x in lengths)
    mean = total / n
    var = sum((x - mean) ** 2 for x in lengths) / max(1, n - 1)
    std = math.sqrt(var)
    sampled = population > n
    scale = population / n
    ci = None
    if sampled:
        half = 1.96 * population * std / math.sqrt(n) * math.sqrt(max(0.0, (population - n) / max(1, population - 1)))
        ci = (max(0.0, total * scale - half), total * scale + half)
    edges = []
    e = 64
    while True:
        edges.append(e)
        if e >= srt[-1]:
            break
        e *= 2
    hist = []
    lo = 0
    for edge in edges:
        hi = bisect.bisect_right(srt, edge)
        hist.append((edge, hi - lo))
        lo = hi
    bins = pack_count(lengths, seq_len)
    eff = cut_total / (bins * seq_len) if bins else 0.0
    waste = {}
    for mb in MICRO_BATCHES:
        padded = padded_tokens(lengths, mb, seq_len)
        waste[str(mb)] = round(1.0 - cut_total / padded, 6) if padded else 0.0
    scaled = lambda x: math.ceil(x * scale)  # noqa: E731
    cutoffs: list[Cutoff] = []
    cap = 256
    while True:
        if cap != seq_len:
            cut = sum(min(x, cap) for x in lengths)
            b = pack_count(lengths, cap)
            cutoffs.append({"seq_len": cap, "truncated_share": sum(x > cap for x in lengths) / n,
                            "tokens_after_cut": scaled(cut), "packed_sequences": scaled(b),
                            "packing_efficiency": cut / (b * cap)})
        if cap >= srt[-1] or cap >= 131072:
            break
        cap *= 2
    return DatasetStats(
        cutoffs=cutoffs, files=files, tokenizer=tokenizer, template=template, seq_len=seq_len, rows=rows, skipped=skipped,
        samples=n, sampled=sampled, tokens_total=round(total * scale), loss_tokens_total=round(loss_total * scale),
        tokens_after_cut=scaled(cut_total), mean=mean, std=std,
        percentiles={f"p{q}": percentile(srt, q) for q in PERCENTILES}, max_len=int(srt[-1]), min_len=int(srt[0]),
        loss_mean=loss_total / n, histogram=hist, truncated_share=sum(x > seq_len for x in lengths) / n,
        packed_sequences=scaled(bins), packing_efficiency=eff, padding_waste=waste, tokens_ci95=ci,
        errors=errors, formats=dict(formats or {}), columns=dict(columns or {}),
        keys=sorted(keys or [])[:64])
