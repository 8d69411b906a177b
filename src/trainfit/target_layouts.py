"""Which layouts each built-in writer can express: the writers' ``applies`` and the planner's ``--target`` filter
(:func:`trainfit.targets.layout_reason`) ask the same functions, so ``plan --target X`` searches only what X
renders. Workload in, a reason (or None) out: no render context, no other launch module."""

from __future__ import annotations

from trainfit.i18n import _
from trainfit.workload import Workload

#: Workload precision -> LLaMA-Factory flags (``pure_bf16``: bf16 weights and optimizer states, no fp32 copy).
LF_PRECISION = {"bf16": {"bf16": True, "pure_bf16": True}, "amp-bf16": {"bf16": True}, "fp16": {"fp16": True}}


def swift_layout_reason(wl: Workload) -> str | None:
    """:func:`trainfit.launch._common.swift_unsupported` on a workload (the planner's ``--target`` filter asks it too)."""
    if wl.uses_megatron:
        if wl.strategy not in ("ddp", "zero1") or wl.offload == "all":
            return _("Megatron (tp/pp/ep/cp > 1) shards optimizer states only (distributed optimizer = zero1); the "
                     "plan says {strategy}").format(
                strategy=wl.strategy + (f" + offload {wl.offload}" if wl.offload != "none" else ""))
        if wl.optimizer != "adamw-fused":
            return _("megatron sft trains with fused Adam; the plan says {optimizer}").format(optimizer=wl.optimizer)
    else:
        if wl.precision == "fp8":
            return _("fp8 training needs Megatron/TransformerEngine (megatron sft); the plan runs the HF trainer")
        if wl.strategy == "fsdp" and wl.offload == "optimizer":
            return _("HF FSDP offloads parameters with the optimizer (offload all), not the optimizer alone")
    return None


def llamafactory_layout_reason(wl: Workload) -> str | None:
    """Why LLaMA-Factory's config cannot express ``wl`` (None when it can; the planner's ``--target`` filter)."""
    if wl.uses_megatron:
        return _("the plan uses Megatron parallelism (tp/pp/ep/cp > 1); LLaMA-Factory's default trainer runs data "
                 "parallel only")
    if wl.strategy == "fsdp":
        return _("the plan uses FSDP, which LLaMA-Factory takes from an accelerate config file (not rendered)")
    if wl.ulysses > 1:
        return _("the plan uses DeepSpeed-Ulysses (--ulysses); LLaMA-Factory has no sequence_parallel_size (a fork, "
                 "360-LLaMA-Factory, adds one): render the swift target")
    if wl.precision not in LF_PRECISION:
        return _("precision {precision} is not a LLaMA-Factory training precision").format(precision=wl.precision)
    return None


def deepspeed_layout_reason(wl: Workload) -> str | None:
    """Why a DeepSpeed config does not apply to ``wl`` (None when it does; the planner's ``--target`` filter)."""
    if wl.uses_megatron:
        return _("the plan uses Megatron parallelism (tp/pp/ep/cp > 1); ms-swift `megatron sft` needs no DeepSpeed "
                 "config")
    if not wl.strategy.startswith("zero"):
        return _("the plan's strategy is {strategy}, not DeepSpeed ZeRO").format(strategy=wl.strategy)
    return None
