"""Issue 25, "the job trains what the plan assumed": model kernels, precision mode, checkpoint interval."""

from __future__ import annotations

import subprocess

import pytest

from trainfit.launch import RenderOptions
from trainfit.models import get_model
from trainfit.service import plan_for, render_plan
from trainfit.workload import Workload


def _render(model: str, wl: Workload, targets: str, **kw):
    p = plan_for(get_model(model), wl, instance_type=kw.pop("instance_type", "generic-8xH100"), tokens=1e8, **kw)
    return render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), targets)


@pytest.mark.parametrize("model,wants", [("Qwen3-Next-80B-A3B", True), ("Qwen3-8B", False)])
def test_qwen3_next_jobs_install_the_linear_attention_kernels(model, wants):
    res = _render(model, Workload(method="lora", gpus=8), "swift,torchrun,llamafactory")
    for name in ("swift_sft.sh", "launch.sh"):
        text = res.files[name]
        assert ("pip install -q flash-linear-attention" in text) is wants, name
        assert ("pip install -q --no-build-isolation causal-conv1d" in text) is wants, name
        assert ("import fla" in text) is wants
        subprocess.run(["bash", "-n"], input=text, text=True, check=True)  # still a valid script
    assert ("flash-linear-attention causal-conv1d" in res.files["llamafactory.yaml"]) is wants


@pytest.mark.parametrize("wl,mode,warns", [
    (dict(method="full", strategy="ddp"), "pure bf16", True),
    (dict(method="full", strategy="fsdp"), "pure bf16", True),
    (dict(method="full", strategy="zero2"), "fp32 master", False),
    (dict(method="full", strategy="ddp", precision="amp-bf16"), "fp32 AMP", False),
    (dict(method="lora", strategy="ddp"), "fp32 adapters", False),
    (dict(method="full", strategy="zero1", tp=2), "fp32 master", False),
])
def test_precision_mode_is_the_memory_models_and_render_warns_where_it_changes_numerics(wl, mode, warns):
    from trainfit.estimate.memory import estimate_memory
    from trainfit.estimate.states import precision_mode

    w = Workload(gpus=8, **wl)
    assert precision_mode(w) == mode
    p = plan_for(get_model("Qwen3-8B"), w, instance_type="generic-8xH100", tokens=1e8)
    assert p.to_dict()["settings"]["precision_mode"] == mode
    res = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "all")
    assert any(x.startswith("pure bf16") for x in res.warnings) is warns
    if mode == "pure bf16":  # the mode is what memory sizes: an fp32 master copy costs more optimizer memory
        amp = estimate_memory(get_model("Qwen3-8B"), w.with_(precision="amp-bf16"))
        assert amp.breakdown_gib["optimizer"] > p.memory.breakdown_gib["optimizer"]


def test_plan_table_has_a_precision_column(capsys):
    from trainfit.cli import main

    assert main(["plan", "Qwen3-1.7B", "--method", "full", "--tokens", "1B", "--gpu", "H100", "--strategy", "ddp",
                 "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and "pure bf16" in out


def test_checkpoint_interval_is_young_daly_of_the_checkpoint_size_and_interruption_rate():
    """On demand: sqrt(2 C / lambda) with C = trainable params x 16 B / (nodes x 1 GB/s) and lambda = nodes x the
    Llama 3 failure rate (419 unexpected interruptions in 54 days on 2,048 nodes), in steps of the plan's step time;
    not a fixed 200 steps."""
    import math

    from trainfit.launch import build_context

    rate = 419 / (54 * 24 * 2048)
    got = {}
    for method, nodes in (("full", 1), ("full", 2), ("lora", 1)):
        p = plan_for(get_model("Qwen3-8B"), Workload(method=method, gpus=8 * nodes, strategy="zero3", grad_accum=4),
                     instance_type="generic-8xH100", tokens=2e10)
        write_h = p.memory.params.trainable * 16 / 1e9 / nodes / 3600
        hours = math.sqrt(2 * write_h / (rate * nodes))
        ctx = build_context(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"))
        want = min(ctx.max_steps, max(1, int(hours * 3600 / p.step_seconds)))
        assert ctx.save_steps == want != 200, (method, nodes, ctx.save_steps, want)
        assert "Young/Daly" in ctx.save_reason and f"--save_steps {want}" in render_plan(
            p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "swift").files["swift_sft.sh"].replace("'", "")
        got[(method, nodes)] = hours
    assert got[("lora", 1)] < got[("full", 1)]  # a smaller checkpoint is cheaper to write: save more often
    assert got[("full", 2)] == pytest.approx(got[("full", 1)] / 2)  # half the write time, twice the failures
    # spot: the plan's own interval (Young/Daly at the spot reclaim rate), and --save-steps still wins
    p = plan_for(get_model("Qwen3-8B"), Workload(method="full", gpus=8, strategy="zero3", grad_accum=4),
                 instance_type="generic-8xH100", tokens=2e10)
    from dataclasses import replace

    spot = replace(p, time_cost=replace(p.time_cost, spot=True, checkpoint_interval_hours=0.5))
    assert build_context(spot).save_steps == int(0.5 * 3600 / p.step_seconds)
    assert build_context(spot, RenderOptions(save_steps=77)).save_steps == 77


def test_render_without_a_plan_file_aims_at_the_planners_global_batch(tmp_path, capsys):
    from trainfit.cli import main
    from trainfit.plan.batch import default_global_batch

    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "--tokens", "1B", "--target", "swift",
                 "--out", str(tmp_path / "a")]) == 0
    text = (tmp_path / "a" / "swift_sft.sh").read_text()
    gb = default_global_batch("lora", 2048, 1e9)
    assert f"--gradient_accumulation_steps {gb}" in text.replace("'", "") and gb > 1
    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "--tokens", "1B", "--target", "swift",
                 "--grad-accum", "3", "--out", str(tmp_path / "b")]) == 0  # --grad-accum still pins it
    assert "--gradient_accumulation_steps 3" in (tmp_path / "b" / "swift_sft.sh").read_text().replace("'", "")
