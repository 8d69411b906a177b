"""Key verdicts of docs/claims.md (benchmarks/claims.py), through the CLI and the script's evaluators in-process."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from trainfit.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def claims_mod():
    spec = importlib.util.spec_from_file_location("trainfit_claims_script", ROOT / "benchmarks" / "claims.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


@pytest.fixture
def evaluate(claims_mod):
    facts = claims_mod.FACTS_MD.read_text(encoding="utf-8") if claims_mod.FACTS_MD.exists() else ""
    runner = claims_mod.Runner(inprocess=True)
    return lambda cid: claims_mod.evaluate(cid, runner, facts)


def _json(capsys, argv):
    rc = main(argv)
    return rc, json.loads(capsys.readouterr().out)


def test_c1_qwen3_4b_lora_fits_an_a10(capsys, evaluate):
    rc, d = _json(capsys, ["memory", "Qwen3-4B", "--method", "lora", "--gpu", "A10", "--json"])
    assert rc == 0 and d["fits"] is True and d["reserved_gib"] <= d["gpu_mem_gib"]
    r = evaluate("C1")
    assert r.verdict == "true" and not r.errors
    assert len(r.commands) == 12


def test_c6_14b_full_zero2_on_two_a100_does_not_fit(capsys, evaluate):
    rc, d = _json(capsys, ["memory", "Qwen3-14B", "--method", "full", "--gpus", "2", "--strategy", "zero2",
                           "--gpu", "A100-80GB", "--json"])
    assert rc == 0 and d["fits"] is False and d["reserved_gib"] > 80
    r = evaluate("C6")
    assert r.verdict == "false"
    assert "does not fit" in r.why and "ml.gn8v.4xlarge" in r.why


def test_c22_torchrun_is_allowed(capsys, evaluate):
    rc, rules = _json(capsys, ["catalog", "rules", "--claim", "C22", "--json"])
    assert rc == 0
    by_id = {r["id"]: r for r in rules}
    assert by_id["torchrun-allowed-on-dlc"]["verdict"] == "false"
    assert "torchrun is supported" in by_id["torchrun-allowed-on-dlc"]["title"]
    r = evaluate("C22")
    assert r.verdict == "false" and r.sources


def test_c11_there_is_no_qwen3_72b_and_32b_full_needs_offload(capsys, evaluate):
    rc, d = _json(capsys, ["memory", "Qwen3-72B", "--json"])
    assert rc == 2 and d["error"]["code"] == "unknown-model"
    r = evaluate("C11")
    assert r.verdict == "partly"
    assert "no Qwen3-72B" in r.why and "offload" in r.why and not r.errors


def test_c13_amp_adds_memory_gc_removes_it(evaluate):
    r = evaluate("C13")
    assert r.verdict in ("partly", "false")
    assert "AMP adds memory" in r.why


def test_c15_offload_slower_than_claimed(evaluate):
    r = evaluate("C15")
    assert r.verdict == "false" and "slower" in r.why


def test_platform_claims_follow_the_rules(evaluate):
    assert evaluate("C20").verdict == "true"
    assert evaluate("C21").verdict == "false"
    assert evaluate("C19").verdict == "not checkable"  # the rule says "unverified"
    assert evaluate("C26").verdict == "not checkable"  # no rule at all


def test_instance_names(claims_mod, capsys):
    rc, insts = _json(capsys, ["catalog", "show", "instances", "--json"])
    names = {i["instance_type"] for i in insts}
    assert "ml.gn7i.2xlarge" not in names and "ecs.gn7i-c8g1.2xlarge" in names
    text = ("- `ml.gu7xf.8xlarge-gu108`: **real** (example).\n"
            "- `ml.gx8xf.8xlarge-gu108`, `ml.gx8xf.16xlarge-gu108`: **not found** (0 hits).\n"
            "| `ml.gu7xf.8xlarge-gu108` | table row |\n")
    assert claims_mod.facts_status(text, "ml.gu7xf.8xlarge-gu108")[0] == "real"
    assert claims_mod.facts_status(text, "ml.gx8xf.16xlarge-gu108")[0] == "not found"
    assert claims_mod.facts_status(text, "ml.gn8v.4xlarge")[0] == "absent"


def test_parse_claims_and_render(claims_mod):
    text = ("## head\n- C1. first claim\n  continued here.\n- C2. second\n\n## next\n- C3. third (note)\n")
    claims = claims_mod.parse_claims(text)
    assert claims == {"C1": "first claim continued here.", "C2": "second", "C3": "third (note)"}
    res = [claims_mod.Result("C1", "true", "fits | ok", commands=["trainfit memory X --json"], facts=["a"])]
    md = claims_mod.render(res, claims, "0.0")
    assert "| [C1](#c1) first claim continued here. | **true** | fits \\| ok |" in md
    assert "```console\ntrainfit memory X --json\n```" in md
