"""docs/claims.md and benchmarks/results/claims.json are current (regenerated in-process and compared), and key
verdicts of benchmarks/claims.py, through the CLI and the script's evaluators in-process."""

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
    assert rc == 0 and d["verdict"] == "fits" and d["fits"] is True and d["reserved_gib"] <= d["gpu_mem_gib"]
    r = evaluate("C1")
    assert r.verdict == "true" and not r.errors
    assert len(r.commands) == 12


def test_c6_14b_full_zero2_on_two_a100_does_not_fit(capsys, evaluate):
    rc, d = _json(capsys, ["memory", "Qwen3-14B", "--method", "full", "--gpus", "2", "--strategy", "zero2",
                           "--gpu", "A100-80GB", "--json"])
    assert rc == 1 and d["verdict"] == "oom" and d["fits"] is False and d["reserved_gib"] > 80  # exit 1: oom
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


def test_c15_offload_slowdown_at_the_planned_global_batch(evaluate):
    """At the planner's global batch (about 0.5M tokens per step, 16 accumulated micro-batches here) the CPU Adam
    step of offload is amortised: the slowdown is near the claimed 40%, not the 76% of one micro-batch per step."""
    r = evaluate("C15")
    assert r.verdict in ("true", "partly") and "slower" in r.why and "global batch" in r.why


def test_platform_claims_follow_the_rules(evaluate):
    assert evaluate("C20").verdict == "true"
    assert evaluate("C21").verdict == "false"
    assert evaluate("C19").verdict == "not checkable"  # the rule says "unverified"
    assert evaluate("C23").verdict == "partly"  # the rule says up to 90%, not 70%


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


# ---- the generated document is current -----------------------------------------------------------------------


def _without_date(text: str) -> list[str]:
    """The document minus its "Generated by ... on DATE with trainfit VERSION" line."""
    return [line for line in text.splitlines() if not line.startswith("Generated by `python benchmarks/claims.py`")]


@pytest.fixture(scope="module")
def regenerated(claims_mod):
    """Every claim evaluated in-process against the bundled catalog (a few seconds)."""
    from trainfit import __version__

    claims = claims_mod.parse_claims(claims_mod.CLAIMS_MD.read_text(encoding="utf-8"))
    facts = claims_mod.FACTS_MD.read_text(encoding="utf-8") if claims_mod.FACTS_MD.exists() else ""
    with claims_mod.isolated_catalog():
        results = claims_mod.run_all(claims_mod.Runner(inprocess=True), claims, facts)
    return results, claims_mod.render(results, claims, __version__), claims_mod.digest(results, __version__)


def test_docs_claims_md_is_current(regenerated, claims_mod):
    results, md, _ = regenerated
    assert len(results) == 26
    committed = claims_mod.OUT_MD.read_text(encoding="utf-8")
    new, old = _without_date(md), _without_date(committed)
    diff = [f"line {i}: committed {a!r}\n      now {b!r}" for i, (a, b) in enumerate(zip(old, new)) if a != b]
    assert new == old, ("docs/claims.md is stale: run `python benchmarks/claims.py` and commit it. First "
                        "differences:\n" + "\n".join(diff[:5] or [f"{len(old)} vs {len(new)} lines"]))


def test_claims_json_is_current(regenerated, claims_mod):
    _, _, digest = regenerated
    committed = json.loads(claims_mod.OUT_JSON.read_text(encoding="utf-8"))
    now = json.loads(digest)
    committed.pop("trainfit"), now.pop("trainfit")
    stale = [c["id"] for c, n in zip(committed["claims"], now["claims"]) if c != n]
    assert now == committed, f"benchmarks/results/claims.json is stale for {stale}: rerun benchmarks/claims.py"


def test_every_claim_has_commands_and_no_script_error(regenerated):
    results, _, _ = regenerated
    for r in results:
        assert r.commands, r.id
        assert not r.why.startswith("script error"), (r.id, r.why)


def test_c3_c9_carry_the_precision_caveat(regenerated, claims_mod):
    results, md, _ = regenerated
    by_id = {r.id: r for r in results}
    for cid in ("C3", "C9"):
        r = by_id[cid]
        assert any("--precision bf16" in c for c in r.commands), cid
        assert any("--precision amp-bf16" in c for c in r.commands), cid
        pairs = [f for f in r.facts if "same layout under" in f]
        assert pairs, cid  # the same layout, both precisions, both numbers
        assert cid in claims_mod.CAVEATS and f"## {cid}" in md
    # under pure bf16 a GPU under 80 GB carries Qwen3-30B-A3B on one node; under amp-bf16 it does not
    c9 = by_id["C9"].numbers
    assert c9["bf16"]["smallest_gpu_mem_gib"] < 80 <= c9["amp-bf16"]["smallest_gpu_mem_gib"]
    assert c9["amp-bf16"]["smallest_per_gpu_gib"] > c9["bf16"]["smallest_per_gpu_gib"]


def test_c24_c26_print_evidence(regenerated):
    by_id = {r.id: r for r in regenerated[0]}
    for cid in ("C24", "C25", "C26"):
        r = by_id[cid]
        assert r.commands and r.numbers and not r.errors, cid
    assert by_id["C24"].numbers["alibaba_rows"] > 0
    assert all(v["router_params"] > 0 for v in by_id["C26"].numbers.values())
    assert 0 < by_id["C25"].numbers["Qwen3-8B"]["gpu_busy_fraction"] < 1


def test_spot_consistency_flags_interruptions_per_gpu(claims_mod):
    from trainfit.plan.cost import INTERRUPTION_RATE_PER_NODE_HOUR_DEFAULT as rate

    ctx = claims_mod.Ctx(claims_mod.Runner(inprocess=True), "")
    ok = {"instance_type": "x", "nodes": 2, "hours": 10.0, "expected_interruptions": rate * 2 * 10.0}
    claims_mod.spot_consistency(ctx, ok)
    assert ctx.errors == []
    claims_mod.spot_consistency(ctx, {**ok, "expected_interruptions": rate * 16 * 10.0})
    assert len(ctx.errors) == 1 and "8\u00d7 as many" in ctx.errors[0]


def test_spot_flag_fallback_is_reported(claims_mod):
    """`--spot` as the README writes it; if this trainfit wants a value, the script says so and runs --spot true."""
    ctx = claims_mod.Ctx(claims_mod.Runner(inprocess=True), "")
    d = ctx.plan("Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--gpus", "1", "--spot")
    assert "plans" in d and d["plans"], d.get("error")
    assert d["plans"][0]["spot"] is True
    ran = ctx.commands[-1]
    if ran.endswith("--spot true --json"):
        assert any("--spot" in e for e in ctx.errors)
    else:
        assert not ctx.errors
