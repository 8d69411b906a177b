"""The RL part of a plan (:attr:`trainfit.plan.types.Plan.rl`): the RL settings planned and the planned numbers,
one typed value that ``plan --json`` writes and a plan file reads back (the JSON is the flat object of every
:class:`~trainfit.rl.RLConfig` field followed by the numbers)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

from trainfit.json_types import JSONObject
from trainfit.rl.config import RL_FIELD_NAMES, RLConfig
from trainfit.rl.memory import RLMemoryEstimate
from trainfit.rl.speed import RLSpeedEstimate


@dataclass(frozen=True, kw_only=True)
class RLSummary:
    """RL fine-tuning (``--rl grpo|ppo|dpo``) of a plan: the :class:`~trainfit.rl.RLConfig` and the planned
    per-phase memory, KV pool, steps and step-time split. For an RL plan the Plan's ``memory`` is the policy
    update's estimate with ``reserved_gib`` = the binding phase's peak and the RL host RAM (what the fit decision
    judged), its ``step_seconds`` one RL step and its ``tokens`` the sequence tokens of all steps."""

    config: RLConfig
    """Every RL setting as set (``critic`` None = the algorithm's default)."""
    phases_gib: dict[str, float]
    """Peak per phase (rollout, train, sync)."""
    peak_gib: float
    binding_phase: str
    kv_pool_gib: float | None
    kv_gib_per_seq: float | None
    max_concurrent_seqs: int | None
    host_ram_gib: float
    steps: int | None
    seqs_per_step: int
    speed: RLSpeedEstimate | None
    """The step-time split as the plan file writes it (rounded), None without a step time."""
    rl_warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, rl: RLConfig, est: RLMemoryEstimate, *, steps: int | None,
           speed: RLSpeedEstimate | None = None) -> "RLSummary":
        """The plan's RL part from the RL settings, their memory estimate and step time."""
        return cls(config=rl, phases_gib=dict(est.phases_gib), peak_gib=est.peak_gib, binding_phase=est.binding_phase,
                   kv_pool_gib=est.kv_pool_gib, kv_gib_per_seq=est.kv_gib_per_seq,
                   max_concurrent_seqs=est.max_concurrent_seqs, host_ram_gib=est.host_ram_gib, steps=steps,
                   seqs_per_step=rl.seqs_per_step, speed=None if speed is None else speed.rounded(),
                   rl_warnings=tuple(est.warnings))

    def to_dict(self) -> JSONObject:
        """Every RLConfig field, then this part's numbers, in field order."""
        out: JSONObject = {f.name: getattr(self.config, f.name) for f in fields(self.config)}
        for f in fields(self):
            if f.name == "config":
                continue
            v = getattr(self, f.name)
            if isinstance(v, RLSpeedEstimate):
                v = v.to_dict()
            elif isinstance(v, dict):
                v = dict(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> "RLSummary":
        """The part of :meth:`to_dict`; a wrong shape is a TypeError/ValueError/KeyError, wrong RL settings a
        WorkloadError (from RLConfig)."""
        if "algo" not in d:
            raise KeyError("rl.algo")
        config = RLConfig(**{k: v for k, v in d.items() if k in RL_FIELD_NAMES})
        phases = d["phases_gib"]
        if not isinstance(phases, dict):
            raise TypeError("rl.phases_gib must be an object")
        speed = d.get("speed")
        if speed is not None and not isinstance(speed, dict):
            raise TypeError("rl.speed must be an object")
        warnings = d.get("rl_warnings") or []
        if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
            raise TypeError("rl.rl_warnings must be a list of strings")
        return cls(config=config, phases_gib={str(k): _num(v) for k, v in phases.items()},
                   peak_gib=_num(d["peak_gib"]), binding_phase=str(d["binding_phase"]),
                   kv_pool_gib=_opt_num(d.get("kv_pool_gib")), kv_gib_per_seq=_opt_num(d.get("kv_gib_per_seq")),
                   max_concurrent_seqs=_opt_int(d.get("max_concurrent_seqs")), host_ram_gib=_num(d["host_ram_gib"]),
                   steps=_opt_int(d.get("steps")),
                   seqs_per_step=_opt_int(d.get("seqs_per_step")) or config.seqs_per_step,
                   speed=None if speed is None else RLSpeedEstimate.from_dict(speed), rl_warnings=tuple(warnings))


def _num(v: object) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError(f"expected a number, not {type(v).__name__}")
    return v


def _opt_num(v: object) -> float | None:
    return None if v is None else _num(v)


def _opt_int(v: object) -> int | None:
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer, not {type(v).__name__}")
    return v


__all__ = ["RLSummary"]
