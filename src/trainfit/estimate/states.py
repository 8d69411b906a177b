"""Model states per GPU: weights, gradients, optimizer states (incl. fp32 master copies), the
sharding / bucket buffers of the data-parallel strategy, and what offloading moves to host RAM.

Part of the per-GPU memory model (:mod:`trainfit.estimate.memory` walks the training step on top of
these numbers). Formulas, derivations and sources: docs/memory-model.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from trainfit import i18n
from trainfit.i18n import _
from trainfit.estimate.comm import data_parallel_group
from trainfit.estimate.params import freeze_trainable_layer_ids, lora_params_of, lora_targeted
from trainfit.estimate.runtime import megatron_core
from trainfit.estimate.zero3 import (DS_SUB_GROUP_SIZE, gathered_weights_apply, largest_sub_group_elems,  # noqa: F401
                                     reduce_transient_bytes, step_temp_bytes)
from trainfit.models.shapes import ModelShape, ParamTensor
from trainfit.workload import Workload

GIB = 2**30

#: bytes per element of a 4-bit NF4 weight with bitsandbytes double quantisation: 4 bits + an 8-bit
#: absmax per 64-block + an fp32 absmax per 256 of those (Dettmers et al., QLoRA, 2023, section 2).
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)
#: bitsandbytes 8-bit optimizer state: 1 byte + an fp32 absmax per 256-block, per moment.
ADAM8_STATE_BYTES = 2 * (1 + 4 / 256)
#: DeepSpeed defaults (deepspeed/runtime/zero/config.py): reduce_bucket_size and allgather_bucket_size
#: 5e8 elements, stage3_prefetch_bucket_size 5e7 elements.
DS_REDUCE_BUCKET = 500_000_000
DS_PREFETCH_BUCKET = 50_000_000
#: Footprint of DeepSpeed ZeRO-1/2 ``overlap_comm`` in units of the two bucket settings: "overlap_comm uses 4.5x
#: the allgather_bucket_size and reduce_bucket_size values. So if they are set to 5e8, this requires a 9GB
#: footprint (5e8 x 2Bytes x 2 x 4.5)" (Hugging Face Transformers DeepSpeed guide, ZeRO-2 configuration,
#: https://huggingface.co/docs/transformers/main/en/deepspeed#zero-configuration, source
#: https://github.com/huggingface/transformers/blob/main/docs/source/en/deepspeed.md, read 2026-12-03; the same
#: factor in OpenRLHF's documentation of ``--overlap_comm``, https://openrlhf.readthedocs.io/en/latest/usage.html).
#: Without overlap_comm DeepSpeed fills one contiguous reduce bucket (``ipg_buffer``) at a time
#: (deepspeed/runtime/zero/stage_1_and_2.py, https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage_1_and_2.py).
DS_OVERLAP_COMM_FACTOR = 4.5


def ds_comm_buffer_bytes(wl: Workload, trainable_rank: float) -> float:
    """GPU bytes of DeepSpeed ZeRO-1/2 gradient communication buffers for ``wl`` (16-bit gradients): one reduce
    bucket of ``ds_bucket_elems`` without ``overlap_comm``; with it, the documented 4.5x of the reduce and
    allgather buckets (``DS_OVERLAP_COMM_FACTOR``). A bucket never holds more elements than the rank has
    trainable gradients (``trainable_rank``), so PEFT jobs keep small buffers. With overlap_comm the footprint
    is counted from backward through the step (memory.py): DeepSpeed frees the buckets after backward into
    PyTorch's caching allocator, which keeps them reserved (nvidia-smi), and the step's fp32 gradient
    partition is larger than a bucket block, so it cannot reuse them
    (https://pytorch.org/docs/stable/notes/cuda.html#memory-management). The single bucket without
    overlap_comm is counted in backward only, as before."""
    bucket = min(float(wl.ds_bucket_elems), trainable_rank)
    if wl.ds_overlap_comm:
        return DS_OVERLAP_COMM_FACTOR * 2 * bucket * 2.0
    return bucket * 2.0


@dataclass(frozen=True, kw_only=True)
class ModelStates:
    """Model-state bytes on the worst rank (all values in bytes or elements, per GPU)."""

    weights: float
    """Weights on this rank (incl. PEFT adapters), after any parameter offload."""
    gradients: float
    """Full set of trainable grads on this rank at the end of backward."""
    optimizer: float
    """Optimizer states incl. fp32 master copies (0 when offloaded)."""
    step_temp: float
    """Optimizer-step temporaries."""
    grad_temp_bwd: float
    """Sharding / bucket buffers alive during backward."""
    weights_gathered: float
    """ZeRO-3/FSDP: unsharded layers alive during forward and backward."""
    offloaded_host: float
    """Bytes moved to host RAM (whole job per rank)."""
    grad_by_ids: tuple
    """((layer ids, grad bytes per layer on this rank), ...): per-layer grads, grouped."""
    grad_global: float
    """Grads of non-layer tensors (embedding, head, final norm)."""
    grad_embedding: float
    """The (untied) input-embedding grad: allocated last, by embedding backward."""
    trainable_sharded: float
    """Trainable elements in this rank's optimizer partition."""
    trainable_rank: float
    """Trainable elements this rank computes gradients for (before ZeRO sharding)."""
    tied_grad: float
    """Bytes of one tied embedding/LM-head gradient (unsharded), else 0."""
    notes: tuple[str, ...]
    """Assumptions the states rest on (shown with the estimate)."""
    step_block: float = 0.0
    """Largest single tensor of the optimizer step (bytes): ZeRO-3's fp32 gradient of the largest sub-group
    (estimate/zero3.py), else 0."""
    reduce_embedding: float = 0.0
    """ZeRO-3: bytes the input embedding's gradient holds outside the reduce bucket at the end of backward (its
    full gradient, and the reduce-scatter's flat copy: estimate/zero3.py reduce_transient_bytes), else 0."""
    reduce_head: float = 0.0
    """ZeRO-3: the same for an untied LM head's gradient, at the start of backward, else 0."""


class _Storage(NamedTuple):
    """Bytes per element of the model states under one precision / strategy / method."""

    param: float
    """Frozen (or all, with full training) model weights."""
    trainable_param: float
    """PEFT adapter weights."""
    grad: float
    """Gradients."""
    state: float
    """One optimizer moment."""
    master: float
    """fp32 master copy (0 when the weights themselves are the master)."""


@dataclass(kw_only=True)
class _Sums:
    """Running totals of the per-tensor walk (mutable, local to :func:`state_bytes`)."""

    weights: float = 0.0
    grads: float = 0.0
    opt: float = 0.0
    trainable_sharded: float = 0.0
    trainable_rank: float = 0.0
    largest_trainable: float = 0.0
    grad_global: float = 0.0
    grad_embedding: float = 0.0
    grad_by_ids: dict = field(default_factory=dict)
    tied_grad: float = 0.0
    sub_group_parts: dict = field(default_factory=dict)
    """ZeRO-3: tensor name -> (partition elements per copy on this rank, trainable layer ids), for the
    optimizer's sub-group walk (estimate/zero3.py)."""
    full_grad_elems: dict = field(default_factory=dict)
    """Tensor kind (embedding / lm_head) -> trainable elements of its unsharded gradient on this rank."""


def _storage(wl: Workload, notes: list[str]) -> _Storage:
    zero = wl.strategy in ("zero1", "zero2", "zero3")
    amp = wl.precision in ("amp-bf16", "fp16")
    p_b = 4.0 if (amp and not zero) else 2.0  # DeepSpeed keeps bf16/fp16 model weights
    # trainable storage: (param, grad, state dtype, fp32 master)
    if megatron_core(wl) and wl.method in ("full", "freeze") and wl.precision in ("bf16", "amp-bf16", "fp16"):
        # Megatron-Core mixed precision: 16-bit params, fp32 master + fp32 Adam moments, also without the
        # distributed optimizer (estimate/runtime.py megatron_core; the fp32 main_grad is a runtime term)
        return _Storage(param=2.0, trainable_param=2.0, grad=2.0, state=4.0, master=4.0)
    if wl.method in ("lora", "qlora") and not zero:
        tp_b, g_b, s_b, master = 4.0, 4.0, 4.0, 0.0  # PEFT adapters in fp32 (autocast_adapter_dtype)
    elif zero:
        tp_b, g_b, s_b, master = 2.0, 2.0, 4.0, 4.0  # ZeRO: bf16 params/grads + fp32 master + fp32 states
    elif amp:
        tp_b, g_b, s_b, master = 4.0, 4.0, 4.0, 0.0
    elif wl.precision == "fp8":
        tp_b, g_b, s_b, master = 2.0, 4.0, 4.0, 4.0  # bf16 weights, fp32 main grads, fp32 master + states
        notes.append(_("fp8: bf16 weights with fp32 main grads, master and Adam states (TransformerEngine/"
                       "Megatron style); linear inputs saved in fp8; not traced"))
    else:
        tp_b, g_b, s_b, master = 2.0, 2.0, 2.0, 0.0  # pure bf16: torch keeps states in the param dtype
    return _Storage(param=p_b, trainable_param=tp_b, grad=g_b, state=s_b, master=master)


def precision_mode(wl: Workload) -> str:
    """How the trainable weights and the optimizer's states are held, as the memory model sizes them (one
    decision: :func:`_storage`): ``pure bf16`` (16-bit weights, gradients and Adam states, no fp32 copy: the HF
    Trainer with ``torch_dtype bfloat16``, LLaMA-Factory ``pure_bf16``), ``fp32 master`` (16-bit weights with an fp32
    master copy and fp32 states: DeepSpeed ZeRO, Megatron, fp8), ``fp32 AMP`` (fp32 weights and states, 16-bit
    autocast) or ``fp32 adapters`` (LoRA adapters and their states in fp32 on a 16-bit base)."""
    st = _storage(wl, [])
    if st.state < 4.0:
        return "pure bf16"
    if st.master:
        return "fp32 master"
    return "fp32 adapters" if wl.method in ("lora", "qlora") and wl.precision not in ("amp-bf16", "fp16") else "fp32 AMP"


def pure_bf16_warning(wl: Workload) -> str | None:
    """The numerics of a pure-bf16 update of full weights (None for any other mode or for adapters): bf16 keeps 8
    significant bits, so an update below about 2^-9 of a weight's magnitude rounds away in the weight (and small
    second-moment increments in the Adam state); PyTorch's AdamW does no stochastic rounding or Kahan summation."""
    if precision_mode(wl) != "pure bf16" or wl.method not in ("full", "freeze"):
        return None
    return _("pure bf16: weights and Adam states in bf16 with no fp32 master copy; updates smaller than ~0.2% of a "
             "weight round away (bf16 keeps 8 significant bits; no stochastic rounding), which slows or stalls "
             "fine-tuning at small learning rates. For fp32 master weights plan with --precision amp-bf16 or a ZeRO "
             "strategy (DeepSpeed keeps an fp32 master copy), at 6-8 more bytes per trainable parameter")


def _opt_bytes_per_elem(o: str, peft: bool, t: ParamTensor, s_b: float, master: float) -> float:
    """Optimizer-state bytes per trainable element of ``t`` under optimizer ``o`` (``s_b`` bytes per moment),
    incl. the fp32 master copy (``master`` bytes)."""
    if o in ("adamw-fused", "adamw-foreach"):
        per = 2 * s_b
    elif o in ("adamw-8bit", "paged-adamw-8bit"):
        per = ADAM8_STATE_BYTES if t.numel >= 4096 else 8.0  # bnb keeps small tensors in 32-bit
    elif o == "sgd":
        per = 0.0
    elif len(t.shape) >= 2 and not peft:  # adafactor: factored second moment (rows + cols)
        rows = t.numel // t.shape[-1]
        cols = t.numel // t.shape[-2]
        per = (rows + cols) / t.numel * s_b
    else:
        per = s_b
    return per + master


def _trainable_tensor_elems(m: ModelShape, wl: Workload, t: ParamTensor) -> int:
    """Trainable elements attached to one copy of tensor ``t``: itself, its LoRA adapters, or 0."""
    if wl.method == "full":
        return t.numel
    if wl.method in ("lora", "qlora"):
        return lora_params_of(t, wl.lora_rank) // t.count if lora_targeted(t, wl.lora_targets) else 0
    return t.numel  # freeze: only on trainable layers (the caller filters)


def mp_shard(wl: Workload, t: ParamTensor) -> float:
    """Fraction of one copy of ``t`` a rank holds under tensor / expert parallelism. With expert
    parallelism the experts are not tensor-parallel (expert TP 1: ms-swift's default and the usual MoE
    layout); without it they split over TP like every linear."""
    f = 1.0
    if wl.tp > 1 and (t.kind in ("linear", "embedding", "lm_head") or (t.kind == "expert" and wl.ep == 1)):
        f /= wl.tp
    if wl.ep > 1 and t.kind == "expert":
        f /= wl.ep
    return f


@lru_cache(maxsize=64)
def _carriers(m: ModelShape) -> dict[str, tuple[int, ...]]:
    """For each per-layer tensor name, the decoder layers that hold a copy."""
    return {t.name: tuple(i for i in range(m.num_layers) if m.holds(t, i))
            for t in m.tensors() if t.layer_type != "global"}


def rank_layers(m: ModelShape, wl: Workload) -> range:
    """Decoder layers on the worst rank: all of them, or the first pipeline stage."""
    return range(math.ceil(m.num_layers / wl.pp)) if wl.pp > 1 else range(m.num_layers)


def any_layer_tensor(m: ModelShape) -> ParamTensor:
    """The first per-layer tensor (its kind decides the tensor-parallel share of a layer)."""
    return next(t for t in m.tensors() if t.layer_type != "global")


def _walk_tensors(m: ModelShape, wl: Workload, s: _Storage) -> _Sums:
    """Weights, gradients and optimizer states of every tensor copy on the worst rank."""
    dp = data_parallel_group(wl)  # ranks holding replicas of the same dense shard (data x context ranks)
    shard_w = wl.strategy in ("zero3", "fsdp")
    shard_g = wl.strategy in ("zero2", "zero3", "fsdp")
    shard_o = wl.strategy != "ddp"
    peft = wl.method in ("lora", "qlora")
    layers_here = set(rank_layers(m, wl))
    freeze_ids = set(freeze_trainable_layer_ids(m, wl)) if wl.method == "freeze" else set()
    carriers = _carriers(m)
    p_b, tp_b, g_b, s_b, master, o_name = s.param, s.trainable_param, s.grad, s.state, s.master, wl.optimizer
    weights = grads = opt = 0.0
    trainable_sharded = trainable_rank = largest_trainable = 0.0
    grad_global = grad_embedding = tied_grad = 0.0
    grad_by_ids: dict[tuple[int, ...], float] = {}
    parts: dict[str, tuple[float, frozenset[int]]] = {}
    full_grad: dict[str, float] = {}
    for t in m.tensors():
        f = mp_shard(wl, t)
        # experts with expert TP 1: the tensor-parallel ranks hold whole experts, so the expert data-parallel
        # group (which shards their optimizer / ZeRO state) is dp * tp / ep (Megatron MoE parallel folding)
        d_t = max(1.0, dp * wl.tp / wl.ep) if (t.kind == "expert" and wl.ep > 1) else float(dp)
        if t.layer_type == "global":
            if wl.pp > 1 and t.kind in ("lm_head", "norm"):
                continue  # last stage; the worst (first) stage holds the embedding
            ids: tuple[int, ...] = (0,)
        else:
            ids = carriers[t.name] if wl.pp == 1 else tuple(i for i in carriers[t.name] if i in layers_here)
        n_copies = len(ids)
        if not n_copies:
            continue
        wb = NF4_BYTES if (wl.method == "qlora" and t.kind in ("linear", "expert")) else p_b
        w = t.numel * f * n_copies * wb
        weights += w / d_t if shard_w else w
        per_copy = _trainable_tensor_elems(m, wl, t) * f
        if wl.method == "freeze":
            tr_ids = tuple(i for i in ids if i in freeze_ids) if t.layer_type != "global" else ()
        else:
            tr_ids = ids
        tr = per_copy * len(tr_ids)
        if tr <= 0:
            continue
        trainable_rank += tr
        trainable_sharded += tr / d_t if shard_o else tr
        o = tr * _opt_bytes_per_elem(o_name, peft, t, s_b, master)
        opt += o / d_t if shard_o else o
        if peft:
            weights += tr * tp_b / (d_t if shard_w else 1.0)  # adapters
        largest_trainable = max(largest_trainable, per_copy)
        if wl.strategy == "zero3":
            parts[t.name] = (per_copy / d_t, frozenset(tr_ids))
            if t.kind in ("embedding", "lm_head"):
                full_grad[t.kind] = per_copy
        gb = per_copy * g_b / (d_t if shard_g else 1.0)
        grads += gb * len(tr_ids)
        if t.kind == "embedding" and m.tie_word_embeddings and not shard_g:
            tied_grad = gb
        if t.kind == "embedding" and not m.tie_word_embeddings:
            grad_embedding += gb
        elif t.layer_type == "global":
            grad_global += gb
        else:
            grad_by_ids[tr_ids] = grad_by_ids.get(tr_ids, 0.0) + gb
    return _Sums(weights=weights, grads=grads, opt=opt, trainable_sharded=trainable_sharded,
                 trainable_rank=trainable_rank, largest_trainable=largest_trainable, grad_global=grad_global,
                 grad_embedding=grad_embedding, grad_by_ids=grad_by_ids, tied_grad=tied_grad,
                 sub_group_parts=parts, full_grad_elems=full_grad)


def _strategy_buffers(m: ModelShape, wl: Workload, acc: _Sums, s: _Storage,
                      notes: list[str]) -> tuple[float, float, float, float]:
    """(step temporaries, backward grad buffers, gathered weights, largest step tensor) of the strategy and the
    optimizer."""
    zero = wl.strategy in ("zero1", "zero2", "zero3")
    step_temp = grad_temp_bwd = gathered = step_block = 0.0
    layer_max = m.max_layer_params * mp_shard(wl, any_layer_tensor(m))
    if megatron_core(wl):  # before plain DDP: Megatron's own DDP has no separate Reducer buckets
        notes.append(_("Megatron-Core: gradients reduced in place in the contiguous main_grad buffer; the "
                       "distributed optimizer steps on views of it (no reduce bucket, no fp32 gradient copy)"))
    elif wl.strategy == "ddp":
        if data_parallel_group(wl) > 1:
            grad_temp_bwd = acc.grads  # DDP Reducer: flat buckets covering every gradient
            notes.append(_("DDP keeps gradient buckets the size of all gradients (gradient_as_bucket_view=False)"))
    elif zero:
        if wl.strategy == "zero3":
            grad_temp_bwd = min(wl.ds_bucket_elems, acc.trainable_rank) * s.grad
        else:
            grad_temp_bwd = ds_comm_buffer_bytes(wl, acc.trainable_rank)
            if wl.ds_overlap_comm:
                notes.append(_("DeepSpeed overlap_comm: {factor}x the reduce + allgather buckets ({elems:.0e} "
                               "elements) as communication buffers").format(factor=DS_OVERLAP_COMM_FACTOR,
                                                                            elems=wl.ds_bucket_elems))
        # fp32 copy of this rank's gradient partition for the step: ZeRO-1/2 convert the whole partition,
        # ZeRO-3 one optimizer sub-group at a time, flattened in 16 bits and cast (estimate/zero3.py)
        step_temp = 4.0 * acc.trainable_sharded
        if wl.strategy == "zero3":
            sub_group = largest_sub_group_elems(m, acc.sub_group_parts)
            step_temp = step_temp_bytes(sub_group, wl.optimizer)
            step_block = 4.0 * sub_group
            if gathered_weights_apply(data_parallel_group(wl)):
                gathered = 2 * layer_max * 2.0 + DS_PREFETCH_BUCKET * 2.0
                gathered = max(gathered, m.vocab_size * m.hidden_size * 2.0 / wl.tp * 2)
            else:
                notes.append(_("ZeRO-3 on one rank: parameters are views of their own partitions, nothing gathered"))
    elif wl.strategy == "fsdp":
        cb = 2.0  # bf16 compute params (pure bf16, or MixedPrecisionPolicy(param_dtype=bf16) under AMP)
        # current layer + the next one prefetched, and the root group (embedding, head, final norm)
        # that FSDP2 does not reshard after forward
        root = (m.embedding_params + m.hidden_size) * cb / wl.tp
        gathered = 2 * layer_max * cb + root * (1 - 1 / data_parallel_group(wl))
        # unsharded grads of one layer before reduce-scatter: only trainable parameters get gradients, so
        # with PEFT / freeze it is the largest layer's trainable share (FSDP2 reduce-scatters param.grad of
        # requires_grad parameters only: torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py)
        grad_temp_bwd = 2 * layer_max * s.grad
        if wl.method != "full":
            grad_temp_bwd = 2 * max(acc.grad_by_ids.values(), default=0.0) * data_parallel_group(wl)
        notes.append(_("FSDP2: each decoder layer and the root wrapped with fully_shard; one layer prefetched"))
    # optimizer-step temporaries of the optimizer itself
    if wl.optimizer == "adamw-foreach" and not zero:
        step_temp += acc.trainable_sharded * s.state  # _foreach_sqrt(exp_avg_sq)
    elif wl.optimizer == "adafactor" and not zero:
        step_temp += 3 * 4.0 * acc.largest_trainable  # fp32 copies of the param, grad and update
    return step_temp, grad_temp_bwd, gathered, step_block


def _offload(wl: Workload, acc: _Sums, step_temp: float, notes: list[str]) -> tuple[float, float]:
    """Move offloaded states to host RAM (in ``acc``); returns (host bytes, step temporaries left)."""
    offload_host = 0.0
    if wl.offload in ("optimizer", "all"):
        offload_host += acc.opt
        acc.opt = 0.0
        # ZeRO-Offload / FSDP2 CPUOffloadPolicy: reduced gradient partitions go to pinned host buffers (fp32 for
        # DeepSpeed); on the GPU only the reduce bucket (and FSDP's unsharded layer grads) stay.
        step_temp = 0.0
        offload_host += 4.0 * acc.trainable_sharded
        if not megatron_core(wl):
            acc.grads = 0.0
            acc.grad_by_ids = {}
            acc.grad_global = acc.grad_embedding = 0.0
        else:
            # Megatron-Core --optimizer-cpu-offload (HybridDeviceOptimizer): the DDP wrapper's contiguous fp32
            # main_grad buffer stays on the GPU; the optimizer copies its shard to pinned host memory
            # (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py)
            notes.append(_("Megatron optimizer CPU offload: the fp32 main_grad buffer stays on the GPU"))
        notes.append(_("offload={offload}: optimizer states (and fp32 master) in host RAM, step on the CPU").format(
            offload=wl.offload))
    if wl.offload == "all":
        offload_host += acc.weights
        acc.weights = 0.0
    return offload_host, step_temp


def state_bytes(m: ModelShape, wl: Workload) -> ModelStates:
    """Model states of ``wl`` on ``m`` for the worst rank (uncached; see :func:`cached_states`)."""
    notes: list[str] = []
    s = _storage(wl, notes)
    acc = _walk_tensors(m, wl, s)
    step_temp, grad_temp_bwd, gathered, step_block = _strategy_buffers(m, wl, acc, s, notes)
    offload_host, step_temp = _offload(wl, acc, step_temp, notes)
    if wl.optimizer == "paged-adamw-8bit":
        notes.append(_("paged-adamw-8bit: states counted on the GPU; bitsandbytes can page them to host RAM"))
    reduce = {k: reduce_transient_bytes(n, wl.ds_bucket_elems, data_parallel_group(wl), s.grad)
              for k, n in acc.full_grad_elems.items()}
    if any(reduce.values()):
        notes.append(_("ZeRO-3: a gradient larger than the reduce bucket ({elems:.0e} elements) is reduced on its own, "
                       "unsharded (embedding / LM head: {gib:.1f} GiB at most, with the reduce-scatter's flat copy "
                       "when its size does not divide by the ranks)").format(elems=wl.ds_bucket_elems,
                                                                           gib=max(reduce.values()) / GIB))
    return ModelStates(weights=acc.weights, gradients=acc.grads, optimizer=acc.opt, step_temp=step_temp,
                       grad_temp_bwd=grad_temp_bwd, weights_gathered=gathered, offloaded_host=offload_host,
                       grad_by_ids=tuple((frozenset(k), v) for k, v in acc.grad_by_ids.items()),
                       grad_global=acc.grad_global, grad_embedding=acc.grad_embedding,
                       trainable_sharded=acc.trainable_sharded, trainable_rank=acc.trainable_rank,
                       tied_grad=acc.tied_grad if acc.grads else 0.0,
                       notes=tuple(notes), step_block=step_block if step_temp else 0.0,
                       reduce_embedding=reduce.get("embedding", 0.0), reduce_head=reduce.get("lm_head", 0.0))


_STATE_FIELDS = ("method", "lora_rank", "lora_alpha", "lora_targets", "freeze_trainable_layers", "precision",
                 "optimizer", "gpus", "strategy", "offload", "tp", "pp", "ep", "cp", "ds_bucket_elems",
                 "ds_overlap_comm")


_states_key = attrgetter(*_STATE_FIELDS)
"""The fields that decide model states (cache key): ``_states_key(wl)`` is their tuple."""


@lru_cache(maxsize=4096)
def cached_states_t(m: ModelShape, key: tuple, lang: str = "en") -> ModelStates:
    """:func:`state_bytes` cached on the fields that decide it (``key`` from :func:`cached_states`) and the language
    of its notes (``i18n.current()``)."""
    kw = dict(zip(_STATE_FIELDS, key))
    # gpus_per_node does not change model states; any value that makes a valid Workload will do
    kw["gpus_per_node"] = kw["gpus"]
    return state_bytes(m, Workload(**kw))


def cached_states(m: ModelShape, wl: Workload) -> ModelStates:
    """Model states of ``wl`` on ``m`` (cached)."""
    return cached_states_t(m, _states_key(wl), i18n.current())


def model_state_gib(model: ModelShape, workload: Workload) -> dict[str, float]:
    """Per-GPU model states of ``workload`` in GiB, as the worst rank holds them between steps:
    ``weights`` (incl. PEFT adapters), ``gradients``, ``optimizer`` (incl. fp32 master copies) and
    ``offloaded_host`` (bytes in host RAM). Used by the RL phases (what the trainer leaves on the GPU
    while the rollout engine runs)."""
    st = cached_states(model, workload)
    return {"weights": st.weights / GIB, "gradients": st.gradients / GIB, "optimizer": st.optimizer / GIB,
            "offloaded_host": st.offloaded_host / GIB}
