"""The user's speed calibration overlay (``$TRAINFIT_CALIBRATION``, else ``$XDG_CONFIG_HOME/trainfit/calibration.yaml``):
where it is, reading it through the input gate (:func:`load_calibrations`) and merging new calibrations into it
(:func:`save`, the safe writer). The speed model reads no file: the planner, the service layer and the RL speed model
load the overlay here and pass it to :func:`trainfit.estimate.speed.estimate_speed`.
"""

from __future__ import annotations

import os
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from trainfit import inputs
from trainfit.errors import InputError, WorkloadError
from trainfit.estimate.calibration import Calibration
from trainfit.i18n import N_, _, translate
from trainfit.inputs import loads_yaml_all, read_text_file
from trainfit.writes import ensure_dir, write_file

ENV_CALIBRATION = "TRAINFIT_CALIBRATION"


def calibration_path() -> Path:
    env = os.environ.get(ENV_CALIBRATION)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trainfit" / "calibration.yaml"


#: Largest calibration overlay read (a real one holds a few entries per GPU: a few KB).
MAX_CALIBRATION_BYTES = 1 << 20
_FIX = N_("re-run `trainfit calibrate RESULTS`, fix the entry, or delete the file")


def _entry(path: str, gpu: object, fam: object, d: object) -> Calibration:
    """One calibration entry of the overlay, every value through the input gate."""
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


def _read_text(path: str | Path) -> str:
    """The overlay's text through the input gate (a regular file of at most :data:`MAX_CALIBRATION_BYTES`, UTF-8)."""
    return read_text_file(path, max_bytes=MAX_CALIBRATION_BYTES, what=_("calibration file"), error=WorkloadError,
                          fix=translate(_FIX))


def _parse_overlay(text: str, path: str) -> dict[str, Any]:
    """The overlay document (no YAML aliases, depth limit, one document, a mapping with a ``gpus`` mapping)."""
    docs = loads_yaml_all(text, what=_("calibration file {path}").format(path=path), error=WorkloadError)
    if len(docs) > 1:
        raise WorkloadError(_("calibration file {path} holds {n} YAML documents, not one").format(path=path, n=len(docs)),
                            fix=translate(_FIX))
    data = docs[0] if docs else {}
    if not isinstance(data, dict) or not isinstance(data.get("gpus", {}) or {}, dict):
        raise WorkloadError(_("calibration file {path} is not a mapping with a 'gpus' mapping").format(path=path),
                            fix=translate(_FIX))
    return data


def _entries(path: str, data: dict[str, Any]) -> dict[tuple[str, str], Calibration]:
    """Every entry of an overlay document, each checked (:func:`_entry`)."""
    out: dict[tuple[str, str], Calibration] = {}
    for gpu, fams in (data.get("gpus") or {}).items():
        if fams is not None and not isinstance(fams, dict):
            raise WorkloadError(_("calibration file {path}: entry {gpu} is not a mapping of engine families").format(
                path=path, gpu=str(gpu)[:40]), fix=translate(_FIX))
        for fam, d in (fams or {}).items():
            out[(gpu, fam)] = _entry(path, gpu, fam, d)
    return out


@lru_cache(maxsize=8)
def _load(path: str, mtime: float, size: int) -> dict[tuple[str, str], Calibration]:
    return _entries(path, _parse_overlay(_read_text(path), path))


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


def save(cals: list[Calibration], path: Path | None = None) -> Path:
    """Merge ``cals`` into the overlay file (other GPUs/families kept) and replace it atomically (the safe writer:
    temporary file, fsync, rename; a link or a special file there is refused). The user's comments are kept at
    the top of the file (YAML has no place to keep them beside values a program rewrites)."""
    p = path or calibration_path()
    data: dict[str, Any] = {}
    comments: list[str] = []
    if os.path.islink(p):
        raise WorkloadError(_("calibration file {path} is a symbolic link; trainfit does not write through "
                              "links").format(path=p),
                            fix=_("replace the link by the file, or set $TRAINFIT_CALIBRATION to the file itself"))
    if os.path.lexists(p):
        text = _read_text(p)
        data = _parse_overlay(text, str(p))
        _entries(str(p), data)  # what is kept must be valid too
        comments = _kept_comments(text)
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
