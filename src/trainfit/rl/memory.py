"""Per-GPU memory of RL fine-tuning, phase by phase: rollout, train (policy update) and weight sync.

``estimate_rl_memory(model, workload, rl, gpu_mem_gib)`` returns an :class:`RLMemoryEstimate`:

* **rollout**: the engine holds ``rollout_util * GPU`` (its weights sharded over ``rollout_tp``, its
  profiled activations and CUDA graphs, and the KV pool that fills the rest), and, when colocated, the
  trainer's residual beside it (weights + optimizer states unless offloaded, the reference model unless
  offloaded, the critic's states, one CUDA context);
* **train**: :func:`trainfit.estimate.memory.estimate_memory` of the policy update at prompt + response
  length and the workload's micro-batch, plus the reference weights, the critic's resident states and
  what the engine keeps while it sleeps (CUDA graphs), or all of its memory when it does not sleep;
* **sync**: the engine's woken weights + one gathered parameter bucket + the trainer's states.

KV bytes per token come from the exact shapes: full-attention layers x KV heads per rank x head dim x 2
(K and V) x 2 bytes (bf16 cache); Qwen3-Next linear-attention layers hold a fixed per-sequence state
(conv + recurrent) instead. Formulas and sources: docs/rl-memory.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainfit.errors import RolloutMemoryError, TrainfitError, WorkloadError
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.rl.config import KV_BLOCK_TOKENS, RLConfig
from trainfit.workload import Workload
from trainfit.estimate.memory import MemoryEstimate, estimate_memory, model_state_gib
from trainfit.estimate.fit import decide_fit

GIB = 2**30
RL_PHASES = ("rollout", "train", "sync")

#: bytes per element of the engine's weights and KV cache (bf16; no fp8 KV cache assumed).
ENGINE_WEIGHT_BYTES = 2
KV_BYTES = 2
#: CUDA graphs the engine captures for decode batch sizes; they stay on the GPU while the engine sleeps
#: (verl rollout.yaml: "cudagraph in inference engine can not be offloaded during update policy").
#: Assumption, not measured by this project (vLLM logs report a few hundred MiB to ~1 GiB per GPU).
ENGINE_CUDA_GRAPH_GIB = 0.5
#: CUDA context + cuBLAS workspaces of one process (same value as the SFT memory model's OverheadModel).
CUDA_CONTEXT_GIB = 0.75


@dataclass(frozen=True, kw_only=True)
class RLMemoryEstimate:
    """Per-GPU memory of one RL configuration, per phase (GiB = 2**30 bytes)."""

    model: str
    algo: str
    gpu_mem_gib: float
    phases_gib: dict[str, float]
    """Peak of each phase: ``rollout``, ``train``, ``sync`` (0 where a phase does not exist, e.g. DPO)."""
    binding_phase: str
    """The phase with the largest peak."""
    peak_gib: float
    fits: bool
    """``verdict == "fits"``."""
    verdict: str
    """fits | tight | oom | unknown: :func:`trainfit.estimate.fit.decide_fit` on the binding phase's peak and
    the host RAM (``oom`` also when the KV pool holds no sequence)."""
    fit: dict
    """The :class:`~trainfit.estimate.fit.FitDecision` behind the verdict, as a dict."""
    headroom_gib: float
    kv_pool_gib: float | None
    """KV-cache pool per GPU of the rollout engine (None for DPO)."""
    kv_bytes_per_token: int
    """Per GPU (one tensor-parallel rank) per token: full-attention layers only."""
    kv_fixed_bytes_per_seq: int
    """Per GPU per sequence: Qwen3-Next linear-attention state (0 for plain transformers)."""
    kv_gib_per_seq: float
    """Cache of one prompt + response sequence on one GPU (rounded up to whole KV blocks)."""
    max_concurrent_seqs: int | None
    """Sequences of prompt + response length one engine instance's pool holds at once."""
    engine_weights_gib: float
    engine_overhead_gib: float
    """Engine memory besides weights and KV: profiled activations, sampler logits, CUDA graphs."""
    trainer_residual_gib: float
    """What the trainer leaves on each GPU while the engine generates (colocated)."""
    ref_gib: float
    critic_gib: float
    sync_bucket_gib: float
    host_ram_gib: float
    """Host RAM per node: the training estimate's + sleeping engine weights + offloaded trainer/reference."""
    terms_gib: dict[str, dict[str, float]]
    """What makes up each phase."""
    train: MemoryEstimate
    """The policy update's :class:`~trainfit.estimate.memory.MemoryEstimate`."""
    assumptions: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    kv_shortfall: tuple[str, str] | None = None
    """(why, fix) when the rollout KV pool holds no full sequence: the engine cannot run, verdict ``oom``."""

    def to_dict(self) -> dict:
        r = lambda v: None if v is None else round(v, 3)  # noqa: E731
        return {
            "algo": self.algo, "gpu_mem_gib": r(self.gpu_mem_gib),
            "phases_gib": {k: r(v) for k, v in self.phases_gib.items()},
            "binding_phase": self.binding_phase, "peak_gib": r(self.peak_gib), "fits": self.fits,
            "verdict": self.verdict, "fit": self.fit,
            "headroom_gib": r(self.headroom_gib), "kv_pool_gib": r(self.kv_pool_gib),
            "kv_bytes_per_token": self.kv_bytes_per_token, "kv_fixed_bytes_per_seq": self.kv_fixed_bytes_per_seq,
            "kv_gib_per_seq": r(self.kv_gib_per_seq), "max_concurrent_seqs": self.max_concurrent_seqs,
            "engine_weights_gib": r(self.engine_weights_gib), "engine_overhead_gib": r(self.engine_overhead_gib),
            "trainer_residual_gib": r(self.trainer_residual_gib), "ref_gib": r(self.ref_gib),
            "critic_gib": r(self.critic_gib), "sync_bucket_gib": r(self.sync_bucket_gib),
            "host_ram_gib": round(self.host_ram_gib, 1),
            "terms_gib": {p: {k: r(v) for k, v in t.items()} for p, t in self.terms_gib.items()},
            "assumptions": list(self.assumptions), "warnings": list(self.warnings),
        }


# ------------------------------------------------------------------------------------------ engine terms
def _kv_heads_per_rank(model: ModelShape, tp: int) -> int:
    """KV heads one tensor-parallel rank caches: vLLM/SGLang split them over tp, and replicate them when
    tp exceeds their number (each rank then keeps one)."""
    return max(1, model.num_kv_heads // tp)


def kv_bytes_per_token(model: ModelShape, tp: int = 1) -> int:
    """KV-cache bytes per token per GPU: full-attention layers x KV heads per rank x head dim x 2 (K, V)
    x 2 bytes."""
    return model.n_full_attention_layers * _kv_heads_per_rank(model, tp) * model.head_dim * 2 * KV_BYTES


def linear_state_bytes_per_seq(model: ModelShape, tp: int = 1) -> int:
    """Fixed per-sequence state of Qwen3-Next's Gated DeltaNet layers per GPU: the causal-conv state
    (conv channels x (kernel - 1)) and the recurrent state (value heads x key head dim x value head dim),
    split over tp like the heads, in the cache dtype (bf16 assumed)."""
    n = model.n_linear_attention_layers
    if not n:
        return 0
    kd = model.linear_num_key_heads * model.linear_key_head_dim
    vd = model.linear_num_value_heads * model.linear_value_head_dim
    conv = (2 * kd + vd) // tp * (model.linear_conv_kernel_dim - 1)
    rec = max(1, model.linear_num_value_heads // tp) * model.linear_key_head_dim * model.linear_value_head_dim
    return n * (conv + rec) * KV_BYTES


def engine_weight_bytes(model: ModelShape, tp: int) -> float:
    """Engine weights per GPU (bf16): matmul weights, experts and the vocabulary split over tp, norms and
    small tensors replicated."""
    b = 0.0
    for t in model.tensors():
        f = 1.0 / tp if t.kind in ("linear", "expert", "embedding", "lm_head") else 1.0
        b += t.total * f * ENGINE_WEIGHT_BYTES
    return b


def engine_overhead_bytes(model: ModelShape, rl: RLConfig) -> dict[str, float]:
    """Engine memory inside its budget besides weights and KV (per GPU):

    * ``activations``: the profiling forward pass of ``max_num_batched_tokens`` tokens: the MLP's gate/up
      output (2 x I_active), its activation output (I_active) and ~4 hidden-size buffers, bf16, split over tp
      (I_active = intermediate size, or top-k x expert width + shared expert for MoE);
    * ``sampler``: fp32 logits of ``max_num_seqs`` sequences over the full vocabulary (gathered on every rank);
    * ``cuda_graphs``: :data:`ENGINE_CUDA_GRAPH_GIB` (assumption).
    """
    if model.is_moe:
        i_act = model.experts_per_token * model.moe_intermediate_size + model.shared_expert_intermediate_size
    else:
        i_act = model.intermediate_size
    act = rl.max_num_batched_tokens * (3 * i_act + 4 * model.hidden_size) * 2 / rl.rollout_tp
    sampler = rl.max_num_seqs * model.vocab_size * 4
    return {"activations": act, "sampler": sampler, "cuda_graphs": ENGINE_CUDA_GRAPH_GIB * GIB}


def _seq_kv_bytes(model: ModelShape, rl: RLConfig) -> tuple[int, int, float]:
    per_tok = kv_bytes_per_token(model, rl.rollout_tp)
    fixed = linear_state_bytes_per_seq(model, rl.rollout_tp)
    tokens = math.ceil(rl.seq_len / KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS
    return per_tok, fixed, per_tok * tokens + fixed


# ------------------------------------------------------------------------------------------ estimate
def _policy_weight_bytes(model: ModelShape) -> float:
    return model.total_params * 2.0


@dataclass(frozen=True, kw_only=True)
class _Trainer:
    """The policy update and what the trainer keeps beside it (bytes per GPU unless named ``_gib``)."""

    wl: Workload
    """The policy update's workload at the RL sequence length (DPO: doubled micro-batch)."""
    train: MemoryEstimate
    """Its :class:`~trainfit.estimate.memory.MemoryEstimate`."""
    states_gib: dict
    """:func:`~trainfit.estimate.memory.model_state_gib` of ``wl``."""
    states_b: float
    """Trainer weights + optimizer states."""
    ref_b: float
    """Reference weights per GPU (0 without a reference or with PEFT)."""
    ref_gpu_b: float
    """Reference weights resident on the GPU (0 when offloaded)."""
    critic_b: float
    """Critic weights + optimizer states (0 without a critic)."""


@dataclass(frozen=True, kw_only=True)
class _Engine:
    """The rollout engine's share of one GPU (bytes; zeros / None without a rollout)."""

    per_tok: int
    """KV bytes per token per GPU."""
    fixed: int
    """Fixed per-sequence state per GPU (linear attention)."""
    seq_b: float
    """KV bytes of one prompt + response sequence (whole KV blocks)."""
    weights_b: float
    overhead_b: float
    budget_b: float
    """``rollout_util`` x GPU memory."""
    pool_b: float | None
    """Budget left for the KV cache (None without a rollout)."""
    max_seqs: int | None
    """Sequences the pool holds at once (None without a rollout)."""
    shortfall: tuple[str, str] | None = None
    """(why, fix) when the pool holds no full sequence: the reason of the ``oom`` verdict."""


@dataclass(frozen=True, kw_only=True)
class _Residual:
    """What the trainer leaves on each GPU while a colocated engine generates (bytes)."""

    states_b: float
    ref_b: float
    critic_b: float
    total_b: float
    """CUDA context + the three above."""


def _train_phase(model: ModelShape, workload: Workload, rl: RLConfig, assumptions: list[str]) -> _Trainer:
    """The policy update at prompt + response length, the reference model and the critic."""
    wl = workload.with_(seq_len=rl.seq_len) if workload.seq_len != rl.seq_len else workload
    if rl.algo == "dpo":  # chosen and rejected are concatenated into one batch
        wl = wl._with_batch(workload.micro_batch * 2)
        assumptions.append(_("DPO: chosen and rejected sequences in one micro-batch (2 x micro_batch)"))
    train = estimate_memory(model, wl)
    states = model_state_gib(model, wl)
    peft = wl.method in ("lora", "qlora")
    sharded = wl.strategy in ("zero3", "fsdp")
    trainer_states = (states["weights"] + states["optimizer"]) * GIB

    # reference model: PEFT methods reuse the base weights with the adapters switched off
    ref_b = 0.0
    if rl.ref and not peft:
        ref_b = _policy_weight_bytes(model) / (wl.dp if sharded else 1)
        if wl.tp > 1:
            ref_b /= wl.tp
    elif rl.ref and peft:
        assumptions.append(_("reference = the frozen base with the adapters disabled: no second copy of the weights"))
    ref_gpu = 0.0 if rl.ref_offload else ref_b
    if rl.ref and rl.ref_offload and ref_b:
        assumptions.append(_("reference weights offloaded to host RAM; loaded only for its forward pass"))
    # critic (PPO): same shapes and method as the policy, its own weights + optimizer states resident while
    # the actor updates (value head ignored)
    critic_b = trainer_states if rl.has_critic else 0.0
    if rl.has_critic:
        assumptions.append(_("critic: initialised from the policy (same shapes, method and sharding); its weights "
                             "and optimizer states stay on the GPU while the actor updates, and vice versa"))
    return _Trainer(wl=wl, train=train, states_gib=states, states_b=trainer_states, ref_b=ref_b, ref_gpu_b=ref_gpu,
                    critic_b=critic_b)


def _rollout_phase(model: ModelShape, rl: RLConfig, gpu_mem_gib: float, *, strict: bool,
                   assumptions: list[str], warnings: list[str]) -> _Engine:
    """The engine's weights, overhead and KV pool inside its utilisation budget; raises
    :class:`~trainfit.errors.RolloutMemoryError` under ``strict`` when the pool holds no sequence."""
    mem = float(gpu_mem_gib) * GIB
    per_tok, fixed, seq_b = _seq_kv_bytes(model, rl)
    eng_w = engine_weight_bytes(model, rl.rollout_tp) if rl.has_rollout else 0.0
    ov = engine_overhead_bytes(model, rl) if rl.has_rollout else {}
    eng_ov = sum(ov.values())
    budget = rl.rollout_util * mem
    pool = budget - eng_w - eng_ov if rl.has_rollout else None
    max_seqs = None
    shortfall = None
    if rl.has_rollout:
        max_seqs = max(0, int(pool // seq_b)) if pool > 0 else 0
        if max_seqs < 1:
            need = (eng_w + eng_ov + seq_b) / mem
            shortfall = (
                _("the rollout KV pool ({pool_gib:.2f} GiB per GPU = {util:g} x {gpu_gib:.1f} GiB - {weights_gib:.2f} "
                  "GiB engine weights - {overhead_gib:.2f} GiB engine overhead) cannot hold one {seq_len}-token "
                  "sequence ({seq_gib:.2f} GiB)").format(
                    pool_gib=max(pool, 0) / GIB, util=rl.rollout_util, gpu_gib=gpu_mem_gib, weights_gib=eng_w / GIB,
                    overhead_gib=eng_ov / GIB, seq_len=rl.seq_len, seq_gib=seq_b / GIB),
                (_("raise --rollout-util to at least {util:.2f}, raise --rollout-tp (now {tp}) or shorten "
                   "--prompt-len/--response-len").format(util=min(need, 1.0), tp=rl.rollout_tp) if need <= 0.95 else
                 _("the engine cannot hold one sequence at any utilisation, raise --rollout-tp (now {tp}) or shorten "
                   "--prompt-len/--response-len").format(tp=rl.rollout_tp)))
            if strict:
                raise RolloutMemoryError(shortfall[0], fix=shortfall[1])
        if 0 < max_seqs < rl.num_generations:
            warnings.append(_("the KV pool holds {n} sequences, fewer than one group of {g} generations: the engine "
                              "will preempt/recompute").format(n=max_seqs, g=rl.num_generations))
        if rl.rollout_engine == "sglang":
            assumptions.append(_("SGLang mem_fraction_static modelled like vLLM gpu_memory_utilization (weights + "
                                 "KV pool inside the fraction)"))
        assumptions.append(_("engine: bf16 weights and KV cache; CUDA graphs {gib} GiB and the profiling pass counted "
                             "inside the utilisation budget (not measured)").format(gib=ENGINE_CUDA_GRAPH_GIB))
        if model.n_linear_attention_layers:
            assumptions.append(_("Qwen3-Next linear-attention state per sequence in bf16 (conv + recurrent state)"))
    return _Engine(per_tok=per_tok, fixed=fixed, seq_b=seq_b, weights_b=eng_w, overhead_b=eng_ov, budget_b=budget,
                   pool_b=pool, max_seqs=max_seqs, shortfall=shortfall)


def _trainer_residual(rl: RLConfig, tr: _Trainer, assumptions: list[str]) -> _Residual:
    """What the trainer leaves on the GPU while a colocated engine generates."""
    if rl.trainer_offload:
        resid_states = 0.0
        assumptions.append(_("trainer weights and optimizer states offloaded to host RAM during rollout"))
    else:
        resid_states = tr.states_b
    resid_ref = 0.0 if (rl.trainer_offload or rl.ref_offload) else tr.ref_b
    resid_critic = 0.0 if rl.trainer_offload else tr.critic_b
    total = CUDA_CONTEXT_GIB * GIB + resid_states + resid_ref + resid_critic
    return _Residual(states_b=resid_states, ref_b=resid_ref, critic_b=resid_critic, total_b=total)


def _sync_bucket_bytes(model: ModelShape, rl: RLConfig) -> float:
    """Bucket gathered per weight-sync transfer: one decoder layer (ZeRO-3/FSDP gather, or a LoRA merge) or the
    framework's bucket, whichever is larger."""
    return max(rl.sync_bucket_mb * 2**20, model.max_layer_params * 2.0) if rl.has_rollout else 0.0


def _phase_terms(rl: RLConfig, tr: _Trainer, eng: _Engine, res: _Residual, bucket: float, gpu_mem_gib: float, *,
                 assumptions: list[str], warnings: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """What makes up the rollout, train and sync phases (GiB), and each phase's sum."""
    terms: dict[str, dict[str, float]] = {}
    phases: dict[str, float] = {}
    train, states, ref_gpu, critic_b = tr.train, tr.states_gib, tr.ref_gpu_b, tr.critic_b
    if not rl.has_rollout:
        phases["rollout"] = 0.0
        phases["sync"] = 0.0
        terms["train"] = {"policy_update": train.reserved_gib, "reference": ref_gpu / GIB}
        phases["train"] = train.reserved_gib + ref_gpu / GIB
        return terms, phases
    eng_w, eng_ov, pool, budget = eng.weights_b, eng.overhead_b, eng.pool_b, eng.budget_b
    if rl.colocate:
        terms["rollout"] = {"engine_weights": eng_w / GIB, "engine_overhead": eng_ov / GIB,
                            "kv_pool": max(pool, 0.0) / GIB, "trainer_states": res.states_b / GIB,
                            "reference": res.ref_b / GIB, "critic": res.critic_b / GIB, "cuda_context": CUDA_CONTEXT_GIB}
        sleeping = ENGINE_CUDA_GRAPH_GIB * GIB if rl.engine_sleep else budget
        if not rl.engine_sleep:
            warnings.append(_("colocated engine without sleep/free_cache: its whole budget ({gib:.1f} GiB) stays "
                              "allocated while the trainer runs").format(gib=budget / GIB))
        terms["train"] = {"policy_update": train.reserved_gib, "reference": ref_gpu / GIB,
                          "critic": critic_b / GIB, "engine_asleep": sleeping / GIB}
        woken = eng_w + ENGINE_CUDA_GRAPH_GIB * GIB
        terms["sync"] = {"engine_weights": woken / GIB, "bucket": bucket / GIB,
                         "trainer_weights": states["weights"],
                         "trainer_optimizer": 0.0 if rl.trainer_offload else states["optimizer"],
                         "reference": res.ref_b / GIB, "critic": res.critic_b / GIB, "cuda_context": CUDA_CONTEXT_GIB}
    else:
        terms["rollout"] = {"engine_weights": eng_w / GIB, "engine_overhead": eng_ov / GIB,
                            "kv_pool": max(pool, 0.0) / GIB, "cuda_context": CUDA_CONTEXT_GIB}
        terms["train"] = {"policy_update": train.reserved_gib, "reference": ref_gpu / GIB,
                          "critic": critic_b / GIB}
        terms["sync"] = {"bucket": bucket / GIB, "trainer_weights": states["weights"],
                         "trainer_optimizer": states["optimizer"], "reference": ref_gpu / GIB,
                         "critic": critic_b / GIB, "cuda_context": CUDA_CONTEXT_GIB}
        assumptions.append(_("engine on GPUs of its own (not colocated): the rollout phase is the engine GPUs' "
                             "memory, train and sync the trainer GPUs'"))
    for p in RL_PHASES:
        phases[p] = sum(terms[p].values())
    if rl.colocate and not rl.trainer_offload:
        free_for_engine = float(gpu_mem_gib) * GIB - res.total_b
        if budget > free_for_engine:
            if free_for_engine > 0:
                warnings.append(_("rollout utilisation {util:g} asks for {budget_gib:.1f} GiB but only {free_gib:.1f} "
                                  "GiB are free beside the trainer's residual ({resid_gib:.1f} GiB)").format(
                    util=rl.rollout_util, budget_gib=budget / GIB, free_gib=free_for_engine / GIB,
                    resid_gib=res.total_b / GIB))
            else:
                warnings.append(_("rollout utilisation {util:g} asks for {budget_gib:.1f} GiB but the trainer's "
                                  "residual alone ({resid_gib:.1f} GiB) is over the GPU's {gpu_gib:g} GiB").format(
                    util=rl.rollout_util, budget_gib=budget / GIB, resid_gib=res.total_b / GIB,
                    gpu_gib=float(gpu_mem_gib)))
    return terms, phases


def _host_ram_gib(rl: RLConfig, tr: _Trainer, eng: _Engine, procs: int, warnings: list[str]) -> float:
    """Host RAM per node: the training estimate's + sleeping engine weights + offloaded trainer/reference
    (and the unfused-logits warning of long responses)."""
    wl, train = tr.wl, tr.train
    host = train.host_ram_gib
    if rl.has_rollout and rl.engine_sleep:
        host += eng.weights_b / GIB * procs
    if rl.trainer_offload and wl.offload == "none":
        host += tr.states_b / GIB * procs
    if rl.ref_offload:
        host += tr.ref_b / GIB * procs
    if rl.algo != "dpo" and wl.loss == "standard" and rl.response_len >= 8192:
        logits = train.breakdown_gib.get("logits_loss", 0.0)
        warnings.append(_("unfused logits at {n}-token responses ({gib:.1f} GiB of fp32 logits at the peak): use "
                          "fused/chunked log-probs (--loss fused; verl use_fused_kernels)").format(
            n=rl.response_len, gib=logits))
    return host


def _fit_decision(rl: RLConfig, train: object, eng: _Engine, peak: float, host: float, binding: str, *,
                  gpu_mem_gib: float, procs: int, host_ram_gib: float | None,
                  margin: float | None) -> tuple[dict, str]:
    """The one fit decision (estimate/fit.py) on the binding phase's peak and the RL host RAM, as a dict and
    its verdict (``oom`` also when the KV pool holds no sequence)."""
    from dataclasses import replace as _replace

    dec = decide_fit(_replace(train, reserved_gib=peak, host_ram_gib=host), usable_gib=float(gpu_mem_gib),
                     gpus_per_node=procs, host_ram_gib=host_ram_gib,
                     **({} if margin is None else {"margin": margin}))
    fit = dec.to_dict()
    verdict = dec.verdict
    if eng.shortfall is not None:
        verdict = fit["verdict"] = fit["gpu_verdict"] = "oom"
        fit["reasons"] = list(fit["reasons"]) + [_("{problem}: {fix}").format(problem=eng.shortfall[0],
                                                                                fix=eng.shortfall[1])]
    fit["binding_phase"] = binding
    return fit, verdict


def estimate_rl_memory(model: ModelShape, workload: Workload, rl: RLConfig, gpu_mem_gib: float, *,
                       strict: bool = True, host_ram_gib: float | None = None,
                       margin: float | None = None) -> RLMemoryEstimate:
    """Per-GPU memory of ``rl`` around the policy update ``workload`` on GPUs with ``gpu_mem_gib`` usable.

    With ``strict`` (the default) a KV pool that cannot hold one full sequence raises
    :class:`~trainfit.errors.RolloutMemoryError` with a fix; without it the estimate reports ``fits=False``.
    ``margin``: the safety margin of the fit decision (None = its default).
    """
    if gpu_mem_gib is None or gpu_mem_gib <= 0:
        raise RolloutMemoryError(_("RL sizing needs the GPU's memory (the engine's budget is a fraction of it)"),
                                 fix=_("pass --gpu NAME or --gpu-mem GIB"))
    if workload.loss == "half":
        raise WorkloadError(_("--loss half is a model's own SFT loss over 16-bit logits (Qwen v1 remote code); RL "
                              "frameworks compute the log-probs themselves"),
                            fix=_("use --loss standard or --loss fused"))
    assumptions: list[str] = []
    warnings: list[str] = []
    tr = _train_phase(model, workload, rl, assumptions)
    eng = _rollout_phase(model, rl, gpu_mem_gib, strict=strict, assumptions=assumptions, warnings=warnings)
    res = _trainer_residual(rl, tr, assumptions)
    bucket = _sync_bucket_bytes(model, rl)
    terms, phases = _phase_terms(rl, tr, eng, res, bucket, gpu_mem_gib, assumptions=assumptions, warnings=warnings)
    binding = max(RL_PHASES, key=lambda p: phases[p])
    peak = phases[binding]
    procs = tr.wl.gpus_on_node
    host = _host_ram_gib(rl, tr, eng, procs, warnings)
    fit, verdict = _fit_decision(rl, tr.train, eng, peak, host, binding, gpu_mem_gib=gpu_mem_gib, procs=procs,
                                 host_ram_gib=host_ram_gib, margin=margin)
    pool = eng.pool_b
    return RLMemoryEstimate(
        model=model.name, algo=rl.algo, gpu_mem_gib=float(gpu_mem_gib), phases_gib=phases, binding_phase=binding,
        peak_gib=peak, fits=verdict == "fits", verdict=verdict, fit=fit,
        headroom_gib=float(gpu_mem_gib) - peak,
        kv_pool_gib=None if pool is None else max(pool, 0.0) / GIB,
        kv_bytes_per_token=eng.per_tok, kv_fixed_bytes_per_seq=eng.fixed, kv_gib_per_seq=eng.seq_b / GIB,
        max_concurrent_seqs=eng.max_seqs, engine_weights_gib=eng.weights_b / GIB,
        engine_overhead_gib=eng.overhead_b / GIB, trainer_residual_gib=res.total_b / GIB, ref_gib=tr.ref_b / GIB,
        critic_gib=tr.critic_b / GIB, sync_bucket_gib=bucket / GIB, host_ram_gib=host, terms_gib=terms,
        train=tr.train, assumptions=tuple(assumptions), warnings=tuple(warnings), kv_shortfall=eng.shortfall)


def estimate_with(model: ModelShape, workload: Workload, rl: RLConfig, gpu_mem_gib: float, changes: dict, *,
                  strict: bool = False, host_ram_gib: float | None = None,
                  margin: float | None = None) -> RLMemoryEstimate | None:
    """:func:`estimate_rl_memory` of ``rl`` with ``changes`` applied (a fix being tried: a larger or smaller engine
    budget, sleep mode, another rollout TP...); None when the changed configuration is refused. Callers judge the
    estimate themselves (``plan``'s KV-pool fixes and ``memory``'s RL suggestions)."""
    try:
        return estimate_rl_memory(model, workload, rl.with_(**changes), gpu_mem_gib, strict=strict,
                                  host_ram_gib=host_ram_gib, margin=margin)
    except TrainfitError:
        return None
