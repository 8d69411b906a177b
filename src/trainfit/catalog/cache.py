"""Refresh caches: one JSON file per provider and region under the cache dir, written atomically and read
back with every row validated (the third layer of the effective catalog, see ``_store.py``).

Provider-specific refresh code (``trainfit.providers.<provider>.refresh``) builds the rows; this module only
stores and reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from trainfit.catalog._schema import GPU_COLUMNS, INSTANCE_COLUMNS, CatalogRow, Column, parse_row
from trainfit.errors import CatalogError
from trainfit.i18n import _
from trainfit.catalog._store import cache_dir
from trainfit.writes import ensure_dir, write_file
from trainfit.inputs import loads_json, read_text_file
from trainfit.json_types import JSONLike

CACHE_FORMAT = "trainfit-refresh/1"
#: Largest refresh cache read (a region's specs are a few hundred KB at most).
MAX_CACHE_BYTES = 8 * 2**20


def _short(e: BaseException, n: int = 300) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def cache_file(provider: str, region: str) -> Path:
    safe = "".join(ch for ch in region if ch.isalnum() or ch in "-_")
    return cache_dir() / "catalog" / f"{provider}-{safe}.json"



def _gpu_update_columns(row: Mapping[str, object]) -> tuple[Column, ...]:
    from dataclasses import replace

    if "verified" in row:
        return GPU_COLUMNS
    return tuple(replace(c, required=c.name in ("name", "source", "as_of")) for c in GPU_COLUMNS)



def write_cache_atomic(path: Path, payload: Mapping[str, JSONLike]) -> None:
    """Write JSON to ``path`` through the safe writer (temporary file in the same folder, fsync, rename; a link or
    a special file there is refused)."""
    ensure_dir(path.parent, error=CatalogError, what="cache folder")
    write_file(path, json.dumps(payload, indent=1, ensure_ascii=False), error=CatalogError)



def read_cache_file(path: Path) -> tuple[list[CatalogRow], list[CatalogRow]]:
    """Typed (gpu rows, instance rows) of a refresh cache; raises :class:`CatalogError` when corrupt."""
    text = read_text_file(path, max_bytes=MAX_CACHE_BYTES, what=_("refresh cache"), error=CatalogError,
                          fix=_("delete it and run `trainfit catalog refresh` again"))
    data = loads_json(text, what=_("refresh cache {path}").format(path=path), error=CatalogError)
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        raise CatalogError(_("not a {format} file").format(format=CACHE_FORMAT))
    gpus: list[CatalogRow] = []
    insts: list[CatalogRow] = []
    problems: list[str] = []
    for section, sink in (("gpus", gpus), ("instances", insts)):
        items = data.get(section)
        if not isinstance(items, list):
            raise CatalogError(_("'{section}' is not a list").format(section=section))
        if len(items) > 100_000:
            raise CatalogError(_("'{section}' holds {n:,} rows, more than any provider lists").format(
                section=section, n=len(items)))
        for i, raw in enumerate(items):
            if not isinstance(raw, dict):
                problems.append(f"{section}[{i}] is not an object")
                continue
            cols = _gpu_update_columns(raw) if section == "gpus" else INSTANCE_COLUMNS
            row, probs = parse_row(cols, raw, f"{section}[{i}]")
            problems += probs
            # keep only the fields the cache states, so a GPU update does not blank other fields
            sink.append({k: row[k] for k in raw if k in row})
    if problems:
        raise CatalogError(_("invalid rows: {problems}").format(problems="; ".join(problems[:5])))
    return gpus, insts


