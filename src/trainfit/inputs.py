"""The one input gate: every number and name that comes from a user (CLI option, web form, plan file, job file,
config.json, catalog overlay) passes through these functions before the core sees it.

Rules (docs/security.md):

* numbers are finite and inside a documented range; integers are ASCII digits (``"²"`` passes ``str.isdigit``
  but is not a number here) of at most :data:`MAX_INT_DIGITS` digits;
* counts accept SI suffixes (``2B``, ``500M``, ``8k``), sequence lengths binary ``k`` (``4k`` = 4096);
* identifiers (regions, instance types, GPU names, job names, bucket URIs) match strict patterns, so nothing
  that reaches a shell or a job file can carry a metacharacter or a line break;
* files are regular files under a size limit, decoded as UTF-8, parsed with a depth limit (JSON and YAML) and
  with YAML aliases refused (no "billion laughs").

Every failure is an :class:`~trainfit.errors.InputError` naming the field, what was wrong and the fix.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from trainfit.errors import InputError
from trainfit.i18n import N_, _, translate
from trainfit.json_types import JSON, YAMLValue

if TYPE_CHECKING:
    import yaml

#: Longest integer literal accepted anywhere (Python refuses > 4,300 digits; no real count needs 20).
MAX_INT_DIGITS = 18
#: Deepest nesting accepted in JSON/YAML input (job files, plans, overlays, configs are all shallow).
MAX_DEPTH = 64
#: Longest line read from a job file or script (real launch scripts stay far below).
MAX_LINE_CHARS = 64 * 1024

_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_RE = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$")
_SI = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}

#: Strict identifier patterns for values written into scripts and job files.
PATTERNS: dict[str, re.Pattern[str]] = {
    "region": re.compile(r"^[a-z]{2}(?:-[a-z0-9]+){1,4}$"),
    "instance_type": re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"),
    "gpu": re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,59}$"),
    "job_name": re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$"),
    "resource_id": re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"),
    "workspace_id": re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"),
    "vpc": re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"),
    "uri": re.compile(r"^(?:oss|s3|gs|cos|pvc|nas|cpfs|https?)://[A-Za-z0-9._~/%+=:@-]{1,500}$|^/[A-Za-z0-9._~/%+=:@-]{0,500}$"),
    "dataset": re.compile(r"^[A-Za-z0-9_./:@%+=~-]{1,300}$"),
    "image": re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,299}$"),
    "module": re.compile(r"^[A-Za-z0-9_.*-]{1,100}$"),
}
_PATTERN_HELP = {  # message ids, shown with i18n.translate
    "region": N_("a region id such as cn-hangzhou or ap-southeast-1"),
    "instance_type": N_("letters, digits, '.', '_' and '-' (e.g. ecs.gn7i-c8g1.2xlarge)"),
    "gpu": N_("a GPU name such as A10, H800 or A100-80GB"),
    "job_name": N_("letters, digits, '.', '_' and '-' (at most 80)"),
    "resource_id": N_("letters, digits, '_' and '-'"),
    "workspace_id": N_("letters, digits, '_' and '-'"),
    "vpc": N_("an id such as vpc-xxxx, vsw-xxxx or sg-xxxx"),
    "uri": N_("oss://bucket/path/ (or s3://, pvc://, an absolute path) without spaces or shell characters"),
    "dataset": N_("a dataset id or path without spaces or shell characters"),
    "image": N_("a container image reference (registry/name:tag)"),
    "module": N_("a module name such as q_proj or all-linear"),
}


def _bad(field: str, got: object, what: str, fix: str | None = None) -> InputError:
    """``{field}: {what}; got {value}``: ``what`` and ``fix`` come translated (``_()`` at the caller)."""
    shown = repr(got)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    err = InputError(_("{field}: {what}; got {value}").format(field=field, what=what, value=shown), fix=fix)
    err.field = field  # type: ignore[attr-defined]
    return err


def _num(x: float) -> str:
    """A range bound as a user types it: 4194304, not 4.1943e+06 (1e+15 stays short)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e9 else f"{x:g}"


def _check_range(field: str, v: float, lo: float | None, hi: float | None, raw: object) -> None:
    span = _("use a value in [{lo}, {hi}]").format(lo=_num(lo), hi=_num(hi)) \
        if lo is not None and hi is not None else None
    if lo is not None and v < lo:
        raise _bad(field, raw, _("must be >= {lo}").format(lo=_num(lo)), span)
    if hi is not None and v > hi:
        raise _bad(field, raw, _("must be <= {hi}").format(hi=_num(hi)), span)


def as_int(field: str, raw: object, *, lo: int | None = 1, hi: int | None = None) -> int:
    """An integer from an int or an ASCII-digit string, in ``[lo, hi]``."""
    if isinstance(raw, bool):
        raise _bad(field, raw, _("must be an integer, not true/false"))
    if isinstance(raw, int):
        v = raw
    elif isinstance(raw, float) and math.isfinite(raw) and raw.is_integer() and abs(raw) < 1e18:
        v = int(raw)
    elif isinstance(raw, str):
        s = raw.strip().replace("_", "")
        if not _INT_RE.match(s) or len(s.lstrip("+-")) > MAX_INT_DIGITS:
            raise _bad(field, raw, _("must be a whole number written with the digits 0-9"), _("e.g. 8"))
        v = int(s)
    else:
        raise _bad(field, raw, _("must be an integer"))
    if abs(v) >= 10**MAX_INT_DIGITS:
        raise _bad(field, raw, _("has more than {n} digits").format(n=MAX_INT_DIGITS))
    _check_range(field, v, lo, hi, raw)
    return v


def as_float(field: str, raw: object, *, lo: float | None = None, hi: float | None = None,
             lo_open: bool = False) -> float:
    """A finite float in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``)."""
    if isinstance(raw, bool):
        raise _bad(field, raw, _("must be a number, not true/false"))
    if isinstance(raw, (int, float)):
        if isinstance(raw, int) and abs(raw) >= 10**MAX_INT_DIGITS:
            raise _bad(field, raw, _("is too large"))
        v = float(raw)
    elif isinstance(raw, str):
        s = raw.strip().replace("_", "")
        if not _FLOAT_RE.match(s):
            raise _bad(field, raw, _("must be a decimal number written with 0-9, '.', 'e'"), _("e.g. 0.5 or 1e-4"))
        v = float(s)
    else:
        raise _bad(field, raw, _("must be a number"))
    if not math.isfinite(v):
        raise _bad(field, raw, _("must be a finite number (not inf or nan)"))
    if lo_open and lo is not None and v <= lo:
        raise _bad(field, raw, _("must be > {lo:g}").format(lo=lo))
    _check_range(field, v, lo, hi, raw)
    return v


def as_count(field: str, raw: object, *, lo: float = 1, hi: float = 1e15) -> int:
    """A count such as ``2B``, ``500M``, ``8k``, ``1e9`` or ``4096`` (decimal SI suffixes), in ``[lo, hi]``."""
    if isinstance(raw, str):
        s = raw.strip().replace("_", "").replace(",", "")
        mult = 1
        if s and s[-1].lower() in _SI:
            mult, s = _SI[s[-1].lower()], s[:-1]
        if not _FLOAT_RE.match(s):  # a count, not a fraction: the suffixes are the hint
            raise _bad(field, raw, _("must be a count: a number with an optional K, M, B or T suffix"),
                       _("e.g. 2B, 500M or 4096"))
        v = as_float(field, s, lo=None) * mult
    else:
        v = as_float(field, raw)
    if not math.isfinite(v):
        raise _bad(field, raw, _("must be finite"))
    _check_range(field, v, lo, hi, raw)
    return int(v)


def as_seq_len(field: str, raw: object, *, lo: int = 1, hi: int = 4_194_304) -> int:
    """A sequence length: ``4096``, ``4k`` (= 4096), ``32K`` (binary k, as context lengths are quoted)."""
    if isinstance(raw, str) and raw.strip().lower().endswith("k"):
        v = as_float(field, raw.strip()[:-1], lo=0, lo_open=True) * 1024
        if not float(v).is_integer():
            raise _bad(field, raw, _("must be a whole number of tokens"))
        v = int(v)
    else:
        v = as_int(field, raw, lo=None)
    _check_range(field, v, lo, hi, raw)
    return v


def as_bool(field: str, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
        return raw.strip().lower() in ("true", "1", "yes", "on")
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    raise _bad(field, raw, _("must be true or false"))


def as_choice(field: str, raw: object, choices: tuple[str, ...]) -> str:
    if not isinstance(raw, str) or raw not in choices:
        from trainfit.errors import did_you_mean

        sugg = did_you_mean(str(raw), list(choices), n=1) if isinstance(raw, str) else []
        raise _bad(field, raw, _("must be one of {choices}").format(choices=", ".join(choices)),
                   _("did you mean {s}?").format(s=sugg[0]) if sugg else None)
    return raw


def as_ident(field: str, raw: object, kind: str) -> str:
    """A string matching the strict pattern ``kind`` (see :data:`PATTERNS`): safe in a shell and a job file."""
    if not isinstance(raw, str):
        raise _bad(field, raw, _("must be a string"))
    s = raw.strip()
    if not PATTERNS[kind].match(s):
        pattern = translate(_PATTERN_HELP[kind])
        raise _bad(field, raw, _("must be {pattern} (no spaces, quotes, '$', ';', '|', '&', backquotes or line "
                                 "breaks)").format(pattern=pattern), _("pass {pattern}").format(pattern=pattern))
    return s


# ------------------------------------------------------------------------------------------------ files

def read_text_file(path: str | os.PathLike, *, max_bytes: int, what: str, error: type = InputError,
                   fix: str | None = None) -> str:
    """UTF-8 text of a regular file of at most ``max_bytes`` (FIFOs, devices and folders are refused; the read
    itself is bounded, so a file growing while it is read cannot exceed the limit)."""
    p = Path(path)
    name = str(path)
    fix = fix if fix is not None else _("pass the right file")
    if len(name) > 4096 or "\x00" in name:
        raise error(_("{what}: the file name is not usable").format(what=what), fix=fix)
    try:
        st = p.stat()
    except (OSError, ValueError) as e:
        raise error(_("cannot read {what} {name}: {why}").format(
            what=what, name=_short(name), why=getattr(e, "strerror", None) or e), fix=fix) from None
    if not stat.S_ISREG(st.st_mode):
        raise error(_("{what} {name} is not a regular file").format(what=what, name=_short(name)), fix=fix)
    if st.st_size > max_bytes:
        raise error(_("{what} {name} is {size:,} bytes, over the {limit:,}-byte limit").format(
            what=what, name=_short(name), size=st.st_size, limit=max_bytes), fix=fix)
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the stat above cannot hang the open; fstat of what was opened
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise error(_("{what} {name} is not a regular file").format(what=what, name=_short(name)), fix=fix)
        with os.fdopen(fd, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise error(_("cannot read {what} {name}: {why}").format(what=what, name=_short(name), why=e.strerror or e),
                    fix=fix) from None
    if len(data) > max_bytes:
        raise error(_("{what} {name} is over the {limit:,}-byte limit").format(what=what, name=_short(name),
                                                                              limit=max_bytes), fix=fix)
    if b"\x00" in data[:8192]:
        raise error(_("{what} {name} is a binary file").format(what=what, name=_short(name)), fix=fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(_("{what} {name} is not UTF-8 text (byte {byte})").format(what=what, name=_short(name),
                                                                              byte=e.start),
                    fix=_("save it as UTF-8")) from None


def _short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."


def check_depth(obj: object, *, what: str, error: type = InputError, limit: int = MAX_DEPTH) -> None:
    """Raise when ``obj`` nests deeper than ``limit`` (iterative: no recursion to blow up)."""
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if d > limit:
            raise error(_("{what} nests deeper than {limit} levels").format(what=what, limit=limit),
                        fix=_("pass a real job/plan file"))
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o)


def _json_depth_ok(text: str, limit: int) -> bool:
    """Bracket depth of JSON text (strings skipped) without parsing: the stdlib parser recurses."""
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _no_constant(name: str) -> NoReturn:
    raise ValueError(_("{name} is not allowed").format(name=name))


def loads_json(text: str, *, what: str, error: type = InputError, limit: int = MAX_DEPTH) -> JSON:
    """``json.loads`` with a depth limit and no NaN/Infinity literals."""
    if not _json_depth_ok(text, limit):
        raise error(_("{what} nests deeper than {limit} levels").format(what=what, limit=limit),
                    fix=_("pass a real file"))
    try:
        data = json.loads(text, parse_constant=_no_constant)
        if "\\u" in text:  # escapes may spell lone surrogates (\\ud800), which are not text anywhere downstream
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        return data
    except UnicodeEncodeError:
        raise error(_("{what} holds a lone surrogate escape (such as \\ud800), which is not Unicode text").format(
            what=what), fix=_("remove the broken \\uXXXX escape")) from None
    except json.JSONDecodeError as e:
        raise error(_("{what}: malformed JSON at line {line}, column {column}: {why}").format(
            what=what, line=e.lineno, column=e.colno, why=e.msg),
            fix=_("fix the JSON syntax (a JSON linter shows the spot)")) from None
    except (ValueError, RecursionError) as e:
        raise error(_("{what} is not valid JSON: {why}").format(what=what, why=_short(str(e))),
                    fix=_("fix the JSON syntax")) from None


def loads_yaml_all(text: str, *, what: str, error: type = InputError, limit: int = MAX_DEPTH,
                   loader: type[yaml.SafeLoader] | None = None) -> list[YAMLValue]:
    """All documents of a YAML text, with ``safe_load`` semantics (or ``loader``, a ``yaml.SafeLoader``
    subclass), no aliases/anchors (no alias bombs) and a depth limit."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader  # libyaml when present: ~8x faster, same semantics

    try:
        # scan events first: refuse aliases and deep nesting before anything is built
        depth = 0
        for ev in yaml.parse(text, Loader=fast):
            if isinstance(ev, yaml.AliasEvent):
                raise error(_("{what} uses YAML aliases (*name), which trainfit does not accept").format(what=what),
                            fix=_("write the values out instead of using &anchors and *aliases"))
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > limit:
                    raise error(_("{what} nests deeper than {limit} levels").format(what=what, limit=limit),
                                fix=_("pass a real file"))
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return [d for d in yaml.load_all(text, Loader=loader or fast) if d is not None]
    except yaml.YAMLError as e:
        if "nesting depth" in str(getattr(e, "problem", "") or ""):  # libyaml's own limit, before ours is reached
            raise error(_("{what} nests deeper than {limit} levels").format(what=what, limit=limit),
                        fix=_("pass a real file")) from None
        mark = getattr(e, "problem_mark", None)
        why = getattr(e, "problem", None) or _short(str(e))
        fix = _("fix the YAML syntax (indentation, quotes, tabs)")
        if mark:
            raise error(_("{what}: malformed YAML at line {line}, column {column}: {why}").format(
                what=what, line=mark.line + 1, column=mark.column + 1, why=why), fix=fix) from None
        raise error(_("{what}: malformed YAML: {why}").format(what=what, why=why), fix=fix) from None
    except RecursionError:
        raise error(_("{what} nests too deeply").format(what=what), fix=_("pass a real file")) from None
