"""Flash-attention time of one step, apart from the GEMMs (issue 26): forward and backward each at the published
rate of the GPU generation's own kernel, by sequence length per kernel call, causal masking and the engine's
share of that rate. Inputs come from :func:`flash_attention_flops` (``engines.features``); the fitted constants
used are ``EngineConstants.attention_relative_*``, ``fa2_hopper_factor``, ``triton_attention_factor`` and
``ridge_exponent``. Formulas and sources: ``docs/speed-model.md`` section 2 and ``engine_assumptions``."""

from __future__ import annotations

from typing import Any

from trainfit.estimate.engine_assumptions import (
    ATTENTION_BACKWARD_FLOP_FACTOR, ATTENTION_CAUSAL_BLOCK, ATTENTION_PEAK_SHARE, ATTENTION_REFERENCE_RIDGE,
    ATTENTION_REFERENCE_SEQ, ATTENTION_SEQ_HALF, GPU_CLASS_FACTOR_FIXED, H100_SXM_GEMM_SHARE, REFERENCE_RIDGE,
    RIDGE_LAW_CLASSES,
)
from trainfit.estimate.engine_terms import attention_head_padding
from trainfit.estimate.flops import FlopsBreakdown
from trainfit.estimate.hardware import Hardware
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload


def attention_call_seq(wl: Workload) -> float:
    """Key/query length of one flash-attention kernel call: the sequence, or under context parallelism the
    half-chunk ``seq_len / (2 cp)`` of Megatron's load-balanced split, which TransformerEngine's P2P ring attends
    per step (``AttnFuncWithCPAndKVP2P``: every step but the diagonal one runs half of the local queries against the
    received keys, or the local queries against half of them); DeepSpeed-Ulysses (``Workload.sp``) attends the
    whole sequence with ``1/sp`` of the heads."""
    return wl.seq_len / (2.0 * wl.cp) if wl.cp > 1 else float(wl.seq_len)


def flash_attention_flops(model: ModelShape, wl: Workload, hw: Hardware, flops: FlopsBreakdown, tokens_step_gpu: float,
                          recompute_fraction: float, triton_attention: bool, eager: bool = False) -> dict[str, float]:
    """The flash-attention inputs of ``engines.EngineFeatures`` per step: forward FLOPs (every layer once, plus the
    recomputed forward of the layers with a backward under activation checkpointing or selective recompute),
    backward FLOPs in the kernels' executed count (``ATTENTION_BACKWARD_FLOP_FACTOR`` x the forward of the layers with
    a backward) and the per-call length. Causal counts, with the head-dimension padding of the kernel; 0 for
    ``--attention eager`` (timed as GEMMs, ``eager_attention``)."""
    if eager or not flops.forward_attention_flops:
        return {"attention_forward_flops": 0.0, "attention_backward_flops": 0.0,
                "attention_seq": attention_call_seq(wl)}
    pad = attention_head_padding(model.head_dim, wl, hw, triton_attention)
    fa = flops.forward_attention_flops
    fa_bwd = sum(layer.attention for layer in flops.layers if layer.has_backward)
    recompute = 1.0 if wl.grad_ckpt else recompute_fraction
    return {"attention_forward_flops": tokens_step_gpu * (fa + recompute * fa_bwd) * pad,
            "attention_backward_flops": tokens_step_gpu * ATTENTION_BACKWARD_FLOP_FACTOR * fa_bwd * pad,
            "attention_seq": attention_call_seq(wl)}


def attention_rate_share(c: Any, gpu_class: str, ridge: float, backward: bool, seq: float) -> float:
    """Share of the 16-bit peak the generation's flash-attention kernel reaches in one direction at ``seq`` tokens
    per call, before the engine's ``attention_relative`` and kernel factors: the published long-sequence share
    (``ATTENTION_PEAK_SHARE``), the ridge law from the generation's reference GPU, the per-call length law
    ``s / (s + ATTENTION_SEQ_HALF)`` normalised at ``ATTENTION_REFERENCE_SEQ``, and the causal diagonal tiles
    ``s / (s + ATTENTION_CAUSAL_BLOCK)``."""
    gen = gpu_class if gpu_class in ATTENTION_PEAK_SHARE else "ampere"
    share = ATTENTION_PEAK_SHARE[gen][1 if backward else 0]
    if gpu_class in RIDGE_LAW_CLASSES:  # Ada from the Ampere reference (FlashAttention-2 is its kernel)
        cls = (ATTENTION_REFERENCE_RIDGE[gen] / ridge) ** c.ridge_exponent if ridge > 0 else 1.0
    else:
        cls = GPU_CLASS_FACTOR_FIXED.get(gpu_class, 0.6)
    half = ATTENTION_SEQ_HALF[1 if backward else 0]
    s = max(1.0, seq or ATTENTION_REFERENCE_SEQ)
    length = (s / (s + half)) / (ATTENTION_REFERENCE_SEQ / (ATTENTION_REFERENCE_SEQ + half))
    causal = s / (s + ATTENTION_CAUSAL_BLOCK)
    return share * cls * length * causal


def class_factor(c: Any, gpu_class: str, ridge: float = REFERENCE_RIDGE, measured_share: float = 0.0) -> float:
    """Share of peak relative to H100 SXM: a measured share where the ridge law misses it (``MEASURED_GEMM_SHARE``),
    else the ridge law for Hopper/Ampere/Ada (``ridge_exponent``), fixed assumptions for the older classes."""
    if measured_share:
        return measured_share / H100_SXM_GEMM_SHARE
    if gpu_class in RIDGE_LAW_CLASSES:
        return (REFERENCE_RIDGE / ridge) ** c.ridge_exponent if ridge > 0 else 1.0
    return GPU_CLASS_FACTOR_FIXED.get(gpu_class, 0.6)


def measured_share_scale(c: Any, f: Any) -> float:
    """A measured GEMM share's correction to the ridge law (``engine_assumptions.MEASURED_GEMM_SHARE``; 1 without
    one): the attention kernels of that GPU run under the same clock and power limits as its GEMMs."""
    if not f.gemm_share_measured:
        return 1.0
    ridge16 = f.peak16_tflops * 1e3 / f.mem_gbytes_per_s
    return class_factor(c, f.gpu_class, ridge16, f.gemm_share_measured) / class_factor(c, f.gpu_class, ridge16)


def attention_seconds(f: Any, c: Any) -> float:
    """Flash-attention time of one step: forward and backward FLOPs each at their own kernel rate
    (:func:`attention_rate_share` x the engine's ``attention_relative``, x ``fa2_hopper_factor`` for an Ampere
    kernel on Hopper, x ``triton_attention_factor`` for the 2023 Triton kernel), at most 95 % of the peak."""
    if not (f.attention_forward_flops or f.attention_backward_flops):
        return 0.0
    ridge16 = f.peak16_tflops * 1e3 / f.mem_gbytes_per_s
    rel = (c.attention_relative(f.family) * (c.fa2_hopper_factor if f.fa2_on_hopper else 1.0)
           * (c.triton_attention_factor if f.triton_attention else 1.0) * measured_share_scale(c, f))
    out = 0.0
    for flops, backward in ((f.attention_forward_flops, False), (f.attention_backward_flops, True)):
        if flops:
            share = min(0.95, attention_rate_share(c, f.gpu_class, ridge16, backward, f.attention_seq) * rel)
            out += flops / (f.peak16_tflops * 1e12 * share)
    return out
