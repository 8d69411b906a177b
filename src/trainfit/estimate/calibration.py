"""Measured speed calibration: fold a GPU probe's measured tokens/s into a user overlay the speed model uses.

``benchmarks/gpu_probe.py`` runs real training steps of small configurations on the GPU at hand (plain Hugging
Face code, one GPU: the ``hf`` engine family) and records tokens/s. :func:`fold` compares each run with the
engine model's prediction for the same configuration on that GPU and keeps one factor per (GPU, engine
family): the median of measured / predicted. ``trainfit calibrate RESULTS`` writes it to the calibration
overlay (``$TRAINFIT_CALIBRATION``, else ``$XDG_CONFIG_HOME/trainfit/calibration.yaml``); from then on
``estimate_speed`` divides that family's compute time on that GPU by the factor and says so in its
assumptions ("calibrated on <GPU>, <date>").
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from trainfit.errors import TrainfitError, WorkloadError

ENV_CALIBRATION = "TRAINFIT_CALIBRATION"
CALIBRATED_PREFIX = "calibrated on "
"""How :meth:`Calibration.line` starts (a speed estimate's assumption; :func:`calibration_note` finds it)."""
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
            raise WorkloadError(f"calibration factor {self.factor:.3g} for {self.gpu} is outside [{lo}, {hi}]",
                                fix="check the probe results (errors, wrong GPU) before calibrating")
        if self.runs < 1:
            raise WorkloadError("a calibration needs at least one measured run")

    def line(self) -> str:
        return (f"{CALIBRATED_PREFIX}{self.gpu} ({self.family} engine), {self.date}: measured/predicted x{self.factor:.3f} "
                f"(median of {self.runs} runs, {self.spread[0]:.2f}-{self.spread[1]:.2f}; {self.source})")


def calibration_note(assumptions: Any) -> str | None:
    """The "calibrated on <GPU>, <date>" line among a speed estimate's assumptions, or None (uncalibrated)."""
    return next((a for a in assumptions if str(a).startswith(CALIBRATED_PREFIX)), None)


def calibration_path() -> Path:
    env = os.environ.get(ENV_CALIBRATION)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trainfit" / "calibration.yaml"


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict[tuple[str, str], Calibration]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    out: dict[tuple[str, str], Calibration] = {}
    for gpu, fams in (data.get("gpus") or {}).items():
        for fam, d in (fams or {}).items():
            try:
                out[(gpu, fam)] = Calibration(gpu=gpu, family=fam, factor=float(d["factor"]), runs=int(d["runs"]),
                                              date=str(d["date"]), source=str(d.get("source", "")),
                                              spread=tuple(d.get("spread", (0.0, 0.0))))
            except (KeyError, TypeError, ValueError) as e:
                raise WorkloadError(f"calibration file {path}: entry {gpu}/{fam} is malformed ({e})",
                                    fix="re-run `trainfit calibrate RESULTS` or delete the file") from None
    return out


def load_calibrations(path: Path | None = None) -> dict[tuple[str, str], Calibration]:
    p = path or calibration_path()
    if not p.is_file():
        return {}
    return _load(str(p), p.stat().st_mtime)


def calibration_for(gpu_name: str, family: str) -> Calibration | None:
    """The calibration of ``family`` on ``gpu_name`` from the overlay, or None."""
    return load_calibrations().get((gpu_name, family))


def match_gpu(device: str) -> str:
    """Catalog name of a CUDA device name (``NVIDIA H100 80GB HBM3`` -> ``H100-SXM``)."""
    from trainfit.catalog import get_gpu, list_gpus
    from trainfit.catalog.gpus import normalize_gpu_name

    try:
        return get_gpu(device).name
    except TrainfitError:
        pass
    dev = normalize_gpu_name(device)
    best, best_len = None, 0
    for g in list_gpus():
        for alias in (g.name,) + tuple(g.aliases):
            a = normalize_gpu_name(alias)
            if a and a in dev and len(a) > best_len:
                best, best_len = g.name, len(a)
    if best is None:
        raise WorkloadError(f"no catalog GPU matches the probe's device {device!r}",
                            fix="pass --gpu NAME (a name `trainfit catalog gpus` lists)")
    return best


def fold(results: dict[str, Any], *, source: str, gpu: str | None = None) -> list[Calibration]:
    """Calibrations from a gpu_probe results dict (``{"runs": {id: {"config", "measured", "date"}}}``)."""
    from trainfit.catalog import get_gpu
    from trainfit.estimate.speed import estimate_speed
    from trainfit.plan.hardware import hardware_for  # the catalog adapter lives on the plan side
    from trainfit.models import from_hf_config, get_model
    from trainfit.workload import Workload

    ratios: dict[tuple[str, str], list[float]] = {}
    dates: dict[tuple[str, str], str] = {}
    cpu_runs = 0
    for rid, rec in (results.get("runs") or {}).items():
        m = rec.get("measured") or {}
        cfg = rec.get("config")
        if "tokens_per_s" not in m or not cfg:
            continue  # failed run, or a results file from a probe that did not record its configuration
        if str(m.get("device", "")).lower() == "cpu":
            cpu_runs += 1
            continue  # a `gpu_probe.py --device cpu` smoke run: not a GPU's speed
        name = gpu or match_gpu(str(m.get("device", "")))
        hw = hardware_for(get_gpu(name), None)
        wl = Workload(**{k: v for k, v in cfg.items() if k not in ("model", "hf_config")})
        shape = (from_hf_config(cfg["hf_config"], name=cfg["model"], source=source) if cfg.get("hf_config")
                 else get_model(cfg["model"]))
        pred = estimate_speed(shape, wl, hw, framework="hf-trainer", use_calibration=False)
        key = (hw.name, "hf")
        ratios.setdefault(key, []).append(float(m["tokens_per_s"]) / pred.tokens_per_s_per_gpu)
        dates[key] = max(dates.get(key, ""), str(rec.get("date", ""))[:10])
    if not ratios and cpu_runs:
        raise WorkloadError(f"the results hold {cpu_runs} CPU run(s) (`gpu_probe.py --device cpu` is a smoke run of "
                            "the probe's code path): a CPU's speed cannot calibrate a GPU",
                            fix="run `python benchmarks/gpu_probe.py` on the GPU, then calibrate from its results")
    if not ratios:
        raise WorkloadError("no usable run in the results (each needs measured tokens_per_s and its config)",
                            fix="run `python benchmarks/gpu_probe.py` on a GPU first")
    return [Calibration(gpu=g, family=f, factor=statistics.median(r), runs=len(r), date=dates[(g, f)] or
                        date.today().isoformat(), source=source, spread=(round(min(r), 3), round(max(r), 3)))
            for (g, f), r in sorted(ratios.items())]


def save(cals: list[Calibration], path: Path | None = None) -> Path:
    """Merge ``cals`` into the overlay file (other GPUs/families kept)."""
    p = path or calibration_path()
    data = (yaml.safe_load(p.read_text(encoding="utf-8")) or {}) if p.is_file() else {}
    gpus = data.setdefault("gpus", {})
    for c in cals:
        gpus.setdefault(c.gpu, {})[c.family] = {"factor": round(c.factor, 4), "runs": c.runs, "date": c.date,
                                               "source": c.source, "spread": list(c.spread)}
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("# trainfit speed calibration (written by `trainfit calibrate`)\n"
                 + yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
    return p
