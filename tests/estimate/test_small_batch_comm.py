"""Per-step communication costs that weigh most at small global batches (issue 26): the once-per-step data-parallel
window. Expected values follow
from the engines' code paths cited in estimate/comm.py, written out here, not taken from the code under test."""

from __future__ import annotations

import pytest

from trainfit.estimate.comm import Links, dp_terms, hidden_seconds
from trainfit.estimate.speed import Hardware, estimate_speed
from trainfit.models import get_model
from trainfit.workload import Workload

H100 = Hardware(name="H100", gpu_class="hopper", peak_tflops=989, peak_fp8_tflops=1979, mem_gbytes_per_s=3350,
                intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=400, pcie_gbytes_per_s=63)
ONE_NODE = Links(intra=450.0, inter=None, nodes=1, g_node=8, link_eff=0.8)


@pytest.fixture(scope="module")
def q8():
    return get_model("Qwen3-8B")


def test_window_caps_what_a_term_hides():
    # a term that can run only under the last of 4 micro-batches hides at most a quarter of the compute
    assert hidden_seconds([(1.0, 1.0, 0.0, 0.25)], compute_s=2.0, attention_s=0.0) == pytest.approx(0.5)
    assert hidden_seconds([(1.0, 1.0, 0.0, 1.0)], compute_s=2.0, attention_s=0.0) == pytest.approx(1.0)
    # three-field terms keep their old meaning (window 1)
    assert hidden_seconds([(1.0, 0.7, 0.0)], compute_s=2.0, attention_s=0.0) == pytest.approx(0.7)


@pytest.mark.parametrize("strategy,per_step", [("ddp", True), ("zero1", True), ("zero2", False), ("zero3", False),
                                               ("fsdp", False)])
def test_once_per_step_dp_traffic_overlaps_only_the_last_micro_batch(q8, strategy, per_step):
    wl = Workload(seq_len=4096, micro_batch=1, grad_accum=4, gpus=8, gpus_per_node=8, strategy=strategy)
    (term,) = dp_terms(q8, wl, "megatron", ONE_NODE, float(q8.total_params))
    assert term.window == pytest.approx(0.25 if per_step else 1.0)


def test_small_grad_accumulation_exposes_more_ddp_traffic(q8):
    """Same DDP job at GA 1 and GA 16 on a slow network: at GA 16 the all-reduce has 1/16 of the compute to hide
    behind, so more of it is exposed than the fixed 70 % overlap alone would say."""
    slow = Hardware(name="H100 over TCP", gpu_class="hopper", peak_tflops=989, mem_gbytes_per_s=3350,
                    intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=3)
    wl = Workload(seq_len=4096, micro_batch=1, grad_accum=16, gpus=16, gpus_per_node=8, strategy="ddp")
    s = estimate_speed(q8, wl, slow, framework="megatron", efficiency=0.4)
    dp = next(c for c in s.comm if c.name.startswith("dp-ddp"))
    assert dp.window == pytest.approx(1 / 16)
    hidden = s.comm_seconds_total - s.comm_seconds_exposed
    assert hidden == pytest.approx(min(dp.seconds * dp.overlap, s.compute_seconds / 16)
                                   + sum(c.seconds * c.overlap for c in s.comm if c is not dp), rel=1e-9)
    assert hidden < dp.seconds * dp.overlap  # the window, not the overlap fraction, binds here
