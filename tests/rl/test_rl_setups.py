"""Published minimum-GPU GRPO setups fit; clearly infeasible ones do not (benchmarks/data/rl_setups.yaml)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("rl_setups", ROOT / "benchmarks" / "rl_setups.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()
SETUPS = BENCH.load()


def test_setups_have_sources_and_both_kinds():
    published = [s for s in SETUPS if s["expect"] == "fits"]
    assert all(s["source"].startswith("https://") for s in published)
    assert {s["framework"] for s in published} >= {"verl", "ms-swift"}
    assert {s["workload"]["method"] for s in published} >= {"full", "lora"}
    assert any(s["expect"] == "no-fit" for s in SETUPS)


@pytest.mark.parametrize("setup", SETUPS, ids=[s["id"] for s in SETUPS])
def test_prediction_matches_publication(setup):
    r = BENCH.evaluate(setup)
    assert r["verdict"] == setup["expect"], r


def test_table_lists_every_setup():
    rows = [BENCH.evaluate(s) for s in SETUPS[:2]]
    t = BENCH.table(rows)
    assert all(s["id"] in t for s in SETUPS[:2]) and t.count("\n") == 4
