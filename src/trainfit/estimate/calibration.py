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
from trainfit.i18n import N_, _, translate

ENV_CALIBRATION = "TRAINFIT_CALIBRATION"
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


def calibration_note(assumptions: Any) -> str | None:
    """The "calibrated on <GPU>, <date>" line among a speed estimate's assumptions, or None (uncalibrated)."""
    prefixes = (CALIBRATED_PREFIX, translate(CALIBRATED_PREFIX))
    return next((a for a in assumptions if str(a).startswith(prefixes)), None)


def calibration_path() -> Path:
    env = os.environ.get(ENV_CALIBRATION)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trainfit" / "calibration.yaml"


#: Largest calibration overlay read (a real one holds a few entries per GPU: a few KB).
MAX_CALIBRATION_BYTES = 1 << 20
#: Largest probe results file ``calibrate`` reads.
MAX_RESULTS_BYTES = 16 << 20
_FIX = N_("re-run `trainfit calibrate RESULTS`, fix the entry, or delete the file")


def _entry(path: str, gpu: Any, fam: Any, d: Any) -> Calibration:
    """One calibration entry of the overlay, every value through the input gate."""
    from trainfit import inputs
    from trainfit.errors import InputError

    where = _("calibration file {path}: entry {gpu}/{family}").format(path=path, gpu=str(gpu)[:40],
                                                                       family=str(fam)[:40])
    fix = translate(_FIX)
    try:
        if not isinstance(gpu, str) or not isinstance(fam, str):
            raise InputError(_("GPU and engine family names must be strings"))
        inputs.as_ident("gpu", gpu, "gpu")
        inputs.as_ident("family", fam, "module")
        if not isinstance(d, dict):
            raise InputError(_("must be a mapping of factor, runs, date, source, spread"))
        spread = d.get("spread", (0.0, 0.0))
        if not isinstance(spread, (list, tuple)) or len(spread) != 2:
            raise InputError(_("spread must be a list of two numbers"))
        date_ = d.get("date")
        if not isinstance(date_, (str, date)):
            raise InputError(_("date must be a date (YYYY-MM-DD)"))
        source = d.get("source", "")
        if not isinstance(source, str) or len(source) > 4096:
            raise InputError(_("source must be a string of at most 4096 characters"))
        return Calibration(gpu=gpu, family=fam, factor=inputs.as_float("factor", d.get("factor")),
                           runs=inputs.as_int("runs", d.get("runs"), lo=1, hi=10**9),
                           date=date.fromisoformat(str(date_)[:10]).isoformat(), source=source,
                           spread=(inputs.as_float("spread", spread[0], lo=0, hi=1e6),
                                   inputs.as_float("spread", spread[1], lo=0, hi=1e6)))
    except InputError as e:
        raise WorkloadError(_("{where} is malformed: {detail}").format(where=where, detail=e.message), fix=fix) from None
    except ValueError as e:
        raise WorkloadError(_("{where} is malformed: {detail}").format(where=where, detail=str(e)[:120]),
                            fix=fix) from None
    except WorkloadError as e:
        raise WorkloadError(f"{where}: {e.message}", fix=e.fix or fix) from None


def _read_overlay(path: str) -> Any:
    """The overlay document through the input gate (a regular file of at most :data:`MAX_CALIBRATION_BYTES`,
    UTF-8, no YAML aliases, depth limit, one document)."""
    from trainfit.inputs import loads_yaml_all, read_text_file

    text = read_text_file(path, max_bytes=MAX_CALIBRATION_BYTES, what=_("calibration file"), error=WorkloadError,
                          fix=translate(_FIX))
    docs = loads_yaml_all(text, what=_("calibration file {path}").format(path=path), error=WorkloadError)
    if len(docs) > 1:
        raise WorkloadError(_("calibration file {path} holds {n} YAML documents, not one").format(path=path, n=len(docs)),
                            fix=translate(_FIX))
    data = docs[0] if docs else {}
    if not isinstance(data, dict) or not isinstance(data.get("gpus", {}) or {}, dict):
        raise WorkloadError(_("calibration file {path} is not a mapping with a 'gpus' mapping").format(path=path),
                            fix=translate(_FIX))
    return data


@lru_cache(maxsize=8)
def _load(path: str, mtime: float, size: int) -> dict[tuple[str, str], Calibration]:
    data = _read_overlay(path)
    out: dict[tuple[str, str], Calibration] = {}
    for gpu, fams in (data.get("gpus") or {}).items():
        if fams is not None and not isinstance(fams, dict):
            raise WorkloadError(_("calibration file {path}: entry {gpu} is not a mapping of engine families").format(
                path=path, gpu=str(gpu)[:40]), fix=translate(_FIX))
        for fam, d in (fams or {}).items():
            out[(gpu, fam)] = _entry(path, gpu, fam, d)
    return out


def load_calibrations(path: Path | None = None) -> dict[tuple[str, str], Calibration]:
    """The calibration overlay ({} when there is none). A file that is there but cannot be used (malformed, too
    large, a FIFO or a device) is one :class:`WorkloadError` naming the file and the fix, never a traceback or a
    hang."""
    p = path or calibration_path()
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise WorkloadError(_("cannot read calibration file {path}: {reason}").format(
            path=p, reason=getattr(e, "strerror", None) or e), fix=translate(_FIX)) from None
    return _load(str(p), st.st_mtime, st.st_size)


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
        raise WorkloadError(_("no catalog GPU matches the probe's device {device!r}").format(device=device),
                            fix=_("pass --gpu NAME (a name `trainfit catalog gpus` lists)"))
    return best


def fold(results: dict[str, Any], *, source: str, gpu: str | None = None) -> list[Calibration]:
    """Calibrations from a gpu_probe results dict (``{"runs": {id: {"config", "measured", "date"}}}``)."""
    from trainfit.catalog import get_gpu
    from trainfit.estimate.speed import estimate_speed
    from trainfit.plan.hardware import hardware_for  # the catalog adapter lives on the plan side
    from trainfit.models import from_hf_config, get_model
    from trainfit.workload import Workload

    from trainfit import inputs
    from trainfit.errors import InputError
    from trainfit.options import WORKLOAD_OPTION_NAMES, parse_options

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
            pred = estimate_speed(shape, wl, hw, framework="hf-trainer", use_calibration=False)
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


def _kept_comments(text: str) -> list[str]:
    """The user's comments of an overlay file (trainfit's own header left out): full-line comments as they are,
    a comment after a value as a full-line comment that says which line it stood beside."""
    out = []
    for line in text.splitlines():
        t = line.strip()
        if not t or t.startswith(_HEADER) or t.startswith(_KEPT):
            continue
        if t.startswith("#"):
            out.append(t)
            continue
        quote = None
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and i > 0 and line[i - 1] in " \t":
                out.append(f"# (beside `{line[:i].strip()[:80]}`) {line[i + 1:].strip()}")
                break
    return out


_HEADER = "# trainfit speed calibration (written by `trainfit calibrate`)"
_KEPT = "# your comments, kept by `trainfit calibrate`"


def _iso(text: str) -> bool:
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False


def save(cals: list[Calibration], path: Path | None = None) -> Path:
    """Merge ``cals`` into the overlay file (other GPUs/families kept) and replace it atomically (the safe writer:
    temporary file, fsync, rename; a link or a special file there is refused). The user's comments are kept at
    the top of the file (YAML has no place to keep them beside values a program rewrites)."""
    from trainfit.writes import ensure_dir, write_file

    p = path or calibration_path()
    data: dict[str, Any] = {}
    comments: list[str] = []
    if os.path.lexists(p):
        data = _read_overlay(str(p)) if not os.path.islink(p) else {}
        if os.path.islink(p):
            raise WorkloadError(_("calibration file {path} is a symbolic link; trainfit does not write through "
                                  "links").format(path=p),
                                fix=_("replace the link by the file, or set $TRAINFIT_CALIBRATION to the file itself"))
        for gpu, fams in (data.get("gpus") or {}).items():  # validate what is kept
            for fam, d in (fams or {}).items():
                _entry(str(p), gpu, fam, d)
        from trainfit.inputs import read_text_file

        comments = _kept_comments(read_text_file(p, max_bytes=MAX_CALIBRATION_BYTES, what=_("calibration file"),
                                                 error=WorkloadError, fix=translate(_FIX)))
    data = dict(data)
    gpus = dict(data.get("gpus") or {})
    data["gpus"] = gpus
    for c in cals:
        gpus[c.gpu] = dict(gpus.get(c.gpu) or {})
        gpus[c.gpu][c.family] = {"factor": round(c.factor, 4), "runs": c.runs, "date": c.date,
                                 "source": c.source, "spread": list(c.spread)}
    ensure_dir(p.parent, error=WorkloadError, what=_("calibration folder"))
    head = [_HEADER] + ([_KEPT] + comments if comments else [])
    write_file(p, "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=True), error=WorkloadError)
    _load.cache_clear()
    return p
