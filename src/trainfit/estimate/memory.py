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
scratch), overhead (CUDA context, NCCL, allocator slack; only in ``reserved_gib``). Their keys, labels and units are
the descriptors of estimate/terms.py, where each moment of the step is a ``MemoryTerms``.

Model states (weights, gradients, optimizer, strategy buffers, offload) are in estimate/states.py, the
per-layer activation profile of the rank in estimate/activation_profile.py, the logits and loss region in
estimate/loss_region.py, DeepSpeed ZeRO-3's step temporaries and segments in estimate/zero3.py; this module walks
the step.
Every formula, its derivation and source is in docs/memory-model.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from trainfit import i18n
from trainfit.i18n import _
from trainfit.estimate.activation_profile import ActProfile, act_divisor, autocast, cached_act_profile, eff_tokens
from trainfit.estimate.comm import data_parallel_group
from trainfit.estimate.loss_region import (HALF_CE_BWD_BYTES, HALF_CE_FWD_BYTES,  # noqa: F401 (re-exported)
                                           HALF_CE_SHIFT_COPY_BYTES, MEGATRON_CE_BWD_BYTES, MEGATRON_CE_FWD_BYTES,
                                           _loss_region, largest_loss_block_bytes_per_logit, logits_divisor)
from trainfit.estimate.params import ParamCounts, count_params
from trainfit.estimate.runtime import ddp_broadcast_staging_bytes, nccl_communicators, runtime_terms
from trainfit.estimate.states import (ADAM8_STATE_BYTES, DS_PREFETCH_BUCKET, DS_REDUCE_BUCKET, GIB,
                                      NF4_BYTES, ModelStates, any_layer_tensor, cached_states, model_state_gib,
                                      mp_shard, rank_layers)
from trainfit.estimate.terms import MemoryTerms
from trainfit.estimate.zero3 import largest_compute_block_bytes, step_segment_reserve_bytes
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload, check_layout

# the model-state constants and model_state_gib live in estimate/states.py; importable from here as before
__all__ = ["ADAM8_STATE_BYTES", "DEFAULT_OVERHEAD", "DS_PREFETCH_BUCKET", "DS_REDUCE_BUCKET", "GIB", "MemoryEstimate",
           "NF4_BYTES", "OverheadModel", "PHASES", "estimate_memory", "model_state_gib"]

PHASES = ("forward", "backward", "optimizer")


@dataclass(frozen=True, kw_only=True)
class OverheadModel:
    """What ``reserved_gib`` adds to the tensor peak. Not yet measured on a GPU by this project (no GPU
    was available when it was set): values from the trace findings' caveats (CUDA context 0.5-1 GiB) and
    common PyTorch caching-allocator behaviour; benchmarks/gpu_probe.py measures and replaces them."""

    cuda_context_gib: float = 0.75
    """CUDA context, cuBLAS/cuDNN handles and workspaces (per process)."""
    nccl_gib: float = 688 / 1024
    """GPU buffers of one NCCL communicator (channels x buffers per peer): 688 MB measured per process group
    of more than two GPUs on 4x A100 with NVLink (https://github.com/NVIDIA/nccl/issues/964); NCCL's
    maintainers: more communicators, more memory, linear in the channel count
    (https://github.com/NVIDIA/nccl/issues/986). Counted per communicator the job uses
    (``estimate.runtime.nccl_communicators``)."""
    allocator_slack_fraction: float = 0.06
    """Caching-allocator reserve and fragmentation, as a fraction of the tensor peak."""
    nccl_record_stream: bool = False
    """The job's PyTorch predates ``estimate.runtime.TORCH_NCCL_STASHING_RELEASE`` (2.8): NCCL collectives pin their
    buffers with ``recordStream``, and DDP's construction broadcast leaves the module's bytes cached
    (``estimate.runtime.ddp_broadcast_staging_bytes``). Off: current PyTorch."""

    def outside_allocator_gib(self, wl: Workload) -> float:
        """GPU memory outside PyTorch's caching allocator: the CUDA context and the NCCL communicators' buffers
        (what ``max_memory_reserved`` does not see and nvidia-smi does)."""
        return self.cuda_context_gib + self.nccl_gib * nccl_communicators(wl)


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
    releasable_cache_gib: float = 0.0
    """Part of ``reserved_gib`` that is cached, not live, and that the caching allocator gives back and retries
    with before it raises OOM (the ZeRO-3 step's separate segments, estimate/zero3.py): it shows in
    nvidia-smi and ``max_memory_reserved`` but does not by itself cause OOM (estimate.fit.decide_fit)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.releasable_cache_gib <= self.reserved_gib:
            raise ValueError(f"releasable_cache_gib must be in [0, reserved_gib], got {self.releasable_cache_gib}")

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
            "releasable_cache_gib": round(self.releasable_cache_gib, 3),
            "assumptions": list(self.assumptions),
        }

    def to_exact_dict(self) -> dict:
        """Every field unrounded (the typed Plan's lossless JSON); :meth:`from_dict` reads it back."""
        return {"model": self.model, "params": self.params.to_dict(), "tensor_peak_gib": self.tensor_peak_gib,
                "reserved_gib": self.reserved_gib, "peak_phase": self.peak_phase,
                "breakdown_gib": dict(self.breakdown_gib), "phases_gib": dict(self.phases_gib),
                "host_ram_gib": self.host_ram_gib,
                "activation_bytes_per_token_layer": self.activation_bytes_per_token_layer,
                "assumptions": list(self.assumptions), "releasable_cache_gib": self.releasable_cache_gib}

    @classmethod
    def from_dict(cls, d: dict) -> "MemoryEstimate":
        return cls(model=d["model"], params=ParamCounts(**d["params"]), tensor_peak_gib=d["tensor_peak_gib"],
                   reserved_gib=d["reserved_gib"], peak_phase=d["peak_phase"], breakdown_gib=dict(d["breakdown_gib"]),
                   phases_gib=dict(d["phases_gib"]), host_ram_gib=d["host_ram_gib"],
                   activation_bytes_per_token_layer=d["activation_bytes_per_token_layer"],
                   assumptions=tuple(d.get("assumptions") or ()),
                   releasable_cache_gib=d.get("releasable_cache_gib", 0.0))


# --------------------------------------------------------------------------------------- main
@lru_cache(maxsize=1024)
def _cached_counts(m: ModelShape, method: str, rank: int, targets: tuple[str, ...], freeze: int) -> ParamCounts:
    return count_params(m, Workload(method=method, lora_rank=rank, lora_targets=targets,
                                    freeze_trainable_layers=freeze))


@lru_cache(maxsize=8192)
def _estimate_cached(m: ModelShape, wl: Workload, overhead: OverheadModel, lang: str) -> MemoryEstimate:
    # ``lang``: the estimate holds its assumptions in the language they were written in (i18n.current())
    return _estimate(m, wl, overhead)


def estimate_memory(model: ModelShape, workload: Workload, *,
                    overhead: OverheadModel = DEFAULT_OVERHEAD) -> MemoryEstimate:
    """Per-GPU memory of ``workload`` on ``model`` (see module docstring). Results are cached."""
    return _estimate_cached(model, workload, overhead, i18n.current())


class _Step(NamedTuple):
    """What the phase walk of one training step needs (bytes on the worst rank). A NamedTuple, not a frozen
    dataclass: one is built per uncached estimate, and the planner makes thousands (benchmarks/cli_speed.py)."""

    m: ModelShape
    wl: Workload
    st: ModelStates
    """Model states."""
    prof: ActProfile
    """Per-layer activations."""
    T: float
    """Tokens per micro-batch on the rank."""
    tpd: float
    """Activation divisor (sequence parallelism)."""
    in_flight: int
    """Micro-batches whose activations are alive together (pipeline 1F1B)."""
    amp: bool
    """fp32 weights under autocast."""
    saved: list[float]
    """Saved bytes of each layer in ``prof.layer_ids`` for one micro-batch."""
    saved_total: float
    """All saved activations of the rank (incl. checkpointed inputs of frozen layers)."""
    frozen_ckpt: float
    """Checkpointed inputs of the frozen layers below the first trainable one (alive until the step ends)."""
    autocast_w: float
    """Autocast's bf16 copies of the fp32 weights."""
    final_norm: float
    """Final norm + LM head input."""
    loss_fwd_peak: float
    """Loss region at its forward peak."""
    loss_bwd_peak: float
    """Loss region at the start of backward."""

    base_w: float
    """Weights alive in forward and backward (incl. ZeRO-3/FSDP gathered layers)."""
    ga: bool
    """Gradient accumulation over micro-batches."""
    ga_grads: float
    """Grads alive across micro-batches."""
    aw: float
    """The autocast weight cache as backward starts (freed by then under checkpointing)."""


def _step_notes(m: ModelShape, wl: Workload, in_flight: int) -> list[str]:
    notes = []
    if wl.pp > 1:
        notes.append(_("pipeline 1F1B: the first stage holds {layers} layers and {in_flight} micro-batches of "
                       "activations, the last stage one micro-batch plus the logits and loss (its layer count and "
                       "states taken as the first stage's); the larger is reported").format(
                         layers=math.ceil(m.num_layers / wl.pp), in_flight=in_flight))
    if m.arch == "next":
        notes.append(_("Qwen3-Next Gated DeltaNet activations are an approximate per-tensor count (not traced)"))
    if wl.attention in ("flash", "flash3"):
        notes.append(_("flash-attention saves out + log-sum-exp like sdpa (counted the same)"))
    if wl.attention == "eager" and wl.uses_megatron and m.arch != "next":
        notes.append(_("NOT COUNTED: Megatron-Core's unfused attention (--attention eager, --attention_backend "
                       "unfused) also keeps the S x S softmax of every head for backward; the Megatron activation "
                       "count assumes a fused/flash kernel, so this estimate is low at long sequences (use sdpa or "
                       "flash)"))
    return notes


def _saved_activations(m: ModelShape, wl: Workload, prof: ActProfile, T: float, tpd: float, amp: bool,
                       in_flight: int) -> tuple[list[float], float, float]:
    """(saved bytes per layer, all saved bytes, checkpointed inputs of frozen layers)."""
    n = len(prof.layer_ids)
    ckpt_per_layer = (4 if amp else 2) * m.hidden_size / tpd * T  # the layer input, kept by checkpointing
    saved = [ckpt_per_layer] * n if wl.grad_ckpt else [a * T + f for a, f in zip(prof.per_token, prof.fixed)]
    saved_total = sum(saved) * in_flight
    # checkpointing keeps every layer's input, also of frozen layers below the first trainable one (the
    # non-reentrant checkpoint holds its inputs even when nothing inside needs grad); backward never
    # reaches those layers, so they stay until the step ends
    frozen_ckpt = ckpt_per_layer * (len(rank_layers(m, wl)) - n) * in_flight if wl.grad_ckpt else 0.0
    saved_total += frozen_ckpt
    return saved, saved_total, frozen_ckpt


def _autocast_weights(m: ModelShape, wl: Workload) -> float:
    """Bytes of the bf16 copies of fp32 weights that autocast keeps for backward (saved by the matmuls)."""
    frac = len(rank_layers(m, wl)) / m.num_layers
    lin = sum(t.total * mp_shard(wl, t) * (frac if t.layer_type != "global" else 1.0) for t in m.tensors()
              if t.kind in ("linear", "expert", "lm_head") or (t.kind == "embedding" and m.tie_word_embeddings))
    return 2.0 * lin / (data_parallel_group(wl) if wl.strategy in ("zero3", "fsdp") else 1)


def _grad_of(st: ModelStates, i: int) -> float:
    """Gradient bytes of decoder layer ``i`` on this rank."""
    return sum(gb for ids_, gb in st.grad_by_ids if i in ids_)


def _sweep_candidate(s: _Step) -> MemoryTerms | None:
    """The largest moment of the backward layer sweep, top to bottom: saved activations freed, gradients
    allocated; with checkpointing, one layer recomputed at a time."""
    st, prof, wl, T, tpd, saved, in_flight, amp = s.st, s.prof, s.wl, s.T, s.tpd, s.saved, s.in_flight, s.amp
    h = s.m.hidden_size
    base_w, base_o, ga, ga_grads = s.base_w, st.optimizer, s.ga, s.ga_grads
    n = len(prof.layer_ids)
    g_acc = st.grad_global if not ga else 0.0
    remaining = s.saved_total
    aw = s.aw
    aw_step = aw / n if n else 0.0
    mp_any = mp_shard(wl, any_layer_tensor(s.m))
    best_sweep = None
    best_total = -1.0
    # Every step of the sweep changes the total by the same amount when all layers of the rank are alike
    # (dense models, all-MoE Qwen3-MoE), so the largest value is at one end: evaluate only the ends.
    uniform = (prof.uniform and _grad_of(st, prof.layer_ids[-1]) == _grad_of(st, prof.layer_ids[0])) if n else True
    if uniform and n > 2:
        g_layer = 0.0 if ga else _grad_of(st, prof.layer_ids[0])
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
            best_sweep = MemoryTerms("backward", base_w, ga_grads + g_acc, base_o, act, 0.0, temp + st.grad_temp_bwd)
        if visits is None:
            remaining -= saved[j] * in_flight
            if aw:
                aw = max(0.0, aw - aw_step)
            if not ga:
                g_acc += _grad_of(st, prof.layer_ids[j])
    return best_sweep


def _candidates(s: _Step) -> list[MemoryTerms]:
    """The moments of the step that can be the peak, in step order."""
    st, h = s.st, s.m.hidden_size
    base_w, base_o, ga_grads = s.base_w, st.optimizer, s.ga_grads
    ga_temp = st.grad_temp_bwd if s.ga else 0.0
    act_fwd = s.saved_total + s.final_norm
    cands: list[MemoryTerms] = [
        # forward: everything saved + the loss transient (+ autocast weight cache until autocast exits)
        MemoryTerms("forward", base_w, ga_grads, base_o, act_fwd + s.autocast_w, s.loss_fwd_peak, ga_temp),
        # backward start
        MemoryTerms("backward", base_w, ga_grads, base_o, act_fwd + s.aw, s.loss_bwd_peak, ga_temp),
    ]
    if st.reduce_head and s.loss_bwd_peak and s.wl.loss != "fused":
        # ZeRO-3, untied LM head above the reduce bucket: its full gradient is computed while the 16-bit gradient of
        # the logits is alive, then reduced alone (with the reduce-scatter's flat copy when it does not divide by the
        # ranks) before the decoder layers' gradients come (estimate/zero3.py reduce_transient_bytes)
        head_grad = 2.0 * s.m.vocab_size * s.m.hidden_size  # ZeRO's 16-bit gradient
        dlogits = 2.0 * s.m.vocab_size * s.T / logits_divisor(s.wl)
        cands.append(MemoryTerms("backward", base_w, ga_grads, base_o, act_fwd + s.aw, 0.0,
                                 ga_temp + max(dlogits + head_grad, st.reduce_head)))
    best_sweep = _sweep_candidate(s)
    if best_sweep is not None:
        cands.append(best_sweep)
    # end of backward: every gradient + grad w.r.t. the embedding output; with tied embeddings the
    # embedding backward makes a second full gradient of the shared weight and AccumulateGrad adds it
    # out of place (old + new + sum alive together: +2 gradients, seen in every tied-model trace); under ZeRO-3
    # an embedding gradient above the reduce bucket is held whole until the epilogue reduces it (estimate/zero3.py)
    # DDP's buckets, and DeepSpeed ZeRO-1/2's overlap_comm buffers (kept reserved by the caching allocator through
    # the step: estimate.states.ds_comm_buffer_bytes), stay until the step ends
    wl = s.wl
    ddp_buckets = st.grad_temp_bwd if (wl.strategy == "ddp" or (wl.strategy in ("zero1", "zero2")
                                                               and wl.ds_overlap_comm)) else 0.0
    cands.append(MemoryTerms("backward", base_w, st.gradients, base_o, s.frozen_ckpt, 0.0,
                             2 * h * s.T / s.tpd + ddp_buckets + 2 * st.tied_grad + st.reduce_embedding))
    # optimizer step
    cands.append(MemoryTerms("optimizer", st.weights, st.gradients, st.optimizer, 0.0, 0.0,
                             st.step_temp + ddp_buckets))
    return cands


def _peak(cands: list[MemoryTerms]) -> tuple[MemoryTerms, dict[str, float]]:
    """The largest candidate (the first one on ties) and the largest total of each phase."""
    phases_total: dict[str, float] = {}
    peak = cands[0]
    peak_tot = peak.total
    for c in cands:
        tot = c.total
        if tot > phases_total.get(c.phase, -1.0):
            phases_total[c.phase] = tot
        if tot > peak_tot:
            peak, peak_tot = c, tot
    return peak, phases_total


def _build_step(m: ModelShape, wl: Workload, st: ModelStates, assumptions: list[str]) -> _Step:
    prof = cached_act_profile(m, wl)
    T = eff_tokens(wl)
    tpd = act_divisor(wl)
    in_flight = min(wl.pp, wl.grad_accum) if wl.pp > 1 else 1
    assumptions += _step_notes(m, wl, in_flight)
    amp = autocast(wl)
    saved, saved_total, frozen_ckpt = _saved_activations(m, wl, prof, T, tpd, amp, in_flight)
    autocast_w = 0.0
    if amp:
        autocast_w = _autocast_weights(m, wl)
        assumptions.append(_("AMP: autocast caches bf16 copies of the fp32 weights during forward"))
    head_trains = wl.method == "full"
    h = m.hidden_size
    final_norm = (4 * h + 4 + (4 * h if head_trains else 0)) * T / tpd  # final norm + LM head input
    loss_fwd_peak, loss_bwd_peak, loss_note = _loss_region(m, wl, T, head_trains)
    if loss_note:
        assumptions.append(loss_note)
    # gradients alive from the step's start: accumulated over micro-batches, or DeepSpeed ZeRO-3's flat buffer of
    # the rank's gradient partitions, allocated once when the engine is built and kept for the whole run
    # (``grad_partitions_flat_buffer`` in deepspeed/runtime/zero/stage3.py,
    # https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage3.py)
    ga = wl.grad_accum > 1 or wl.strategy == "zero3"
    if wl.pp > 1:  # the first pipeline stage: no final norm, LM head or loss (those are on the last stage)
        final_norm = loss_fwd_peak = loss_bwd_peak = 0.0
    return _Step(m, wl, st, prof, T, tpd, in_flight, amp, saved, saved_total, frozen_ckpt, autocast_w, final_norm,
                 loss_fwd_peak, loss_bwd_peak, st.weights + st.weights_gathered, ga, st.gradients if ga else 0.0,
                 autocast_w if not wl.grad_ckpt else 0.0)


def _last_stage(s: _Step) -> _Step:
    """The last pipeline stage of ``s`` (a first-stage step): in 1F1B stage k of p keeps p - k micro-batches
    in flight, so the last keeps one, but it runs the final norm, LM head and loss. Its layers and model
    states are taken as the first stage's (an upper bound: Megatron gives the last stage at most as many
    layers, and its LM head matches the first stage's embedding). Schedule: Narayanan et al. 2021, sec. 2.2
    (https://arxiv.org/abs/2104.04473); Megatron-Core's estimator counts activations of the first stage the
    same way (megatron/training/theoretical_memory_usage.py)."""
    m, wl, T = s.m, s.wl, s.T
    saved, saved_total, frozen_ckpt = _saved_activations(m, wl, s.prof, T, s.tpd, s.amp, 1)
    head_trains = wl.method == "full"
    h = m.hidden_size
    final_norm = (4 * h + 4 + (4 * h if head_trains else 0)) * T / s.tpd
    loss_fwd_peak, loss_bwd_peak, _note = _loss_region(m, wl, T, head_trains)
    return s._replace(in_flight=1, saved=saved, saved_total=saved_total, frozen_ckpt=frozen_ckpt,
                      final_norm=final_norm, loss_fwd_peak=loss_fwd_peak, loss_bwd_peak=loss_bwd_peak)


def _zero3_step_segments(s: _Step, cands: list[MemoryTerms], *, extra: float) -> float:
    """Reserved bytes above the tensor peak from the ZeRO-3 step's new segments (estimate/zero3.py); 0 otherwise.
    ``extra``: runtime bytes added to every candidate (resident)."""
    st, wl = s.st, s.wl
    if wl.strategy != "zero3" or not st.step_temp:
        return 0.0
    resident = st.weights + st.gradients + st.optimizer + extra
    transient = max(c.total - resident - st.weights_gathered for c in cands if c.phase != "optimizer")
    block = largest_compute_block_bytes(s.m, tokens=s.T, tp=logits_divisor(wl), act_divisor=s.tpd,
                                        loss_bytes_per_logit=largest_loss_block_bytes_per_logit(wl))
    return step_segment_reserve_bytes(gathered=st.weights_gathered, transient=max(0.0, transient),
                                      step_temp=st.step_temp, step_block=st.step_block, largest_block=block,
                                      allgather_stream=wl.ds_overlap_comm)


def _estimate(m: ModelShape, wl: Workload, overhead: OverheadModel) -> MemoryEstimate:
    check_layout(wl, m)  # the one layout rule (workload.layout_error): groups that the engine cannot form
    params = _cached_counts(m, wl.method, wl.lora_rank, tuple(wl.lora_targets), wl.freeze_trainable_layers)
    st = cached_states(m, wl)
    assumptions: list[str] = list(st.notes)
    step = _build_step(m, wl, st, assumptions)
    cands = _candidates(step)
    if wl.pp > 1:
        cands += _candidates(_last_stage(step))
    # engine runtime allocations the trace does not see (estimate/runtime.py), alive the whole step
    rt = runtime_terms(wl, trainable_rank_elems=st.trainable_rank)
    if rt:
        extra = sum(t.bytes for t in rt)
        cands = [c.plus_gradients(extra) for c in cands]
        assumptions += [t.note for t in rt]
    peak, phases_total = _peak(cands)
    tensor_peak = peak.total / GIB
    fixed = overhead.outside_allocator_gib(wl)
    ov = fixed + overhead.allocator_slack_fraction * tensor_peak
    seg = _zero3_step_segments(step, cands, extra=sum(t.bytes for t in rt))
    if seg:
        ov += seg / GIB
        assumptions.append(_("ZeRO-3 optimizer step: its sub-group temporaries ({temp_gib:.1f} GiB) cannot reuse the "
                             "backward's cached blocks; {seg_gib:.1f} GiB more reserved than allocated").format(
                               temp_gib=st.step_temp / GIB, seg_gib=seg / GIB))
    # DDP's construction broadcast under recordStream (estimate/runtime.py): the module plus its flat copies,
    # reserved before the first step; the cached segments then serve the step, so the larger of the two counts
    staging = ddp_broadcast_staging_bytes(wl, st.weights, nccl_record_stream=overhead.nccl_record_stream)
    if staging:
        setup_gib = (st.weights + staging) / GIB + fixed
        assumptions.append(_("PyTorch < 2.8 DDP: the construction broadcast leaves {staging_gib:.1f} GiB of flat "
                             "copies cached (recordStream): {setup_gib:.1f} GiB reserved before the first step").format(
                               staging_gib=staging / GIB, setup_gib=setup_gib))
        ov = max(ov, setup_gib - tensor_peak)
    breakdown = {k: v / GIB for k, v in peak.items()}
    breakdown["overhead"] = ov
    # host RAM per node
    procs = wl.gpus_on_node
    host = procs * 3.0 + st.offloaded_host / GIB * procs + 5.0
    assumptions.append(_("host RAM: ~3 GiB per training process + offloaded states + one 5 GB shard while loading"))
    return MemoryEstimate(
        model=m.name, params=params, tensor_peak_gib=tensor_peak, reserved_gib=tensor_peak + ov,
        peak_phase=peak.phase, breakdown_gib=breakdown,
        phases_gib={k: phases_total[k] / GIB for k in PHASES}, host_ram_gib=host,
        activation_bytes_per_token_layer=int(step.prof.max_per_token), assumptions=tuple(assumptions),
        releasable_cache_gib=seg / GIB)

