"""``trainfit data``: read dataset files, count every sample's tokens with the model's tokenizer and chat template,
and summarise (:mod:`trainfit.dataset.stats`). Memory stays bounded: rows are streamed and only two integers per
sample are kept (8 bytes: about 8 MB for a million samples)."""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass
from typing import Callable

from trainfit.dataset import formats, reader
from trainfit.dataset.stats import RowProblem, DatasetStats, summarize
from trainfit.dataset.template import TokenCounter
from trainfit.errors import DatasetError
from trainfit.i18n import _
from trainfit.json_types import JSON

MAX_ERRORS_KEPT = 20


@dataclass(frozen=True, kw_only=True)
class ScanRequest:
    files: tuple[str, ...]
    counter: TokenCounter
    seq_len: int
    fmt: str = "auto"
    columns: dict[str, str] | None = None
    on_error: str = "skip"
    """skip: report malformed rows and go on; fail: stop at the first."""
    sample: int | None = None
    """Count only this many rows, chosen at random (seed 0), and estimate the totals."""


def scan(req: ScanRequest, progress: Callable[[int], None] | None = None) -> DatasetStats:
    columns = req.columns or {}
    lengths = array("I")
    loss = array("I")
    errors: list[RowProblem] = []
    kinds: dict[str, int] = {}
    keys: set[str] = set()
    bad = 0
    rows = 0
    population = 0
    for path in req.files:  # folders, FIFOs and files that are no dataset fail before any work
        reader.file_size(path)
        reader.kind_of(path)
    counts = {p: reader.row_count(p) for p in req.files} if req.sample is not None else {}
    for path in req.files:
        wanted = None
        if req.sample is not None:
            n_rows = counts[path]
            k = min(n_rows, max(1, round(req.sample * n_rows / max(1, sum(counts.values())))))
            chosen = set(random.Random(0).sample(range(1, n_rows + 1), k)) if n_rows else set()
            wanted = chosen.__contains__
            rows += n_rows
        seen = 0
        for lineno, row in reader.iter_rows(path, progress, wanted):
            seen += 1
            why = row.why if isinstance(row, reader.BadRow) else None
            if why is None:
                try:
                    turns = formats.to_turns(row, req.fmt, columns)
                    total, lo = req.counter.count(turns)
                    kind = row_format(row, req.fmt, columns)
                except (formats.RowError, ValueError, TypeError) as e:
                    why = str(e)[:200]
                else:
                    lengths.append(total)
                    loss.append(lo)
                    kinds[kind] = kinds.get(kind, 0) + 1
                    if len(keys) < 64:
                        keys.update(k for k in row if isinstance(k, str) and len(k) <= 100)
                    continue
            bad += 1
            if req.on_error == "fail":
                raise DatasetError(_("{path} line {line}: {why}").format(path=path, line=lineno, why=why),
                                   fix=_("fix the row, or pass --on-error skip to count the valid rows only"))
            if len(errors) < MAX_ERRORS_KEPT:
                errors.append({"file": path, "line": lineno, "why": why})
        if req.sample is None:
            rows += seen
    if not lengths:
        files = ", ".join(req.files)
        msg = (_("no sample could be read from {files} (first: line {line}: {why})").format(
            files=files, line=errors[0]["line"], why=errors[0]["why"]) if errors
            else _("no sample could be read from {files}").format(files=files))
        raise DatasetError(msg, fix=_("pass a dataset in messages, sharegpt or alpaca format (--format, --columns)"))
    counted = len(lengths) + bad
    if req.sample is None:
        population = len(lengths)
        skipped = bad
    else:  # scale the malformed share of the sample to all rows
        skipped = round(bad * rows / counted)
        population = rows - skipped
    return summarize(lengths, loss, seq_len=req.seq_len, rows=rows, skipped=skipped, population=population,
                     files=req.files, tokenizer=req.counter.tokenizer_path, template=req.counter.template_source,
                     errors=errors, formats=kinds, columns=columns, keys=sorted(keys))


def row_format(row: JSON, fmt: str, columns: dict[str, str]) -> str:
    """The format of a row as a launcher's dataset description needs it: messages, sharegpt, alpaca
    (instruction/input/output) or alpaca-query (ms-swift's query/response)."""
    kind = formats.detect(row, columns) if fmt == "auto" else fmt
    if kind == "alpaca" and columns.get("instruction", "instruction") not in row and columns.get("input", "input") not in row:
        return "alpaca-query"
    return kind
