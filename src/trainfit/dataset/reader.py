"""Rows of a dataset file, streamed with their line (or row) numbers, in bounded memory.

* ``.jsonl`` / ``.ndjson`` (and a ``.json`` file that holds one object per line): read line by line; a line is
  at most :data:`MAX_LINE_BYTES`.
* ``.json``: one top-level list of rows, at most :data:`MAX_JSON_BYTES` (larger data: convert it to JSONL).
* ``.parquet``: record batches through ``pyarrow`` (the ``data`` extra), never the whole table.

Only regular files are read (no FIFOs, devices or folders); a row that is not valid JSON is yielded as a
:class:`BadRow` with its number, so the caller can skip or stop (``--on-error``).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, NoReturn

from trainfit import inputs
from trainfit.errors import DatasetError, MissingExtraError
from trainfit.i18n import _
from trainfit.json_types import JSON

MAX_LINE_BYTES = 16 * 2**20
MAX_JSON_BYTES = 512 * 2**20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class BadRow:
    line: int
    why: str


def _regular(path: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except OSError as e:
        raise DatasetError(_("cannot read {path}: {error}").format(path=path, error=e.strerror or e),
                           fix=_("pass a JSONL, JSON or Parquet file")) from None
    if not stat.S_ISREG(st.st_mode):
        raise DatasetError(_("{path} is not a regular file").format(path=path), fix=_("pass a JSONL, JSON or Parquet file"))
    return st


def kind_of(path: str) -> str:
    """jsonl | json | parquet, from the name, else from the first bytes."""
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".parquet":
        return "parquet"
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    stripped = head.lstrip()
    if stripped.startswith(b"["):
        return "json"
    if stripped.startswith(b"{"):
        return "jsonl"  # a .json file of one object per line, or one object: the line reader tells
    raise DatasetError(_("{path} is not a dataset (neither JSON Lines, a JSON list nor Parquet)").format(path=path),
                       fix=_("pass a .jsonl, .json (a list of rows) or .parquet file in ms-swift / LLaMA-Factory format"))


def _no_constant(name: str) -> NoReturn:
    raise ValueError(_("{name} is not JSON").format(name=name))


def _parse(raw: bytes) -> JSON:
    """One JSON row (the C parser; nesting too deep for it is a RecursionError, reported as a bad row)."""
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(_("nested too deeply")) from None


def iter_jsonl(path: str, progress: Callable[[int], None] | None = None,
               wanted: Callable[[int], bool] | None = None) -> Iterator[tuple[int, JSON | BadRow]]:
    """(line number, row or BadRow) for every non-empty line; ``wanted(line)`` False skips parsing."""
    _regular(path)
    with open(path, "rb") as f:
        lineno = 0
        buf = b""
        while True:
            chunk = f.read(_CHUNK)
            if progress:
                progress(len(chunk))
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                lineno += 1
                yield from _one_line(lineno, raw, wanted)
            if len(buf) > MAX_LINE_BYTES:
                # one line longer than the limit: skip to its end without holding it
                lineno += 1
                yield lineno, BadRow(lineno, _("line longer than {limit:,} bytes").format(limit=MAX_LINE_BYTES))
                while True:
                    chunk = f.read(_CHUNK)
                    if progress:
                        progress(len(chunk))
                    if not chunk:
                        buf = b""
                        break
                    nl = chunk.find(b"\n")
                    if nl >= 0:
                        buf = chunk[nl + 1:]
                        break
        if buf.strip():
            lineno += 1
            yield from _one_line(lineno, buf, wanted)


def _one_line(lineno: int, raw: bytes, wanted: Callable[[int], bool] | None) -> Iterator[tuple[int, JSON | BadRow]]:
    if not raw.strip():
        return
    if wanted is not None and not wanted(lineno):
        return
    try:
        yield lineno, _parse(raw)
    except (ValueError, UnicodeDecodeError) as e:
        yield lineno, BadRow(lineno, str(e)[:200] or _("not JSON"))


def count_lines(path: str) -> int:
    """Non-empty lines of a JSONL file (a fast byte scan, for sampling)."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            n += bool(line.strip())
    return n


def iter_json(path: str, progress: Callable[[int], None] | None = None) -> Iterator[tuple[int, JSON | BadRow]]:
    text = inputs.read_text_file(path, max_bytes=MAX_JSON_BYTES, what=_("dataset"), error=DatasetError,
                                 fix=_("convert a large JSON list to JSON Lines (one row per line)"))
    if progress:
        progress(len(text.encode("utf-8", "surrogatepass")))
    data = inputs.loads_json(text, what=_("dataset {path}").format(path=path), error=DatasetError)
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), None)
    if not isinstance(data, list):
        raise DatasetError(_("{path} is JSON but not a list of rows").format(path=path),
                           fix=_("a JSON dataset is a list of objects"))
    for i, row in enumerate(data, 1):
        yield i, row


def iter_parquet(path: str, progress: Callable[[int], None] | None = None) -> Iterator[tuple[int, JSON | BadRow]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError(_("reading Parquet needs pyarrow"), fix="pip install 'trainfit[data]'") from None
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow's ArrowInvalid and friends
        raise DatasetError(_("{path} is not a readable Parquet file: {error}").format(path=path, error=str(e)[:200]),
                           fix=_("pass a Parquet file written by datasets/pandas/pyarrow")) from None
    i = 0
    for rg in range(pf.num_row_groups):
        if progress:
            progress(pf.metadata.row_group(rg).total_byte_size)
        for batch in pf.iter_batches(batch_size=1024, row_groups=[rg]):
            for row in batch.to_pylist():
                i += 1
                yield i, row


def iter_rows(path: str, progress: Callable[[int], None] | None = None,
              wanted: Callable[[int], bool] | None = None) -> Iterator[tuple[int, JSON | BadRow]]:
    _regular(path)
    kind = kind_of(path)
    if kind == "jsonl":
        return iter_jsonl(path, progress, wanted)
    rows = iter_json(path, progress) if kind == "json" else iter_parquet(path, progress)
    return ((n, r) for n, r in rows if wanted is None or wanted(n))


def row_count(path: str) -> int:
    kind = kind_of(path)
    if kind == "jsonl":
        return count_lines(path)
    if kind == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise MissingExtraError(_("reading Parquet needs pyarrow"), fix="pip install 'trainfit[data]'") from None
        return pq.ParquetFile(path).metadata.num_rows
    return sum(1 for _row in iter_json(path))


def file_size(path: str) -> int:
    return _regular(path).st_size


__all__ = ["BadRow", "MAX_JSON_BYTES", "MAX_LINE_BYTES", "file_size", "iter_rows", "kind_of", "row_count"]
