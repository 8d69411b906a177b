"""Issue 26, done-when "Megatron layouts with EP over data x context ranks plan, render and check", through the
CLI as a user runs it: Qwen3-30B-A3B full on 2 nodes x 8 GPUs, TP1 PP1 CP4 EP8 (EP 8 > DP 4, divides DP x CP =
16), --framework megatron; and the 256-GPU TP4/PP8/EP8 layout. `memory`, a pinned `plan`, `render` for every
target that writes Megatron (ms-swift `megatron sft` under swift/torchrun/pytorchjob/skypilot) and `check` on each
rendered file accept the layout and agree on the memory to 0.01 GiB."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from trainfit.check import check_file
from trainfit.cli import main

MEGATRON_TARGETS = ("swift", "torchrun", "pytorchjob", "skypilot")
CASES = {
    "30b-cp4-ep8": ("Qwen3-30B-A3B", ["--gpus", "16", "--gpus-per-node", "8", "--tp", "1", "--pp", "1", "--cp", "4",
                                      "--ep", "8", "--seq-len", "32k"]),
    "235b-256-tp4-pp8-ep8": ("Qwen3-235B-A22B", ["--gpus", "256", "--gpus-per-node", "8", "--tp", "4", "--pp", "8",
                                                 "--ep", "8", "--seq-len", "2048"]),
}
COMMON = ["--method", "full", "--strategy", "zero1", "--micro-batch", "1", "--grad-accum", "8", "--grad-ckpt"]
# grad-accum pinned: with pipeline stages the micro-batches in flight (min(pp, grad_accum)) change the activations


def _json(argv: list[str]) -> tuple[int, dict]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(argv)
    return rc, json.loads(buf.getvalue())


@pytest.mark.parametrize("case", sorted(CASES))
def test_memory_plan_render_check_agree(case, tmp_path):
    model, layout = CASES[case]
    rc, mem = _json(["memory", model, *COMMON, *layout, "--gpu", "H100", "--json"])
    assert rc == 0 and mem["fit"]["verdict"] in ("fits", "tight"), mem.get("fit")
    rc, doc = _json(["plan", model, *COMMON, *layout, "--instance-type", "generic-8xH100", "--tokens", "1B",
                     "--framework", "megatron", "--json"])
    assert doc.get("plans"), doc.get("rejected") or doc.get("error")
    p = doc["plans"][0]
    w = mem["workload"]
    assert {k: p["settings"][k] for k in ("gpus", "tp", "pp", "cp", "ep")} == {k: w[k] for k in
                                                                               ("gpus", "tp", "pp", "cp", "ep")}
    assert p["framework"] == "megatron" and p["per_gpu_gib"] == pytest.approx(mem["reserved_gib"], abs=0.01)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(doc))
    for target in MEGATRON_TARGETS:
        out = tmp_path / target
        with redirect_stdout(io.StringIO()):
            main(["render", "--plan", str(plan_path), "--target", target, "--out", str(out),
                  "--checkpoint-uri", "oss://b/c/"])
        files = [f for f in out.iterdir() if f.name != "README.md"]
        assert files, target
        for f in files:
            r = check_file(f)
            bad = [v.message for v in r.violations if v.severity == "error" or "could not be modelled" in v.message]
            assert not bad, (target, f.name, bad)
            assert r.memory is not None, (target, f.name)
            assert r.memory["reserved_gib"] == pytest.approx(p["per_gpu_gib"], abs=0.01), (target, f.name)


def test_a_layout_megatron_cannot_form_names_its_cause_everywhere(tmp_path):
    """EP 16 with PP 2 on 16 GPUs: a stage has 8 GPUs, so no 16-wide expert group; every command says so (not
    "raise --max-gpus", not a generic refusal), and check calls the file an error (Megatron-Core stops at start)."""
    bad = ["Qwen3-30B-A3B", "--method", "full", "--gpus", "16", "--pp", "2", "--ep", "16", "--strategy", "zero1"]
    for argv in (["memory", *bad, "--gpu", "H100", "--json"],
                 ["plan", *bad, "--tokens", "1B", "--provider", "generic", "--json"]):
        rc, out = _json(argv)
        assert rc != 0 and "pipeline stage" in out["error"]["message"] and "--ep" in out["error"]["message"], out
    model, layout = CASES["30b-cp4-ep8"]
    rc, doc = _json(["plan", model, *COMMON, *layout, "--instance-type", "generic-8xH100", "--tokens", "1B",
                     "--framework", "megatron", "--target", "swift", "--json"])
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    with redirect_stdout(io.StringIO()):
        main(["render", "--plan", str(tmp_path / "plan.json"), "--out", str(tmp_path / "job"),
              "--checkpoint-uri", "oss://b/c/"])
    f = tmp_path / "job" / "swift_sft.sh"
    text = f.read_text()
    assert "--expert_model_parallel_size 8" in text and "--pipeline_model_parallel_size 1" in text
    f.write_text(text.replace("--expert_model_parallel_size 8", "--expert_model_parallel_size 16")
                 .replace("--context_parallel_size 4", "--context_parallel_size 2")
                 .replace("--pipeline_model_parallel_size 1", "--pipeline_model_parallel_size 2"))
    r = check_file(f)
    (v,) = [v for v in r.violations if v.rule == "parallel-layout"]
    assert v.severity == "error" and "pipeline stage" in v.message and not r.ok, v
