"""Plan from your data: token counts, lengths, truncation, packing and padding of a training dataset, counted with
the model's own tokenizer and chat template (``trainfit data``; the ``data`` extra). ``plan --dataset`` reads the
stats file it writes, or counts a dataset in place (:func:`stats_or_scan`)."""

from __future__ import annotations

from trainfit.dataset.stats import SCHEMA, DatasetStats
from trainfit import inputs
from trainfit.errors import DatasetError
from trainfit.dataset import reader
from trainfit.dataset.template import load_counter
from trainfit.i18n import _
from trainfit.dataset.scan import ScanRequest, scan

__all__ = ["DatasetStats", "SCHEMA", "is_stats_file", "load_stats", "stats_or_scan"]

#: Largest stats file read back (a stats file is a few KiB; the cut-off table grows with log2 of the longest sample).
MAX_STATS_BYTES = 8 * 2**20


def load_stats(path: str) -> DatasetStats:
    """A stats file written by ``trainfit data --json`` (through the input gate)."""
    text = inputs.read_text_file(path, max_bytes=MAX_STATS_BYTES, what=_("dataset stats file"), error=DatasetError,
                                 fix=_("write one with `trainfit data FILE --tokenizer DIR --json > stats.json`"))
    return DatasetStats.from_dict(inputs.loads_json(text, what=_("dataset stats file"), error=DatasetError))


def is_stats_file(path: str) -> bool:
    """True when ``path`` is a JSON object whose first key is ``schema`` (a stats file, or a JSON file that claims
    to be one: :func:`load_stats` then says what is wrong with it); False for a dataset (JSON Lines, a JSON list,
    Parquet) or anything else. Reads at most 4 KiB; an unreadable path is left to the caller's reader."""
    import os
    import stat

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_STATS_BYTES:
            return False
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    import re

    # a stats file is one object whose first key is "schema" (``DatasetStats.to_dict`` writes it first); a dataset
    # row starts with its columns
    return re.match(rb'\{\s*"schema"\s*:', head.lstrip()) is not None


def stats_or_scan(path: str, *, tokenizer: str | None, seq_len: int | None = None,
                  chat_template: str | None = None, no_template: bool = False) -> tuple[DatasetStats, bool]:
    """The stats of ``--dataset PATH``: a stats file read back, or a dataset counted in place with the same scan as
    ``trainfit data PATH --tokenizer DIR`` (at ``seq_len``, default 4096; its cut-off table covers the others).
    Returns (stats, counted_here)."""
    if is_stats_file(path):
        if tokenizer:
            raise DatasetError(_("{path} is a stats file: it was counted already, --tokenizer is not used").format(
                path=path), fix=_("drop --tokenizer, or pass the dataset itself to count it again"))
        return load_stats(path), False
    if not tokenizer:
        reader.file_size(path)  # a missing path, a folder: its own error first
        raise DatasetError(_("{path} is not a trainfit stats file: to plan from a dataset, trainfit counts its "
                             "tokens with the model's tokenizer").format(path=path),
                           fix=_("add --tokenizer DIR (the model folder with tokenizer.json), or write a stats file "
                                 "first: `trainfit data {path} --tokenizer DIR --json > stats.json`").format(path=path))
    return scan_file(path, tokenizer=tokenizer, seq_len=seq_len, chat_template=chat_template,
                     no_template=no_template), True


def scan_file(path: str, *, tokenizer: str, seq_len: int | None = None, chat_template: str | None = None,
              no_template: bool = False) -> DatasetStats:
    """``trainfit data PATH --tokenizer DIR --seq-len N`` as a function (the file's path made absolute, as the
    rendered job needs it)."""
    from pathlib import Path

    counter = load_counter(tokenizer, use_template=not no_template, chat_template=chat_template)
    full = str(Path(path).resolve()) if Path(path).exists() else path
    return scan(ScanRequest(files=(full,), counter=counter, seq_len=seq_len or DEFAULT_SEQ_LEN))


#: ``trainfit data``'s default cut-off (its table of power-of-two cut-offs covers the others).
DEFAULT_SEQ_LEN = 4096
