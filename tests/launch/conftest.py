"""Rendered job folders shared by the render and check tests (rendered once per session)."""

from __future__ import annotations

import pytest

from trainfit.models import get_model
from trainfit.launch import build_context, render, write
from trainfit.workload import Workload

LINGJUN_VPC = {"VpcId": "vpc-test", "SwitchId": "vsw-test", "SecurityGroupId": "sg-test"}

SCENARIOS = {
    # Qwen3-8B LoRA on one A10 (24 GiB), spot, general ECS.
    "lora1": dict(model="Qwen3-8B", wl=dict(method="lora", gpus=1, gpus_per_node=1, seq_len=2048, micro_batch=1,
                                             grad_accum=16),
                  kw=dict(instance_type="ecs.gn7i-c8g1.2xlarge", spot=True, checkpoint_uri="oss://bkt/ckpt/")),
    # Qwen3-30B-A3B full, ZeRO-3, 2 Lingjun nodes x 8 GPUs, spot; transformers 5 grouped_mm experts.
    "zero3": dict(model="Qwen3-30B-A3B", wl=dict(method="full", gpus=16, gpus_per_node=8, strategy="zero3",
                                                  seq_len=4096, micro_batch=1, grad_accum=4, experts_impl="grouped_mm"),
                  kw=dict(instance_type="ml.gu7xf.8xlarge-gu108", gpu="H800", spot=True, vpc=LINGJUN_VPC,
                          checkpoint_uri="oss://bkt/ckpt/")),
    # Qwen3-30B-A3B full with Megatron (tp 2, ep 4, distributed optimizer) on Lingjun, on-demand with a quota.
    # (Experts are not tensor-parallel under ms-swift's default expert TP 1: without the distributed optimizer
    # each rank would keep 12 B of optimizer state for 7.3B expert parameters and not fit 80 GB.)
    "megatron": dict(model="Qwen3-30B-A3B", wl=dict(method="full", gpus=16, gpus_per_node=8, tp=2, ep=4, strategy="zero1",
                                                     seq_len=4096, micro_batch=1, grad_accum=8),
                     kw=dict(instance_type="ml.gu7xf.8xlarge-gu108", gpu="H800", resource_id="quota-test",
                             vpc=LINGJUN_VPC, checkpoint_uri="oss://bkt/ckpt/")),
    # Qwen3-8B QLoRA, ZeRO-2 + optimizer offload on 2 x 2 GPUs, fp16, not spot.
    "qlora": dict(model="Qwen3-8B", wl=dict(method="qlora", gpus=4, gpus_per_node=2, strategy="zero2",
                                             offload="optimizer", precision="fp16", micro_batch=2, grad_accum=2),
                  kw=dict(gpu="L20", resource_id="quota-x", checkpoint_uri="oss://bkt/ckpt/")),
}


def make_plan(name: str):
    from trainfit.service import plan_for

    sc = SCENARIOS[name]
    kw = sc["kw"]
    return plan_for(get_model(sc["model"]), Workload(**sc["wl"]), gpu=kw.get("gpu"),
                    instance_type=kw.get("instance_type"), spot=kw.get("spot", False), tokens=kw.get("tokens"))


def make_ctx(name: str):
    from trainfit.launch import RenderOptions

    kw = {k: v for k, v in SCENARIOS[name]["kw"].items() if k not in ("gpu", "instance_type", "spot", "tokens")}
    return build_context(make_plan(name), RenderOptions(**kw))


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """name -> (folder, RenderResult) for every scenario, all targets that apply."""
    out = {}
    for name in SCENARIOS:
        res = render(make_ctx(name), "all")
        d = tmp_path_factory.mktemp(name)
        write(res, d)
        out[name] = (d, res)
    return out
