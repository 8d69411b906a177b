"""``diagnose``'s input: the per-step metrics JSONL of TrainfitCallback, read through the input gate (a regular
file, bounded size, bounded lines, depth limit, finite step values) and streamed, keeping only the keys diagnose
reads, so memory follows what is used, not the file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator, NamedTuple, TypeAlias

from trainfit.errors import MetricsError
from trainfit.i18n import _
from trainfit.watch.metrics import REQUIRED_KEYS
from trainfit.inputs import MAX_DEPTH, json_depth_ok
from trainfit.json_types import JSON

#: One record of a metrics file as :func:`load_metrics` keeps it: the keys diagnose uses, with numbers and the
#: event name.
MetricRecord: TypeAlias = dict[str, str | int | float | bool]


MAX_METRICS_BYTES = 128 * 2**20
#: Longest line of a metrics file (a step record is a few hundred bytes).
MAX_LINE_BYTES = 64 * 1024
#: Events (non-step records) kept; more are counted, not stored.
MAX_EVENTS = 100_000
#: The keys diagnose reads from a record; the rest is dropped while reading, so memory stays a small multiple of
#: what is used, not of the file.
_KEYS = ("step", "step_seconds", "data_wait_seconds", "tokens_per_s", "tokens", "tokens_nonpad", "gpu_util", "mfu", "loss", "grad_norm",
         "max_grad_norm", "mem_reserved_gib", "gpu_mem_gib", "save_steps", "save_seconds", "time_unix", "event",
         "lines")


def _short(p: str | Path, n: int = 200) -> str:
    s = str(p)
    return s if len(s) <= n else s[: n - 3] + "..."


def _finite(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 1e300


def _compact(rec: dict[str, JSON]) -> MetricRecord:
    """The keys diagnose uses, with numbers kept only when they are numbers (a string, a list or a huge integer
    where a number belongs is dropped: the record then lacks it). A non-finite loss is kept (it is a finding:
    divergence); other non-finite numbers are dropped."""
    out: MetricRecord = {}
    for k in _KEYS:
        if k not in rec:
            continue
        v = rec[k]
        if k == "event":
            if isinstance(v, str):
                out[k] = v[:40]
        elif isinstance(v, bool):
            continue
        elif isinstance(v, int):
            if abs(v) < 10**15:
                out[k] = v
        elif isinstance(v, float) and (math.isfinite(v) or k == "loss"):
            out[k] = v
    return out


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of the non-empty lines of a metrics file, through the gate: a regular file (a FIFO,
    ``/dev/zero`` behind a link or a folder is refused, never read), at most :data:`MAX_METRICS_BYTES` (also when
    it grows while read), lines of at most :data:`MAX_LINE_BYTES`."""
    import os
    import stat as _stat

    fix = _("pass the metrics_path of TrainfitCallback")
    too_big = _("pass a shorter file (e.g. tail -n 100000)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as e:
        raise MetricsError(_("cannot read metrics file {path}: {reason}").format(
            path=_short(path), reason=getattr(e, "strerror", None) or e), fix=fix) from None
    st = os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise MetricsError(_("metrics file {path} is not a regular file").format(path=_short(path)), fix=fix)
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_METRICS_BYTES:
            raise MetricsError(_("metrics file {path} is {size:,} bytes, over the {limit:,}-byte limit").format(
                path=_short(path), size=st.st_size, limit=MAX_METRICS_BYTES), fix=too_big)
        read = n = 0
        while raw := f.readline(MAX_LINE_BYTES + 1):
            n += 1
            read += len(raw)
            if read > MAX_METRICS_BYTES:
                raise MetricsError(_("metrics file {path} is over the {limit:,}-byte limit").format(
                    path=_short(path), limit=MAX_METRICS_BYTES), fix=too_big)
            if len(raw) > MAX_LINE_BYTES:
                raise MetricsError(_("{path}:{line} is longer than {limit:,} bytes: not a metrics record").format(
                    path=_short(path), line=n, limit=MAX_LINE_BYTES),
                                   fix=_("each line must be one JSON object of one step"))
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                yield n, line


def _parse(line: str) -> JSON:
    if line.count("[") + line.count("{") > MAX_DEPTH and not json_depth_ok(line, MAX_DEPTH):
        raise ValueError(_("nests deeper than {depth} levels").format(depth=MAX_DEPTH))
    return json.loads(line)


def _step_record(p: Path, n: int, rec: MetricRecord) -> None:
    missing = [k for k in REQUIRED_KEYS if not _finite(rec.get(k))]
    if missing or not isinstance(rec["step"], int) or isinstance(rec["step"], bool) or not 0 <= rec["step"] < 10**15:
        raise MetricsError(_("{path}:{line}: step record without a finite number for {keys}").format(
                               path=_short(p), line=n, keys=", ".join(missing) or "step"),
                           fix=_("every step record needs {keys} (finite numbers)").format(keys=", ".join(REQUIRED_KEYS)))


class Metrics(NamedTuple):
    """What a metrics file holds (``diagnose(*load_metrics(path))``)."""

    events: list[MetricRecord]
    """The records without a ``step`` (``start``, ``save``..., and a ``truncated`` event for lines cut short)."""
    steps: list[MetricRecord]
    """The step records, one per step (the last one of a replayed step), by step."""
    first_after_start: frozenset[int] = frozenset()
    """The steps whose kept record came right after a ``start`` event: their time includes the start-up."""


def load_metrics(path: str | Path) -> Metrics:
    """The :class:`Metrics` of a TrainfitCallback JSONL file.

    Step records (with ``step``) are deduplicated by step, keeping the last one (steps replayed after a
    restart), and sorted; a step whose kept record came right after a ``start`` event is in
    ``first_after_start``.
    A line that is not JSON is an error, except where a killed run can leave one: the last line of the
    file, or the line just before a ``start`` event (it is skipped and counted in a ``truncated`` event).
    """
    p = Path(path)
    events: list[MetricRecord] = []
    by_step: dict[int, MetricRecord] = {}
    firsts: set[int] = set()
    after_start = False
    pending: tuple[int, str] | None = None  # a line that is not JSON: a write cut short by a kill?
    truncated = 0
    pending_seen = False
    at_end = False
    lines = _lines(p)
    for n, line in lines:
        try:
            rec = _parse(line)
        except (ValueError, RecursionError) as e:
            if pending_seen:  # two bad lines in a row: damaged, report the first
                break
            pending = (n, str(e)[:200])
            if not (events or by_step):  # not a metrics file
                break
            pending_seen = True
            continue
        if pending is not None:
            if not (isinstance(rec, dict) and rec.get("event") == "start"):
                break
            pending, pending_seen, truncated = None, False, truncated + 1
        if not isinstance(rec, dict):
            raise MetricsError(_("{path}:{line} is not a JSON object").format(path=_short(p), line=n),
                               fix=_("each line must be one JSON object"))
        kept = _compact(rec)
        if "step" not in kept:
            if len(events) < MAX_EVENTS:
                events.append(kept)
            after_start = kept.get("event") == "start" or after_start
            continue
        _step_record(p, n, kept)
        if after_start:
            firsts.add(kept["step"])
            after_start = False
        else:  # a later record of the step replaces the one after the start
            firsts.discard(kept["step"])
        by_step[kept["step"]] = kept
    else:
        at_end = True
    lines.close()
    if at_end and pending is not None and (events or by_step):  # only the last line may be cut short
        pending, truncated = None, truncated + 1
    if pending is not None:
        raise MetricsError(_("{path}:{line} is not JSON: {error}").format(path=_short(p), line=pending[0],
                                                                          error=pending[1]),
                           fix=_("each line must be one JSON object"))
    if truncated:
        events.append({"event": "truncated", "lines": truncated})
    steps = [by_step[k] for k in sorted(by_step)]
    if not steps:
        raise MetricsError(_("{path} has no step records").format(path=_short(p)),
                           fix=_("was TrainfitCallback added to the Trainer's callbacks?"))
    return Metrics(events, steps, frozenset(firsts))
