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
