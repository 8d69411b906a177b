"""Per-step communication costs that weigh most at small global batches (issue 26): the once-per-step data-parallel
window, sequence parallelism's collective launches and pipeline point-to-point latency. Expected values follow
from the engines' code paths cited in estimate/comm.py, written out here, not taken from the code under test."""

from __future__ import annotations

import pytest

from trainfit.estimate.comm import (
    NCCL_RING_BASE_LATENCY_US, NCCL_RING_STEP_LATENCY_US, Links, dp_terms, hidden_seconds, pp_term, tp_collectives,
    tp_term,
)
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


def test_sequence_parallel_launch_count():
    base = dict(seq_len=4096, micro_batch=1, gpus=8, gpus_per_node=8, tp=8, strategy="zero1")
    wl = Workload(**base)
    # no SP: 2 all-reduces forward (row-parallel outputs) + 2 backward (column-parallel input gradients)
    assert tp_collectives(wl.with_(sequence_parallel=False, grad_ckpt=False)) == (4.0, 8.0, 2)
    # SP: 2 all-gathers + 2 reduce-scatters forward; backward 2 output-gradient all-gathers, 2 input re-gathers
    # for the weight gradients, 2 input-gradient reduce-scatters; recompute repeats the forward's 4
    assert tp_collectives(wl.with_(sequence_parallel=True, grad_ckpt=False)) == (10.0, 10.0, 1)
    assert tp_collectives(wl.with_(sequence_parallel=True, grad_ckpt=True)) == (14.0, 14.0, 1)
    assert tp_collectives(wl.with_(sequence_parallel=False, grad_ckpt=True)) == (6.0, 12.0, 2)
    # PyTorch DTensor TP (AutoModel, torchtitan) keeps the gathered input for the weight gradient: 4 backward
    assert tp_collectives(wl.with_(sequence_parallel=True, grad_ckpt=False), regather=False) == (8.0, 8.0, 1)


def test_sequence_parallel_pays_a_base_latency_per_launch(q8):
    """At a tiny message the TP term is latency: SP's 10 launches of (n-1) hops against the all-reduce's 4 of
    2(n-1) hops, each with NCCL's base latency."""
    wl = Workload(seq_len=8, micro_batch=1, grad_accum=2, gpus=8, gpus_per_node=8, tp=8, strategy="zero1",
                  grad_ckpt=False)
    hop, base, n = NCCL_RING_STEP_LATENCY_US["intra"], NCCL_RING_BASE_LATENCY_US, 8
    layers = q8.num_layers
    sp = tp_term(q8, wl.with_(sequence_parallel=True), ONE_NODE)
    ar = tp_term(q8, wl.with_(sequence_parallel=False), ONE_NODE)
    lat_sp = 2 * layers * 10 * (base + (n - 1) * hop) * 1e-6
    lat_ar = 2 * layers * 4 * (base + 2 * (n - 1) * hop) * 1e-6
    assert sp.seconds == pytest.approx(lat_sp, rel=0.02)
    assert ar.seconds == pytest.approx(lat_ar, rel=0.02)
    assert sp.seconds - ar.seconds == pytest.approx(2 * layers * (6 * base + 2 * (n - 1) * hop) * 1e-6, rel=0.05)


def test_pipeline_p2p_pays_latency_per_message(q8):
    wl = Workload(seq_len=8, micro_batch=1, grad_accum=16, gpus=8, gpus_per_node=8, pp=8, strategy="zero1")
    t = pp_term(q8, wl, ONE_NODE)
    per_msg = (NCCL_RING_BASE_LATENCY_US + NCCL_RING_STEP_LATENCY_US["intra"]) * 1e-6
    assert t.seconds == pytest.approx(16 * 2 * per_msg, rel=0.03)  # forward activation + backward gradient
    assert pp_term(q8, wl, ONE_NODE, virtual_pp=2).seconds == pytest.approx(2 * t.seconds, rel=1e-9)
