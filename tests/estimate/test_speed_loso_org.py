"""Leave-one-publisher-out and the per-publisher source weights of benchmarks/speed_loso.py."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest
import yaml

from trainfit.estimate import engines

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import speed_loso  # noqa: E402


@pytest.fixture(scope="module")
def loaded():
    return speed_loso.load()


@pytest.fixture
def three_publishers(loaded, monkeypatch):
    """Eight native-engine rows relabelled as four sources of three publishers: A (two sources, run at GEMM
    efficiency 0.35), B and C (one source each, at 0.6). Only ``gemm_eff_native`` is fitted, so folds are quick."""
    monkeypatch.setattr(engines, "FIT_FIELDS", ("gemm_eff_native",))
    native = [r for r in loaded[1] if r.feat.family == "native" and not r.feat.fp8][:8]
    assert len(native) == 8
    labels = [("A1", "A"), ("A1", "A"), ("A2", "A"), ("A2", "A"), ("B1", "B"), ("B1", "B"), ("C1", "C"), ("C1", "C")]
    rows = []
    for r, (src, pub) in zip(native, labels):
        truth = engines.PRIORS.with_(gemm_eff_native=0.35 if pub == "A" else 0.6)
        rows.append(dataclasses.replace(r, source=src, publisher=pub, measured=speed_loso.predict(r, truth)))
    return rows


def _by_id(errs):
    return {(e["source"], e["id"]): e["error_pct"] for e in errs}


@pytest.mark.parametrize("weighting", ["source", "publisher"])
def test_leave_one_publisher_out_holds_out_sibling_sources(three_publishers, weighting):
    loso = _by_id(speed_loso.hold_out(three_publishers, lambda r: r.source, weighting, restarts=1)[0])
    lopo_errs, per_pub, _ = speed_loso.hold_out(three_publishers, lambda r: r.publisher, weighting, restarts=1)
    lopo = _by_id(lopo_errs)
    assert set(per_pub) == {"A", "B", "C"} and per_pub["A"]["sources"] == ["A1", "A2"]
    a = [k for k in loso if k[0].startswith("A")]
    # With A2 in the fit, A1 is predicted near A's own efficiency; without any A source it is predicted at B/C's.
    for k in a:
        assert abs(lopo[k]) > abs(loso[k]) + 10, (k, loso[k], lopo[k])
    at_bc = engines.PRIORS.with_(gemm_eff_native=0.6)
    for r in three_publishers:
        if r.publisher == "A":  # predicted (nearly) as B and C run
            assert lopo[(r.source, r.id)] == pytest.approx(100 * (speed_loso.predict(r, at_bc) / r.measured - 1), abs=2)
    # A publisher with one source has the same fold either way.
    for k in loso:
        if not k[0].startswith("A"):
            assert lopo[k] == pytest.approx(loso[k], abs=0.05), k


def test_source_weights_sum_as_stated(three_publishers):
    rows = three_publishers + [dataclasses.replace(three_publishers[0], id="extra")]  # row counts do not matter
    for w in speed_loso.WEIGHTINGS:
        ws = speed_loso.source_weights(rows, w)
        assert set(ws) == {"A1", "A2", "B1", "C1"}
        assert sum(ws.values()) == pytest.approx(1.0, abs=1e-12)
    eq = speed_loso.source_weights(rows, "source")
    assert all(v == pytest.approx(0.25) for v in eq.values())
    pub = speed_loso.source_weights(rows, "publisher")
    assert pub["A1"] + pub["A2"] == pytest.approx(1 / 3) and pub["B1"] == pytest.approx(1 / 3)
    sq = speed_loso.source_weights(rows, "sqrt")
    assert sq["A1"] / sq["B1"] == pytest.approx(1 / math.sqrt(2))
    with pytest.raises(ValueError):
        speed_loso.source_weights(rows, "rows")


def test_weighting_reaches_the_fit(three_publishers):
    """Per-publisher weights pull the all-sources fit towards the single-source publishers B and C."""
    by_source = speed_loso.fit(three_publishers, restarts=1, weighting="source").gemm_eff_native
    by_publisher = speed_loso.fit(three_publishers, restarts=1, weighting="publisher").gemm_eff_native
    assert 0.35 < by_source < by_publisher < 0.6
    assert by_publisher - by_source > 0.02


def test_pick_weighting_follows_the_stated_rule():
    def cand(score, loso_median):
        return {"score_mean_publisher_median_pct": score, "loso": {"median_abs_error_pct": loso_median}}

    assert speed_loso.pick_weighting({"source": cand(12.0, 5.0), "sqrt": cand(10.5, 9.0),
                                      "publisher": cand(10.0, 8.0)}) == "publisher"  # within 1 pp: LOSO decides
    assert speed_loso.pick_weighting({"source": cand(11.8, 5.0), "sqrt": cand(10.9, 7.0),
                                      "publisher": cand(11.5, 6.0)}) == "publisher"  # only the best two compete
    assert speed_loso.pick_weighting({"source": cand(9.0, 9.0), "sqrt": cand(10.5, 5.0),
                                      "publisher": cand(11.0, 4.0)}) == "source"  # 1.5 pp ahead: score decides


def test_publisher_table_covers_the_data(loaded):
    data, rows = loaded
    table = speed_loso.publisher_table()
    known_words = {w.split()[0].lower() for w in list(table) + list(table.values())}
    for name, src in data["sources"].items():
        org = src["org"]
        if org not in table:  # its own publisher: must not be a new spelling of a known one
            assert org.split()[0].lower() not in known_words, (name, org)
    pub = {s: speed_loso.publisher_of(data, s, table) for s in data["sources"]}
    assert {pub[s] for s in pub if s.startswith("dgxc-")} == {"NVIDIA"}
    assert pub["moe-modelzoo"] == pub["nemo-pretrain-2412"] == "NVIDIA"
    assert pub["ibm-fms-fsdp"] == pub["ibm-fms-acceleration"]
    assert pub["xtuner-megatron-h800"] == pub["xtuner-v01-a100"]
    assert {r.publisher for r in rows} <= set(pub.values())
    raw = yaml.safe_load((ROOT / "benchmarks" / "data" / "publishers.yaml").read_text(encoding="utf-8"))
    assert set(raw) == {"orgs"}


def test_one_source_publishers_reuse_their_source_fold(three_publishers, monkeypatch):
    """The fold cache fits a one-source publisher's fold once (it is that source's LOSO fold: same rows)."""
    calls = []
    real_fit = speed_loso.fit
    monkeypatch.setattr(speed_loso, "fit", lambda train, **kw: calls.append(len(train)) or real_fit(train, **kw))
    cache: dict = {}
    speed_loso.hold_out(three_publishers, lambda r: r.source, "source", 1, cache)
    assert len(calls) == 4
    speed_loso.hold_out(three_publishers, lambda r: r.publisher, "source", 1, cache)
    assert calls[4:] == [4]  # only publisher A (two sources, 4 rows held out) is a new fold


def test_a_row_loads_without_its_source_table():
    """first_contact.py hands the predictor one row with only its model and GPU tables: the publisher falls back to
    the source's name instead of failing (it did: every 'now' prediction came back as KeyError('sources'))."""
    data = speed_loso.load_data() if hasattr(speed_loso, "load_data") else yaml.safe_load(
        (Path(speed_loso.__file__).parent / "data" / "throughput.yaml").read_text(encoding="utf-8"))
    r = next(x for x in data["rows"] if x["source"] == "llm-foundry")
    (row,) = speed_loso.load_rows({"models": {r["model"]: data["models"][r["model"]]}, "gpus": data.get("gpus")}, [r])
    assert row.publisher == "llm-foundry" and speed_loso.predict(row, engines.DEFAULT_CONSTANTS) > 0
    assert speed_loso.publisher_of(data, "llm-foundry") != "llm-foundry"
