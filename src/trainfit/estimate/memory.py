"""Per-GPU training memory, term by term, with the phase of the peak.

``estimate_memory(model, workload)`` walks one steady-state training step the way the real code
allocates memory, and reports the largest moment:

* **forward** (loss computed: fp32 logits transient),
* **backward** (start: all saved activations + the fp32 loss gradients; then layer by layer, saved
  activations freed and gradients allocated; with checkpointing, one layer recomputed at a time),
* **optimizer** step (parameters + gradients + states + the optimizer's own temporaries).

Terms (GiB = 2**30 bytes): weights, gradients, optimizer (incl. fp32 master copies), activations (saved
for backward, incl. checkpoint inputs), logits_loss (fp32 logits / log-softmax and their gradients),
temporaries (optimizer-step buffers, ZeRO/FSDP gather and reduce buffers, DDP buckets, backward
scratch), overhead (CUDA context, NCCL, allocator slack; only in ``reserved_gib``).

Every formula, its derivation and source is in docs/memory-model.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from trainfit.estimate.activations import (LayerTraining, expert_lora_merged_bytes, layer_backward_temp_per_token,
                                           layer_bytes_per_token)
from trainfit.estimate.params import (ParamCounts, count_params, freeze_trainable_layer_ids, lora_params_of,
                                      lora_targeted)
from trainfit.estimate.runtime import megatron_layer_bytes_per_token, runtime_terms
from trainfit.models.shapes import ModelShape, ParamTensor
from trainfit.workload import ALL_LINEAR, Workload

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
#: torch DDP bucket_cap_mb default (25 MB); the Reducer keeps flat buckets covering all gradients.
PHASES = ("forward", "backward", "optimizer")
TERMS = ("weights", "gradients", "optimizer", "activations", "logits_loss", "temporaries")
#: The memory terms, once: key -> label (``overhead`` only in ``reserved_gib``). Tables, the trace report and the
#: web page all read this.
TERM_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer states (+fp32 master)",
    "activations": "activations (saved for backward)",
    "logits_loss": "logits + loss (fp32)",
    "temporaries": "temporaries (step, buckets, gathers)",
    "overhead": "overhead (CUDA context, allocator)",
}


@dataclass(frozen=True, kw_only=True)
class OverheadModel:
    """What ``reserved_gib`` adds to the tensor peak. Not yet measured on a GPU by this project (no GPU
    was available when it was set): values from the trace findings' caveats (CUDA context 0.5-1 GiB) and
    common PyTorch caching-allocator behaviour; benchmarks/gpu_probe.py measures and replaces them."""

    cuda_context_gib: float = 0.75
    """CUDA context, cuBLAS/cuDNN handles and workspaces (per process)."""
    nccl_gib: float = 0.5
    """NCCL communicator buffers when the job has more than one GPU."""
    allocator_slack_fraction: float = 0.06
    """Caching-allocator reserve and fragmentation, as a fraction of the tensor peak."""


DEFAULT_OVERHEAD = OverheadModel()


@dataclass(frozen=True, kw_only=True)
class MemoryEstimate:
    """Per-GPU memory of one training configuration (the worst rank / pipeline stage)."""

    model: str
    params: ParamCounts
    tensor_peak_gib: float
    """Live tensor bytes at the peak: what ``torch.cuda.max_memory_allocated`` and an exact trace see."""
    reserved_gib: float
    """What nvidia-smi would show: tensor peak + allocator slack + CUDA context (+ NCCL)."""
    peak_phase: str
    """forward | backward | optimizer."""
    breakdown_gib: dict[str, float]
    """Terms at the peak; they add up to ``reserved_gib`` (``overhead`` = reserved - tensor peak)."""
    phases_gib: dict[str, float]
    """Tensor peak of each phase."""
    host_ram_gib: float
    """Host RAM per node: processes, loading buffers and offloaded states."""
    activation_bytes_per_token_layer: int
    """Saved activation bytes per token of the largest decoder layer (no recomputation)."""
    assumptions: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "params": {"total": self.params.total, "trainable": self.params.trainable, "active": self.params.active},
            "tensor_peak_gib": round(self.tensor_peak_gib, 3),
            "reserved_gib": round(self.reserved_gib, 3),
            "peak_phase": self.peak_phase,
            "breakdown_gib": {k: round(v, 3) for k, v in self.breakdown_gib.items()},
            "phases_gib": {k: round(v, 3) for k, v in self.phases_gib.items()},
            "host_ram_gib": round(self.host_ram_gib, 1),
            "assumptions": list(self.assumptions),
        }

    def to_exact_dict(self) -> dict:
        """Every field unrounded (the typed Plan's lossless JSON); :meth:`from_dict` reads it back."""
        return {"model": self.model, "params": self.params.to_dict(), "tensor_peak_gib": self.tensor_peak_gib,
                "reserved_gib": self.reserved_gib, "peak_phase": self.peak_phase,
                "breakdown_gib": dict(self.breakdown_gib), "phases_gib": dict(self.phases_gib),
                "host_ram_gib": self.host_ram_gib,
                "activation_bytes_per_token_layer": self.activation_bytes_per_token_layer,
                "assumptions": list(self.assumptions)}

    @classmethod
    def from_dict(cls, d: dict) -> "MemoryEstimate":
        return cls(model=d["model"], params=ParamCounts(**d["params"]), tensor_peak_gib=d["tensor_peak_gib"],
                   reserved_gib=d["reserved_gib"], peak_phase=d["peak_phase"], breakdown_gib=dict(d["breakdown_gib"]),
                   phases_gib=dict(d["phases_gib"]), host_ram_gib=d["host_ram_gib"],
                   activation_bytes_per_token_layer=d["activation_bytes_per_token_layer"],
                   assumptions=tuple(d.get("assumptions") or ()))


# --------------------------------------------------------------------------------------- state bytes
@dataclass(frozen=True)
class _States:
    weights: float
    gradients: float  # full set of trainable grads on this rank at the end of backward
    optimizer: float
    step_temp: float  # optimizer-step temporaries
    grad_temp_bwd: float  # sharding / bucket buffers alive during backward
    weights_gathered: float  # ZeRO-3/FSDP: unsharded layers alive during fwd/bwd
    offloaded_host: float  # bytes moved to host RAM (whole job per rank)
    grad_by_ids: tuple  # ((layer ids, grad bytes per layer on this rank), ...): per-layer grads, grouped
    grad_global: float  # grads of non-layer tensors (embedding, head, final norm)
    grad_embedding: float  # the (untied) input-embedding grad: allocated last, by embedding backward
    trainable_sharded: float  # trainable elements in this rank's optimizer partition
    trainable_rank: float  # trainable elements this rank computes gradients for (before ZeRO sharding)
    tied_grad: float  # bytes of one tied embedding/LM-head gradient (unsharded), else 0
    notes: tuple[str, ...]


def _trainable_tensor_elems(m: ModelShape, wl: Workload, t: ParamTensor) -> int:
    """Trainable elements attached to one copy of tensor ``t``: itself, its LoRA adapters, or 0."""
    if wl.method == "full":
        return t.numel
    if wl.method in ("lora", "qlora"):
        return lora_params_of(t, wl.lora_rank) // t.count if lora_targeted(t, wl.lora_targets) else 0
    return t.numel  # freeze: only on trainable layers (the caller filters)


def _mp_shard(wl: Workload, t: ParamTensor) -> float:
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


def _rank_layers(m: ModelShape, wl: Workload) -> range:
    """Decoder layers on the worst rank: all of them, or the first pipeline stage."""
    return range(math.ceil(m.num_layers / wl.pp)) if wl.pp > 1 else range(m.num_layers)


def _state_bytes(m: ModelShape, wl: Workload) -> _States:
    zero = wl.strategy in ("zero1", "zero2", "zero3")
    amp = wl.precision in ("amp-bf16", "fp16")
    fp8 = wl.precision == "fp8"
    peft = wl.method in ("lora", "qlora")
    notes: list[str] = []
    p_b = 4.0 if (amp and not zero) else 2.0  # DeepSpeed keeps bf16/fp16 model weights
    # trainable storage: (param, grad, state dtype, fp32 master)
    if peft and not zero:
        tp_b, g_b, s_b, master = 4.0, 4.0, 4.0, 0.0  # PEFT adapters in fp32 (autocast_adapter_dtype)
    elif zero:
        tp_b, g_b, s_b, master = 2.0, 2.0, 4.0, 4.0  # ZeRO: bf16 params/grads + fp32 master + fp32 states
    elif amp:
        tp_b, g_b, s_b, master = 4.0, 4.0, 4.0, 0.0
    elif fp8:
        tp_b, g_b, s_b, master = 2.0, 4.0, 4.0, 4.0  # bf16 weights, fp32 main grads, fp32 master + states
        notes.append("fp8: bf16 weights with fp32 main grads, master and Adam states (TransformerEngine/"
                     "Megatron style); linear inputs saved in fp8; not traced")
    else:
        tp_b, g_b, s_b, master = 2.0, 2.0, 2.0, 0.0  # pure bf16: torch keeps states in the param dtype

    def opt_per_elem(t: ParamTensor) -> float:
        o = wl.optimizer
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

    dp = wl.dp * wl.cp  # ranks holding replicas of the same dense shard
    shard_w = wl.strategy in ("zero3", "fsdp")
    shard_g = wl.strategy in ("zero2", "zero3", "fsdp")
    shard_o = wl.strategy != "ddp"
    layers_here = set(_rank_layers(m, wl))
    freeze_ids = set(freeze_trainable_layer_ids(m, wl)) if wl.method == "freeze" else set()
    carriers = _carriers(m)
    weights = grads = opt = 0.0
    trainable_sharded = 0.0  # trainable elements in this rank's optimizer partition
    trainable_rank = 0.0  # trainable elements this rank computes gradients for (before sharding)
    largest_trainable = 0.0
    grad_global = grad_embedding = 0.0
    grad_by_ids: dict[tuple[int, ...], float] = {}
    tied_grad = 0.0
    for t in m.tensors():
        f = _mp_shard(wl, t)
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
        o = tr * opt_per_elem(t)
        opt += o / d_t if shard_o else o
        if peft:
            weights += tr * tp_b / (d_t if shard_w else 1.0)  # adapters
        largest_trainable = max(largest_trainable, per_copy)
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
    step_temp = grad_temp_bwd = gathered = offload_host = 0.0
    any_layer = _any_layer_tensor(m)
    layer_max = m.max_layer_params * _mp_shard(wl, any_layer)
    if wl.strategy == "ddp":
        if wl.dp > 1:
            grad_temp_bwd = grads  # DDP Reducer: flat buckets covering every gradient
            notes.append("DDP keeps gradient buckets the size of all gradients (gradient_as_bucket_view=False)")
    elif zero:
        grad_temp_bwd = min(DS_REDUCE_BUCKET, trainable_rank) * g_b
        step_temp = 4.0 * trainable_sharded  # fp32 copy of this rank's gradient partition
        if wl.strategy == "zero3":
            gathered = 2 * layer_max * 2.0 + DS_PREFETCH_BUCKET * 2.0
            gathered = max(gathered, m.vocab_size * m.hidden_size * 2.0 / wl.tp * 2)
    elif wl.strategy == "fsdp":
        cb = 2.0  # bf16 compute params (pure bf16, or MixedPrecisionPolicy(param_dtype=bf16) under AMP)
        # current layer + the next one prefetched, and the root group (embedding, head, final norm)
        # that FSDP2 does not reshard after forward
        root = (m.embedding_params + m.hidden_size) * cb / wl.tp
        gathered = 2 * layer_max * cb + root * (1 - 1 / dp)
        grad_temp_bwd = 2 * layer_max * g_b  # unsharded grads of one layer before reduce-scatter
        notes.append("FSDP2: each decoder layer and the root wrapped with fully_shard; one layer prefetched")
    # optimizer-step temporaries of the optimizer itself
    if wl.optimizer == "adamw-foreach" and not zero:
        step_temp += trainable_sharded * s_b  # _foreach_sqrt(exp_avg_sq)
    elif wl.optimizer == "adafactor" and not zero:
        step_temp += 3 * 4.0 * largest_trainable  # fp32 copies of the param, grad and update
    if wl.offload in ("optimizer", "all"):
        offload_host += opt
        opt = 0.0
        # ZeRO-Offload / FSDP2 CPUOffloadPolicy: reduced gradient partitions go to pinned host buffers (fp32 for
        # DeepSpeed); on the GPU only the reduce bucket (and FSDP's unsharded layer grads) stay.
        step_temp = 0.0
        offload_host += 4.0 * trainable_sharded
        grads = 0.0
        grad_by_ids = {}
        grad_global = grad_embedding = 0.0
        notes.append(f"offload={wl.offload}: optimizer states (and fp32 master) in host RAM, step on the CPU")
    if wl.offload == "all":
        offload_host += weights
        weights = 0.0
    if wl.optimizer == "paged-adamw-8bit":
        notes.append("paged-adamw-8bit: states counted on the GPU; bitsandbytes can page them to host RAM")
    return _States(weights=weights, gradients=grads, optimizer=opt, step_temp=step_temp,
                   grad_temp_bwd=grad_temp_bwd, weights_gathered=gathered, offloaded_host=offload_host,
                   grad_by_ids=tuple((frozenset(k), v) for k, v in grad_by_ids.items()),
                   grad_global=grad_global, grad_embedding=grad_embedding,
                   trainable_sharded=trainable_sharded, trainable_rank=trainable_rank,
                   tied_grad=tied_grad if grads else 0.0,
                   notes=tuple(notes))


def _any_layer_tensor(m: ModelShape) -> ParamTensor:
    return next(t for t in m.tensors() if t.layer_type != "global")


def model_state_gib(model: ModelShape, workload: Workload) -> dict[str, float]:
    """Per-GPU model states of ``workload`` in GiB, as the worst rank holds them between steps:
    ``weights`` (incl. PEFT adapters), ``gradients``, ``optimizer`` (incl. fp32 master copies) and
    ``offloaded_host`` (bytes in host RAM). Used by the RL phases (what the trainer leaves on the GPU
    while the rollout engine runs)."""
    st = _cached_states(model, workload)
    return {"weights": st.weights / GIB, "gradients": st.gradients / GIB, "optimizer": st.optimizer / GIB,
            "offloaded_host": st.offloaded_host / GIB}


# --------------------------------------------------------------------------------------- activations
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


def _eff_tokens(wl: Workload) -> float:
    """Tokens per micro-batch on one rank (context parallelism splits the sequence)."""
    return wl.micro_batch * wl.seq_len / wl.cp


def _act_divisor(wl: Workload) -> float:
    return float(wl.tp) if (wl.tp > 1 and wl.sequence_parallel) else 1.0


# --------------------------------------------------------------------------------------- main
@lru_cache(maxsize=1024)
def _cached_counts(m: ModelShape, method: str, rank: int, targets: tuple[str, ...], freeze: int) -> ParamCounts:
    return count_params(m, Workload(method=method, lora_rank=rank, lora_targets=targets,
                                    freeze_trainable_layers=freeze))


_STATE_FIELDS = ("method", "lora_rank", "lora_alpha", "lora_targets", "freeze_trainable_layers", "precision",
                 "optimizer", "gpus", "strategy", "offload", "tp", "pp", "ep", "cp")
_ACT_FIELDS = ("method", "lora_rank", "lora_alpha", "lora_targets", "freeze_trainable_layers", "precision",
               "attention", "tp", "pp", "cp", "sequence_parallel")


def _states_key(wl: Workload) -> tuple:
    """The fields that decide model states (cache key)."""
    return tuple(getattr(wl, f) for f in _STATE_FIELDS)


@lru_cache(maxsize=4096)
def _cached_states_t(m: ModelShape, key: tuple) -> _States:
    kw = dict(zip(_STATE_FIELDS, key))
    # gpus_per_node does not change model states; any value that makes a valid Workload will do
    kw["gpus_per_node"] = kw["gpus"]
    return _state_bytes(m, Workload(**kw))


def _cached_states(m: ModelShape, wl: Workload) -> _States:
    return _cached_states_t(m, _states_key(wl))


@dataclass(frozen=True)
class _ActProfile:
    layer_ids: tuple[int, ...]  # layers on this rank that keep anything for backward
    per_token: tuple[float, ...]  # saved bytes per token (no recomputation), per layer in layer_ids
    temp_per_token: tuple[float, ...]  # backward scratch per token
    layer_params: tuple[int, ...]
    max_per_token: float
    uniform: bool  # all layers of the rank alike (same kind and training)
    fixed: tuple[float, ...] = ()  # saved bytes per layer independent of tokens (PEFT merged expert weights)


def _act_profile(m: ModelShape, key: Workload) -> _ActProfile:
    wl = key
    tpd = _act_divisor(wl)
    S = int(wl.seq_len / wl.cp)
    ids = list(_rank_layers(m, wl))
    if wl.method == "freeze":
        first = freeze_trainable_layer_ids(m, wl).start
        ids = [i for i in ids if i >= first]
    memo: dict = {}
    per, temp, lp, fixed = [], [], [], []
    for i in ids:
        tr = _layer_training(m, wl, i)
        k = (_layer_kind(m, i), tr)
        if k not in memo:
            if wl.uses_megatron and m.arch != "next":  # Megatron-Core's own saved set (estimate/runtime.py)
                v = megatron_layer_bytes_per_token(m, i) / tpd
            else:
                v = layer_bytes_per_token(m, wl, i, tr, seq=S) / tpd
            if wl.precision == "fp8":
                v *= 0.75
            fx = expert_lora_merged_bytes(m, wl, tr, ep=wl.ep, tp=wl.tp) if m.is_moe_layer(i) else 0.0
            memo[k] = (v, layer_backward_temp_per_token(m, wl, i) / tpd, m.layer_params(i), fx)
        a, b, c, fx = memo[k]
        fixed.append(fx)
        per.append(a)
        temp.append(b)
        lp.append(c)
    return _ActProfile(layer_ids=tuple(ids), per_token=tuple(per), temp_per_token=tuple(temp),
                       layer_params=tuple(lp), max_per_token=max(per) if per else 0.0, uniform=len(memo) <= 1,
                       fixed=tuple(fixed))


def _autocast(wl: Workload) -> bool:
    """fp32 weights run under autocast only with plain DDP: DeepSpeed's bf16/fp16 mode and FSDP2's
    MixedPrecisionPolicy(param_dtype=bf16) compute with half-precision weights, no autocast cache."""
    return wl.precision in ("amp-bf16", "fp16") and wl.strategy == "ddp"


def _act_key(wl: Workload) -> tuple:
    # the sequence length matters only through eager attention's S x S scores
    key = [getattr(wl, f) for f in _ACT_FIELDS]
    if wl.precision in ("amp-bf16", "fp16") and not _autocast(wl):
        key[_ACT_FIELDS.index("precision")] = "bf16"
    return tuple(key) + (wl.seq_len if wl.attention == "eager" else wl.cp,)


@lru_cache(maxsize=4096)
def _act_profile_t(m: ModelShape, key: tuple) -> "_ActProfile":
    kw = dict(zip(_ACT_FIELDS, key[:-1]))
    kw["seq_len"] = key[-1]
    kw["gpus"] = kw["tp"] * kw["pp"] * kw["cp"]
    return _act_profile(m, Workload(**kw))


@lru_cache(maxsize=8192)
def _estimate_cached(m: ModelShape, wl: Workload, overhead: OverheadModel) -> MemoryEstimate:
    return _estimate(m, wl, overhead)


def estimate_memory(model: ModelShape, workload: Workload, *,
                    overhead: OverheadModel = DEFAULT_OVERHEAD) -> MemoryEstimate:
    """Per-GPU memory of ``workload`` on ``model`` (see module docstring). Results are cached."""
    return _estimate_cached(model, workload, overhead)


def _estimate(m: ModelShape, wl: Workload, overhead: OverheadModel) -> MemoryEstimate:
    params = _cached_counts(m, wl.method, wl.lora_rank, tuple(wl.lora_targets), wl.freeze_trainable_layers)
    st = _cached_states(m, wl)
    prof = _act_profile_t(m, _act_key(wl))
    T = _eff_tokens(wl)
    V, h = m.vocab_size, m.hidden_size
    tpd = _act_divisor(wl)
    assumptions: list[str] = list(st.notes)
    in_flight = min(wl.pp, wl.grad_accum) if wl.pp > 1 else 1
    if wl.pp > 1:
        assumptions.append(f"pipeline 1F1B: first stage holds {math.ceil(m.num_layers / wl.pp)} layers and "
                           f"{in_flight} micro-batches of activations; the loss region is counted on the same "
                           "rank (conservative)")
    if m.arch == "next":
        assumptions.append("Qwen3-Next Gated DeltaNet activations are an approximate per-tensor count (not traced)")
    if wl.attention == "flash":
        assumptions.append("flash-attention saves out + log-sum-exp like sdpa (counted the same)")
    amp = _autocast(wl)
    n = len(prof.layer_ids)
    ckpt_per_layer = (4 if amp else 2) * h / tpd * T  # the layer input, kept by checkpointing
    saved = [ckpt_per_layer] * n if wl.grad_ckpt else [a * T + f for a, f in zip(prof.per_token, prof.fixed)]
    saved_total = sum(saved) * in_flight
    # checkpointing keeps every layer's input, also of frozen layers below the first trainable one (the
    # non-reentrant checkpoint holds its inputs even when nothing inside needs grad); backward never
    # reaches those layers, so they stay until the step ends
    frozen_ckpt = ckpt_per_layer * (len(_rank_layers(m, wl)) - n) * in_flight if wl.grad_ckpt else 0.0
    saved_total += frozen_ckpt
    # autocast keeps bf16 copies of fp32 weights that backward needs (saved by the matmuls)
    autocast_w = 0.0
    if amp:
        frac = len(_rank_layers(m, wl)) / m.num_layers
        lin = sum(t.total * _mp_shard(wl, t) * (frac if t.layer_type != "global" else 1.0) for t in m.tensors()
                  if t.kind in ("linear", "expert", "lm_head") or (t.kind == "embedding" and m.tie_word_embeddings))
        autocast_w = 2.0 * lin / (wl.dp if wl.strategy in ("zero3", "fsdp") else 1)
        assumptions.append("AMP: autocast caches bf16 copies of the fp32 weights during forward")
    # final norm + LM head input
    head_trains = wl.method == "full"
    final_norm = (4 * h + 4 + (4 * h if head_trains else 0)) * T / tpd
    # loss region
    vt = V * T / wl.tp
    if wl.loss == "standard":
        loss_fwd_peak = 10 * vt  # bf16 logits + fp32 copy + log_softmax output
        loss_bwd_peak = 12 * vt  # saved log_softmax output + nll grad + log_softmax grad (fp32)
    else:
        inc = math.ceil(V / h)
        chunk = 2 ** math.ceil(math.log2(max(1, math.ceil(T / inc))))
        lm_grad = (V * h * 2.0 / wl.tp) if head_trains else 0.0
        loss_saved = 2 * h * T + lm_grad  # grad_input (and grad_weight) computed in forward
        loss_fwd_peak = loss_saved + chunk * V * (2 + 4 + 4)
        loss_bwd_peak = loss_saved
        assumptions.append(f"fused loss: chunked linear cross-entropy (Liger), {chunk}-token chunks; not traced")

    base_w = st.weights + st.weights_gathered
    base_o = st.optimizer
    ga = wl.grad_accum > 1
    ga_grads = st.gradients if ga else 0.0  # grads alive across micro-batches
    ga_temp = st.grad_temp_bwd if ga else 0.0
    cands: list[tuple[str, float, float, float, float, float, float]] = []
    # forward: everything saved + the loss transient (+ autocast weight cache until autocast exits)
    cands.append(("forward", base_w, ga_grads, base_o, saved_total + final_norm + autocast_w, loss_fwd_peak, ga_temp))
    # backward start
    aw = autocast_w if not wl.grad_ckpt else 0.0
    cands.append(("backward", base_w, ga_grads, base_o, saved_total + final_norm + aw, loss_bwd_peak, ga_temp))
    # layer sweep, top to bottom: saved activations freed, gradients allocated
    g_acc = st.grad_global if not ga else 0.0
    remaining = saved_total
    aw_step = aw / n if n else 0.0
    mp_any = _mp_shard(wl, _any_layer_tensor(m))
    best_sweep = None
    best_total = -1.0
    def grad_of(i: int) -> float:
        return sum(gb for ids_, gb in st.grad_by_ids if i in ids_)

    # Every step of the sweep changes the total by the same amount when all layers of the rank are alike
    # (dense models, all-MoE Qwen3-MoE), so the largest value is at one end: evaluate only the ends.
    uniform = (prof.uniform and grad_of(prof.layer_ids[-1]) == grad_of(prof.layer_ids[0])) if n else True
    if uniform and n > 2:
        g_layer = 0.0 if ga else grad_of(prof.layer_ids[0])
        step_saved = saved[0] * in_flight
        visits = ((n - 1, 0), (0, n - 1))  # (index, layers already done)
    else:
        visits = None
    j_iter = visits if visits is not None else ((j, n - 1 - j) for j in range(n - 1, -1, -1))
    g0, rem0, aw0 = g_acc, remaining, aw
    for j, done in j_iter:
        if visits is not None:
            g_acc = g0 + done * g_layer
            remaining = rem0 - done * step_saved
            aw = max(0.0, aw0 - done * aw_step) if aw0 else 0.0
        temp = prof.temp_per_token[j] * T + 2 * h * T / tpd
        recompute = 0.0
        if wl.grad_ckpt:
            recompute = prof.per_token[j] * T + prof.fixed[j]
            if amp:
                recompute += 2.0 * prof.layer_params[j] * mp_any
        # the layer's own grads appear as its backward proceeds; the widest transients come first (MLP)
        act = remaining + recompute + aw
        tot = base_w + ga_grads + g_acc + base_o + act + temp + st.grad_temp_bwd
        if tot > best_total:
            best_total = tot
            best_sweep = ("backward", base_w, ga_grads + g_acc, base_o, act, 0.0, temp + st.grad_temp_bwd)
        if visits is None:
            remaining -= saved[j] * in_flight
            if aw:
                aw = max(0.0, aw - aw_step)
            if not ga:
                g_acc += grad_of(prof.layer_ids[j])
    if best_sweep is not None:
        cands.append(best_sweep)
    # end of backward: every gradient + grad w.r.t. the embedding output; with tied embeddings the
    # embedding backward makes a second full gradient of the shared weight and AccumulateGrad adds it
    # out of place (old + new + sum alive together: +2 gradients, seen in every tied-model trace)
    ddp_buckets = st.grad_temp_bwd if wl.strategy == "ddp" else 0.0
    cands.append(("backward", base_w, st.gradients, base_o, frozen_ckpt, 0.0,
                  2 * h * T / tpd + ddp_buckets + 2 * st.tied_grad))
    # optimizer step
    cands.append(("optimizer", st.weights, st.gradients, st.optimizer, 0.0, 0.0, st.step_temp + ddp_buckets))
    # engine runtime allocations the trace does not see (estimate/runtime.py), alive the whole step
    rt = runtime_terms(wl, trainable_rank_elems=st.trainable_rank)
    if rt:
        extra = sum(t.bytes for t in rt)
        cands = [(c[0], c[1], c[2] + extra) + tuple(c[3:]) for c in cands]
        assumptions += [t.note for t in rt]
    phases_total: dict[str, float] = {}
    peak = cands[0]
    for c in cands:
        tot = sum(c[1:])
        if tot > phases_total.get(c[0], -1.0):
            phases_total[c[0]] = tot
        if tot > sum(peak[1:]):
            peak = c
    tensor_peak = sum(peak[1:]) / GIB
    ov = (overhead.cuda_context_gib + (overhead.nccl_gib if wl.gpus > 1 else 0.0)
          + overhead.allocator_slack_fraction * tensor_peak)
    breakdown = {k: v / GIB for k, v in zip(TERMS, peak[1:])}
    breakdown["overhead"] = ov
    # host RAM per node
    procs = min(wl.gpus, wl.gpus_per_node)
    host = procs * 3.0 + st.offloaded_host / GIB * procs + 5.0
    assumptions.append("host RAM: ~3 GiB per training process + offloaded states + one 5 GB shard while loading")
    return MemoryEstimate(
        model=m.name, params=params, tensor_peak_gib=tensor_peak, reserved_gib=tensor_peak + ov,
        peak_phase=peak[0], breakdown_gib=breakdown,
        phases_gib={k: phases_total[k] / GIB for k in PHASES}, host_ram_gib=host,
        activation_bytes_per_token_layer=int(prof.max_per_token), assumptions=tuple(assumptions))
