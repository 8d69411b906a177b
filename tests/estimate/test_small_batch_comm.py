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


def test_megatron_lora_adapters_fuse_like_megatron_linears(q8):
    from trainfit.estimate.comm import megatron_lora_linears

    wl = Workload(seq_len=4096, gpus=8, tp=8, strategy="zero1", method="lora", lora_rank=16)
    L = q8.num_layers
    assert megatron_lora_linears(q8, wl) == (2 * L, 2 * L)  # linear_qkv + linear_fc1 / linear_proj + linear_fc2
    # q, k and v are one linear_qkv in Megatron: one adapter
    assert megatron_lora_linears(q8, wl.with_(lora_targets=("q_proj", "k_proj", "v_proj"))) == (L, 0)
    assert megatron_lora_linears(q8, wl.with_(method="full")) == (0.0, 0.0)


def test_megatron_lora_adds_its_adapters_tp_collectives(q8):
    """ms-swift's LoraParallelLinear under TP 8 with sequence parallelism: a column-parallel base's lora_B gathers
    (forward), re-gathers and reduce-scatters (backward); a row-parallel base's lora_A reduce-scatters (forward) and
    gathers (backward): at an 8-token micro-batch every one of them is a base latency plus 7 hops."""
    from trainfit.estimate.comm import lora_tp_collectives

    wl = Workload(seq_len=8, micro_batch=1, grad_accum=2, gpus=8, gpus_per_node=8, tp=8, strategy="zero1",
                  grad_ckpt=False, sequence_parallel=True, method="lora", lora_rank=16)
    assert lora_tp_collectives(wl) == ((3.0, 2.0), 1)
    assert lora_tp_collectives(wl.with_(grad_ckpt=True)) == ((4.0, 3.0), 1)
    assert lora_tp_collectives(wl.with_(sequence_parallel=False)) == ((1.0, 1.0), 2)
    full = tp_term(q8, wl.with_(method="full"), ONE_NODE)
    lora = tp_term(q8, wl, ONE_NODE)
    per_launch = (NCCL_RING_BASE_LATENCY_US + 7 * NCCL_RING_STEP_LATENCY_US["intra"]) * 1e-6
    L = q8.num_layers
    assert lora.seconds - full.seconds == pytest.approx(2 * (2 * L * 3 + 2 * L * 2) * per_launch, rel=0.02)
    # engines whose LoRA is not Megatron's (PyTorch TP) get no adapter collectives here
    assert tp_term(q8, wl, ONE_NODE, framework="fsdp2").seconds == pytest.approx(
        tp_term(q8, wl.with_(method="full"), ONE_NODE, framework="fsdp2").seconds)


def test_megatron_lora_adapters_launch_kernels(q8):
    """The adapter is lora_A, lora_B, scaling and add after the base GEMM (not fused into it): 5 launches per
    adapted Megatron linear and pass, 4 adapted linears per layer under all-linear."""
    from trainfit.estimate.engine_assumptions import KERNELS_PER_LAYER, KERNELS_PER_LORA_LINEAR
    from trainfit.estimate.engine_terms import kernel_units

    wl = Workload(seq_len=4096, grad_accum=2, gpus=8, tp=8, strategy="zero1", method="lora", lora_rank=16)
    lora = kernel_units(q8, wl, "megatron", passes=3.0, visited=0.0)[0]
    full = kernel_units(q8, wl.with_(method="full"), "megatron", passes=3.0, visited=0.0)[0]
    layer_units = 2 * q8.num_layers * 3.0
    assert lora - full == pytest.approx(layer_units * 4 * KERNELS_PER_LORA_LINEAR / KERNELS_PER_LAYER["megatron"])
