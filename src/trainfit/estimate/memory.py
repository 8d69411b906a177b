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

from trainfit.estimate.activations import LayerTraining, layer_backward_temp_per_token, layer_bytes_per_token
from trainfit.estimate.params import (ParamCounts, count_params, freeze_trainable_layer_ids, lora_params_of,
                                      lora_targeted)
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
class PhaseMemory:
    """Live tensor bytes per term at the peak of one phase."""

    phase: str
    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits_loss: float
    temporaries: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.logits_loss + self.temporaries


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
    grad_of: dict  # layer index -> grad bytes of that layer on this rank
    grad_global: float  # grads of non-layer tensors (embedding, head, final norm)
    grad_embedding: float  # the (untied) input-embedding grad: allocated last, by embedding backward
    notes: tuple[str, ...]


def _trainable_tensor_elems(m: ModelShape, wl: Workload, t: ParamTensor) -> int:
    """Trainable elements attached to tensor ``t`` (all copies): itself, its LoRA adapters, or 0."""
    if wl.method == "full":
        return t.total
    if wl.method in ("lora", "qlora"):
        return lora_params_of(t, wl.lora_rank) if lora_targeted(t, wl.lora_targets) else 0
    return 0  # freeze: handled per layer


def _shard(m: ModelShape, wl: Workload, t: ParamTensor) -> float:
    """Fraction of tensor ``t`` one rank holds under tp/pp/ep (worst pipeline stage)."""
    f = 1.0
    if wl.tp > 1 and t.kind in ("linear", "expert", "embedding", "lm_head"):
        f /= wl.tp
    if wl.ep > 1 and t.kind == "expert":
        f /= wl.ep
    if wl.pp > 1 and t.layer_type != "global":
        f *= math.ceil(m.num_layers / wl.pp) / m.num_layers
    return f


def _state_bytes(m: ModelShape, wl: Workload) -> _States:
    zero = wl.strategy in ("zero1", "zero2", "zero3")
    amp = wl.precision in ("amp-bf16", "fp16")
    fp8 = wl.precision == "fp8"
    peft = wl.method in ("lora", "qlora")
    notes: list[str] = []
    # bytes per element
    if zero:
        p_b = 2.0  # DeepSpeed keeps bf16/fp16 model weights
    elif amp:
        p_b = 4.0
    else:
        p_b = 2.0
    # trainable storage: (param, grad, state dtype, fp32 master?)
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

    def opt_bytes(t: ParamTensor, elems: float) -> float:
        o = wl.optimizer
        if o in ("adamw-fused", "adamw-foreach"):
            per = 2 * s_b
        elif o in ("adamw-8bit", "paged-adamw-8bit"):
            per = ADAM8_STATE_BYTES if t.numel >= 4096 else 8.0  # bnb keeps small tensors in 32-bit
        elif o == "sgd":
            per = 0.0
        else:  # adafactor: factored second moment (rows + cols) for matrices, full for vectors
            if len(t.shape) >= 2 and not peft:
                rows = t.numel // t.shape[-1]
                cols = t.numel // t.shape[-2]
                return (rows + cols) / t.numel * elems * s_b + master * elems
            per = s_b
        return elems * (per + master)

    weights = 0.0
    trainable = 0.0
    opt = 0.0
    largest_trainable = 0.0
    grad_of: dict[int, float] = {}
    grad_global = 0.0
    grad_embedding = 0.0
    freeze_ids = set(freeze_trainable_layer_ids(m, wl)) if wl.method == "freeze" else set()
    n_layers_rank = m.num_layers
    for t in m.tensors():
        f = _shard(m, wl, t)
        # base weight bytes
        if wl.method == "qlora" and t.kind in ("linear", "expert"):
            wb = NF4_BYTES
        else:
            wb = p_b
        weights += t.total * f * wb
        if wl.method == "freeze":
            tr = t.numel * sum(1 for i in freeze_ids if _tensor_in_layer(m, t, i)) * f
        else:
            tr = _trainable_tensor_elems(m, wl, t) * f
        if tr <= 0:
            continue
        trainable += tr
        opt += opt_bytes(t, tr)
        if peft:
            weights += tr * tp_b  # adapters
        largest_trainable = max(largest_trainable, (t.numel if wl.method == "full" else tr / max(1, t.count)) * f)
        gb = tr * g_b
        if t.kind == "embedding" and not m.tie_word_embeddings:
            grad_embedding += gb
        elif t.layer_type == "global":
            grad_global += gb
        else:
            # spread over the layers that carry it
            carriers = [i for i in range(m.num_layers) if _tensor_in_layer(m, t, i)]
            if wl.method == "freeze":
                carriers = [i for i in carriers if i in freeze_ids]
            for i in carriers:
                grad_of[i] = grad_of.get(i, 0.0) + gb / len(carriers)
    grads = trainable * g_b
    dp = wl.dp * wl.cp  # ranks that hold replicas of the same dense shard
    # --- data-parallel sharding
    step_temp = 0.0
    grad_temp_bwd = 0.0
    gathered = 0.0
    offload_host = 0.0
    layer_max = m.max_layer_params * _shard(m, wl, _any_layer_tensor(m))
    if wl.strategy == "ddp":
        if wl.gpus > 1 and wl.dp > 1:
            grad_temp_bwd = grads  # DDP Reducer: flat buckets covering every gradient
            notes.append("DDP keeps gradient buckets the size of all gradients (gradient_as_bucket_view=False)")
    elif wl.strategy == "zero1":
        opt /= dp
        grad_temp_bwd = min(DS_REDUCE_BUCKET, trainable) * g_b
        step_temp = 4.0 * trainable / dp  # fp32 copy of this rank's gradient partition
    elif wl.strategy == "zero2":
        opt /= dp
        grads /= dp
        grad_temp_bwd = min(DS_REDUCE_BUCKET, trainable) * g_b
        step_temp = 4.0 * trainable / dp
    elif wl.strategy == "zero3":
        opt /= dp
        grads /= dp
        weights /= dp
        grad_temp_bwd = min(DS_REDUCE_BUCKET, trainable) * g_b
        step_temp = 4.0 * trainable / dp
        gathered = 2 * layer_max * 2.0 + DS_PREFETCH_BUCKET * 2.0
        if m.embedding_params:
            gathered = max(gathered, m.vocab_size * m.hidden_size * 2.0 / max(1, wl.tp) * 2)
    elif wl.strategy == "fsdp":
        opt /= dp
        grads /= dp
        weights /= dp
        cb = 2.0 if (amp or wl.precision == "bf16") else p_b  # MixedPrecisionPolicy(param_dtype=bf16)
        # current layer + the next one prefetched, and the root group (embedding, head, final norm)
        # that FSDP2 does not reshard after forward
        root = (m.embedding_params + m.hidden_size) * cb / max(1, wl.tp)
        gathered = 2 * layer_max * cb + root * (1 - 1 / dp)
        grad_temp_bwd = 2 * layer_max * g_b  # unsharded grads of one layer before reduce-scatter
        notes.append("FSDP2: each decoder layer and the root wrapped with fully_shard; one layer prefetched")
    # optimizer-step temporaries of the optimizer itself
    if wl.optimizer == "adamw-foreach" and not zero:
        step_temp += (trainable / (dp if wl.strategy in ("fsdp",) else 1)) * s_b  # _foreach_sqrt(exp_avg_sq)
    elif wl.optimizer == "adafactor" and not zero:
        step_temp += 3 * 4.0 * largest_trainable  # fp32 copies of the param, grad and update
    elif wl.optimizer in ("adamw-fused",) or wl.optimizer.endswith("8bit") or wl.optimizer == "sgd":
        pass
    # CPU offload
    if wl.offload in ("optimizer", "all"):
        offload_host += opt
        opt = 0.0
        if zero:
            step_temp = 0.0  # the fp32 gradient partition lives in pinned host memory
            offload_host += 4.0 * trainable / dp
        notes.append(f"offload={wl.offload}: optimizer states (and fp32 master) in host RAM, step on the CPU")
    if wl.offload == "all":
        offload_host += weights
        weights = 0.0
    if wl.optimizer == "paged-adamw-8bit":
        notes.append("paged-adamw-8bit: states counted on the GPU; bitsandbytes can page them to host RAM")
    del n_layers_rank
    return _States(weights=weights, gradients=grads, optimizer=opt, step_temp=step_temp,
                   grad_temp_bwd=grad_temp_bwd, weights_gathered=gathered, offloaded_host=offload_host,
                   grad_of={i: v / (dp if wl.strategy in ("zero2", "zero3", "fsdp") else 1)
                            for i, v in grad_of.items()},
                   grad_global=grad_global / (dp if wl.strategy in ("zero2", "zero3", "fsdp") else 1),
                   grad_embedding=grad_embedding / (dp if wl.strategy in ("zero2", "zero3", "fsdp") else 1),
                   notes=tuple(notes))


def _any_layer_tensor(m: ModelShape) -> ParamTensor:
    return next(t for t in m.tensors() if t.layer_type != "global")


def _tensor_in_layer(m: ModelShape, t: ParamTensor, i: int) -> bool:
    if t.layer_type == "global":
        return False
    if t.layer_type not in ("any", m.layer_type(i)):
        return False
    moe = m.is_moe_layer(i)
    is_dense_mlp = t.kind in ("linear", "bias") and ".mlp." in t.name and ".shared_expert" not in t.name
    is_moe_part = t.kind in ("expert", "router") or ".shared_expert" in t.name
    if is_dense_mlp and moe:
        return False
    if is_moe_part and not moe:
        return False
    return True


# --------------------------------------------------------------------------------------- activations
def _layer_training(m: ModelShape, wl: Workload, i: int) -> LayerTraining:
    if wl.method == "full":
        return LayerTraining(norms=True, linears=True)
    if wl.method == "freeze":
        ids = freeze_trainable_layer_ids(m, wl)
        on = i in ids
        return LayerTraining(norms=on, linears=on, input_requires_grad=i >= ids.start)
    mods = set()
    for t in m.tensors():
        if t.layer_type != "global" and _tensor_in_layer(m, t, i) and lora_targeted(t, wl.lora_targets):
            mods.add(t.module)
    if ALL_LINEAR in wl.lora_targets or {"gate_up_proj", "experts"} & set(wl.lora_targets):
        if m.is_moe_layer(i):
            mods.add("experts")
    # LoRA layer 0: the embedding output carries no grad, so its input norm saves nothing (gradient
    # checkpointing with PEFT calls enable_input_require_grads, which changes that; ignored: one norm).
    return LayerTraining(norms=False, linears=False, lora=frozenset(mods), input_requires_grad=True)


def _eff_tokens(wl: Workload) -> float:
    """Tokens per micro-batch on one rank (context parallelism splits the sequence)."""
    return wl.micro_batch * wl.seq_len / wl.cp


def _act_divisor(wl: Workload) -> float:
    return float(wl.tp) if (wl.tp > 1 and wl.sequence_parallel) else 1.0


# --------------------------------------------------------------------------------------- main
def estimate_memory(model: ModelShape, workload: Workload, *,
                    overhead: OverheadModel = DEFAULT_OVERHEAD) -> MemoryEstimate:
    """Per-GPU memory of ``workload`` on ``model`` (see module docstring)."""
    m, wl = model, workload
    params = count_params(m, wl)
    st = _state_bytes(m, wl)
    T = _eff_tokens(wl)
    S = wl.seq_len / wl.cp
    V, h = m.vocab_size, m.hidden_size
    tpd = _act_divisor(wl)
    assumptions: list[str] = list(st.notes)

    # layers held by this rank (worst pipeline stage: the first, which also keeps pp micro-batches in flight)
    n_rank_layers = math.ceil(m.num_layers / wl.pp)
    layer_ids = list(range(n_rank_layers)) if wl.pp > 1 else list(range(m.num_layers))
    in_flight = min(wl.pp, wl.grad_accum) if wl.pp > 1 else 1
    if wl.pp > 1:
        assumptions.append(f"pipeline 1F1B: first stage holds {n_rank_layers} layers and {in_flight} micro-batches "
                           "of activations; the loss region is counted on the same rank (conservative)")

    per_layer = {i: layer_bytes_per_token(m, wl, i, _layer_training(m, wl, i), seq=int(S)) / tpd for i in layer_ids}
    if wl.precision == "fp8":
        per_layer = {i: v * 0.75 for i, v in per_layer.items()}
    if m.arch == "next":
        assumptions.append("Qwen3-Next Gated DeltaNet activations are an approximate per-tensor count (not traced)")
    if wl.attention == "flash":
        assumptions.append("flash-attention saves out + log-sum-exp like sdpa (counted the same)")
    # which layers keep anything (freeze: nothing below the first trainable layer)
    first_grad_layer = 0
    if wl.method == "freeze":
        first_grad_layer = freeze_trainable_layer_ids(m, wl).start
        layer_ids_grad = [i for i in layer_ids if i >= first_grad_layer]
    else:
        layer_ids_grad = layer_ids
    amp = wl.precision in ("amp-bf16", "fp16")
    ckpt_per_layer = (4 if amp else 2) * h / tpd  # the layer input, kept by checkpointing
    if wl.grad_ckpt:
        saved = {i: ckpt_per_layer * T for i in layer_ids_grad}
    else:
        saved = {i: per_layer[i] * T for i in layer_ids_grad}
    saved_total = sum(saved.values()) * in_flight
    # autocast keeps bf16 copies of fp32 weights that backward needs (saved by the matmuls)
    autocast_w = 0.0
    if amp:
        lin = sum(t.total * _shard(m, wl, t) for t in m.tensors() if t.kind in ("linear", "expert", "lm_head")
                  or (t.kind == "embedding" and m.tie_word_embeddings))
        autocast_w = 2.0 * lin / (wl.dp if wl.strategy in ("zero3", "fsdp") else 1)
        assumptions.append("AMP: autocast caches bf16 copies of the fp32 weights during forward")
    # final norm + LM head input
    head_trains = wl.method == "full"
    final_norm = (4 * h + 4 + ((2 * h + 2 * h) if head_trains else 0)) * T / tpd if wl.method != "freeze" or True else 0
    # loss region
    vt = V * T / (wl.tp if wl.tp > 1 else 1)
    if wl.loss == "standard":
        loss_fwd_saved = 4 * vt  # log_softmax output (fp32)
        loss_fwd_peak = 10 * vt  # bf16 logits + fp32 copy + log_softmax output
        loss_bwd_peak = 12 * vt  # + nll grad + log_softmax grad (fp32)
        loss_after = 2 * vt  # bf16 logits gradient entering lm_head backward
    else:
        inc = math.ceil(V / h)
        chunk = 2 ** math.ceil(math.log2(max(1, math.ceil(T / inc))))
        lm_grad = (V * h * 2.0 / max(1, wl.tp)) if head_trains else 0.0
        loss_fwd_saved = 2 * h * T + lm_grad  # grad_input (and grad_weight) computed in forward
        loss_fwd_peak = loss_fwd_saved + chunk * V * (2 + 4 + 4)
        loss_bwd_peak = loss_fwd_saved
        loss_after = 0.0
        assumptions.append(f"fused loss: chunked linear cross-entropy (Liger), {chunk}-token chunks; not traced")

    base_w = st.weights + st.weights_gathered
    base_o = st.optimizer
    ga_grads = st.gradients if wl.grad_accum > 1 else 0.0  # grads alive across micro-batches

    phases: dict[str, PhaseMemory] = {}
    # forward: everything saved + the loss transient (+ autocast weight cache until autocast exits)
    fwd_recompute = (max(per_layer[i] for i in layer_ids_grad) * T if (wl.grad_ckpt and layer_ids_grad) else 0.0)
    phases["forward"] = PhaseMemory(
        phase="forward", weights=base_w, gradients=ga_grads, optimizer=base_o,
        activations=saved_total + final_norm + autocast_w,
        logits_loss=loss_fwd_peak, temporaries=(st.grad_temp_bwd if wl.grad_accum > 1 else 0.0))
    del fwd_recompute
    # backward start
    bwd_cands: list[PhaseMemory] = []
    bwd_cands.append(PhaseMemory(
        phase="backward", weights=base_w, gradients=ga_grads, optimizer=base_o,
        activations=saved_total + final_norm + (autocast_w if not wl.grad_ckpt else 0.0),
        logits_loss=loss_bwd_peak, temporaries=(st.grad_temp_bwd if wl.grad_accum > 1 else 0.0)))
    # layer sweep, top to bottom
    g_acc = st.grad_global if wl.grad_accum == 1 else 0.0
    remaining = saved_total
    aw = autocast_w if not wl.grad_ckpt else 0.0
    w_per_layer_autocast = aw / max(1, len(layer_ids_grad)) if layer_ids_grad else 0.0
    g_head = g_acc
    for i in reversed(layer_ids_grad):
        li = saved[i] * in_flight
        temp = layer_backward_temp_per_token(m, wl, i) * T / tpd + 2 * h * T / tpd
        if wl.grad_ckpt:
            recompute = per_layer[i] * T
            if amp:
                recompute += 2.0 * m.layer_params(i) * _shard(m, wl, _any_layer_tensor(m))
        else:
            recompute = 0.0
        g_this = st.grad_of.get(i, 0.0) if wl.grad_accum == 1 else 0.0
        # the layer's own grads appear as its backward proceeds; the widest transients come first (MLP)
        bwd_cands.append(PhaseMemory(
            phase="backward", weights=base_w, gradients=ga_grads + g_acc, optimizer=base_o,
            activations=remaining + recompute + aw, logits_loss=0.0,
            temporaries=temp + st.grad_temp_bwd))
        remaining -= li
        aw = max(0.0, aw - w_per_layer_autocast)
        g_acc += g_this
    # end of backward: every gradient + grad w.r.t. the embedding output
    g_end = st.gradients
    bwd_cands.append(PhaseMemory(
        phase="backward", weights=base_w, gradients=g_end, optimizer=base_o, activations=0.0, logits_loss=0.0,
        temporaries=2 * h * T / tpd + (st.grad_temp_bwd if wl.strategy == "ddp" else 0.0)))
    del g_head
    phases["backward"] = max(bwd_cands, key=lambda p: p.total)
    # optimizer step
    phases["optimizer"] = PhaseMemory(
        phase="optimizer", weights=st.weights, gradients=st.gradients, optimizer=st.optimizer,
        activations=0.0, logits_loss=0.0,
        temporaries=st.step_temp + (st.grad_temp_bwd if wl.strategy == "ddp" else 0.0))
    peak = max(phases.values(), key=lambda p: p.total)
    tensor_peak = peak.total / GIB
    multi = wl.gpus > 1
    ov = overhead.cuda_context_gib + (overhead.nccl_gib if multi else 0.0) + overhead.allocator_slack_fraction * tensor_peak
    breakdown = {k: getattr(peak, k) / GIB for k in TERMS}
    breakdown["overhead"] = ov
    reserved = tensor_peak + ov

    # host RAM per node
    procs = min(wl.gpus, wl.gpus_per_node)
    host = procs * 3.0 + st.offloaded_host / GIB * procs
    if wl.offload != "none":
        host += procs * 4.0 * params.trainable / max(1, wl.dp) / GIB  # pinned fp32 gradient buffers
    host += m.total_params * 2.0 / GIB / (1 if wl.strategy != "zero3" else procs) * 0  # loading: mmap'd shards
    host += 5.0  # largest safetensors shard (5 GB by HF convention) in page cache while loading
    assumptions.append("host RAM: ~3 GiB per training process + offloaded states + one 5 GB shard while loading")

    act_max = int(max(per_layer.values())) if per_layer else 0
    return MemoryEstimate(
        model=m.name, params=params, tensor_peak_gib=tensor_peak, reserved_gib=reserved,
        peak_phase=peak.phase, breakdown_gib=breakdown,
        phases_gib={k: v.total / GIB for k, v in phases.items()}, host_ram_gib=host,
        activation_bytes_per_token_layer=act_max, assumptions=tuple(assumptions))
