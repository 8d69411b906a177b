"""Measured speed calibration, as the speed model takes it: one :class:`Calibration` per (GPU, engine family), the
median of a GPU probe's measured / predicted tokens/s (:func:`trainfit.calibrate.fold`). ``estimate_speed`` divides
that family's compute time on that GPU by the factor when it is given the user's calibrations
(:func:`trainfit.calibration_file.load_calibrations` reads the overlay) and says so in its assumptions
("calibrated on <GPU>, <date>"). Nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainfit.errors import WorkloadError
from trainfit.i18n import N_, _, translate

CALIBRATED_PREFIX = N_("calibrated on ")
"""How :meth:`Calibration.line` starts (a speed estimate's assumption; :func:`calibration_note` finds it), in English;
the line and this prefix are translated together (the Chinese line starts with the Chinese prefix)."""
FACTOR_RANGE = (0.2, 5.0)
"""A measured/predicted median outside this range means a broken run or a wrong GPU match: refused."""


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """One folded calibration: what multiplies the engine family's speed on one GPU."""

    gpu: str
    family: str
    factor: float
    """Median measured / predicted tokens/s (compute time is divided by it)."""
    runs: int
    date: str
    source: str
    spread: tuple[float, float] = (0.0, 0.0)
    """Smallest and largest measured / predicted ratio of the runs."""

    def __post_init__(self) -> None:
        lo, hi = FACTOR_RANGE
        if not lo <= self.factor <= hi:
            raise WorkloadError(_("calibration factor {factor:.3g} for {gpu} is outside [{lo}, {hi}]").format(
                                    factor=self.factor, gpu=self.gpu, lo=lo, hi=hi),
                                fix=_("check the probe results (errors, wrong GPU) before calibrating"))
        if self.runs < 1:
            raise WorkloadError(_("a calibration needs at least one measured run"))

    def line(self) -> str:
        # i18n: must start with the translation of "calibrated on " (calibration_note finds the line by it)
        return _("calibrated on {gpu} ({family} engine), {date}: measured/predicted x{factor:.3f} (median of {runs} "
                 "runs, {lo:.2f}-{hi:.2f}; {source})").format(
            gpu=self.gpu, family=self.family, date=self.date, factor=self.factor, runs=self.runs, lo=self.spread[0],
            hi=self.spread[1], source=self.source)


def calibration_note(assumptions: Iterable[str]) -> str | None:
    """The "calibrated on <GPU>, <date>" line among a speed estimate's assumptions, or None (uncalibrated)."""
    prefixes = (CALIBRATED_PREFIX, translate(CALIBRATED_PREFIX))
    return next((a for a in assumptions if str(a).startswith(prefixes)), None)


#: The calibrations of a user overlay by (catalog GPU name, engine family): what ``estimate_speed`` is given (read by
#: :func:`trainfit.calibration_file.load_calibrations`; this package reads no file).
Calibrations = Mapping[tuple[str, str], Calibration]
