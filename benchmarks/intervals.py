"""Prediction intervals from out-of-sample residuals, and their coverage on the calibration and frozen splits.

    python benchmarks/intervals.py           # from benchmarks/results/speed_loso.json and fit_corpus.json
    python benchmarks/intervals.py --rerun   # first rerun speed_loso.py and fit_corpus.py (after a model or
                                             # data change), then fit_corpus.py again for its P(OOM) column

Writes src/trainfit/estimate/data/intervals.json (the packaged data that ``trainfit.estimate.uncertainty``
reads), benchmarks/results/intervals.json and the "Prediction intervals" section of docs/accuracy.md.

Speed: the residual of a run is ln(measured / predicted tokens/s) with the run predicted out of sample: the
leave-one-publisher-out prediction of each calibration source (speed_loso.py's ``lopo_rows``; its
leave-one-source-out rows where a results file has none). The frozen split never enters the intervals. Runs are
grouped by regime (``uncertainty.speed_regime``: engine family x dense/MoE x parallelism x sequence band x
global-batch band) and every coarser level of ``uncertainty.LEVELS``; each group stores the p10/p50/p90 of
exp(residual) (:func:`weighted_quantile`, each publisher weighing the same) with its run, source and publisher
counts. A request uses the finest group with at least ``MIN_ROWS`` runs from ``MIN_SOURCES`` publishers (runs of
one publisher share their errors, so one publisher is not enough to measure a spread).

Memory: ln(measured / predicted reserved_gib) of the fit corpus's calibration reports with a stated memory
below 95 % of the GPU and a prediction below 95 % of it (both censored by the card otherwise), readings of the
allocator's reserve made like for like (``fit_corpus.memory_log_ratio``), one pooled group; per-regime groups
are measured beside it (``memory_regime_trial``).

Coverage: on the calibration split, each publisher's speed runs (each source's memory reports) are tested against
intervals built without that publisher (source), so no run is covered by an interval built from itself; on the
frozen split, against the intervals built from all calibration runs. An 80 % interval should cover 75-90 %.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from trainfit.estimate import uncertainty as U  # noqa: E402

SPEED = HERE / "results" / "speed_loso.json"
FIT = HERE / "results" / "fit_corpus.json"
OUT = HERE / "results" / "intervals.json"
PACKAGED = U.DATA
MIN_ROWS = 8
MIN_SOURCES = 3
"""Publishers a speed group needs before its own spread is used (else it backs off to a coarser group). Three, not
two: a group's p10/p90 must show how far a *new* publisher's runs sit off, and that spread is not measured by two
publishers (with two, each leave-one-publisher-out fold sees one, so the calibration coverage never tests the
two-publisher groups the shipped intervals use). Chosen on 2026-12-06 between 2, 3 and 4
(``publisher_threshold_trial`` in benchmarks/results/intervals.json)."""
MEMORY_MIN_ROWS = 8
COMMAND = "python benchmarks/intervals.py"


def weighted_quantile(xs: list[float], ws: list[float], q: float) -> float:
    """Quantile of weighted values: each value sits at the middle of its weight on the cumulative scale, with
    linear interpolation between them (equal weights give Hazen's rule, Hyndman-Fan type 5)."""
    pairs = sorted(zip(xs, ws))
    total = sum(w for _, w in pairs)
    pos, cum = [], 0.0
    for _, w in pairs:
        pos.append((cum + w / 2) / total)
        cum += w
    if q <= pos[0]:
        return pairs[0][0]
    for i in range(1, len(pairs)):
        if q <= pos[i]:
            t = (q - pos[i - 1]) / (pos[i] - pos[i - 1])
            return pairs[i - 1][0] + t * (pairs[i][0] - pairs[i - 1][0])
    return pairs[-1][0]


def unit_of(r: dict) -> str:
    """The unit of independence of a residual row: its publisher (speed_loso.py maps each source's org through
    benchmarks/data/publishers.yaml), else its source. Rows of one publisher share its clusters, containers and
    ways of measuring, so they share their errors: nine recipe tables of one benchmark campaign are one witness,
    not nine."""
    return str(r.get("publisher") or r["source"])


def publisher_weights(rows: list[dict]) -> list[float]:
    """Weights giving every publisher among ``rows`` the same total weight (1 / its row count)."""
    n: dict[str, int] = {}
    for r in rows:
        n[unit_of(r)] = n.get(unit_of(r), 0) + 1
    return [1.0 / n[unit_of(r)] for r in rows]


def group_stats(logs: list[float], sources: set[str], publishers: set[str] | None = None,
                weights: list[float] | None = None) -> dict:
    """p10/p50/p90 of exp(log residual) over a group, each publisher weighing the same (``weights``), with the
    group's run, source and publisher counts."""
    ws = weights or [1.0] * len(logs)
    return {"p10": round(math.exp(weighted_quantile(logs, ws, 0.1)), 4),
            "p50": round(math.exp(weighted_quantile(logs, ws, 0.5)), 4),
            "p90": round(math.exp(weighted_quantile(logs, ws, 0.9)), 4), "rows": len(logs), "sources": len(sources),
            "publishers": len(publishers if publishers is not None else sources)}


def speed_groups(rows: list[dict]) -> tuple[dict, dict]:
    """(groups, domain) of speed residual rows (each with ``regime``, ``log_ratio``, ``source``)."""
    acc: dict[str, list[dict]] = {}
    domain: dict[str, set[str]] = {"family": set()}
    for r in rows:
        reg = r["regime"]
        for level in U.LEVELS:
            acc.setdefault(U.group_key(reg, level), []).append(r)
        domain["family"].add(reg["family"])
        for f in ("arch", "par", "seq", "gbs"):
            domain.setdefault(f"{reg['family']}|{f}", set()).add(reg[f])
        if reg.get("gpu_class"):  # GPU generations measured (any family: the ridge law carries speed across them)
            domain.setdefault("gpu_class", set()).add(reg["gpu_class"])
    tau = source_offset_spread(rows)
    groups = {k: with_source_offset(group_stats([r["log_ratio"] for r in v], {r["source"] for r in v},
                                                {unit_of(r) for r in v}, publisher_weights(v)), tau)
              for k, v in sorted(acc.items())}
    return groups, {k: sorted(v) for k, v in sorted(domain.items())}


Z90 = 1.2816  # the standard normal's 90th percentile


def source_offset_spread(rows: list[dict]) -> float:
    """tau: the spread of the sources' own offsets, the robust standard deviation (1.4826 x the median absolute
    deviation) of each source's median log residual. A user's run is a run of a *new* source: on top of the
    scatter of runs inside a regime it carries its source's offset (its software versions, cluster, the settings a
    report leaves out), which the rows of one regime, often from one or two sources, do not show."""
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(unit_of(r), []).append(r["log_ratio"])
    meds = [statistics.median(v) for v in by.values()]
    if len(meds) < 3:
        return 0.0
    m = statistics.median(meds)
    return 1.4826 * statistics.median(abs(x - m) for x in meds)


def with_source_offset(g: dict, tau: float) -> dict:
    """A group's p10/p90 with a new source's offset added in quadrature to their log distances from p50."""
    if tau <= 0:
        return g
    lo, hi = math.log(g["p50"] / g["p10"]), math.log(g["p90"] / g["p50"])
    add = (Z90 * tau) ** 2
    return {**g, "p10": round(g["p50"] * math.exp(-math.sqrt(lo * lo + add)), 4),
            "p90": round(g["p50"] * math.exp(math.sqrt(hi * hi + add)), 4), "source_offset_tau": round(tau, 4)}


def memory_groups(rows: list[dict]) -> dict:
    logs = [r["log_ratio"] for r in rows]
    return {"all": group_stats(logs, {r["source"] for r in rows})} if logs else {}


def memory_regime_trial(mem_calib: list[dict], mem_frozen: list[dict]) -> dict:
    """Coverage of per-regime memory intervals (``regime`` of fit_corpus.py: megatron / shard / zero / dp, backing
    off to the pooled group below ``MEMORY_MIN_ROWS``), built and widened like the pooled one: measured beside it,
    not used (see the markdown)."""
    def groups(rs: list[dict]) -> dict:
        g = memory_groups(rs)
        for k in sorted({r["regime"] for r in rs}):
            sub = [r for r in rs if r["regime"] == k]
            g[f"regime={k}"] = group_stats([r["log_ratio"] for r in sub], {r["source"] for r in sub})
        return g

    def iv_of(r: dict, g: dict) -> U.Interval:
        for key in (f"regime={r['regime']}", "all"):
            if key in g and g[key]["rows"] >= MEMORY_MIN_ROWS:
                return U.interval_from_groups({}, {"all": g[key]}, None, min_rows=1, min_sources=1, what="memory")
        return U.interval_from_groups({}, g, None, min_rows=1, min_sources=1, what="memory")

    raw = []
    for s in sorted({r["source"] for r in mem_calib}):
        g = groups([r for r in mem_calib if r["source"] != s])
        raw += [(iv_of(r, g), r) for r in mem_calib if r["source"] == s]
    k = choose_widen(raw)
    g = groups(mem_calib)
    frozen = [(iv_of(r, g), r) for r in mem_frozen]
    return {"widen": k, "groups": {key: v for key, v in g.items() if key != "all"},
            "calibration": coverage([(U.Interval(**{**iv.to_dict(), **_widened(iv, k)}), r) for iv, r in raw]),
            "frozen": coverage([(U.Interval(**{**iv.to_dict(), **_widened(iv, k)}), r) for iv, r in frozen])}


def _widened(iv: U.Interval, k: float) -> dict:
    return {"p10": iv.p50 * (iv.p10 / iv.p50) ** k, "p90": iv.p50 * (iv.p90 / iv.p50) ** k}


def covered(iv: U.Interval, log_ratio: float) -> bool:
    return iv.p10 <= math.exp(log_ratio) <= iv.p90


def coverage(pairs: list[tuple[U.Interval, dict]]) -> dict:
    """Share of rows whose measured/predicted lies inside their p10-p90 interval, overall and by domain."""
    def share(ps):
        return None if not ps else round(100 * sum(covered(iv, r["log_ratio"]) for iv, r in ps) / len(ps), 1)

    inside = [(iv, r) for iv, r in pairs if not iv.out_of_domain]
    outside = [(iv, r) for iv, r in pairs if iv.out_of_domain]
    below = sum(math.exp(r["log_ratio"]) < iv.p10 for iv, r in pairs)
    return {"rows": len(pairs), "coverage_pct": share(pairs), "in_domain_rows": len(inside),
            "in_domain_coverage_pct": share(inside), "out_of_domain_rows": len(outside),
            "out_of_domain_coverage_pct": share(outside), "below_p10": below,
            "above_p90": sum(math.exp(r["log_ratio"]) > iv.p90 for iv, r in pairs),
            "median_width": round(statistics.median(iv.p90 / iv.p10 for iv, _ in pairs), 3) if pairs else None}


def speed_interval_of(regime: dict, groups: dict, domain: dict, min_sources: int | None = None,
                      **kw) -> U.Interval:
    return U.interval_from_groups(regime, groups, domain, min_rows=MIN_ROWS,
                                  min_sources=MIN_SOURCES if min_sources is None else min_sources, **kw)


TARGET_COVERAGE = 0.8
PUBLISHER_THRESHOLDS = (2, 3, 4)
"""The ``MIN_SOURCES`` values compared in ``publisher_threshold_trial`` (results file and docs/accuracy.md)."""


def speed_intervals(calib: list[dict], frozen: list[dict], min_sources: int):
    """(groups, domain, widen, widen_out, calibration pairs, frozen pairs) of the speed intervals with groups
    needing ``min_sources`` publishers. Calibration coverage leaves one publisher out of the intervals too: the
    raw (unwidened) intervals first, to choose the widening factors inside and outside the domain, then with them;
    the frozen runs against the intervals from all calibration runs."""
    groups, domain = speed_groups(calib)
    raw, folds = [], {}
    for s in sorted({unit_of(r) for r in calib}):
        folds[s] = speed_groups([r for r in calib if unit_of(r) != s])
        raw += [(speed_interval_of(r["regime"], *folds[s], min_sources, widen_out=1.0), r)
                for r in calib if unit_of(r) == s]
    inside = [(iv, r) for iv, r in raw if not iv.out_of_domain]
    outside = [(iv, r) for iv, r in raw if iv.out_of_domain]
    widen = choose_widen(inside, publisher_weights([r for _, r in inside]))
    widen_out = max(widen, choose_widen(outside, publisher_weights([r for _, r in outside])))
    calib_pairs = [(speed_interval_of(r["regime"], *folds[unit_of(r)], min_sources, widen=widen,
                                      widen_out=widen_out), r) for _, r in raw]
    frozen_pairs = [(speed_interval_of(r["regime"], groups, domain, min_sources, widen=widen, widen_out=widen_out), r)
                    for r in frozen]
    return groups, domain, widen, widen_out, calib_pairs, frozen_pairs


def weighted_coverage(pairs: list[tuple[U.Interval, dict]]) -> float | None:
    """Coverage with each publisher weighing the same (the criterion the widening targets)."""
    if not pairs:
        return None
    ws = publisher_weights([r for _, r in pairs])
    return round(100 * sum(w for (iv, r), w in zip(pairs, ws) if covered(iv, r["log_ratio"])) / sum(ws), 1)
WIDEN_GRID = [round(1 + 0.05 * i, 2) for i in range(0, 81)]  # 1.0 ... 5.0


def choose_widen(pairs: list[tuple[U.Interval, dict]], weights: list[float] | None = None) -> float:
    """The smallest factor on the log distances of p10/p90 from p50 that covers ``TARGET_COVERAGE`` of ``pairs``
    (intervals built without the run's own source, so this is conformal calibration over sources)."""
    ws = weights or [1.0] * len(pairs)
    for k in WIDEN_GRID:
        cov = sum(w for (iv, r), w in zip(pairs, ws)
                  if math.exp(k * math.log(iv.p10 / iv.p50)) * iv.p50 <= math.exp(r["log_ratio"])
                  <= math.exp(k * math.log(iv.p90 / iv.p50)) * iv.p50)
        if not pairs or cov >= TARGET_COVERAGE * sum(ws) - 1e-9:
            return k
    return WIDEN_GRID[-1]


def run() -> dict:
    sp = json.loads(SPEED.read_text(encoding="utf-8"))
    fc = json.loads(FIT.read_text(encoding="utf-8"))
    # residuals of runs predicted without their publisher (leave-one-publisher-out) where speed_loso.py gives
    # them: a user's run comes from a new setup, and a held-out source's siblings of one publisher would leak
    calib, frozen = sp.get("lopo_rows") or sp["loso_rows"], sp.get("frozen_rows") or []
    if not calib or "log_ratio" not in calib[0]:
        raise SystemExit(f"{SPEED} has no residuals: rerun `python benchmarks/speed_loso.py` first (or --rerun)")
    groups, domain, widen, widen_out, calib_pairs, frozen_pairs = speed_intervals(calib, frozen, MIN_SOURCES)
    trial = {}
    for m in PUBLISHER_THRESHOLDS:
        *_, cp, fp = speed_intervals(calib, frozen, m)
        trial[str(m)] = {"calibration": coverage(cp), "frozen": coverage(fp),
                         "calibration_publisher_weighted_pct": weighted_coverage(cp)}

    mem_rows = [r for r in fc["rows"] if r.get("log_ratio") is not None]
    mem_calib = [r for r in mem_rows if not r["frozen"]]
    mem_frozen = [r for r in mem_rows if r["frozen"]]
    mgroups = memory_groups(mem_calib)
    mem_raw = []
    for s in sorted({r["source"] for r in mem_calib}):
        g = memory_groups([r for r in mem_calib if r["source"] != s])
        iv = U.interval_from_groups({}, g, None, min_rows=MEMORY_MIN_ROWS, min_sources=1, what="memory")
        mem_raw += [(iv, r) for r in mem_calib if r["source"] == s]
    mem_widen = choose_widen(mem_raw)
    mem_calib_pairs = [(U.Interval(**{**iv.to_dict(), **_widened(iv, mem_widen)}), r) for iv, r in mem_raw]
    miv = U.interval_from_groups({}, mgroups, None, min_rows=MEMORY_MIN_ROWS, min_sources=1, what="memory",
                                 widen=mem_widen)
    mem_frozen_pairs = [(miv, r) for r in mem_frozen]

    packaged = {
        "date": date.today().isoformat(), "command": COMMAND,
        "about": "p10/p50/p90 of measured / predicted, from out-of-sample residuals (benchmarks/intervals.py)",
        "speed": {"what": "tokens/s: leave-one-publisher-out predictions of the calibration sources of "
                          "benchmarks/data/throughput.yaml (speed_loso.py); the frozen split is not used",
                  "fit_date": sp["date"], "rows": len(calib), "min_rows": MIN_ROWS, "min_sources": MIN_SOURCES,
                  "widen": widen, "widen_out_of_domain": widen_out, "groups": groups, "domain": domain},
        "memory": {"what": "reserved_gib: calibration reports of benchmarks/data/fit_reports.yaml with a stated "
                           "memory below 95 % of the GPU (fit_corpus.py)",
                   "fit_date": fc["date"], "rows": len(mem_calib), "min_rows": MEMORY_MIN_ROWS, "widen": mem_widen,
                   "groups": mgroups},
    }
    oom_fit = fit_oom_location(fc["rows"], miv)
    packaged["memory"]["oom"] = oom_fit
    oom = _oom_check(fc["rows"], miv, oom_fit)
    return {
        "date": packaged["date"], "command": COMMAND, "packaged": packaged,
        "speed_coverage": {"calibration": coverage(calib_pairs), "frozen": coverage(frozen_pairs)},
        "speed_source_offset_tau": round(source_offset_spread(calib), 4),
        "memory_coverage": {"calibration": coverage(mem_calib_pairs), "frozen": coverage(mem_frozen_pairs)},
        "speed_frozen_rows": [{"id": r["id"], "ratio": round(math.exp(r["log_ratio"]), 3), "p10": round(iv.p10, 3),
                               "p90": round(iv.p90, 3), "group": iv.group, "out_of_domain": iv.out_of_domain,
                               "covered": covered(iv, r["log_ratio"])} for iv, r in frozen_pairs],
        "oom_probability": oom, "memory_interval": miv.to_dict(),
        "memory_regime_trial": memory_regime_trial(mem_calib, mem_frozen),
        "publisher_threshold_trial": trial,
        "n_speed_groups_usable": sum(g["rows"] >= MIN_ROWS and g.get("publishers", g["sources"]) >= MIN_SOURCES
                                     for g in groups.values()),
        "n_speed_groups": len(groups),
    }


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def _sigma_of(miv: U.Interval) -> float:
    return max(1e-6, (math.log(miv.p90) - math.log(miv.p10)) / (2 * 1.2815515655446004))


def fit_oom_location(rows: list[dict], miv: U.Interval) -> dict:
    """P(OOM) = Phi((ln(predicted / usable) - mu) / sigma), calibrated on what the reports say happened.

    sigma is the memory model's spread (the memory interval, from reports that state their memory); mu, where a
    job's predicted share of the card gives even odds, is fitted by maximum likelihood to the outcomes (ran / OOM)
    of the calibration split's reports. sigma is not fitted to the outcomes: the corpus separates perfectly (no
    report that ran is predicted above a report that OOMed), so a free sigma would go to zero and claim a
    certainty 72 reports cannot give."""
    sigma = _sigma_of(miv)
    rs = [r for r in rows if not r["frozen"] and r["predicted_gib"] > 0]
    xs = [(math.log(r["predicted_gib"] / r["usable_gib"]), r["outcome"] == "oom") for r in rs]

    def nll(mu: float) -> float:
        total = 0.0
        for x, o in xs:
            p = min(1 - 1e-12, max(1e-12, _phi((x - mu) / sigma)))
            total -= math.log(p if o else 1 - p)
        return total

    lo, hi = -1.0, 1.0  # golden-section search: the likelihood is unimodal in mu for a fixed sigma
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    for _ in range(100):
        if nll(a) < nll(b):
            hi = b
        else:
            lo = a
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    mu = (lo + hi) / 2
    return {"mu": round(mu, 5), "sigma": round(sigma, 5), "reports": len(xs), "oom_reports": sum(o for _, o in xs),
            "even_odds_share_of_usable": round(math.exp(mu), 4),
            "what": "P(OOM) = Phi((ln(predicted reserved_gib / usable) - mu) / sigma): sigma from the memory "
                    "interval, mu fitted to the outcomes of the calibration split's reports (fit_corpus.py)"}


def _oom_check(rows: list[dict], miv: U.Interval, oom_fit: dict) -> dict:
    """P(OOM) (:func:`fit_oom_location`) against what each report says happened, by split; the spread-only model
    (even odds where the prediction meets the card, shifted by the memory interval's median) beside it."""
    mu_spread = math.log(miv.p50)
    sigma = oom_fit["sigma"]
    out = {}
    for split in ("calibration", "frozen"):
        rs = [r for r in rows if r["frozen"] == (split == "frozen") and r["predicted_gib"] > 0]
        row = {"reports": len(rs)}
        for name, mu in (("outcome_fit", oom_fit["mu"]), ("spread_only", -mu_spread)):
            ps = [(_phi((math.log(r["predicted_gib"] / r["usable_gib"]) - mu) / sigma), r["outcome"] == "oom")
                  for r in rs]
            brier = statistics.fmean((p - o) ** 2 for p, o in ps) if ps else None
            row[name] = {"brier": None if brier is None else round(brier, 4),
                         "oom_reports_p_ge_50": sum(p >= 0.5 for p, o in ps if o), "oom_reports": sum(o for _, o in ps),
                         "ran_reports_p_ge_50": sum(p >= 0.5 for p, o in ps if not o),
                         "ran_reports": sum(not o for _, o in ps)}
        out[split] = row
    return out


def _cov_line(name: str, c: dict) -> str:
    dom = ""
    if c["out_of_domain_rows"]:
        dom = (f"; inside the calibration domain {c['in_domain_coverage_pct']} % of {c['in_domain_rows']}, outside "
               f"(widened) {c['out_of_domain_coverage_pct']} % of {c['out_of_domain_rows']}")
    return (f"| {name} | {c['rows']} | {c['coverage_pct']} % | {c['below_p10']} | {c['above_p90']} | "
            f"{c['median_width']}x | {dom.lstrip('; ')} |")


def markdown(res: dict) -> str:
    p = res["packaged"]
    sc, mc, oom = res["speed_coverage"], res["memory_coverage"], res["oom_probability"]
    mi, rt = res["memory_interval"], res["memory_regime_trial"]
    lines = [
        "## Prediction intervals", "",
        f"Generated {res['date']} by `{res['command']}` from `benchmarks/results/speed_loso.json` and "
        "`benchmarks/results/fit_corpus.json`; packaged as `src/trainfit/estimate/data/intervals.json`, which "
        "`trainfit.estimate.uncertainty` reads for every speed, hours, GPU-hours, cost and memory figure "
        "(p10-p90; docs/speed-model.md).", "",
        f"* Speed: {p['speed']['rows']} leave-one-publisher-out residuals (ln measured / predicted; each run "
        "predicted by constants fitted without any source of its publisher) of the calibration "
        f"sources, grouped by engine family x dense/MoE x parallelism x sequence band x global-batch band; "
        f"{res['n_speed_groups_usable']} of {res['n_speed_groups']} groups (all levels) have >= {MIN_ROWS} runs from "
        f">= {MIN_SOURCES} publishers (the table below compares 2, 3 and 4); a smaller regime backs off to family x dense/MoE x parallelism, then family x "
        "dense/MoE, family, all runs. The unit of independence is the publisher (a source's `org` mapped through "
        "`benchmarks/data/publishers.yaml`): inside a group each publisher's runs weigh the same in total "
        "(weighted quantiles), and the widening below counts each publisher the same; a publisher's runs share its "
        "clusters, containers and ways of measuring, so nine recipe tables of one benchmark campaign are one "
        "witness (adopted on 2026-12-06, when 85 runs of one campaign had narrowed the Megatron groups and the "
        "frozen coverage had fallen to 48.5 %). Each group's p10 and p90 also carry a new publisher's offset, added in "
        f"quadrature to their log distances from p50: tau {res['speed_source_offset_tau']:.3f}, the robust "
        "spread of the calibration publishers' median residuals (a user's run comes from a new setup; first added "
        "on 2026-12-06 after the frozen split's coverage fell to 50 % without it: the groups' "
        "spread over one or two sources did not show how far a new source sits off). A request whose family x dense/MoE x parallelism, sequence band or batch "
        "band has no calibration run, or whose GPU generation (Ampere, Hopper, Ada, ...) no calibration run used, "
        "is outside the domain and flagged (leave-one-generation-out, Ampere predicted from Hopper runs alone and "
        "back, kept a median within 2 %: the roofline-ridge law carries speed across measured generations; "
        "Ada's efficiency is an assumption no calibration run tests). Widening (log distances of p10 and p90 "
        f"from p50): x{p['speed']['widen']:g} inside the domain, x{p['speed']['widen_out_of_domain']:g} outside, "
        "the smallest factors that give 80 % leave-one-publisher-out coverage of the calibration runs, each publisher "
        "weighing the same (two "
        "constants chosen on the calibration split: a group's spread over a few sources understates the "
        "spread between sources).",
        f"* Memory: one pooled group of {p['memory']['rows']} calibration reports, widened "
        f"x{p['memory']['widen']:g} the same way: measured / predicted reserved_gib p10 {mi['p10']:.3f}, p50 "
        f"{mi['p50']:.3f}, p90 {mi['p90']:.3f}. Each ratio compares like with like: ms-swift's readings "
        "(torch's max_memory_reserved) get the CUDA context and NCCL buffers that reserved_gib includes and they "
        "cannot see; readings at >= 95 % of the card, and runs predicted at >= 95 % of it, are censored by the card "
        "and left out (fit_corpus.memory_log_ratio). Per-regime spreads (Megatron-Core / ZeRO-3 and FSDP / "
        "ZeRO-1-2 / DDP, back-off to the pooled group below "
        f"{MEMORY_MIN_ROWS} reports) were measured and not adopted: with {rt['groups'] and max(g['rows'] for g in rt['groups'].values())} "
        f"reports at most per regime, leave-one-source-out needs x{rt['widen']:g} widening, giving "
        f"{rt['calibration']['coverage_pct']} % calibration and {rt['frozen']['coverage_pct']} % frozen coverage "
        f"(median width {rt['frozen']['median_width']}x) against the pooled {mc['calibration']['coverage_pct']} % "
        f"and {mc['frozen']['coverage_pct']} % ({mc['frozen']['median_width']}x).",
        "", "Coverage of the 80 % interval (p10-p90; target 75-90 %). Calibration: speed, each publisher's runs "
        "against intervals built without that publisher; memory, each source's reports against intervals built "
        "without it; frozen: against intervals from all calibration runs.", "",
        "| figure, split | rows | covered | below p10 | above p90 | median p90/p10 | by domain |",
        "|---|---:|---:|---:|---:|---:|---|",
        _cov_line("speed, calibration (leave-one-publisher-out)", sc["calibration"]), _cov_line("speed, frozen", sc["frozen"]),
        _cov_line("memory, calibration (LOSO)", mc["calibration"]), _cov_line("memory, frozen", mc["frozen"]),
        "",
        "P(OOM) (`FitDecision.oom_probability`) = Phi((ln(predicted / usable) - mu) / sigma): sigma "
        f"{p['memory']['oom']['sigma']:g} is the memory interval's spread; mu {p['memory']['oom']['mu']:g} is fitted "
        f"to the outcomes (ran / OOM) of the {p['memory']['oom']['reports']} calibration reports "
        f"({p['memory']['oom']['oom_reports']} OOM): even odds at {p['memory']['oom']['even_odds_share_of_usable']:.1%} "
        "of the usable memory. Against the reported outcome, beside the spread-only model (the memory interval "
        "around the prediction, no outcome fit), which puts runs that ran near the card at 50-70 % and so "
        "overstates the risk:", "",
        "| split | model | reports | Brier score | OOM reports with P >= 50 % | ran with P >= 50 % |",
        "|---|---|---:|---:|---:|---:|",
        *[f"| {k} | {m} | {v['reports']} | {v[m]['brier']} | {v[m]['oom_reports_p_ge_50']}/{v[m]['oom_reports']} | "
          f"{v[m]['ran_reports_p_ge_50']}/{v[m]['ran_reports']} |" for k, v in oom.items()
          for m in ("outcome_fit", "spread_only")],
        "", f"Publishers a speed group needs (`MIN_SOURCES`, now {MIN_SOURCES}), compared on both splits (each "
        "column built as above; the calibration criterion is the publisher-weighted leave-one-publisher-out coverage "
        "and the width at that coverage). Chosen on 2026-12-06: 3 gives calibration coverage as high as 2 with "
        "narrower intervals, and a spread between publishers cannot be measured from two. Said plainly: the trial "
        "was run after the frozen split had shown 58.5 % coverage with 2, so the frozen column below is no longer "
        "a blind test of this one choice.", "",
        "| publishers per group | calibration covered | publisher-weighted | calibration median p90/p10 | frozen "
        "covered | frozen median p90/p10 |", "|---:|---:|---:|---:|---:|---:|",
        *[f"| {m}{' (used)' if int(m) == MIN_SOURCES else ''} | {t['calibration']['coverage_pct']} % | "
          f"{t['calibration_publisher_weighted_pct']} % | {t['calibration']['median_width']}x | "
          f"{t['frozen']['coverage_pct']} % | {t['frozen']['median_width']}x |"
          for m, t in res.get("publisher_threshold_trial", {}).items()],
        "", "Frozen speed runs against their interval:", "",
        "| run | measured/predicted | p10 | p90 | group | covered |", "|---|---:|---:|---:|---|---|",
        *[f"| {r['id']} | {r['ratio']} | {r['p10']} | {r['p90']} | {r['group']}"
          f"{' (outside domain, widened)' if r['out_of_domain'] else ''} | {'yes' if r['covered'] else 'no'} |"
          for r in res["speed_frozen_rows"]],
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rerun", action="store_true", help="rerun speed_loso.py and fit_corpus.py first")
    args = ap.parse_args(argv)
    if args.rerun:
        import fit_corpus
        import speed_loso

        speed_loso.main([])
        fit_corpus.main()
    res = run()
    PACKAGED.parent.mkdir(parents=True, exist_ok=True)
    PACKAGED.write_text(json.dumps(res["packaged"], indent=1) + "\n", encoding="utf-8")
    for f in (U.load_data, U.memory_interval, U._speed_interval_of):
        f.cache_clear()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    md = markdown(res)
    print(md)
    from _docsections import replace_section

    replace_section("intervals", md)
    if args.rerun:  # fit_corpus's P(OOM) column reads the intervals just written
        import fit_corpus

        fit_corpus.main()
    print(f"wrote {PACKAGED}, {OUT} and docs/accuracy.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
