"""Small file helpers shared by the CLI shells (the core itself does no I/O)."""

from __future__ import annotations

from pathlib import Path

from trainfit.errors import TrainfitError
from trainfit.inputs import loads_json, read_text_file
from trainfit.json_types import JSON


def read_json_limited(path: str | Path, *, max_bytes: int, error: type[TrainfitError], what: str,
                      fix: str, too_big_fix: str | None = None) -> JSON:
    """Parse a JSON file of at most ``max_bytes`` through the input gate (regular files only: no FIFO, no
    ``/dev/zero`` behind a link; bounded read; depth limit; no NaN); every failure is one ``error``."""
    p = Path(path)
    try:
        text = read_text_file(p, max_bytes=max_bytes, what=what, error=error, fix=fix)
    except TrainfitError as e:
        if f"{max_bytes:,}" in e.message and too_big_fix:  # over the size limit (the byte count, in any language)
            e.fix = too_big_fix
        raise
    return loads_json(text, what=f"{what} {str(p)[:200]}", error=error)
