"""Fold a GPU probe's measured speed into calibrations (``trainfit calibrate RESULTS``).

``benchmarks/gpu_probe.py`` runs real training steps of small configurations on the GPU at hand (plain Hugging
Face code, one GPU: the ``hf`` engine family) and records tokens/s. :func:`fold` compares each run with the
engine model's uncalibrated prediction for the same configuration on that GPU and keeps one factor per (GPU, engine
family): the median of measured / predicted. :func:`trainfit.calibration_file.save` writes them to the user's
overlay; from then on the speed model divides that family's compute time on that GPU by the factor.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from datetime import date
from typing import Any

from trainfit import inputs
from trainfit.catalog import get_gpu, list_gpus
from trainfit.catalog.gpus import normalize_gpu_name
from trainfit.errors import InputError, TrainfitError, WorkloadError
from trainfit.estimate.calibration import Calibration
from trainfit.estimate.speed import estimate_speed
from trainfit.i18n import _
from trainfit.models import from_hf_config, get_model
from trainfit.catalog.hardware import hardware_for
from trainfit.workload import Workload
from trainfit.workload_options import WORKLOAD_OPTION_NAMES, parse_options

#: Largest probe results file ``calibrate`` reads.
MAX_RESULTS_BYTES = 16 << 20


def match_gpu(device: str) -> str:
    """Catalog name of a CUDA device name (``NVIDIA H100 80GB HBM3`` -> ``H100-SXM``)."""
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
        raise WorkloadError(_("no catalog GPU matches the probe's device {device!r}").format(device=device),
                            fix=_("pass --gpu NAME (a name `trainfit catalog gpus` lists)"))
    return best


def fold(results: Mapping[str, Any], *, source: str, gpu: str | None = None) -> list[Calibration]:
    """Calibrations from a gpu_probe results dict (``{"runs": {id: {"config", "measured", "date"}}}``)."""
    fix = _("pass the JSON that benchmarks/gpu_probe.py wrote")
    if not isinstance(results, dict) or not isinstance(results.get("runs") or {}, dict):
        raise WorkloadError(_("the probe results are not an object with a 'runs' object"), fix=fix)
    ratios: dict[tuple[str, str], list[float]] = {}
    dates: dict[tuple[str, str], str] = {}
    cpu_runs = 0
    for rid, rec in (results.get("runs") or {}).items():
        where = _("probe run {run!r}").format(run=str(rid)[:60])
        if not isinstance(rec, dict):
            raise WorkloadError(_("{where} is not an object").format(where=where), fix=fix)
        m = rec.get("measured") or {}
        cfg = rec.get("config")
        if not isinstance(m, dict) or (cfg is not None and not isinstance(cfg, dict)):
            raise WorkloadError(_("{where}: 'measured' and 'config' must be objects").format(where=where), fix=fix)
        if "tokens_per_s" not in m or not cfg:
            continue  # failed run, or a results file from a probe that did not record its configuration
        if str(m.get("device", "")).lower() == "cpu":
            cpu_runs += 1
            continue  # a `gpu_probe.py --device cpu` smoke run: not a GPU's speed
        try:
            measured = inputs.as_float("tokens_per_s", m["tokens_per_s"], lo=0, lo_open=True, hi=1e12)
            if not isinstance(cfg.get("model"), str):
                raise InputError(_("config.model must be a model name"))
            wl_raw = {k: v for k, v in cfg.items() if k not in ("model", "hf_config")}
            unknown = [k for k in wl_raw if k not in WORKLOAD_OPTION_NAMES and k != "lora_targets"]
            if unknown:
                raise InputError(_("config has unknown setting(s) {names}").format(names=", ".join(map(str, unknown[:4]))))
            parsed = parse_options({k: v for k, v in wl_raw.items() if k in WORKLOAD_OPTION_NAMES}, defaults=False)
            wl_raw.update({k: v for k, v in parsed.items() if v is not None})
            if "lora_targets" in wl_raw:
                wl_raw["lora_targets"] = tuple(wl_raw["lora_targets"] or ())
            name = gpu or match_gpu(str(m.get("device", ""))[:200])
            hw = hardware_for(get_gpu(name), None)
            wl = Workload(**wl_raw)
            shape = (from_hf_config(cfg["hf_config"], name=cfg["model"], source=source) if cfg.get("hf_config")
                     else get_model(cfg["model"]))
            pred = estimate_speed(shape, wl, hw, framework="hf-trainer")
        except InputError as e:
            raise WorkloadError(f"{where}: {e.message}", fix=fix) from None
        except TrainfitError as e:
            raise WorkloadError(f"{where}: {e.message}", fix=e.fix or fix) from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise WorkloadError(_("{where} does not have a probe run's shape ({error})").format(
                where=where, error=f"{type(e).__name__}: {str(e)[:80]}"), fix=fix) from None
        key = (hw.name, "hf")
        ratios.setdefault(key, []).append(measured / pred.tokens_per_s_per_gpu)
        d = rec.get("date", "")
        dates[key] = max(dates.get(key, ""), str(d)[:10] if isinstance(d, str) and _iso(str(d)[:10]) else "")
    if not ratios and cpu_runs:
        raise WorkloadError(_("the results hold {n} CPU run(s) (`gpu_probe.py --device cpu` is a smoke run of the "
                              "probe's code path): a CPU's speed cannot calibrate a GPU").format(n=cpu_runs),
                            fix=_("run `python benchmarks/gpu_probe.py` on the GPU, then calibrate from its results"))
    if not ratios:
        raise WorkloadError(_("no usable run in the results (each needs measured tokens_per_s and its config)"),
                            fix=_("run `python benchmarks/gpu_probe.py` on a GPU first"))
    return [Calibration(gpu=g, family=f, factor=statistics.median(r), runs=len(r), date=dates[(g, f)] or
                        date.today().isoformat(), source=source, spread=(round(min(r), 3), round(max(r), 3)))
            for (g, f), r in sorted(ratios.items())]


def _iso(text: str) -> bool:
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False
