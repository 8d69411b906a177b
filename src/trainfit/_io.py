"""Small file helpers shared by the CLI shells (the core itself does no I/O)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainfit.errors import TrainfitError


def read_json_limited(path: str | Path, *, max_bytes: int, error: type[TrainfitError], what: str,
                      fix: str, too_big_fix: str | None = None) -> Any:
    """Parse a JSON file of at most ``max_bytes``; every failure is one ``error`` with ``fix``."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise error(f"cannot read {what} {p}: {e.strerror or e}", fix=fix) from None
    if size > max_bytes:
        raise error(f"{what} {p} is {size:,} bytes, over the {max_bytes:,}-byte limit", fix=too_big_fix or fix)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(f"{what} {p} is not valid JSON: {e}", fix=fix) from None
