"""One call for the service layer: memory per phase, speed and time of an RL job as a JSON-ready dict."""

from __future__ import annotations

from typing import Any

from trainfit.catalog import GPU, Instance
from trainfit.estimate.uncertainty import Interval, memory_range, rl_speed_interval
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.plan.hardware import gpu_class_of
from trainfit.rl.config import RLConfig
from trainfit.rl.memory import RLMemoryEstimate, estimate_rl_memory, estimate_with
from trainfit.rl.speed import rl_hours, rl_step_speed
from trainfit.workload import Workload


def rl_report(model: ModelShape, workload: Workload, rl: RLConfig, gpu_mem_gib: float, *, gpu: GPU | None = None,
              instance: Instance | None = None, steps: int | None = None, strict: bool = False,
              host_ram_gib: float | None = None, margin: float | None = None) -> dict[str, Any]:
    """``{"config", phases_gib, kv_pool_gib, max_concurrent_seqs, binding_phase, fits, ...}`` of
    :func:`~trainfit.rl.memory.estimate_rl_memory`; with a catalog ``gpu`` record also ``speed`` (step-time
    split, :func:`~trainfit.rl.speed.rl_step_speed` on the node ``instance``: the step time ``plan --rl``
    gives), and with ``steps`` also ``time`` (hours, GPU-hours). The workload's ``seq_len`` is replaced by
    prompt + response. The policy update's MemoryEstimate is under the ``"_train"`` key, the
    :class:`~trainfit.rl.memory.RLMemoryEstimate` under ``"_estimate"`` and the RLSpeedEstimate (with a GPU)
    under ``"_speed"`` (not JSON)."""
    wl = workload.with_(seq_len=rl.seq_len) if workload.seq_len != rl.seq_len else workload
    est = estimate_rl_memory(model, wl, rl, gpu_mem_gib, strict=strict, host_ram_gib=host_ram_gib, margin=margin)

    out: dict[str, Any] = {"config": rl.to_dict(), **est.to_dict()}
    # p10-p90 of the binding phase's peak: the fit corpus's memory interval (fine-tuning runs; no published RL
    # memory reading calibrates the rollout engine's share), as every other memory figure (issue 26)
    out["peak_interval_gib"] = memory_range(est.peak_gib)
    out["suggestions"] = rl_suggestions(model, wl, rl, gpu_mem_gib, est, strict=strict, host_ram_gib=host_ram_gib,
                                        margin=margin) if est.verdict in ("oom", "tight") else []
    if gpu is not None and est.kv_shortfall is None:  # an engine that holds no sequence has no step time
        sp = rl_step_speed(model, wl, rl, est, gpu=gpu, instance=instance)
        out["speed"] = sp.to_dict()
        out["speed"]["interval"] = siv = rl_speed_interval(model, wl, gpu_class_of(gpu))
        if siv:  # p10/p50/p90 of every figure: tokens/s with the speed, the seconds against it (issue 26)
            iv = Interval.from_dict(siv)
            out["speed"]["intervals"] = {k: iv.scale(v, inverse=k.endswith("_seconds"))
                                         for k, v in out["speed"].items()
                                         if isinstance(v, (int, float)) and not isinstance(v, bool)
                                         and (k.endswith("_seconds") or k.endswith("_tokens_per_s"))}
        out["_speed"] = sp
        if steps:
            out["time"] = {k: round(v, 3) for k, v in rl_hours(sp, steps, wl.gpus).items()}
            if siv:  # step time, hours and GPU-hours move against the speed: their p10 is the speed's p90
                iv = Interval.from_dict(siv)
                out["time"]["intervals"] = {k: iv.scale(out["time"][k], inverse=True)
                                            for k in ("hours", "gpu_hours") if k in out["time"]}
    out["_train"] = est.train
    out["_estimate"] = est
    out["_workload"] = wl
    return out


_UTILS = (0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def _rl_changes(rl: RLConfig) -> list[tuple[str, dict[str, Any]]]:
    """Changes of the RL settings worth trying when the job does not fit, simplest first: the colocated engine's
    sleep mode (it frees its weights and KV cache while the trainer runs), a smaller engine budget, the trainer's
    offload, and two of them together."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not rl.engine_sleep and rl.colocate:
        out.append(("--engine-sleep", {"engine_sleep": True}))
    lower = [u for u in _UTILS if u < rl.rollout_util]
    out += [(f"--rollout-util {u:g}", {"rollout_util": u}) for u in lower]
    if not rl.trainer_offload:
        out.append(("--trainer-offload", {"trainer_offload": True}))
    if not rl.engine_sleep and rl.colocate:
        out += [(f"--engine-sleep --rollout-util {u:g}", {"engine_sleep": True, "rollout_util": u}) for u in lower]
    return out


def rl_suggestions(model: ModelShape, wl: Workload, rl: RLConfig, gpu_mem_gib: float, est: RLMemoryEstimate, *, limit: int = 3,
                   **kw: Any) -> list[dict[str, Any]]:
    """Up to ``limit`` changes of the RL settings under which the same job fits, each checked with the RL memory
    model (the verdict's own function): ``{"change", "peak_gib", "binding_phase", "why"}``. The smallest change of
    each kind comes first (the first engine budget that fits, not every lower one)."""
    out: list[dict[str, Any]] = []
    kinds: set[str] = set()
    for flag, change in _rl_changes(rl):
        kind = ",".join(sorted(change))
        if kind in kinds or len(out) >= limit:
            continue
        alt = estimate_with(model, wl, rl, gpu_mem_gib, change, **kw)  # None: a change the config refuses
        if alt is None or alt.verdict != "fits":
            continue
        kinds.add(kind)
        out.append({"change": flag, "peak_gib": round(alt.peak_gib, 3), "binding_phase": alt.binding_phase,
                    "why": _("fits: {gib:.1f} GiB per GPU (was {was:.1f}), binding phase {phase}").format(
                        gib=alt.peak_gib, was=est.peak_gib, phase=alt.binding_phase)})
    return out
