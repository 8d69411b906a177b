"""Saved activations of the worst rank, layer by layer: what each decoder layer keeps for backward per
token, its backward scratch, and whether all layers of the rank are alike.

Part of the per-GPU memory model (:mod:`trainfit.estimate.memory` walks the training step with this
profile; per-layer byte counts are in :mod:`trainfit.estimate.activations`). Formulas, derivations and
sources: docs/memory-model.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter

from trainfit.estimate.activations import (LayerTraining, expert_lora_merged_bytes, layer_backward_temp_per_token,
                                           layer_bytes_per_token)
from trainfit.estimate.params import freeze_trainable_layer_ids, lora_targeted
from trainfit.estimate.runtime import megatron_core, megatron_layer_bytes_per_token
from trainfit.estimate.states import rank_layers
from trainfit.models.shapes import ModelShape
from trainfit.workload import ALL_LINEAR, Workload, routing_imbalance


@dataclass(frozen=True, kw_only=True)
class ActProfile:
    """Per-layer activation bytes of the layers on the worst rank."""

    layer_ids: tuple[int, ...]
    """Layers on this rank that keep anything for backward."""
    per_token: tuple[float, ...]
    """Saved bytes per token (no recomputation), per layer in ``layer_ids``."""
    temp_per_token: tuple[float, ...]
    """Backward scratch bytes per token, per layer."""
    layer_params: tuple[int, ...]
    """Parameters of each layer."""
    max_per_token: float
    """The largest entry of ``per_token`` (0 without layers)."""
    uniform: bool
    """All layers of the rank alike (same kind and training)."""
    fixed: tuple[float, ...] = ()
    """Saved bytes per layer independent of tokens (PEFT merged expert weights)."""


def _layer_kind(m: ModelShape, i: int) -> tuple[str, bool]:
    return (m.layer_type(i), m.is_moe_layer(i))


@lru_cache(maxsize=256)
def _lora_modules(m: ModelShape, kind: tuple[str, bool], targets: tuple[str, ...]) -> frozenset[str]:
    i = next(j for j in range(m.num_layers) if _layer_kind(m, j) == kind)
    mods = {t.module for t in m.layer_tensors(i) if lora_targeted(t, targets)}
    if (ALL_LINEAR in targets or {"gate_up_proj", "experts"} & set(targets)) and kind[1]:
        mods.add("experts")
    return frozenset(mods)


def _layer_training(m: ModelShape, wl: Workload, i: int) -> LayerTraining:
    if wl.method == "full":
        return LayerTraining(norms=True, linears=True)
    if wl.method == "freeze":
        ids = freeze_trainable_layer_ids(m, wl)
        on = i in ids
        return LayerTraining(norms=on, linears=on, input_requires_grad=i >= ids.start)
    mods = set(_lora_modules(m, _layer_kind(m, i), tuple(wl.lora_targets)))
    # LoRA layer 0: the embedding output carries no grad, so its input norm saves nothing (gradient
    # checkpointing with PEFT calls enable_input_require_grads, which changes that; ignored: one norm).
    return LayerTraining(norms=False, linears=False, lora=frozenset(mods), input_requires_grad=True)


def eff_tokens(wl: Workload) -> float:
    """Tokens per micro-batch on one rank (context parallelism and DeepSpeed-Ulysses split the sequence)."""
    return wl.micro_batch * wl.seq_len / wl.seq_shards


def act_divisor(wl: Workload) -> float:
    """How many ranks share one activation tensor (tensor parallelism with sequence parallelism)."""
    return float(wl.tp) if (wl.tp > 1 and wl.sequence_parallel) else 1.0


def tp_local_shape(m: ModelShape, tp: int) -> ModelShape:
    """The decoder layer one rank computes under tensor parallelism without sequence parallelism outside
    Megatron-Core: transformers' ``tp_plan`` splits q/k/v and gate/up column-wise and o/down row-wise
    (``Qwen3ForCausalLM``'s ``base_model_tp_plan``, transformers/models/qwen3/configuration_qwen3.py;
    ``ColwiseParallel`` hands the local shard on, ``RowwiseParallel`` all-reduces its output,
    transformers/integrations/tensor_parallel.py), so a rank runs ``1/tp`` of the heads and of the MLP width while
    every tensor of width h (the layer input, the norms, the residual stream and the projections' inputs) is
    replicated on all tp ranks. The routed experts keep their width (expert parallelism shards them)."""
    if tp <= 1:
        return m
    return dataclasses.replace(m, num_heads=max(1, m.num_heads // tp), num_kv_heads=max(1, m.num_kv_heads // tp),
                               intermediate_size=max(1, m.intermediate_size // tp),
                               shared_expert_intermediate_size=m.shared_expert_intermediate_size // tp)


def autocast(wl: Workload) -> bool:
    """fp32 weights run under autocast only with plain DDP: DeepSpeed's bf16/fp16 mode and FSDP2's
    MixedPrecisionPolicy(param_dtype=bf16) compute with half-precision weights, no autocast cache."""
    return wl.precision in ("amp-bf16", "fp16") and wl.strategy == "ddp"


def act_profile(m: ModelShape, wl: Workload, imbalance: float | None = None) -> ActProfile:
    """The activation profile of ``wl`` on ``m`` (uncached; see :func:`cached_act_profile`). ``imbalance``: the
    most-loaded expert-parallel rank's routed tokens over the mean (default ``routing_imbalance(wl, m)``)."""
    imb = routing_imbalance(wl, m) if imbalance is None else imbalance
    tpd = act_divisor(wl)
    # tensor parallelism without sequence parallelism: heads and MLP width split, width-h tensors replicated
    tp_local = wl.tp if (wl.tp > 1 and tpd == 1.0) else 1
    shape = tp_local_shape(m, tp_local) if not megatron_core(wl) else m
    S = int(wl.seq_len / wl.seq_shards)
    ids = list(rank_layers(m, wl))
    if wl.method == "freeze":
        first = freeze_trainable_layer_ids(m, wl).start
        ids = [i for i in ids if i >= first]
    memo: dict = {}
    per, temp, lp, fixed = [], [], [], []
    for i in ids:
        tr = _layer_training(m, wl, i)
        k = (_layer_kind(m, i), tr)
        if k not in memo:
            if megatron_core(wl) and m.arch != "next":  # Megatron-Core's own saved set (estimate/runtime.py)
                v = megatron_layer_bytes_per_token(m, i, tp=tp_local, imbalance=imb) / tpd
            else:
                v = layer_bytes_per_token(shape, wl, i, tr, seq=S, imbalance=imb) / tpd
            if wl.precision == "fp8":
                v *= 0.75
            fx = expert_lora_merged_bytes(m, wl, tr, ep=wl.ep, tp=wl.tp) if m.is_moe_layer(i) else 0.0
            memo[k] = (v, layer_backward_temp_per_token(m, wl, i, imb) / tpd, m.layer_params(i), fx)
        a, b, c, fx = memo[k]
        fixed.append(fx)
        per.append(a)
        temp.append(b)
        lp.append(c)
    return ActProfile(layer_ids=tuple(ids), per_token=tuple(per), temp_per_token=tuple(temp),
                      layer_params=tuple(lp), max_per_token=max(per) if per else 0.0, uniform=len(memo) <= 1,
                      fixed=tuple(fixed))


_ACT_FIELDS = ("method", "lora_rank", "lora_alpha", "lora_targets", "freeze_trainable_layers", "precision",
               "attention", "tp", "pp", "cp", "sequence_parallel", "ulysses", "strategy")


_act_fields = attrgetter(*_ACT_FIELDS)
_PRECISION_AT = _ACT_FIELDS.index("precision")


def _act_key(wl: Workload) -> tuple:
    # the sequence length matters only through eager attention's S x S scores
    key = _act_fields(wl)
    if wl.precision in ("amp-bf16", "fp16") and not autocast(wl):
        key = key[:_PRECISION_AT] + ("bf16",) + key[_PRECISION_AT + 1:]
    # the strategy matters only as Megatron-Core's saved set (ddp here) or the Hugging Face layer's (fsdp) under a
    # model-parallel layout, and for autocast (ddp), whose precision the key already carries
    key = key[:-1] + ("fsdp" if (wl.uses_megatron and not megatron_core(wl)) else "ddp",)
    return key + (wl.seq_len if wl.attention == "eager" else wl.seq_shards, routing_imbalance(wl))


@lru_cache(maxsize=4096)
def act_profile_t(m: ModelShape, key: tuple) -> ActProfile:
    """:func:`act_profile` cached on the fields that decide it (``key`` from :func:`cached_act_profile`)."""
    kw = dict(zip(_ACT_FIELDS, key[:-2]))
    kw["seq_len"] = key[-2]
    kw["gpus"] = kw["tp"] * kw["pp"] * kw["cp"] * kw["ulysses"]
    return act_profile(m, Workload(**kw), imbalance=key[-1] if m.is_moe else 1.0)


def cached_act_profile(m: ModelShape, wl: Workload) -> ActProfile:
    """The activation profile of ``wl`` on ``m`` (cached)."""
    return act_profile_t(m, _act_key(wl))
