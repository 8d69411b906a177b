"""The vocabulary of ``trainfit diagnose``, below both its halves (:mod:`trainfit.diagnose` and
:mod:`trainfit.diagnose_tokens`): the thresholds, a finding, and the two number helpers they share."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from trainfit.errors import MetricsError
from trainfit.i18n import _
from trainfit.json_types import JSONLike

if TYPE_CHECKING:
    from trainfit.metrics_file import MetricRecord

SEVERITIES = ("info", "warning", "critical")


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """When a finding fires. Defaults are the rules of thumb the issue states; all are options."""

    input_warn: float = 0.10
    """Data wait / step time at which ``input-bound`` warns."""
    input_critical: float = 0.20
    """Data wait / step time at which ``input-bound`` is critical."""
    low_util: float = 0.60
    """Median GPU utilisation (0-1) below which ``low-gpu-util`` warns."""
    mem_warn: float = 0.90
    """Peak reserved / GPU memory at which ``memory-near-limit`` warns."""
    mem_critical: float = 0.95
    """... and is critical."""
    spike_ratio: float = 1.5
    """Loss / median of the previous 20 steps that counts as a spike."""
    divergence_ratio: float = 1.5
    """Median loss of the last steps / best earlier rolling median that counts as divergence."""
    slower_warn: float = 0.80
    """Measured / predicted tokens/s below which ``slower-than-plan`` warns."""
    slower_critical: float = 0.50
    """... and is critical."""
    memory_over: float = 1.10
    """Measured / predicted reserved memory above which ``memory-above-plan`` warns."""
    interval_off: float = 2.0
    """Save interval more than this factor away from the optimum warns."""
    tokens_off: float = 1.25
    """Measured tokens per step more than this factor away from the plan's warns (``tokens-per-step``)."""
    warmup_steps: int = 1
    """Steps left out of the timing statistics at the start of each launch (startup, compilation)."""

    def __post_init__(self) -> None:
        for name in ("input_warn", "input_critical", "low_util", "mem_warn", "mem_critical", "slower_warn",
                     "slower_critical"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise MetricsError(_("threshold {name} must be in (0, 1]; got {value}").format(name=name, value=v))
        if self.input_warn > self.input_critical or self.mem_warn > self.mem_critical:
            raise MetricsError(_("a warning threshold is above its critical threshold"))
        if self.slower_critical > self.slower_warn:
            raise MetricsError(_("slower_critical must be <= slower_warn"))
        for name in ("spike_ratio", "divergence_ratio", "memory_over", "interval_off", "tokens_off"):
            if getattr(self, name) <= 1:
                raise MetricsError(_("threshold {name} must be > 1; got {value}").format(name=name,
                                                                                      value=getattr(self, name)))
        if self.warmup_steps < 0:
            raise MetricsError(_("warmup_steps must be >= 0; got {value}").format(value=self.warmup_steps))


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One diagnosis."""

    code: str
    """Stable identifier (input-bound, low-gpu-util, ...)."""
    severity: str
    """info, warning or critical."""
    message: str
    """What was measured."""
    fix: str
    """What to change."""
    data: Mapping[str, JSONLike] = field(default_factory=dict)
    """The numbers behind the message."""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}; got {self.severity!r}")

    def to_dict(self) -> dict[str, JSONLike]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "fix": self.fix,
                "data": self.data}


def vals(recs: list[MetricRecord], key: str) -> list[float]:
    out = []
    for r in recs:
        v = r.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None
