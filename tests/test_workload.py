import pytest

from trainfit.errors import WorkloadError
from trainfit.workload import Workload


def test_defaults_follow_the_frameworks():
    w = Workload()
    assert w.grad_ckpt and w.attention == "sdpa" and w.lora_targets == ("all-linear",)


def test_frozen():
    with pytest.raises(Exception):
        Workload().seq_len = 5  # type: ignore[misc]


@pytest.mark.parametrize("kw,msg", [
    ({"method": "ful"}, "did you mean full"),
    ({"seq_len": 0}, ">= 1"),
    ({"gpus": 12, "gpus_per_node": 8}, "whole nodes"),
    ({"gpus": 8, "tp": 3}, "not divisible"),
    ({"offload": "optimizer"}, "sharded strategy"),
    ({"gpus": 8, "strategy": "zero2", "offload": "all"}, "ZeRO-3 or FSDP"),
    ({"lora_targets": ()}, "empty"),
    ({"micro_batch": True}, "integer"),
])
def test_validation(kw, msg):
    with pytest.raises(WorkloadError) as e:
        Workload(**kw)
    assert msg in (e.value.message + " " + (e.value.fix or ""))


def test_derived():
    w = Workload(gpus=16, gpus_per_node=8, tp=2, micro_batch=2, grad_accum=4)
    assert w.dp == 8 and w.nodes == 2 and w.global_batch == 64
    assert Workload(lora_targets="q_proj, v_proj").lora_targets == ("q_proj", "v_proj")
