"""RL step time: rollout (memory-bandwidth-bound decode), policy update (the SFT speed model), log-prob
passes, weight sync and sleep/offload transfers.

* **Decode**: one step of a batch of ``B`` sequences reads the engine's active weights once and the KV
  cache of every sequence: ``bytes = active weight bytes / tp + B x context x KV bytes per token (per GPU)
  + B x fixed state``; ``t = bytes / (bandwidth x MEM_BW_EFFICIENCY)``, floored by the matmul time
  ``2 x active params x B / tp / (peak x DECODE_FLOP_EFFICIENCY)``. ``B`` = sequences the KV pool holds,
  capped by the sequences each engine gets and ``max_num_seqs``; the average context is prompt +
  response / 2. Tokens/s = engines x B / t.
* **Prefill**: prompt tokens x 2 x active params / tp at the same compute efficiency.
* **Update**: :func:`estimate_speed` of the policy workload at prompt + response length; the step's
  sequences x length / its tokens/s. Forward-only passes (reference, old-policy log-probs, critic values)
  cost a third of a forward+backward (a quarter with recomputation).
* **Sync**: engine weights copied device-to-device at half the memory bandwidth, plus host transfers
  (engine sleep level 1 moves its weights to host and back; trainer offload moves its states) over PCIe.

Formulas and sources: docs/rl-memory.md (section "Speed").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trainfit.models.shapes import ModelShape
from trainfit.rl.config import RLConfig
from trainfit.rl.memory import ENGINE_WEIGHT_BYTES, GIB, RLMemoryEstimate, engine_weight_bytes
from trainfit.workload import Workload

#: Fraction of peak HBM bandwidth a decode step achieves (assumption; not measured by this project).
MEM_BW_EFFICIENCY = 0.7
#: Fraction of the dense bf16 peak that decode/prefill matmuls achieve (assumption).
DECODE_FLOP_EFFICIENCY = 0.5


def _speed_api() -> Any:
    """The SFT speed model (``estimate/speed.py`` on main after the restructure; ``estimate/compute.py``
    before). The only place this package imports it."""
    try:
        from trainfit.estimate import speed as mod  # type: ignore[attr-defined]
    except ImportError:
        from trainfit.estimate import compute as mod
    return mod


@dataclass(frozen=True, kw_only=True)
class RLSpeedEstimate:
    """Time of one RL step (all GPUs of the job)."""

    engines: int
    """Rollout engine instances (GPUs / rollout_tp)."""
    decode_batch: int
    """Sequences each engine decodes at once."""
    waves: int
    """Decode rounds each engine needs for its share of the step's sequences."""
    decode_step_seconds: float
    rollout_tokens_per_s: float
    """Generated tokens per second, all engines together."""
    rollout_seconds: float
    update_seconds: float
    logprob_seconds: float
    critic_seconds: float
    sync_seconds: float
    step_seconds: float
    split: dict[str, float]
    """Share of the step per part (rollout, update, logprob, critic, sync)."""
    update_tokens_per_s: float
    assumptions: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("engines", "decode_batch", "waves")}
        for k in ("decode_step_seconds", "rollout_tokens_per_s", "rollout_seconds", "update_seconds",
                  "logprob_seconds", "critic_seconds", "sync_seconds", "step_seconds", "update_tokens_per_s"):
            d[k] = round(getattr(self, k), 4)
        d["split"] = {k: round(v, 3) for k, v in self.split.items()}
        d["assumptions"] = list(self.assumptions)
        return d


def _active_engine_bytes(model: ModelShape, tp: int, batch: int) -> float:
    """Weight bytes one decode step reads on one GPU: every non-expert weight, and of each MoE layer's
    experts only those the batch's tokens route to (at most ``batch x top_k`` of E)."""
    total = engine_weight_bytes(model, tp)
    if not model.is_moe:
        return total
    expert = sum(t.total for t in model.tensors() if t.kind == "expert") * ENGINE_WEIGHT_BYTES / tp
    frac = min(1.0, batch * model.experts_per_token / model.num_experts)
    return total - expert + expert * frac


def estimate_rl_speed(model: ModelShape, workload: Workload, rl: RLConfig, hardware: Any,
                      mem: RLMemoryEstimate, *, efficiency: float | None = None) -> RLSpeedEstimate:
    """Step time of ``rl`` (see module docstring). ``hardware`` is a speed-model ``Hardware`` record."""
    api = _speed_api()
    assumptions: list[str] = [f"decode at {MEM_BW_EFFICIENCY:g} of peak memory bandwidth, prefill/decode matmuls at "
                              f"{DECODE_FLOP_EFFICIENCY:g} of peak (assumptions, not measured)"]
    wl = workload.with_(seq_len=rl.seq_len) if workload.seq_len != rl.seq_len else workload
    sp = api.estimate_speed(model, wl, hardware, efficiency=efficiency)
    seqs = rl.seqs_per_step
    tokens = seqs * rl.seq_len
    update_s = tokens / sp.tokens_per_s
    fwd_share = 0.25 if wl.grad_ckpt else 1 / 3
    n_fwd = (1 if rl.ref else 0) + (1 if rl.algo != "dpo" else 0)  # reference + old-policy log-probs
    logprob_s = update_s * fwd_share * n_fwd
    critic_s = update_s * (1 + fwd_share) if rl.has_critic else 0.0
    bw = (hardware.mem_gbytes_per_s or 0.0) * 1e9
    peak = hardware.peak_tflops * 1e12
    pcie = hardware.pcie_gbytes_per_s * 1e9
    if not rl.has_rollout:
        step = update_s + logprob_s
        split = {"rollout": 0.0, "update": update_s / step, "logprob": logprob_s / step, "critic": 0.0, "sync": 0.0}
        return RLSpeedEstimate(engines=0, decode_batch=0, waves=0, decode_step_seconds=0.0, rollout_tokens_per_s=0.0,
                               rollout_seconds=0.0, update_seconds=update_s, logprob_seconds=logprob_s,
                               critic_seconds=0.0, sync_seconds=0.0, step_seconds=step, split=split,
                               update_tokens_per_s=sp.tokens_per_s, assumptions=tuple(assumptions))
    if not bw:
        from trainfit.errors import CatalogError

        raise CatalogError(f"{hardware.name}: the catalog has no memory bandwidth; rollout speed needs it",
                           fix="add mem_bandwidth_gbps for the GPU in ~/.config/trainfit/catalog.yaml")
    engines = max(1, wl.gpus // rl.rollout_tp)
    if not rl.colocate:
        assumptions.append("engines on GPUs of their own: as many engine GPUs as training GPUs assumed")
    per_engine = math.ceil(seqs / engines)
    B = max(1, min(mem.max_concurrent_seqs or 1, per_engine, rl.max_num_seqs))
    waves = math.ceil(per_engine / B)
    ctx = rl.prompt_len + rl.response_len / 2
    w_bytes = _active_engine_bytes(model, rl.rollout_tp, B)
    kv_read = B * (ctx * mem.kv_bytes_per_token + mem.kv_fixed_bytes_per_seq)
    t_mem = (w_bytes + kv_read) / (bw * MEM_BW_EFFICIENCY)
    act_params = model.active_params
    t_flop = 2.0 * act_params * B / rl.rollout_tp / (peak * DECODE_FLOP_EFFICIENCY)
    step_t = max(t_mem, t_flop)
    prefill = per_engine * rl.prompt_len * 2.0 * act_params / rl.rollout_tp / (peak * DECODE_FLOP_EFFICIENCY)
    rollout_s = waves * rl.response_len * step_t + prefill
    assumptions.append("every response runs to response_len (upper bound); tensor-parallel all-reduce in decode "
                       "not counted")
    eng_w = mem.engine_weights_gib * GIB
    sync_s = eng_w / (bw * 0.5)
    if rl.colocate and rl.engine_sleep:
        sync_s += 2 * eng_w / pcie
    if rl.trainer_offload:
        from trainfit.estimate.memory import model_state_gib

        st = model_state_gib(model, wl)
        sync_s += 2 * (st["weights"] + st["optimizer"]) * GIB / pcie
    step = rollout_s + update_s + logprob_s + critic_s + sync_s
    split = {"rollout": rollout_s / step, "update": update_s / step, "logprob": logprob_s / step,
             "critic": critic_s / step, "sync": sync_s / step}
    return RLSpeedEstimate(engines=engines, decode_batch=B, waves=waves, decode_step_seconds=step_t,
                           rollout_tokens_per_s=engines * B / step_t, rollout_seconds=rollout_s,
                           update_seconds=update_s, logprob_seconds=logprob_s, critic_seconds=critic_s,
                           sync_seconds=sync_s, step_seconds=step, split=split,
                           update_tokens_per_s=sp.tokens_per_s, assumptions=tuple(assumptions))


def rl_hours(speed: RLSpeedEstimate, steps: int, gpus: int) -> dict[str, float]:
    """Wall-clock hours and GPU-hours of ``steps`` RL steps."""
    h = speed.step_seconds * steps / 3600
    return {"steps": steps, "hours": h, "gpu_hours": h * gpus}
