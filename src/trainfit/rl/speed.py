"""RL step time: rollout (memory-bandwidth-bound decode), policy update (the SFT speed model), log-prob
passes, weight sync and sleep/offload transfers.

* **Decode**: one step of a batch of ``B`` sequences reads the engine's active weights once and the KV
  cache of every sequence: ``bytes = active weight bytes / tp + B x context x KV bytes per token (per GPU)
  + B x fixed state``; ``t = bytes / (bandwidth x MEM_BW_EFFICIENCY)``, floored by the matmul time
  ``2 x active params x B / tp / (peak x DECODE_FLOP_EFFICIENCY)``. ``B`` = sequences the KV pool holds,
  capped by the sequences each engine gets and ``max_num_seqs``; the average context is prompt +
  response / 2. Tokens/s = engines x B / t.
* **Prefill**: prompt tokens x 2 x active params / tp at the same compute efficiency.
* **Update**: :func:`estimate_speed` of the policy workload at prompt + response length (an FSDP / verl update
  accumulates the whole step into one optimizer step, as verl's launch sets ``ppo_mini_batch_size``); the
  step's sequences x length / its tokens/s. Forward-only passes (reference, old-policy log-probs, critic
  values) cost a third of a forward+backward (a quarter with recomputation), without the CPU optimizer step.

:func:`rl_step_speed` is the one entry point every command uses: it builds the speed model's hardware from the
catalog GPU and its node (the instance type, else the GPU's generic node template), so ``memory --rl``,
``plan --rl`` and ``render --rl`` give one step time for one set of settings.
* **Sync**: engine weights copied device-to-device at half the memory bandwidth, plus host transfers
  (engine sleep level 1 moves its weights to host and back; trainer offload moves its states) over PCIe.

Formulas and sources: docs/rl-memory.md (section "Speed").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from trainfit.catalog import GPU, Instance
from trainfit.catalog.instances import list_instances
from trainfit.errors import CatalogError
from trainfit.estimate.calibration import Calibrations
from trainfit.estimate.hardware import Hardware
from trainfit.estimate.memory import model_state_gib
from trainfit.estimate.speed import estimate_speed
from trainfit.i18n import _
from trainfit.json_types import JSONObject
from trainfit.models.shapes import ModelShape
from trainfit.catalog.hardware import hardware_for
from trainfit.rl.config import RLConfig
from trainfit.rl.memory import ENGINE_WEIGHT_BYTES, GIB, RLMemoryEstimate, engine_weight_bytes
from trainfit.workload import Workload

#: Fraction of peak HBM bandwidth a decode step achieves (assumption; not measured by this project).
MEM_BW_EFFICIENCY = 0.7
#: Fraction of the dense bf16 peak that decode/prefill matmuls achieve (assumption).
DECODE_FLOP_EFFICIENCY = 0.5


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
    warnings: tuple[str, ...] = field(default=())
    """The policy update's speed warnings (an inter-node bandwidth assumed, kernels the GPU lacks...)."""
    node: str | None = None
    """The catalog instance type whose node (links inside it and between nodes) the step time assumed."""

    def to_dict(self) -> JSONObject:
        """The JSON of ``memory --rl`` and of an RL plan (seconds and tokens/s to 4 decimals, the split to 3)."""
        d: JSONObject = {k: getattr(self, k) for k in _COUNTS}
        for k in _SECONDS:
            d[k] = round(getattr(self, k), 4)
        d["split"] = {k: round(v, 3) for k, v in self.split.items()}
        d["assumptions"] = list(self.assumptions)
        d["warnings"] = list(self.warnings)
        d["node"] = self.node
        return d

    def rounded(self) -> "RLSpeedEstimate":
        """This estimate as :meth:`to_dict` writes it (what a plan carries, so a plan read back from its file is
        the plan written)."""
        return RLSpeedEstimate.from_dict(self.to_dict())

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> "RLSpeedEstimate":
        """The estimate of :meth:`to_dict` (a plan file's ``rl.speed``); a wrong shape is a TypeError/ValueError."""
        split = d.get("split") or {}
        if not isinstance(split, dict):
            raise TypeError("rl.speed.split must be an object")
        node = d.get("node")
        return cls(**{k: _int(d[k]) for k in _COUNTS}, **{k: _float(d[k]) for k in _SECONDS},
                   split={str(k): _float(v) for k, v in split.items()},
                   assumptions=_strings(d.get("assumptions")), warnings=_strings(d.get("warnings")),
                   node=None if node is None else str(node))


_COUNTS = ("engines", "decode_batch", "waves")
_SECONDS = ("decode_step_seconds", "rollout_tokens_per_s", "rollout_seconds", "update_seconds", "logprob_seconds",
            "critic_seconds", "sync_seconds", "step_seconds", "update_tokens_per_s")


def _int(v: object) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer, not {type(v).__name__}")
    return v


def _float(v: object) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError(f"expected a number, not {type(v).__name__}")
    return float(v) if isinstance(v, int) else v


def _strings(v: object) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise TypeError("expected a list of strings")
    return tuple(v)


def _active_engine_bytes(model: ModelShape, tp: int, batch: int) -> float:
    """Weight bytes one decode step reads on one GPU: every non-expert weight, and of each MoE layer's
    experts only those the batch's tokens route to (at most ``batch x top_k`` of E)."""
    total = engine_weight_bytes(model, tp)
    if not model.is_moe:
        return total
    expert = sum(t.total for t in model.tensors() if t.kind == "expert") * ENGINE_WEIGHT_BYTES / tp
    frac = min(1.0, batch * model.experts_per_token / model.num_experts)
    return total - expert + expert * frac


def estimate_rl_speed(model: ModelShape, workload: Workload, rl: RLConfig, hardware: Hardware,
                      mem: RLMemoryEstimate, *, efficiency: float | None = None,
                      calibrations: Calibrations | None = None) -> RLSpeedEstimate:
    """Step time of ``rl`` (see module docstring). ``hardware`` is a speed-model ``Hardware`` record; the policy
    update is timed with the user's ``calibrations`` (:func:`trainfit.calibration_file.load_calibrations`, read by
    the caller: this package reads no file)."""
    assumptions: list[str] = [_("decode at {bw:g} of peak memory bandwidth, prefill/decode matmuls at {flop:g} of "
                                "peak (assumptions, not measured)").format(bw=MEM_BW_EFFICIENCY,
                                                                           flop=DECODE_FLOP_EFFICIENCY)]
    wl = workload.with_(seq_len=rl.seq_len) if workload.seq_len != rl.seq_len else workload
    seqs = rl.seqs_per_step
    wl_update = wl
    if wl.strategy == "fsdp":
        # verl (the FSDP launch): ppo_mini_batch_size = the step's prompts, one optimizer step per RL step
        # (rl/launch.py write_verl), so the update accumulates every micro-batch of the step before it
        accum = max(1, math.ceil(seqs / (wl.micro_batch * wl.dp)))
        if accum != wl.grad_accum:
            wl_update = wl.with_(grad_accum=accum)
        assumptions.append(_("one optimizer step per RL step (verl ppo_mini_batch_size = the step's prompts): "
                             "{accum} micro-batch(es) of {mb} per GPU before it").format(accum=accum, mb=wl.micro_batch))
    sp = estimate_speed(model, wl_update, hardware, efficiency=efficiency, calibrations=calibrations)
    tokens = seqs * rl.seq_len
    update_s = tokens / sp.tokens_per_s
    fwd_share = 0.25 if wl.grad_ckpt else 1 / 3
    n_fwd = (1 if rl.ref else 0) + (1 if rl.algo != "dpo" else 0)  # reference + old-policy log-probs
    # forward-only passes: a share of the forward+backward, without the (CPU, offloaded) optimizer step
    gpu_share = (sp.step_seconds - sp.cpu_seconds) / sp.step_seconds if sp.step_seconds > 0 else 1.0
    logprob_s = update_s * gpu_share * fwd_share * n_fwd
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
                               update_tokens_per_s=sp.tokens_per_s, assumptions=tuple(assumptions),
                               warnings=tuple(sp.warnings))
    if not bw:
        raise CatalogError(_("{gpu}: the catalog has no memory bandwidth; rollout speed needs it").format(
                               gpu=hardware.name),
                           fix=_("add mem_bandwidth_gbps for the GPU in ~/.config/trainfit/catalog.yaml"))
    engines = max(1, wl.gpus // rl.rollout_tp)
    if not rl.colocate:
        assumptions.append(_("engines on GPUs of their own: as many engine GPUs as training GPUs assumed"))
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
    assumptions.append(_("every response runs to response_len (upper bound); tensor-parallel all-reduce in decode "
                         "not counted"))
    eng_w = mem.engine_weights_gib * GIB
    sync_s = eng_w / (bw * 0.5)
    if rl.colocate and rl.engine_sleep:
        sync_s += 2 * eng_w / pcie
    if rl.trainer_offload:
        st = model_state_gib(model, wl)
        sync_s += 2 * (st["weights"] + st["optimizer"]) * GIB / pcie
    step = rollout_s + update_s + logprob_s + critic_s + sync_s
    split = {"rollout": rollout_s / step, "update": update_s / step, "logprob": logprob_s / step,
             "critic": critic_s / step, "sync": sync_s / step}
    return RLSpeedEstimate(engines=engines, decode_batch=B, waves=waves, decode_step_seconds=step_t,
                           rollout_tokens_per_s=engines * B / step_t, rollout_seconds=rollout_s,
                           update_seconds=update_s, logprob_seconds=logprob_s, critic_seconds=critic_s,
                           sync_seconds=sync_s, step_seconds=step, split=split,
                           update_tokens_per_s=sp.tokens_per_s, assumptions=tuple(assumptions),
                           warnings=tuple(sp.warnings))


def template_node(gpu: GPU, gpus_per_node: int) -> Instance | None:
    """The catalog's generic node template (``provider`` generic, e.g. ``generic-8xH100``) of ``gpu`` with
    ``gpus_per_node`` GPUs: the node ``plan --gpu NAME`` lays the same job on. None when the catalog has no such
    template or several."""
    try:
        rows = [r for r in list_instances(provider="generic", gpu=gpu.name) if r.gpu_count == gpus_per_node]
    except CatalogError:  # a GPU the catalog does not list (--gpu-mem)
        return None
    return rows[0] if len(rows) == 1 else None


def rl_step_speed(model: ModelShape, workload: Workload, rl: RLConfig, mem: RLMemoryEstimate, *, gpu: GPU,
                  instance: Instance | None = None, calibrations: Calibrations | None = None) -> RLSpeedEstimate:
    """THE RL step time of ``workload`` on catalog ``gpu`` in the node ``instance``.

    ``memory --rl``, ``plan --rl`` and ``render --rl`` all call this one function, so the same settings on the
    same node give the same step time: the speed model's :class:`Hardware` is built here, from the GPU *and*
    its node (NVLink or PCIe inside it, the network between nodes), the node holding the workload's GPUs per
    node. Without ``instance`` (``memory --rl --gpu NAME``) the node is the catalog's generic template of the GPU
    with that many GPUs (:func:`template_node`, what ``plan --gpu NAME`` searches), said in the assumptions;
    without one the network between nodes is unknown (:func:`trainfit.estimate.comm.links_for` assumes TCP and
    warns). A GPU without a compute peak is a :class:`~trainfit.errors.CatalogError`."""
    if not (gpu.bf16_dense_tflops or gpu.fp16_dense_tflops):
        raise CatalogError(_("{gpu}: the catalog has no compute peak; the RL step time needs it").format(gpu=gpu.name),
                           fix=_("add bf16_dense_tflops for the GPU in ~/.config/trainfit/catalog.yaml"))
    gpn = workload.gpus_on_node
    node = instance if instance is not None else template_node(gpu, gpn)
    sp = estimate_rl_speed(model, workload, rl, hardware_for(gpu, node, gpus_per_node=gpn), mem,
                           calibrations=calibrations)
    sp = replace(sp, node=getattr(node, "instance_type", None))
    if instance is None and node is not None and workload.nodes > 1:
        net = (f"{node.inter_node} {node.inter_node_gbit_per_s:g} Gbit/s" if node.inter_node_gbit_per_s
               else node.inter_node or _("unknown network"))
        sp = replace(sp, assumptions=sp.assumptions + (
            _("nodes as the catalog template {instance} ({intra} inside, {net} between nodes), as `plan --gpu {gpu}` "
              "lays them; pass --instance-type for yours").format(
                instance=node.instance_type, intra=node.intra_node_link or _("unknown"), net=net, gpu=gpu.name),))
    return sp


def rl_hours(speed: RLSpeedEstimate, steps: int, gpus: int) -> dict[str, float]:
    """Wall-clock hours and GPU-hours of ``steps`` RL steps."""
    h = speed.step_seconds * steps / 3600
    return {"steps": steps, "hours": h, "gpu_hours": h * gpus}
