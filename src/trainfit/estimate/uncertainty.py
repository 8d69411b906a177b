"""Prediction intervals for speed, time, cost and memory, from out-of-sample residuals.

The data file ``estimate/data/intervals.json`` is written by ``benchmarks/intervals.py`` (its header carries the
date and the command). It holds, for each *regime* of the speed model, quantiles (p10, p50, p90) of the ratio
measured / predicted tokens/s over published runs predicted out of sample (leave-one-source-out over the
calibration sources; the frozen test split is never used to build intervals), and the same ratio for memory
(``reserved_gib``) over the fit corpus.

A regime is engine family x dense/MoE x parallelism x sequence-length band x global-batch band
(:func:`speed_regime`). A regime with fewer than ``min_rows`` rows or ``min_sources`` publishers (sources where the
data file gives no publisher count; a publisher's sources share their errors) backs off to a
coarser one, in the order of :data:`LEVELS` (drop the batch and length bands, then the parallelism, then
dense/MoE, then the engine family). A request whose engine family x dense/MoE x parallelism, sequence band or
batch band has no calibration row at all lies *outside the calibration domain*: its interval is widened
(the data file's ``widen_out_of_domain`` x the log distance of p10 and p90 from p50) and says so.

Speed-derived figures follow the ratio ``q``: tokens/s and MFU scale with ``q``; step time, hours, GPU-hours and
cost with ``1 / q`` (so their p10 comes from the speed's p90). The file is read once, lazily; nothing here
imports more than the standard library.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from trainfit import i18n
from trainfit.i18n import N_, _
from trainfit.estimate.engines import FAMILY_OF
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload, default_framework

DATA = Path(__file__).resolve().parent / "data" / "intervals.json"

#: Sequence-length bands (tokens per sample): upper bounds, inclusive.
SEQ_BANDS: tuple[tuple[int | None, str], ...] = ((2048, "seq<=2k"), (8192, "seq2k-8k"), (None, "seq>8k"))
#: Global-batch bands (sequences per optimizer step): upper bounds, inclusive. 32 is where the published
#: small-batch Megatron SFT runs start to miss (issue 26).
GBS_BANDS: tuple[tuple[int | None, str], ...] = ((32, "gbs<=32"), (512, "gbs33-512"), (None, "gbs>512"))
#: Regime fields from the finest to the coarsest grouping (the back-off order).
LEVELS: tuple[tuple[str, ...], ...] = (("family", "arch", "par", "seq", "gbs"), ("family", "arch", "par"),
                                       ("family", "arch"), ("family",), ())
#: Outside the calibration domain the interval's log distances from p50 are multiplied by this when the data
#: file sets no factor of its own (``widen_out_of_domain``, chosen by benchmarks/intervals.py for 80 %
#: leave-one-source-out coverage of the calibration runs outside their domain).
OUT_OF_DOMAIN_WIDENING = 2.0
_Z90 = 1.2815515655446004  # standard normal quantile at 0.9


def _band(v: int, bands: tuple[tuple[int | None, str], ...]) -> str:
    for hi, name in bands:
        if hi is None or v <= hi:
            return name
    return bands[-1][1]


def parallelism(workload: Workload) -> str:
    """The parallelism of a workload as a regime label: the data-parallel kind (``dp`` = DDP, ``zero`` = ZeRO-1/2
    or Megatron's distributed optimizer, ``shard`` = ZeRO-3/FSDP) plus ``+tp``, ``+pp``, ``+ep``, ``+cp``, ``+sp``
    (DeepSpeed-Ulysses)."""
    s = workload.strategy
    base = "dp" if s == "ddp" else ("shard" if s in ("zero3", "fsdp") else "zero")
    w = workload
    return base + ("+tp" if w.tp > 1 else "") + ("+pp" if w.pp > 1 else "") + ("+ep" if w.ep > 1 else "") + (
        "+cp" if w.cp > 1 else "") + ("+sp" if w.ulysses > 1 else "")


def speed_regime(model: ModelShape, workload: Workload, framework: str | None, gpu_class: str | None = None) -> dict[str, str]:
    """The speed regime of a workload: engine family, dense/MoE, parallelism, sequence band, global-batch band;
    with ``gpu_class`` (``Hardware.gpu_class``: ampere, hopper, ada, ...) also the GPU generation, which does not
    group runs (one law, the roofline ridge, carries speed across Ampere and Hopper) but decides whether the
    request lies inside the calibration domain."""
    fw = framework or default_framework(workload)
    reg = {"family": FAMILY_OF.get(fw, fw), "arch": "moe" if model.num_experts else "dense",
           "par": parallelism(workload), "seq": _band(workload.seq_len, SEQ_BANDS),
           "gbs": _band(workload.global_batch, GBS_BANDS)}
    if gpu_class:
        reg["gpu_class"] = str(gpu_class)
    return reg


def group_key(regime: dict[str, str], level: tuple[str, ...]) -> str:
    """``family=megatron|arch=moe|...`` for the fields of ``level``; ``all`` for the empty level."""
    return "|".join(f"{k}={regime[k]}" for k in level) or "all"


@dataclass(frozen=True, kw_only=True)
class Interval:
    """Quantiles of measured / predicted for one request, with where they came from."""

    p10: float
    p50: float
    p90: float
    group: str
    """The regime group the quantiles are from (after back-off)."""
    rows: int
    sources: int
    out_of_domain: bool = False
    note: str = ""

    def scale(self, value: float | None, *, inverse: bool = False) -> dict[str, float] | None:
        """p10/p50/p90 of a figure proportional to the measured quantity (``inverse``: to its reciprocal, e.g.
        hours from speed: the fast end of speed gives the short end of time)."""
        if value is None:
            return None
        if inverse:
            return {"p10": value / self.p90, "p50": value / self.p50, "p90": value / self.p10}
        return {"p10": value * self.p10, "p50": value * self.p50, "p90": value * self.p90}

    def to_dict(self) -> dict[str, float | int | str | bool | None]:
        return {"p10": self.p10, "p50": self.p50, "p90": self.p90, "group": self.group, "rows": self.rows,
                "sources": self.sources, "out_of_domain": self.out_of_domain, "note": self.note}

    @classmethod
    def from_dict(cls, d: dict) -> "Interval":
        return cls(p10=float(d["p10"]), p50=float(d["p50"]), p90=float(d["p90"]), group=str(d["group"]),
                   rows=int(d["rows"]), sources=int(d["sources"]), out_of_domain=bool(d.get("out_of_domain")),
                   note=str(d.get("note") or ""))


#: The quantity an interval is about, as its notes name it (message ids).
_WHAT = {"speed": N_("speed"), "memory": N_("memory")}


@lru_cache(maxsize=1)
def load_data() -> dict:
    """The interval data file (read once)."""
    return json.loads(DATA.read_text(encoding="utf-8"))


def interval_from_groups(regime: dict[str, str], groups: dict[str, dict], domain: dict[str, list[str]] | None,
                         *, min_rows: int, min_sources: int, what: str = "speed", widen: float = 1.0,
                         widen_out: float = OUT_OF_DOMAIN_WIDENING) -> Interval:
    """The interval of ``regime`` from ``groups`` (key -> {p10, p50, p90, rows, sources}), backing off to coarser
    levels; ``domain`` (regime field -> values seen per family, keys ``family|field``) decides out-of-domain.
    The log distances of p10 and p90 from p50 are multiplied by ``widen`` (inside the domain) or ``widen_out``
    (outside): the factors ``benchmarks/intervals.py`` sets so that leave-one-source-out coverage of the
    calibration runs reaches 80 % (a group's spread within a few sources understates the spread between
    sources)."""
    what_label = i18n.translate(_WHAT.get(what, what))
    chosen = None
    for level in (lv for lv in LEVELS if all(k in regime for k in lv)):
        g = groups.get(group_key(regime, level))
        if g and g["rows"] >= min_rows and g.get("publishers", g["sources"]) >= min_sources:
            chosen = (group_key(regime, level), g)
            break
    if chosen is None:  # not even the pooled group: no data at all
        return Interval(p10=0.5, p50=1.0, p90=2.0, group="none", rows=0, sources=0, out_of_domain=True,
                        note=_("no calibration data for {what} intervals: 0.5x-2x stated, not measured").format(
                            what=what_label))
    key, g = chosen
    missing = []
    if domain is not None:
        fam = regime.get("family", "")
        if fam not in domain.get("family", []):
            missing.append(_("engine family {family}").format(family=fam))
        else:
            for f in ("arch", "par", "seq", "gbs"):
                if regime[f] not in domain.get(f"{fam}|{f}", []):
                    missing.append(regime[f])
            if not groups.get(group_key(regime, LEVELS[1])):
                missing.append(_("{arch} {par} together").format(arch=regime["arch"], par=regime["par"]))
        seen = domain.get("gpu_class")
        if regime.get("gpu_class") and seen and regime["gpu_class"] not in seen:
            missing.append(_("{gpu_class} GPUs").format(gpu_class=regime["gpu_class"]))
    p10, p50, p90 = g["p10"], g["p50"], g["p90"]
    k = widen_out if missing else widen
    lo, hi = math.log(p10 / p50), math.log(p90 / p50)
    p10, p90 = p50 * math.exp(k * lo), p50 * math.exp(k * hi)
    note = _("{what} interval from {rows} runs of {sources} sources ({key})").format(
        what=what_label, rows=g["rows"], sources=g["sources"], key=key)
    if missing:
        note = _("outside the calibration domain (no published {family} run with {missing}): {what} interval widened "
                 "{k:.2g}x from {rows} runs ({key})").format(
            family=regime.get("family"), missing=", ".join(dict.fromkeys(missing)), what=what_label, k=k,
            rows=g["rows"], key=key)
    return Interval(p10=p10, p50=p50, p90=p90, group=key, rows=g["rows"], sources=g["sources"],
                    out_of_domain=bool(missing), note=note)


def speed_interval(model: ModelShape, workload: Workload, framework: str | None, gpu_class: str | None = None) -> Interval:
    """The interval of measured / predicted tokens/s for a workload under an engine (``--framework``) on a GPU
    generation (``gpu_class``; a generation no calibration run used is outside the domain)."""
    return _speed_interval_of(tuple(speed_regime(model, workload, framework, gpu_class).items()), i18n.current())


@lru_cache(maxsize=1024)
def _speed_interval_of(regime: tuple[tuple[str, str], ...], lang: str = "en") -> Interval:
    # ``lang``: the interval's note is written in the current language (i18n.current()), so it is part of the key
    d = load_data()["speed"]
    return interval_from_groups(dict(regime), d["groups"], d["domain"],
                                min_rows=d["min_rows"], min_sources=d["min_sources"], widen=d.get("widen", 1.0),
                                widen_out=d.get("widen_out_of_domain", OUT_OF_DOMAIN_WIDENING))


def memory_interval() -> Interval:
    """The interval of measured / predicted ``reserved_gib`` (one pooled group: the fit corpus's stated-memory
    reports come from too few sources to split by regime); its note in the current language."""
    return _memory_interval_of(i18n.current())


@lru_cache(maxsize=4)
def _memory_interval_of(lang: str) -> Interval:
    d = load_data()["memory"]
    return interval_from_groups({}, d["groups"], None, min_rows=d["min_rows"], min_sources=1, what="memory",
                                widen=d.get("widen", 1.0))


def oom_probability(reserved_gib: float, usable_gib: float, releasable_gib: float = 0.0) -> float:
    """Calibrated probability that a job predicted at ``reserved_gib`` fails for GPU memory on ``usable_gib``
    (plus the releasable cache the allocator gives back before failing): Phi((ln(reserved / capacity) - mu) /
    sigma), sigma the memory interval's spread, mu fitted to the outcomes (ran / OOM) of the fit corpus's
    calibration reports (the data file's ``memory.oom``, benchmarks/intervals.py). A data file without it falls
    back to the memory interval alone (even odds where the prediction times its median ratio meets the card)."""
    if reserved_gib <= 0:
        return 0.0
    mu, sigma = _oom_location()
    z = (math.log(reserved_gib / (usable_gib + releasable_gib)) - mu) / sigma
    return 0.5 * math.erfc(-z / math.sqrt(2))


def _oom_location() -> tuple[float, float]:
    """(mu, sigma) of :func:`oom_probability`: the data file's outcome fit, else the memory interval's median and
    spread."""
    fit = load_data()["memory"].get("oom")
    if fit:
        return float(fit["mu"]), float(fit["sigma"])
    iv = memory_interval()
    return -math.log(iv.p50), max(1e-6, (math.log(iv.p90) - math.log(iv.p10)) / (2 * _Z90))


def share_at_oom_probability(p: float) -> float:
    """The share of a card's usable memory at which :func:`oom_probability` (no releasable cache) equals ``p``:
    ``exp(mu + sigma x Phi^-1(p))`` (1.0 without the data file). The planner prefers settings below the share of its
    risk limit (``estimate.fit.OOM_RISK_LIMIT``), and ``memory`` suggests changes above it."""
    from statistics import NormalDist

    try:
        mu, sigma = _oom_location()
    except (OSError, KeyError, ValueError):
        return 1.0
    return math.exp(mu + sigma * NormalDist().inv_cdf(min(max(p, 1e-6), 1 - 1e-6)))


def memory_range(reserved_gib: float) -> dict[str, float] | None:
    """p10/p50/p90 of the GiB a job predicted at ``reserved_gib`` needs (None when the data file is missing)."""
    try:
        return memory_interval().scale(reserved_gib)
    except (OSError, KeyError, ValueError):
        return None


def headroom_range(usable_gib: float | None, reserved_gib: float) -> dict[str, float] | None:
    """p10/p50/p90 of the headroom ``usable - reserved`` on a card with ``usable_gib``: the memory range turned
    around (the headroom's p10 is the card less the memory's p90); None without a card or the data file."""
    rng = memory_range(reserved_gib) if usable_gib is not None else None
    if rng is None:
        return None
    return {"p10": usable_gib - rng["p90"], "p50": usable_gib - rng["p50"], "p90": usable_gib - rng["p10"]}


def plan_speed_interval(model: ModelShape, workload: Workload, framework: str | None, gpu_class: str | None = None) -> dict | None:
    """:func:`speed_interval` as the plan stores it (None when the data file is missing)."""
    try:
        return speed_interval(model, workload, framework, gpu_class).to_dict()
    except (OSError, KeyError, ValueError):
        return None


def rl_speed_interval(model: ModelShape, workload: Workload, gpu_class: str | None = None) -> dict | None:
    """The interval of an RL step (rollout generation, reward, weight sync and the policy update): no published
    RL run calibrates it, so it is the update's own regime interval widened :data:`OUT_OF_DOMAIN_WIDENING` x in
    log space and flagged outside the calibration domain (a stated assumption, not a measurement)."""
    try:
        iv = speed_interval(model, workload, None, gpu_class)
    except (OSError, KeyError, ValueError):
        return None
    lo, hi = math.log(iv.p10 / iv.p50), math.log(iv.p90 / iv.p50)
    k = OUT_OF_DOMAIN_WIDENING
    return Interval(p10=iv.p50 * math.exp(k * lo), p50=iv.p50, p90=iv.p50 * math.exp(k * hi), group=iv.group,
                    rows=iv.rows, sources=iv.sources, out_of_domain=True,
                    note=_("outside the calibration domain (no published RL run): the policy update's interval "
                           "({group}) widened {k:g}x, an assumption").format(group=iv.group, k=k)).to_dict()


memory_interval.cache_clear = _memory_interval_of.cache_clear  # type: ignore[attr-defined]


def format_probability(p: float) -> str:
    """A probability as every surface prints it (memory and plan tables, render's summary, ``check``, the page):
    ``<1%`` and ``>99%`` at the ends, never ``0 %`` or ``100 %``, which would claim a certainty the calibration
    over a few dozen published runs cannot give."""
    return "<1%" if p < 0.01 else (">99%" if p > 0.99 else f"{p:.0%}")


def format_range(rng: dict | None, fmt: str = ",.0f") -> str:
    """`` (p10–p90)`` of a figure as the tables and lines print it after the figure (``fmt`` for both ends); empty
    without a range."""
    return f" ({format(rng['p10'], fmt)}–{format(rng['p90'], fmt)})" if rng else ""


def ranges_overlap(a: dict | None, b: dict | None) -> bool:
    """Whether two p10-p90 ranges overlap (a tie in a ranking)."""
    if not a or not b:
        return False
    return a["p10"] <= b["p90"] and b["p10"] <= a["p90"]


__all__ = ["GBS_BANDS", "Interval", "LEVELS", "OUT_OF_DOMAIN_WIDENING", "SEQ_BANDS",
           "format_probability", "format_range",
           "group_key",
           "headroom_range", "interval_from_groups", "load_data", "memory_interval", "memory_range", "oom_probability", "parallelism",
           "plan_speed_interval", "ranges_overlap", "rl_speed_interval", "share_at_oom_probability", "speed_interval",
           "speed_regime"]
