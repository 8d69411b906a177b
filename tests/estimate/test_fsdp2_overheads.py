"""FSDP's own costs beyond the ring bytes (issue 26): FSDP2's copy-out after each all-gather and the fp32 copy-in
before each reduce-scatter (HBM traffic on the compute stream), and the exposed edges of the per-layer collectives
(the root's and first layer's all-gathers, the last reduce-scatters). Expected values are written out by hand from
the Qwen3-8B config and the rules of torch/distributed/fsdp/_fully_shard (see fsdp.fsdp2_copy_bytes and
fsdp.fsdp_volumes), not computed by the code under test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainfit.estimate import engines
from trainfit.estimate.comm import ring_seconds
from trainfit.estimate.engine_assumptions import HBM_EFFICIENCY
from trainfit.estimate.params import count_params
from trainfit.estimate.speed import Hardware, estimate_speed, flops_per_token
from trainfit.models import get_model
from trainfit.workload import Workload

# Qwen3-8B: vocab 151936, hidden 4096, 36 layers, untied LM head. Root group = embedding + LM head + final norm.
V, H, L = 151936, 4096, 36
P = 8_190_735_360
R = 2 * V * H + H  # 1,244,663,808
D = P - R  # the 36 decoder layers

H100 = Hardware(name="H100", gpu_class="hopper", peak_tflops=989, peak_fp8_tflops=1979, mem_gbytes_per_s=3350,
                intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=400, pcie_gbytes_per_s=63)


@pytest.fixture(scope="module")
def q8():
    return get_model("Qwen3-8B")


def _wl(**kw):
    base = dict(seq_len=4096, micro_batch=1, grad_accum=2, gpus=8, strategy="fsdp", grad_ckpt=False)
    base.update(kw)
    return Workload(**base)


def _feat(model, wl, fw):
    return engines.features(model, wl, H100, fw, flops=flops_per_token(model, wl),
                            trainable_params=float(count_params(model, wl).trainable))


def test_fsdp2_copy_bytes_by_hand(q8):
    wl = _wl()
    feat = _feat(q8, wl, "fsdp2")
    # per micro-batch: the root gathered once, every layer twice but the last (kept gathered for backward);
    # copy-out reads and writes 2 B per gathered element; the bf16 gradients are chunk-cat into an fp32 buffer
    gathered = R + D * (1 + (L - 1) / L)
    per_mb = 2 * 2 * gathered + P * (2 + 4)
    assert feat.fsdp_copy_bytes == pytest.approx(2 * per_mb, rel=1e-12)
    # it is HBM time on the compute stream: the step gets exactly bytes / bandwidth longer
    c = engines.DEFAULT_CONSTANTS
    with_copy = engines.compute_time(feat, c)
    without = engines.compute_time(replace(feat, fsdp_copy_bytes=0.0), c)
    assert not with_copy.launch_bound
    assert with_copy.seconds - without.seconds == pytest.approx(
        2 * per_mb / (3350e9 * HBM_EFFICIENCY), rel=1e-9)


def test_fsdp2_copies_only_for_fsdp2_engines(q8):
    assert _feat(q8, _wl(), "automodel").fsdp_copy_bytes > 0
    assert _feat(q8, _wl(), "hf-trainer").fsdp_copy_bytes == 0  # FSDP1 gathers into the flat parameter
    assert _feat(q8, _wl(strategy="zero3"), "fsdp2").fsdp_copy_bytes == 0
    assert _feat(q8, _wl(strategy="ddp"), "fsdp2").fsdp_copy_bytes == 0


def test_fsdp2_copies_scale_with_params_not_tokens(q8):
    short = _feat(q8, _wl(seq_len=2048), "fsdp2").fsdp_copy_bytes
    long = _feat(q8, _wl(seq_len=16384), "fsdp2").fsdp_copy_bytes
    assert short == pytest.approx(long, rel=1e-12)


def _dp(est):
    return {c.name: c for c in est.comm if c.name.startswith("dp-")}


def test_fsdp2_edge_and_steady_volumes_by_hand(q8):
    wl = _wl()
    terms = _dp(estimate_speed(q8, wl, H100, framework="fsdp2", efficiency=0.4))
    assert set(terms) == {"dp-fsdp-dense-fwd", "dp-fsdp-dense-bwd", "dp-fsdp-dense-edge"}
    r, l = R / P, D / P / L
    pb, gb = 2.0 * P, 4.0 * P  # bf16 gathers, fp32 reduce-scatter (torchtitan's mixed_precision_reduce)
    edge = 2 * (pb * (r + l) + gb * (r + l))
    fwd = 2 * pb * (1 - r - l)
    bwd = 2 * (pb * (1 - r) * (L - 1) / L + gb * (1 - r - l))
    assert terms["dp-fsdp-dense-edge"].seconds == pytest.approx(ring_seconds(edge, 8, 450, 0.8), rel=1e-9)
    assert terms["dp-fsdp-dense-fwd"].seconds == pytest.approx(ring_seconds(fwd, 8, 450, 0.8), rel=1e-9)
    assert terms["dp-fsdp-dense-bwd"].seconds == pytest.approx(ring_seconds(bwd, 8, 450, 0.8), rel=1e-9)
    assert terms["dp-fsdp-dense-edge"].overlap == 0.0
    # forward all-gathers hide only behind the forward: 1/3 of the executed FLOPs without recompute
    fl = flops_per_token(q8, _wl())
    assert terms["dp-fsdp-dense-fwd"].window == pytest.approx(fl.forward_flops / fl.hardware_flops, rel=1e-12)
    assert 0.3 < terms["dp-fsdp-dense-fwd"].window < 0.35
    assert terms["dp-fsdp-dense-bwd"].window == pytest.approx(1 - terms["dp-fsdp-dense-fwd"].window, rel=1e-12)


def test_fsdp_forward_gathers_exposed_beyond_forward_compute(q8):
    # a slow network: the forward all-gathers outlast the forward compute; what does not fit is exposed even though
    # the step's whole compute would have room for it
    slow = Hardware(name="H100", gpu_class="hopper", peak_tflops=989, peak_fp8_tflops=1979, mem_gbytes_per_s=3350,
                    intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=12.5, pcie_gbytes_per_s=63)
    wl = _wl(gpus=16, gpus_per_node=8)
    s = estimate_speed(q8, wl, slow, framework="fsdp2", efficiency=0.4)
    t = _dp(s)
    fwd = t["dp-fsdp-dense-fwd"]
    assert fwd.seconds > s.compute_seconds * fwd.window  # the case under test
    assert s.comm_seconds_exposed >= (t["dp-fsdp-dense-edge"].seconds + fwd.seconds
                                      - s.compute_seconds * fwd.window) * (1 - 1e-9)


def test_fsdp1_regathers_last_layer_as_an_edge(q8):
    terms = _dp(estimate_speed(q8, _wl(), H100, framework="hf-trainer", efficiency=0.4))
    r, l = R / P, D / P / L
    pb, gb = 2.0 * P, 2.0 * P  # hf-trainer reduces in bf16
    edge = 2 * (pb * (r + l) + pb * l + gb * (r + l))
    assert terms["dp-fsdp-dense-edge"].seconds == pytest.approx(ring_seconds(edge, 8, 450, 0.8), rel=1e-9)


def test_fsdp_edges_stay_exposed_under_long_compute(q8):
    # plenty of compute to hide behind: the steady traffic hides, the edges do not
    s = estimate_speed(q8, _wl(seq_len=32768), H100, framework="fsdp2", efficiency=0.05)
    terms = _dp(s)
    assert s.comm_seconds_exposed == pytest.approx(terms["dp-fsdp-dense-edge"].seconds, rel=1e-9)


def test_megatron_fsdp_keeps_one_term(q8):
    terms = _dp(estimate_speed(q8, _wl(), H100, framework="megatron", efficiency=0.4))
    assert set(terms) == {"dp-fsdp-dense"}
