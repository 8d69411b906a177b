"""Per-step quantities of the engine model that do not depend on its fitted constants (the inputs of
``engines.features``): element-wise traffic, kernel counts, ZeRO hook calls, the optimizer step, stacked-expert
gradients and eager attention. Formulas: ``docs/speed-model.md`` section 2."""

from __future__ import annotations

from trainfit.i18n import _
from trainfit.estimate.comm import data_parallel_group, megatron_lora_linears
from trainfit.estimate.engine_assumptions import (
    KERNELS_PER_LAYER, KERNELS_PER_LORA_LINEAR, KERNELS_PER_QLORA_LINEAR, OPTIMIZER_BYTES_PER_PARAM,
    GRAD_NORM_BYTES_PER_PARAM, CLIP_SCALE_BYTES_PER_PARAM, GRAD_BUFFER_ZERO_BYTES_PER_PARAM,
    HBM_EFFICIENCY, MEM_BANDWIDTH_FALLBACK_GBYTES_PER_S, ZERO3_INTER_NODE_FACTOR, STACKED_EXPERT_GRAD_PASSES,
    EAGER_SCORE_BYTES_FORWARD, EAGER_SCORE_BYTES_BACKWARD, ZERO3_PERSISTENCE_PER_HIDDEN,
    LORA_FORWARD_BYTES_PER_INPUT, LORA_FORWARD_BYTES_PER_OUTPUT, LORA_BACKWARD_BYTES_PER_INPUT,
    LORA_BACKWARD_BYTES_PER_OUTPUT,
)
from trainfit.estimate.flops import FlopsBreakdown
from trainfit.estimate.hardware import Hardware
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload
from trainfit.estimate.params import lora_adapter_shapes, lora_targeted


def elementwise_units(model: ModelShape, wl: Workload, tokens_step_gpu: float, ratio: float) -> tuple[float, float]:
    """(dense, routed-expert) element-wise bytes per step for ``elem_bytes = 1``: per token per layer
    ``(h + I_act) x 2`` bytes x passes; SP splits it over TP ranks."""
    h = model.hidden_size
    i_dense = float(model.intermediate_size or 0)
    units = moe_units_b = 0.0
    for i in range(model.num_layers):
        if model.is_moe_layer(i):
            units += (h + model.shared_expert_intermediate_size) * 2.0
            moe_units_b += model.experts_per_token * (model.moe_intermediate_size + h) * 2.0
        else:
            units += (h + i_dense) * 2.0
    # tokens_step_gpu is already divided by tp*pp*cp: a stage's share of the layers, and sequence
    # parallelism's share of the tokens; without SP every TP rank repeats the element-wise work
    scale = tokens_step_gpu * ratio * (1 if wl.sequence_parallel or wl.tp == 1 else wl.tp)
    return units * scale, moe_units_b * scale


def lora_elementwise_bytes(model: ModelShape, wl: Workload, family: str, tokens_step_gpu: float,
                           forwards: float) -> float:
    """HBM bytes per step of PEFT-style LoRA adapters outside their matmuls (casts, scaling, the add, the
    gradient accumulation: ``LORA_*_BYTES_PER_*``), ``forwards`` forward passes (2 under activation
    checkpointing) and one backward per micro-batch; routed-expert adapters count once per routed expert of a
    token. Megatron-family engines are not charged: these byte counts are PEFT's ops, not TransformerEngine's
modules (their kernel launches are, ``kernel_units``)."""
    if wl.method not in ("lora", "qlora") or family == "megatron":
        return 0.0

    per_token = 0.0
    for t in model.tensors():
        if t.layer_type == "global" or not lora_targeted(t, wl.lora_targets):
            continue
        in_f, out_f = lora_adapter_shapes(t, wl.lora_rank)
        visits = model.experts_per_token if t.kind == "expert" else 1
        fwd = LORA_FORWARD_BYTES_PER_INPUT * in_f + LORA_FORWARD_BYTES_PER_OUTPUT * out_f
        bwd = LORA_BACKWARD_BYTES_PER_INPUT * in_f + LORA_BACKWARD_BYTES_PER_OUTPUT * out_f
        per_token += t.count * visits * (forwards * fwd + bwd)
    # tokens_step_gpu is already this rank's share (of the layers under PP, of the tokens under CP/TP+SP)
    return per_token * tokens_step_gpu


def _zero3_fetch_passes(wl: Workload) -> int:
    """Passes per micro-batch in which ZeRO-3 fetches a module: forward, backward, and the recomputed forward
    under activation checkpointing."""
    return 2 + (1 if wl.grad_ckpt else 0)


def kernel_units(model: ModelShape, wl: Workload, family: str, passes: float,
                 visited: float, z3_leaf_moe: bool = True) -> tuple[float, float, float, float]:
    """(layer kernel units incl. LoRA, grouped-MoE kernel units, eager expert visits, ZeRO-3 fetches) per step.

    ZeRO-3 fetches of Hugging Face MoE code: with each MoE block a DeepSpeed leaf module (``z3_leaf_moe``:
    ``deepspeed.utils.set_z3_leaf_modules``, which ms-swift does for Qwen MoE since 3.10 and LLaMA-Factory in
    ``add_z3_leaf_module``) one per block and pass; without, one per expert linear the loop visits."""
    m = wl.grad_accum
    layers = model.num_layers
    layer_units = m * (layers / wl.pp) * passes  # every micro-batch crosses this stage's layers
    lora_kernel_units = 0.0
    if wl.method in ("lora", "qlora"):
        if family == "megatron":
            # Megatron fuses q/k/v and gate/up into one linear each, and LoRA adapts the fused linear once; its
            # adapter is separate modules (ms-swift's LoraParallelLinear: lora_A, lora_B, scaling, add), not fused
            # into the base GEMM (comm.megatron_lora_linears, comm.SWIFT_MEGATRON_LORA_PY)
            adapted = sum(megatron_lora_linears(model, wl)) / max(1, layers)
        else:
            adapted = sum(t.count for t in model.tensors() if t.layer_type != "global"
                          and t.kind in ("linear", "expert") and lora_targeted(t, wl.lora_targets)) / max(1, layers)
        k_lora = KERNELS_PER_LORA_LINEAR + (KERNELS_PER_QLORA_LINEAR if wl.method == "qlora" else 0.0)
        lora_kernel_units = layer_units * adapted * k_lora / KERNELS_PER_LAYER[family]
    moe_units = m * (model.n_moe_layers / wl.pp) * passes if model.is_moe else 0.0
    expert_units = m * (model.n_moe_layers / wl.pp) * passes * visited
    zero3_fetches = 0.0
    if family == "hf" and model.is_moe and wl.strategy == "zero3":
        # the whole block (a leaf module, or transformers 5's stacked experts module), else gate, up, down per expert
        per_block = 1.0 if (z3_leaf_moe or not visited) else visited * 3
        zero3_fetches = m * model.n_moe_layers * per_block * _zero3_fetch_passes(wl)
        if wl.nodes > 1:
            zero3_fetches *= ZERO3_INTER_NODE_FACTOR
    return layer_units + lora_kernel_units, moe_units, expert_units, zero3_fetches


def zero_hook_calls(model: ModelShape, wl: Workload, family: str) -> float:
    """DeepSpeed ZeRO gradient-hook calls per step (``zero_hook_seconds``): one per trainable parameter tensor
    of this rank's stage and micro-batch. Hugging Face MoE code of transformers < 5 keeps 3 linears per expert
    (``experts_impl="modulelist"``), transformers 5 two stacked tensors per layer; LoRA hooks only its two
    adapter matrices per adapted linear."""
    if family != "hf" or wl.strategy not in ("zero1", "zero2", "zero3"):
        return 0.0

    lora = wl.method in ("lora", "qlora")
    n = 0.0
    for t in model.tensors():
        modulelist = t.kind == "expert" and t.experts and wl.experts_impl == "modulelist"
        per = 3.0 * t.experts / 2.0 if modulelist else 1.0  # transformers < 5: 3 linears per expert, else stacked
        if not lora:
            n += t.count * per
        elif t.layer_type != "global" and t.kind in ("linear", "expert") and lora_targeted(t, wl.lora_targets):
            n += 2.0 * t.count * per  # the A and B matrices
    return wl.grad_accum * n / wl.pp


def zero3_module_fetches(model: ModelShape, wl: Workload, family: str) -> float:
    """DeepSpeed ZeRO-3 module fetches per step that the host runs while the GPU computes
    (``zero3_host_seconds`` each, on the host side of the step): one per module and pass (forward, backward, and
    the recomputed forward under checkpointing) for every module whose weight is at least
    ``ZERO3_PERSISTENCE_PER_HIDDEN x hidden`` elements (smaller ones stay resident), LoRA's A and B matrices
    included; routed experts are counted by :func:`kernel_units` (their fetches are exposed)."""
    if family != "hf" or wl.strategy != "zero3":
        return 0.0

    threshold = ZERO3_PERSISTENCE_PER_HIDDEN * model.hidden_size
    lora = wl.method in ("lora", "qlora")
    n = 0.0
    for t in model.tensors():
        if t.kind in ("bias", "norm", "expert") or t.numel < threshold:
            continue
        n += t.count
        if lora and t.layer_type != "global" and t.kind == "linear" and lora_targeted(t, wl.lora_targets):
            out_dim, in_dim = t.shape[0], t.shape[-1]
            n += t.count * ((wl.lora_rank * in_dim >= threshold) + (wl.lora_rank * out_dim >= threshold))
    return wl.grad_accum * _zero3_fetch_passes(wl) * n / wl.pp


def zero3_extra_params(model: ModelShape, wl: Workload, family: str, z3_leaf_moe: bool = True) -> float:
    """Parameters that DeepSpeed ZeRO-3 gathers per step beyond the first of each module fetch
    (``zero3_host_param_seconds`` each, on the host side of the step, next to ``zero3_host_seconds`` per fetch).

    DeepSpeed's fetch, wait and release run per parameter of the module (``all_gather_coalesced``, the handle's
    ``wait`` that splits the gathered buffer into each parameter, ``release_sub_module`` -> ``param.partition``;
    ``benchmarks/zero3_host_probe.py``), so a module holding N weights costs the per-fetch host time plus N - 1
    times the per-parameter time. A dense ``nn.Linear`` gathers its weight alone (a bias is below the persistence
    threshold, ``ZERO3_PERSISTENCE_PER_HIDDEN`` x hidden, and stays resident), LoRA's A and B matrices one each: no
    extra parameters. Hugging Face MoE blocks of this rank's layers, per micro-batch and pass: a leaf block
    (``z3_leaf_moe``) gathers the router and every expert weight in one fetch, 3 per expert under transformers < 5's
    ``nn.ModuleList`` experts (gate, up, down; ``experts_impl="modulelist"``) or the two stacked tensors of
    transformers 5; without a leaf block, each ``nn.Linear`` expert is its own one-weight module (no extra) and
    transformers 5's stacked experts module gathers its two tensors (one extra). Shared experts and LoRA adapters
    inside a leaf block are not counted."""
    if family != "hf" or wl.strategy != "zero3" or not model.is_moe:
        return 0.0
    modulelist = wl.experts_impl == "modulelist"
    per_step = 0.0
    for t in model.tensors():
        if t.kind != "expert" or not t.experts:
            continue
        weights = 3.0 * t.experts / 2.0 if modulelist else 1.0  # per stacked tensor (two per layer)
        if z3_leaf_moe:
            per_step += t.count * weights  # the router is the fetch's first parameter
        elif not modulelist:
            per_step += t.count * 0.5  # the experts module: 2 tensors, one beyond the first
    return wl.grad_accum * _zero3_fetch_passes(wl) * per_step / wl.pp


def optimizer_seconds(model: ModelShape, wl: Workload, hw: Hardware, trainable_params: float | None,
                      notes: list[str], family: str = "megatron") -> tuple[float, float]:
    """(memory bandwidth used, GB/s; optimizer step seconds) for the local trainable parameters (sharded by
    ZeRO/FSDP over the data x context group, ``comm.data_parallel_group``; by tp/pp; experts by ep): the fixed
    per-step cost that does not shrink with the global batch. AdamW's traffic (``OPTIMIZER_BYTES_PER_PARAM``) and
    gradient clipping's norm (``GRAD_NORM_BYTES_PER_PARAM``) and scaling (``CLIP_SCALE_BYTES_PER_PARAM[family]``)
    run over the optimizer's shard; Megatron-Core's gradient-buffer zeroing (``GRAD_BUFFER_ZERO_BYTES_PER_PARAM``)
    over the whole tp/pp-local model. With CPU offload the step (and its clipping) runs on the host
    (``host_traffic.offload_term``)."""
    tp_pp = wl.tp * wl.pp
    trainable = float(trainable_params if trainable_params is not None else model.total_params)
    shard = data_parallel_group(wl) if wl.strategy in ("zero1", "zero2", "zero3", "fsdp") else 1
    local = trainable / tp_pp / shard
    bw = getattr(hw, "mem_gbytes_per_s", None)
    if not bw:
        bw = MEM_BANDWIDTH_FALLBACK_GBYTES_PER_S
        notes.append(_("memory bandwidth of {gpu} unknown: assumed {gbytes:.0f} GB/s").format(
            gpu=getattr(hw, "name", None) or _("the GPU"), gbytes=MEM_BANDWIDTH_FALLBACK_GBYTES_PER_S))
    if wl.offload != "none":
        return bw, 0.0
    shard_bytes = local * (OPTIMIZER_BYTES_PER_PARAM + GRAD_NORM_BYTES_PER_PARAM
                           + CLIP_SCALE_BYTES_PER_PARAM.get(family, 0.0))
    zero_bytes = trainable / tp_pp * GRAD_BUFFER_ZERO_BYTES_PER_PARAM.get(family, 0.0)
    return bw, (shard_bytes + zero_bytes) / (bw * 1e9 * HBM_EFFICIENCY)


def stacked_expert_bytes(model: ModelShape, wl: Workload, visited: float) -> float:
    """HBM bytes per step of full-size expert gradients when trained experts are stacked and indexed per expert:
    visited experts x ``STACKED_EXPERT_GRAD_PASSES`` x the layer's expert bytes, per MoE layer and micro-batch."""
    if not model.is_moe or wl.method != "full":  # frozen experts (LoRA, QLoRA, freeze of early layers): no grad
        return 0.0
    per_layer = sum(t.total for t in model.tensors() if t.kind == "expert") / model.n_moe_layers
    param_bytes = 4.0 if wl.precision == "amp-bf16" else 2.0
    return (wl.grad_accum * model.n_moe_layers / wl.pp * visited * STACKED_EXPERT_GRAD_PASSES
            * per_layer / wl.tp * param_bytes)


def eager_attention(model: ModelShape, wl: Workload, flops: FlopsBreakdown, tokens_step_gpu: float,
                    forwards: float) -> tuple[float, float]:
    """(score/value matmul FLOPs, score-matrix HBM bytes) per step of eager attention: twice the causal flash
    count (the full ``S x S`` is computed and masked) for each forward (1, 2 with full recompute) and the
    backward (2 units), and per score element ``EAGER_SCORE_BYTES_FORWARD`` per forward plus
    ``EAGER_SCORE_BYTES_BACKWARD``."""
    if wl.attention != "eager" or not model.n_full_attention_layers:
        return 0.0, 0.0
    s = wl.seq_len / wl.cp
    scores_fwd = tokens_step_gpu * s * model.num_heads / wl.tp * model.n_full_attention_layers / wl.pp
    return (2.0 * flops.forward_attention_flops * tokens_step_gpu * (forwards + 2.0),
            scores_fwd * (EAGER_SCORE_BYTES_FORWARD * forwards + EAGER_SCORE_BYTES_BACKWARD))


def fa2_on_hopper(wl: Workload, hw: Hardware) -> bool:
    """Whether attention runs an Ampere-generation kernel on a Hopper GPU. ``--attention flash`` is
    FlashAttention-2 (the ``flash-attn`` 2 package; also what PyTorch SDPA ran before it preferred cuDNN on sm90,
    and Triton flash attention). ``sdpa`` is each engine's own choice, a Hopper kernel there: PyTorch SDPA
    prefers cuDNN attention on sm90 from torch 2.11 (``check_prefer_cudnn_attention`` with the bundled cuDNN
    above 9.15; huggingface/transformers#48163), TransformerEngine gives FusedAttention (cuDNN) preference over
    FlashAttention on Hopper+ (``get_attention_backend``, since NVIDIA/TransformerEngine#889). ``flash3`` is
    FlashAttention-3."""
    return wl.attention == "flash" and hw.gpu_class == "hopper"


_FA3_HEAD_DIMS = (64, 96, 128, 192, 256)


def attention_head_padding(head_dim: int, wl: Workload, hw: Hardware, triton_attention: bool = False) -> float:
    """Factor on the attention FLOPs for kernels that run a head dimension padded up to one they are built
    for: FlashAttention-2 (``--attention flash``, and PyTorch SDPA's flash backend, its choice off Hopper) rounds
    it up to a multiple of 32 (``round_multiple(head_size, 32)`` in flash-attn's ``flash_api.cpp``; 112 -> 128),
    FlashAttention-3 to 64/96/128/192/256, the 2023 Triton kernel to a power of two
    (``BLOCK_HEADDIM = next_power_of_2(d)``). cuDNN/TransformerEngine fused attention (``sdpa`` on Hopper) takes
    any multiple of 8: no padding. 1.0 for the 64/128 head dims of Llama/Qwen."""
    d = int(head_dim)
    if d <= 0:
        return 1.0
    if triton_attention:
        padded = 1 << (d - 1).bit_length()
    elif wl.attention == "flash3":
        padded = next((x for x in _FA3_HEAD_DIMS if x >= d), d)
    elif wl.attention == "flash" or (wl.attention == "sdpa" and hw.gpu_class != "hopper"):
        padded = -(-d // 32) * 32
    else:
        padded = d
    return max(padded, d) / d


def expert_forward_flops(model: ModelShape) -> float:
    """Forward FLOPs per token of the routed experts (top-k of E)."""
    if not model.is_moe:
        return 0.0
    return sum(2.0 * t.total / t.experts * model.experts_per_token for t in model.tensors() if t.kind == "expert")
