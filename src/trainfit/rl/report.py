"""One call for the service layer: memory per phase, speed and time of an RL job as one typed report
(:class:`RLReport`), whose :meth:`RLReport.to_dict` is the ``rl`` part of ``memory --rl --json``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.estimate.calibration import Calibrations
from trainfit.estimate.memory import MemoryEstimate
from trainfit.i18n import _
from trainfit.json_types import JSONObject, Quantiles
from trainfit.models.shapes import ModelShape
from trainfit.rl.config import RLConfig
from trainfit.catalog.hardware import gpu_class_of
from trainfit.rl.memory import RLMemoryEstimate, estimate_rl_memory, estimate_with
from trainfit.rl.speed import RLSpeedEstimate, rl_hours, rl_step_speed
from trainfit.workload import Workload
from trainfit.estimate.uncertainty import Interval, headroom_range, memory_range, rl_speed_interval


@dataclass(frozen=True, kw_only=True)
class RLSuggestion:
    """A change of the RL settings under which the same job fits (checked with the RL memory model)."""

    change: str
    """The flags, e.g. ``--engine-sleep --rollout-util 0.4``."""
    peak_gib: float
    binding_phase: str
    why: str

    def to_dict(self) -> JSONObject:
        return {"change": self.change, "peak_gib": self.peak_gib, "binding_phase": self.binding_phase,
                "why": self.why}


@dataclass(frozen=True, kw_only=True)
class RLTime:
    """Wall-clock time of ``steps`` RL steps (rounded to 3 decimals, as reported)."""

    steps: int
    hours: float
    gpu_hours: float
    intervals: dict[str, Quantiles] | None = None
    """p10/p50/p90 of ``hours`` and ``gpu_hours`` (None without a speed interval)."""

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"steps": self.steps, "hours": self.hours, "gpu_hours": self.gpu_hours}
        if self.intervals is not None:
            out["intervals"] = dict(self.intervals)
        return out


@dataclass(frozen=True, kw_only=True)
class RLReport:
    """What ``memory --rl`` sizes: the RL settings, their per-phase memory (:class:`RLMemoryEstimate`, the policy
    update's MemoryEstimate as :attr:`train`), and with a catalog GPU the step time (on the node ``plan --rl``
    times it on), with ``steps`` the hours. ``workload`` is the policy update at prompt + response length."""

    config: RLConfig
    estimate: RLMemoryEstimate
    workload: Workload
    peak_interval_gib: Quantiles | None
    """p10-p90 of the binding phase's peak: the fit corpus's memory interval (fine-tuning runs; no published RL
    memory reading calibrates the rollout engine's share), as every other memory figure (issue 26)."""
    suggestions: tuple[RLSuggestion, ...] = ()
    speed: RLSpeedEstimate | None = None
    speed_interval: JSONObject | None = None
    """The RL step's speed interval (:func:`~trainfit.estimate.uncertainty.rl_speed_interval`) with a speed."""
    time: RLTime | None = None

    @property
    def train(self) -> MemoryEstimate:
        """The policy update's :class:`~trainfit.estimate.memory.MemoryEstimate`."""
        return self.estimate.train

    def speed_dict(self) -> JSONObject | None:
        """The step-time split as JSON, with its interval and p10/p50/p90 of every seconds and tokens/s figure."""
        if self.speed is None:
            return None
        out = self.speed.to_dict()
        out["interval"] = siv = self.speed_interval
        if siv:  # p10/p50/p90 of every figure: tokens/s with the speed, the seconds against it (issue 26)
            iv = Interval.from_dict(siv)
            out["intervals"] = {k: iv.scale(v, inverse=k.endswith("_seconds")) for k, v in out.items()
                                if isinstance(v, (int, float)) and not isinstance(v, bool)
                                and (k.endswith("_seconds") or k.endswith("_tokens_per_s"))}
        return out

    def to_dict(self) -> JSONObject:
        """``{"config", phases_gib, kv_pool_gib, max_concurrent_seqs, binding_phase, fits, ...}`` of the
        estimate, ``peak_interval_gib``, ``suggestions``, with a speed ``speed`` and with steps ``time``."""
        out: JSONObject = {"config": self.config.to_dict(), **self.estimate.to_dict()}
        out["peak_interval_gib"] = self.peak_interval_gib
        out["suggestions"] = [s.to_dict() for s in self.suggestions]
        if self.speed is not None:
            out["speed"] = self.speed_dict()
        if self.time is not None:
            out["time"] = self.time.to_dict()
        return out


def rl_report(model: ModelShape, workload: Workload, rl: RLConfig, gpu_mem_gib: float, *, gpu: GPU | None = None,
              instance: Instance | None = None, steps: int | None = None, strict: bool = False,
              host_ram_gib: float | None = None, margin: float | None = None,
              calibrations: Calibrations | None = None) -> RLReport:
    """The :class:`RLReport` of ``rl``: :func:`~trainfit.rl.memory.estimate_rl_memory`; with a catalog ``gpu``
    record also the step time (:func:`~trainfit.rl.speed.rl_step_speed` on the node ``instance`` with the user's
    ``calibrations``: the step time ``plan --rl`` gives), and with ``steps`` also the time (hours, GPU-hours). The workload's ``seq_len`` is
    replaced by prompt + response."""
    wl = workload.with_(seq_len=rl.seq_len) if workload.seq_len != rl.seq_len else workload
    est = estimate_rl_memory(model, wl, rl, gpu_mem_gib, strict=strict, host_ram_gib=host_ram_gib, margin=margin)
    suggestions = rl_suggestions(model, wl, rl, gpu_mem_gib, est, strict=strict, host_ram_gib=host_ram_gib,
                                 margin=margin) if est.verdict in ("oom", "tight") else []
    report = RLReport(config=rl, estimate=est, workload=wl, peak_interval_gib=memory_range(est.peak_gib),
                      suggestions=tuple(suggestions))
    if gpu is None or est.kv_shortfall is not None:  # an engine that holds no sequence has no step time
        return report
    sp = rl_step_speed(model, wl, rl, est, gpu=gpu, instance=instance, calibrations=calibrations)
    siv = rl_speed_interval(model, wl, gpu_class_of(gpu))
    time = None
    if steps:
        t = {k: round(v, 3) for k, v in rl_hours(sp, steps, wl.gpus).items()}
        intervals = None
        if siv:  # step time, hours and GPU-hours move against the speed: their p10 is the speed's p90
            iv = Interval.from_dict(siv)
            intervals = {k: iv.scale(t[k], inverse=True) for k in ("hours", "gpu_hours")}
        time = RLTime(steps=steps, hours=t["hours"], gpu_hours=t["gpu_hours"], intervals=intervals)
    return replace(report, speed=sp, speed_interval=siv, time=time)


@dataclass(frozen=True, kw_only=True)
class RLMemoryReport:
    """What ``trainfit memory --rl ...`` reports: the policy update's memory and the RL section."""

    model: ModelShape
    report: RLReport
    """:func:`trainfit.rl.rl_report`'s typed report (config, per-phase memory, speed, time)."""
    gpu: str | None = None
    usable_gib: float
    host_ram_gib: float | None = None

    @property
    def workload(self) -> Workload:
        """The policy update (its ``seq_len`` is prompt + response)."""
        return self.report.workload

    @property
    def estimate(self) -> RLMemoryEstimate:
        """Per phase, KV pool, the verdict over all phases."""
        return self.report.estimate

    def to_dict(self) -> JSONObject:
        est = self.estimate
        out = est.train.to_dict()
        out["workload"] = self.workload.to_dict()
        # the policy update's reserved GiB with its p10-p90 range, as memory's (the binding phase's is rl.peak_*)
        out["reserved_interval_gib"] = memory_range(est.train.reserved_gib)
        out.update({"gpu": self.gpu, "gpu_mem_gib": self.usable_gib, "host_ram_node_gib": self.host_ram_gib,
                    "verdict": est.verdict, "fits": est.fits, "fit": est.fit,
                    "headroom_gib": round(round(est.headroom_gib, 3), 2),  # the report's figure (3 places) to 2
                    "headroom_interval_gib": headroom_range(self.usable_gib, est.peak_gib)})
        out["rl"] = self.report.to_dict()
        return out


_UTILS = (0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def _rl_changes(rl: RLConfig) -> list[tuple[str, dict[str, bool | float]]]:
    """Changes of the RL settings worth trying when the job does not fit, simplest first: the colocated engine's
    sleep mode (it frees its weights and KV cache while the trainer runs), a smaller engine budget, the trainer's
    offload, and two of them together."""
    out: list[tuple[str, dict[str, bool | float]]] = []
    if not rl.engine_sleep and rl.colocate:
        out.append(("--engine-sleep", {"engine_sleep": True}))
    lower = [u for u in _UTILS if u < rl.rollout_util]
    out += [(f"--rollout-util {u:g}", {"rollout_util": u}) for u in lower]
    if not rl.trainer_offload:
        out.append(("--trainer-offload", {"trainer_offload": True}))
    if not rl.engine_sleep and rl.colocate:
        out += [(f"--engine-sleep --rollout-util {u:g}", {"engine_sleep": True, "rollout_util": u}) for u in lower]
    return out


def rl_suggestions(model: ModelShape, wl: Workload, rl: RLConfig, gpu_mem_gib: float, est: RLMemoryEstimate, *,
                   limit: int = 3, strict: bool = False, host_ram_gib: float | None = None,
                   margin: float | None = None) -> list[RLSuggestion]:
    """Up to ``limit`` changes of the RL settings under which the same job fits, each checked with the RL memory
    model (the verdict's own function). The smallest change of
    each kind comes first (the first engine budget that fits, not every lower one)."""
    out: list[RLSuggestion] = []
    kinds: set[str] = set()
    for flag, change in _rl_changes(rl):
        kind = ",".join(sorted(change))
        if kind in kinds or len(out) >= limit:
            continue
        alt = estimate_with(model, wl, rl, gpu_mem_gib, change, strict=strict, host_ram_gib=host_ram_gib,
                            margin=margin)  # None: a change the config refuses
        if alt is None or alt.verdict != "fits":
            continue
        kinds.add(kind)
        out.append(RLSuggestion(change=flag, peak_gib=round(alt.peak_gib, 3), binding_phase=alt.binding_phase,
                                why=_("fits: {gib:.1f} GiB per GPU (was {was:.1f}), binding phase {phase}").format(
                                    gib=alt.peak_gib, was=est.peak_gib, phase=alt.binding_phase)))
    return out
