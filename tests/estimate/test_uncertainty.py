"""Prediction intervals (estimate/uncertainty.py, benchmarks/intervals.py) and the frozen split rule."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from pathlib import Path

import pytest

from trainfit.errors import PlanFileError
from trainfit.estimate import uncertainty as U
from trainfit.models import get_model
from trainfit.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _wl(**kw) -> Workload:
    base = dict(seq_len=4096, micro_batch=1, grad_accum=8, gpus=8, gpus_per_node=8, strategy="zero3", method="full")
    return Workload(**{**base, **kw})


def test_packaged_data_says_when_and_how_it_was_made_and_is_ordered():
    d = U.load_data()
    assert d["command"].startswith("python benchmarks/intervals.py") and len(d["date"]) == 10
    for part in ("speed", "memory"):
        assert d[part]["groups"], part
        for key, g in d[part]["groups"].items():
            assert 0 < g["p10"] <= g["p50"] <= g["p90"], key
            assert g["rows"] >= 1 and g["sources"] >= 1
    assert "all" in d["speed"]["groups"]


def test_regime_fields():
    dense, moe = get_model("Qwen3-14B"), get_model("Qwen3-30B-A3B")
    r = U.speed_regime(dense, _wl(), None)
    assert r == {"family": "hf", "arch": "dense", "par": "shard", "seq": "seq2k-8k", "gbs": "gbs33-512"}
    r = U.speed_regime(moe, _wl(strategy="zero1", tp=2, pp=2, ep=2, seq_len=32768, grad_accum=2, gpus=16), "megatron")
    assert r["family"] == "megatron" and r["arch"] == "moe" and r["par"] == "zero+tp+pp+ep"
    assert r["seq"] == "seq>8k" and r["gbs"] == "gbs<=32"
    assert U.speed_regime(dense, _wl(strategy="ddp", seq_len=1024), "fsdp2")["par"] == "dp"


def _groups():
    reg = {"family": "hf", "arch": "dense", "par": "dp", "seq": "seq<=2k", "gbs": "gbs<=32"}
    g = {U.group_key(reg, U.LEVELS[0]): {"p10": 0.5, "p50": 1.0, "p90": 1.5, "rows": 3, "sources": 1},
         U.group_key(reg, U.LEVELS[1]): {"p10": 0.8, "p50": 1.0, "p90": 1.25, "rows": 20, "sources": 3},
         "all": {"p10": 0.7, "p50": 1.0, "p90": 1.4, "rows": 90, "sources": 10}}
    dom = {"family": ["hf"], "hf|arch": ["dense"], "hf|par": ["dp"], "hf|seq": ["seq<=2k"], "hf|gbs": ["gbs<=32"]}
    return reg, g, dom


def test_back_off_to_the_first_level_with_enough_rows_and_sources():
    reg, g, dom = _groups()
    iv = U.interval_from_groups(reg, g, dom, min_rows=8, min_sources=2)
    assert iv.group == U.group_key(reg, U.LEVELS[1]) and (iv.p10, iv.p90) == (0.8, 1.25)
    assert not iv.out_of_domain
    iv = U.interval_from_groups(reg, g, dom, min_rows=2, min_sources=1)
    assert iv.group == U.group_key(reg, U.LEVELS[0])


def test_outside_the_domain_is_flagged_and_wider():
    reg, g, dom = _groups()
    inside = U.interval_from_groups(reg, g, dom, min_rows=8, min_sources=2, widen=1.2, widen_out=2.0)
    far = dict(reg, seq="seq>8k")
    out = U.interval_from_groups(far, g, dom, min_rows=8, min_sources=2, widen=1.2, widen_out=2.0)
    assert out.out_of_domain and "outside the calibration domain" in out.note and "seq>8k" in out.note
    assert out.p90 / out.p10 > inside.p90 / inside.p10
    assert math.isclose(out.p90, 1.25 ** 2)  # the level without the bands, log distance doubled
    unknown = dict(reg, family="megatron")
    assert U.interval_from_groups(unknown, g, dom, min_rows=8, min_sources=2).out_of_domain


def test_time_and_cost_invert_the_speed_ratio():
    iv = U.Interval(p10=0.8, p50=1.0, p90=1.25, group="all", rows=10, sources=3)
    assert iv.scale(100.0) == {"p10": 80.0, "p50": 100.0, "p90": 125.0}
    assert iv.scale(100.0, inverse=True) == {"p10": 80.0, "p50": 100.0, "p90": 125.0}
    iv = U.Interval(p10=0.5, p50=1.0, p90=1.25, group="all", rows=10, sources=3)
    h = iv.scale(100.0, inverse=True)
    assert h["p10"] == 80.0 and h["p90"] == 200.0  # slow end of speed = long end of time


def test_oom_probability_grows_with_the_need_and_is_half_at_the_fitted_location():
    fit = U.load_data()["memory"]["oom"]
    ps = [U.oom_probability(r, 80.0) for r in (40.0, 60.0, 70.0, 76.0, 80.0, 90.0, 100.0)]
    assert ps == sorted(ps) and ps[0] < 0.05 and ps[-1] > 0.5
    # even odds where the prediction is exp(mu) x the usable memory, mu fitted to the reports' outcomes
    assert math.isclose(U.oom_probability(80.0 * math.exp(fit["mu"]), 80.0), 0.5, abs_tol=1e-9)
    assert fit["oom_reports"] >= 1 and 0 < fit["sigma"] < 1
    # releasable cache counts as room, as in decide_fit
    assert U.oom_probability(78.0, 80.0, releasable_gib=10.0) < U.oom_probability(78.0, 80.0)


def test_decide_fit_reports_the_probability_and_keeps_its_verdict_rules():
    from trainfit.estimate.fit import decide_fit
    from trainfit.estimate.memory import estimate_memory

    est = estimate_memory(get_model("Qwen3-8B"), _wl(method="lora", strategy="ddp", gpus=1, gpus_per_node=1))
    for usable in (est.reserved_gib * 0.9, est.reserved_gib * 1.02, est.reserved_gib * 2):
        d = decide_fit(est, usable_gib=usable)
        assert d.oom_probability == pytest.approx(U.oom_probability(est.reserved_gib, usable, est.releasable_cache_gib))
    assert decide_fit(est, usable_gib=est.reserved_gib * 0.9).gpu_verdict == "oom"
    assert decide_fit(est, usable_gib=est.reserved_gib * 1.02).gpu_verdict == "tight"
    assert decide_fit(est, usable_gib=est.reserved_gib * 2).gpu_verdict == "fits"


def _plan(**kw):
    from trainfit.service import plan_for

    return plan_for(get_model("Qwen3-8B"), _wl(**kw), gpu="H800", tokens=1e9)


def test_plan_carries_intervals_and_reads_them_back():
    from trainfit.plan.types import Plan

    p = _plan()
    assert p.speed_interval is not None
    d = p.to_dict()
    iv = d["intervals"]
    for k in ("tokens_per_s", "mfu", "hours", "gpu_hours", "per_gpu_gib"):
        assert iv[k]["p10"] < iv[k]["p50"] < iv[k]["p90"], k
    ratio = p.speed_interval
    assert math.isclose(iv["tokens_per_s"]["p10"], p.tokens_per_s * ratio["p10"])
    assert math.isclose(iv["hours"]["p90"], p.hours / ratio["p10"])
    assert d["oom_probability"] == p.fit.oom_probability
    back = Plan.from_dict(json.loads(json.dumps(d)))
    assert back.speed_interval == p.speed_interval and back.intervals() == p.intervals()


def test_plan_files_without_intervals_still_read_and_bad_ones_are_refused():
    from trainfit.plan.types import Plan

    d = _plan().to_dict()
    old = {k: v for k, v in d.items() if k not in ("intervals", "speed_interval", "oom_probability")}
    old["fit"] = {k: v for k, v in d["fit"].items() if k != "oom_probability"}
    p = Plan.from_dict(old)
    assert p.speed_interval is None and p.fit.oom_probability is None and "hours" not in p.intervals()
    for p_oom in ("x", 1.5, float("nan"), True):
        with pytest.raises(PlanFileError):
            Plan.from_dict({**d, "fit": {**d["fit"], "oom_probability": p_oom}})
    for bad in ({"p10": 2.0, "p50": 1.0, "p90": 1.5, "group": "x", "rows": 1, "sources": 1}, "fast",
                {"p10": float("nan"), "p50": 1.0, "p90": 1.5, "group": "x", "rows": 1, "sources": 1},
                {**d["speed_interval"], "note": "x\nrm -rf /"}, {**d["speed_interval"], "group": 7}):
        with pytest.raises(PlanFileError):
            Plan.from_dict({**d, "speed_interval": bad})


def test_ties_are_overlapping_ranges_of_the_objective():
    from trainfit.plan.rank import ties

    def moved(p, gpu=None, times=1.0, **cost):
        tc = dataclasses.replace(p.time_cost, hours=p.time_cost.hours * times,
                                 gpu_hours=p.time_cost.gpu_hours * times, **cost)
        pl = p.placement if gpu is None else dataclasses.replace(p.placement, gpu=gpu)
        return dataclasses.replace(p, placement=pl, time_cost=tc)

    a = _plan()
    b = moved(a, "H100-SXM", 1.05)
    c = moved(a, "A100-80GB-SXM", 5)
    assert ties("time", [a, b, c]) == (1,)
    # the same estimate on the same GPU differing in price only: one error moves both, no tie
    assert ties("time", [a, moved(a, times=1.01, cost=1.0, currency="USD")]) == ()


def test_rl_plans_are_flagged_outside_the_domain():
    iv = U.rl_speed_interval(get_model("Qwen3-8B"), _wl())
    base = U.speed_interval(get_model("Qwen3-8B"), _wl(), None)
    assert iv["out_of_domain"] and "RL" in iv["note"] and iv["p90"] / iv["p10"] > base.p90 / base.p10


def test_frozen_split_rule_and_report_sources():
    import _split

    for key in ("flagperf", "torchtitan", "ms-swift", "qwen-v1-finetune"):
        assert _split.is_frozen(key) == (hashlib.sha256(key.encode()).digest()[0] % 4 == 0)
    a = _split.report_source({"url": "https://github.com/o/r/blob/abc123/x/y.sh#L3"})
    b = _split.report_source({"url": "https://github.com/o/r/blob/main/x/y.sh"})
    assert a == b == "github.com/o/r/x/y.sh"
    assert _split.report_source({"url": "https://github.com/o/r/issues/5"}) == "github.com/o/r/issues/5"
    assert _split.report_source({"source": "s", "url": "u"}) == "s"


def test_speed_fit_never_sees_frozen_sources():
    res = json.loads((ROOT / "benchmarks" / "results" / "speed_loso.json").read_text())
    import _split

    assert res["frozen_sources"] and all(_split.is_frozen(s) for s in res["frozen_sources"])
    assert not any(_split.is_frozen(s) for s in res["calibration_sources"])
    assert {r["source"] for r in res["loso_rows"]} <= set(res["calibration_sources"])
    assert {r["source"] for r in res["frozen_rows"]} <= set(res["frozen_sources"])


def test_widening_reaches_the_target_coverage():
    import intervals

    iv = U.Interval(p10=0.9, p50=1.0, p90=1.1, group="all", rows=10, sources=3)
    rows = [{"log_ratio": math.log(x)} for x in (0.7, 0.8, 0.85, 0.95, 1.0, 1.02, 1.05, 1.15, 1.3, 1.5)]
    k = intervals.choose_widen([(iv, r) for r in rows])
    wide = U.Interval(**{**iv.to_dict(), **intervals._widened(iv, k)})
    assert k > 1 and intervals.coverage([(wide, r) for r in rows])["coverage_pct"] >= 80
    narrower = U.Interval(**{**iv.to_dict(), **intervals._widened(iv, k - 0.05)})
    assert intervals.coverage([(narrower, r) for r in rows])["coverage_pct"] < 80


def test_plan_table_shows_ranges_and_the_legend(capsys):
    from trainfit.cli import main

    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1B", "--gpu", "H800", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "(p10–p90): 80 % prediction interval" in out
    assert out.count("–") >= 6  # ranges in the rows


def test_render_header_and_check_carry_the_ranges(tmp_path):
    from trainfit.service import check_file, render_plan, write_rendered

    p = _plan()
    paths = write_rendered(render_plan(p, targets="torchrun"), tmp_path)
    text = next(x for x in paths if x.name == "launch.sh").read_text()
    iv = p.intervals()
    assert f"tokens/s (p10-p90 {iv['tokens_per_s']['p10']:,.0f}-{iv['tokens_per_s']['p90']:,.0f})" in text
    assert "P(OOM)" in text and "h (p10-p90" in text
    res = check_file(next(x for x in paths if x.name == "launch.sh"))
    note = [n for n in res.notes if n.startswith("memory:")]
    assert note and "p10-p90" in note[0] and "P(OOM)" in note[0]
    # one way to print a probability everywhere: never "0 %" (a certainty 72 published runs cannot give)
    shown = U.format_probability(p.fit.oom_probability)
    assert f"P(OOM) {shown}" in text and f"P(OOM) {shown}" in note[0]


def test_probabilities_are_never_printed_as_certainties():
    assert U.format_probability(0.0) == "<1%" and U.format_probability(0.004) == "<1%"
    assert U.format_probability(1.0) == ">99%" and U.format_probability(0.996) == ">99%"
    assert U.format_probability(0.25) == "25%"


def test_memory_ratio_is_like_for_like_and_censored_by_the_card():
    import fit_corpus

    # an nvidia-smi reading: measured / predicted
    assert fit_corpus.memory_log_ratio(40.0, 36.0, 80.0) == pytest.approx(math.log(40 / 36), abs=1e-6)
    # a max_memory_reserved reading gets what it cannot see (CUDA context + NCCL), as reserved_gib counts it
    assert fit_corpus.memory_log_ratio(40.0, 36.0, 80.0, 1.5) == pytest.approx(math.log(41.5 / 36), abs=1e-6)
    # censored: a reading at the card's capacity, or a run predicted at or above it (its reading is capped)
    assert fit_corpus.memory_log_ratio(79.0, 70.0, 80.0) is None
    assert fit_corpus.memory_log_ratio(50.0, 503.0, 80.0) is None
    assert fit_corpus.memory_log_ratio(None, 30.0, 80.0) is None
    # the corpus: ms-swift rows read the allocator's reserve, the others do not
    rows = {e["raw"]["id"]: e for e in fit_corpus.load()}
    assert fit_corpus.reads_allocator_reserve(rows["swift-lora-7b-1gpu"]["raw"])
    assert not fit_corpus.reads_allocator_reserve(rows["qwen1-7b-lora-2048"]["raw"])


def test_memory_interval_data_has_no_censored_rows():
    import fit_corpus

    res = json.loads((ROOT / "benchmarks" / "results" / "fit_corpus.json").read_text(encoding="utf-8"))
    for r in res["rows"]:
        if r["log_ratio"] is not None:
            assert r["predicted_gib"] < fit_corpus.AT_CAPACITY * r["usable_gib"]
            assert r["measured_gib"] < fit_corpus.AT_CAPACITY * r["usable_gib"]
    d = U.load_data()["memory"]
    assert d["rows"] == sum(1 for r in res["rows"] if r["log_ratio"] is not None and not r["frozen"])


def test_rl_memory_figures_carry_their_ranges(capsys):
    """memory --rl: the binding peak, the step time and the hours show p10-p90 and P(OOM) like every other figure
    (issue 26; they showed none)."""
    from trainfit.cli import main

    assert main(["memory", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--gpu", "H800", "--steps", "100",
                 "--json"]) == 0
    rl = json.loads(capsys.readouterr().out)["rl"]
    rng = rl["peak_interval_gib"]
    assert rng == pytest.approx(U.memory_range(rl["peak_gib"]), rel=1e-4) and rng["p10"] < rl["peak_gib"] < rng["p90"]
    iv = U.Interval.from_dict(rl["speed"]["interval"])
    assert iv.out_of_domain  # no published RL run
    hrs = rl["time"]["intervals"]["hours"]
    assert hrs["p10"] < rl["time"]["hours"] < hrs["p90"]
    assert main(["memory", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--gpu", "H800", "--steps", "100"]) == 0
    out = capsys.readouterr().out
    assert f"(p10–p90 {rng['p10']:.1f}–{rng['p90']:.1f}" in out and "P(OOM)" in out
    assert f"h ({hrs['p10']:,.1f}–{hrs['p90']:,.1f})" in out


def test_fit_corpus_reads_gpus_outside_the_catalog_by_their_stated_memory():
    import fit_corpus

    rows = {e["raw"]["id"]: e for e in fit_corpus.load()}
    r = rows["llamafactory-5977-llama3-8b-zero3-8x3090"]
    assert r["usable_gib"] == pytest.approx(23.68) and r["gpu"] == "RTX-3090"
    # a catalog GPU still comes from the catalog
    assert rows["llamafactory-8642-qwen3-32b-zero2-8xh200"]["gpu"] == "H200-SXM"


def test_fit_suggestions_carry_their_memory_range(capsys):
    """The changes memory suggests are memory figures too: each shows its p10-p90 (JSON, table, page)."""
    from trainfit.cli import main

    args = ["memory", "Qwen3-8B", "--method", "full", "--gpus", "8", "--strategy", "fsdp", "--seq-len", "32768",
            "--gpu", "H100", "--attention", "flash"]
    assert main(args + ["--json"]) == 0
    sugg = json.loads(capsys.readouterr().out)["suggestions"]
    assert sugg and all(s["reserved_interval_gib"] == U.memory_range(s["reserved_gib"]) or
                        s["reserved_interval_gib"] == pytest.approx(U.memory_range(s["reserved_gib"]), rel=1e-3)
                        for s in sugg)
    assert main(args) == 0
    out = capsys.readouterr().out
    r = sugg[0]["reserved_interval_gib"]
    assert f"{sugg[0]['reserved_gib']:.1f} GiB ({r['p10']:.1f}–{r['p90']:.1f})" in out


def _intervals_module():
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("trainfit_bench_intervals", root / "benchmarks" / "intervals.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.pop(0)


def test_speed_groups_carry_a_new_sources_offset():
    """A group of runs from one source that agree closely must still get an interval as wide as the spread between
    sources (a user's run is a new source): the quadrature term, not the group's own scatter, sets it."""
    iv = _intervals_module()
    reg = {"family": "hf", "arch": "dense", "par": "dp", "seq": "seq2k-8k", "gbs": "gbs<=32"}
    rows = [{"source": "a", "log_ratio": 0.001 * i, "regime": reg} for i in range(10)]
    rows += [{"source": s, "log_ratio": off, "regime": {**reg, "par": "shard"}}
             for s, off in (("b", 0.2), ("c", -0.2), ("d", 0.1), ("e", -0.1))]
    tau = iv.source_offset_spread(rows)
    assert tau > 0.1
    groups, _ = iv.speed_groups(rows)
    g = next(v for k, v in groups.items() if "dp" in k and v["sources"] == 1)
    assert math.log(g["p90"] / g["p50"]) >= iv.Z90 * tau - 1e-3
    assert math.log(g["p50"] / g["p10"]) >= iv.Z90 * tau - 1e-3
    assert iv.with_source_offset(g, 0.0) == g


def test_each_publisher_weighs_the_same_in_a_group():
    """Ten runs of one publisher must not outvote two of another: the group's median sits between the two
    publishers' levels, and two sources of one publisher count as one witness for the usable-group rule."""
    iv = _intervals_module()
    reg = {"family": "megatron", "arch": "dense", "par": "zero", "seq": "seq2k-8k", "gbs": "gbs33-512"}
    rows = [{"source": f"a{i % 2}", "publisher": "A", "log_ratio": 0.0, "regime": reg} for i in range(10)]
    rows += [{"source": "b", "publisher": "B", "log_ratio": 0.4, "regime": reg} for _ in range(2)]
    g = iv.group_stats([r["log_ratio"] for r in rows], {r["source"] for r in rows}, {r["publisher"] for r in rows},
                       iv.publisher_weights(rows))
    unweighted = iv.group_stats([r["log_ratio"] for r in rows], {r["source"] for r in rows})
    assert unweighted["p50"] == 1.0 and 1.05 < g["p50"] < math.exp(0.4)
    assert g["sources"] == 3 and g["publishers"] == 2
    one_pub = {"all": {"p10": 0.9, "p50": 1.0, "p90": 1.1, "rows": 10, "sources": 2, "publishers": 1}}
    got = U.interval_from_groups({}, one_pub, None, min_rows=8, min_sources=2)
    assert got.group == "none"  # two sources of one publisher: not enough
    assert U.interval_from_groups({}, {"all": {**one_pub["all"], "publishers": 2}}, None, min_rows=8,
                                  min_sources=2).group == "all"


def test_weighted_quantile_matches_the_plain_one_on_equal_weights():
    iv = _intervals_module()
    xs = [0.3, -0.1, 0.0, 0.2, 0.5]
    assert iv.weighted_quantile(xs, [1.0] * 5, 0.5) == 0.2
    assert iv.weighted_quantile(xs, [1.0] * 5, 0.0) == -0.1 and iv.weighted_quantile(xs, [1.0] * 5, 1.0) == 0.5
    # doubling one value's weight moves the median towards it
    assert iv.weighted_quantile(xs, [1, 1, 1, 1, 4], 0.5) > 0.2


def test_a_gpu_generation_no_calibration_run_used_is_outside_the_domain():
    reg, g, dom = _groups()
    dom = {**dom, "gpu_class": ["ampere", "hopper"]}
    seen = U.interval_from_groups(dict(reg, gpu_class="hopper"), g, dom, min_rows=8, min_sources=2, widen_out=2.0)
    unseen = U.interval_from_groups(dict(reg, gpu_class="ada"), g, dom, min_rows=8, min_sources=2, widen_out=2.0)
    assert not seen.out_of_domain and unseen.out_of_domain and "ada GPUs" in unseen.note
    assert unseen.p90 / unseen.p10 > seen.p90 / seen.p10
    # the packaged data records the generations measured, and an Ada card is outside them
    assert "ada" not in U.load_data()["speed"]["domain"]["gpu_class"]
    m, wl = get_model("Qwen3-8B"), _wl(strategy="zero2", method="lora", gpus=1, gpus_per_node=1)
    assert U.speed_interval(m, wl, None, "ada").out_of_domain
    assert U.speed_interval(m, wl, None, "hopper").group == U.speed_interval(m, wl, None).group


def test_speed_groups_used_have_enough_publishers_to_show_a_spread():
    import intervals as I

    d = U.load_data()["speed"]
    assert d["min_sources"] == I.MIN_SOURCES >= 3
    res = json.loads((ROOT / "benchmarks" / "results" / "intervals.json").read_text(encoding="utf-8"))
    assert set(res["publisher_threshold_trial"]) == {str(m) for m in I.PUBLISHER_THRESHOLDS}
    for row in res["speed_frozen_rows"]:
        assert d["groups"][row["group"]]["publishers"] >= I.MIN_SOURCES, row


def test_probability_band_trial_scores_the_bands_it_states():
    """The P(OOM)-only verdict trial of benchmarks/fit_corpus.py: edges as stated, each split scored on its own rows."""
    import fit_corpus
    from trainfit.estimate.fit import OOM_RISK_LIMIT

    rows = [{"frozen": False, "oom_probability": 0.1, "outcome": "fits", "verdict": "fits"},
            {"frozen": False, "oom_probability": 0.3, "outcome": "oom", "verdict": "fits"},
            {"frozen": False, "oom_probability": 0.7, "outcome": "oom", "verdict": "oom"},
            {"frozen": False, "oom_probability": 0.6, "outcome": "fits", "verdict": "tight"},
            {"frozen": True, "oom_probability": 0.5, "outcome": "oom", "verdict": "oom"},
            {"frozen": True, "oom_probability": None, "outcome": "oom", "verdict": "oom"}]
    t = fit_corpus.probability_band_trial(rows)
    assert t["edges"]["tight_from"] == OOM_RISK_LIMIT and t["edges"]["oom_from"] == 0.5
    assert 0.5 < t["edges"]["even_odds_share_of_card"] < 1.5
    c, f = t["calibration"], t["frozen"]
    assert (c["reports"], c["tight"], c["verdict_changed"]) == (4, 1, 2)
    assert c["agreement_pct"] == 50.0 and c["agreement_with_tight_pct"] == 75.0
    assert c["margin_rule_agreement_pct"] == 50.0
    assert (f["reports"], f["agreement_pct"]) == (1, 100.0)
