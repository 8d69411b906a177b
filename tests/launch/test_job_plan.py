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
