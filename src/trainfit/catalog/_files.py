"""The catalog's files and rows, below everything else in ``trainfit.catalog`` but its schema: where the overlay and
the refresh caches are, the bundled CSVs read into typed rows, merging layers of rows by key, the cross-check of GPU
and instance rows, and the overlay's YAML read through the input gate. :mod:`._store` builds the effective catalog
from these; :mod:`.overlay`, :mod:`.prices` and :mod:`.cache` read their files with them."""

from __future__ import annotations

import csv
import io
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Hashable, Iterable, Mapping

from trainfit.catalog._schema import GPU_COLUMNS, INSTANCE_COLUMNS, parse_row, CatalogRow, Column
from trainfit.catalog.gpus import normalize_gpu_name
from trainfit.errors import CatalogError, did_you_mean
from trainfit.i18n import _
from trainfit.inputs import loads_yaml_all, read_text_file
from trainfit.json_types import YAMLValue

ENV_OVERLAY = "TRAINFIT_CATALOG_OVERLAY"
ENV_CACHE_DIR = "TRAINFIT_CACHE_DIR"


class CatalogWarning(UserWarning):
    """A catalog layer was skipped (corrupt refresh cache); the bundled data is used instead."""


# --------------------------------------------------------------------------------------------- paths

def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trainfit"


def cache_dir() -> Path:
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trainfit"


_explicit_overlay: list[str | None] = [None]


def set_overlay_path(path: str | os.PathLike | None) -> None:
    """Use ``path`` as the overlay for this process (CLI ``--catalog``); None returns to the defaults."""
    _explicit_overlay[0] = None if path is None else str(path)


def overlay_path() -> Path | None:
    """The overlay file in effect, or None. An explicitly named file must exist."""
    explicit = _explicit_overlay[0]
    env = os.environ.get(ENV_OVERLAY)
    for chosen, what in ((explicit, "--catalog"), (env, ENV_OVERLAY)):
        if chosen is None:
            continue
        if chosen.strip().lower() in ("", "none", "off"):
            return None
        p = Path(chosen).expanduser()
        try:
            is_file = p.is_file()
        except OSError as e:  # a name over the file system's limit (ENAMETOOLONG)
            raise CatalogError(_("catalog overlay {path!r} (from {what}) cannot be read: {error}").format(
                path=str(p)[:80], what=what, error=e.strerror or e),
                fix=_("pass the overlay's path, or unset {env}").format(env=ENV_OVERLAY)) from None
        if not is_file:
            raise CatalogError(_("catalog overlay {path!r} (from {what}) does not exist").format(path=str(p), what=what),
                               fix=_("create it, or unset {env}").format(env=ENV_OVERLAY))
        return p
    p = config_dir() / "catalog.yaml"
    return p if p.is_file() else None


def refresh_cache_files() -> list[Path]:
    d = cache_dir() / "catalog"
    try:
        if not d.is_dir():
            return []
    except OSError as e:  # a name over the file system's limit (ENAMETOOLONG)
        raise CatalogError(_("refresh cache folder {path!r} cannot be read: {error}").format(path=str(d)[:80],
                                                                                          error=e.strerror or e),
                           fix=_("set TRAINFIT_CACHE_DIR to a folder you can write, or unset it")) from None
    return sorted(d.glob("*.json"))


# ---------------------------------------------------------------------------------------- bundled

def read_bundled(name: str) -> str:
    return resources.files("trainfit.catalog").joinpath(f"data/{name}").read_text(encoding="utf-8")


def read_csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def parse_rows(columns: tuple[Column, ...], raws: Iterable[Mapping[str, object]], where: str
               ) -> tuple[list[CatalogRow], list[str]]:
    rows, problems = [], []
    for i, raw in enumerate(raws):
        row, probs = parse_row(columns, raw, f"{where} row {i + 2 if where.endswith('.csv') else i}")
        rows.append(row)
        problems.extend(probs)
    return rows, problems


@lru_cache(maxsize=1)
def bundled_rows() -> tuple[tuple[dict, ...], tuple[dict, ...]]:
    """Typed rows of the bundled CSVs. A bundled file that does not validate is a bug: raise."""
    g, p1 = parse_rows(GPU_COLUMNS, read_csv_rows(read_bundled("gpus.csv")), "gpus.csv")
    i, p2 = parse_rows(INSTANCE_COLUMNS, read_csv_rows(read_bundled("instances.csv")), "instances.csv")
    problems = p1 + p2
    if problems:
        raise CatalogError(_("bundled catalog does not validate:") + "\n  " + "\n  ".join(problems),
                           fix=_("this is a bug in trainfit; please report it"))
    return tuple(g), tuple(i)


# ------------------------------------------------------------------------------------------ merge

def gpu_key(row: CatalogRow) -> str:
    return normalize_gpu_name(str(row.get("name") or ""))


def instance_key(row: CatalogRow) -> tuple[str, str, str]:
    return (str(row.get("provider") or "").lower(), str(row.get("resource_class") or "").lower(),
            str(row.get("instance_type") or "").strip().lower())


_KEY_AND_META = {"name", "provider", "resource_class", "instance_type", "source", "as_of", "notes", "verified"}


def merge_rows(base: list[CatalogRow], extra: list[tuple[CatalogRow, set[str], str]],
               key_fn: Callable[[CatalogRow], Hashable]) -> list[tuple[CatalogRow, str]]:
    """``base`` rows (origin bundled) updated by ``extra`` (row, fields present, origin).

    A row whose key exists replaces only the fields it states; a new key is appended.
    """
    out: dict[Hashable, tuple[CatalogRow, str]] = {}
    for row in base:
        out[key_fn(row)] = (dict(row), "bundled")
    for row, present, origin in extra:
        k = key_fn(row)
        if k in out:
            merged = dict(out[k][0])
            for f in present:
                merged[f] = row[f]
            if "regions" in present and "regions" in merged and out[k][0].get("regions"):
                # union keeps regions already known from earlier layers
                merged["regions"] = tuple(dict.fromkeys(tuple(out[k][0]["regions"]) + tuple(row["regions"])))
            if "source" in present and out[k][0].get("source") and row.get("source") != out[k][0]["source"]:
                stated = sorted(present - _KEY_AND_META)
                merged["source"] = f"{row['source']} (fields: {', '.join(stated)}); earlier: {out[k][0]['source']}"
            out[k] = (merged, origin)
        else:
            out[k] = (dict(row), origin)
    return list(out.values())


def cross_check(gpus: list[CatalogRow], instances: list[CatalogRow], where: str = "catalog") -> list[str]:
    """Problems that involve several rows: duplicate names/aliases, GPU references, price/currency pairs."""
    problems: list[str] = []
    index: dict[str, str] = {}
    for g in gpus:
        name = g.get("name") or ""
        for n in (name, *(g.get("aliases") or ())):
            k = normalize_gpu_name(n)
            if k in index and index[k] != name:
                problems.append(_("{where}: GPU name/alias {alias!r} of {name!r} is already used by {other!r}").format(
                    where=where, alias=n, name=name, other=index[k]))
            index.setdefault(k, name)
    by_name = {g.get("name"): g for g in gpus}
    for g in gpus:
        ref = g.get("speed_from")
        if not ref:
            continue
        src = by_name.get(index.get(normalize_gpu_name(ref)))
        if src is None or src is g or src.get("speed_from"):
            problems.append(_("{where}: GPU {name!r}: speed_from {ref!r} must name another GPU of the catalog that has "
                              "its own speed figures").format(where=where, name=g.get("name"), ref=ref))
    seen: set[tuple[str, str, str]] = set()
    for r in instances:
        label = _("{where}: instance {name!r} ({provider}/{rclass})").format(
            where=where, name=r.get("instance_type"), provider=r.get("provider"), rclass=r.get("resource_class"))
        k = instance_key(r)
        if k in seen:
            problems.append(_("{label}: duplicate").format(label=label))
        seen.add(k)
        gname = r.get("gpu")
        if gname and normalize_gpu_name(gname) not in index:
            sugg = did_you_mean(gname, [g.get("name") or "" for g in gpus])
            if sugg:
                problems.append(_("{label}: gpu {gpu!r} is not in the GPU catalog (did you mean {names}?)").format(
                    label=label, gpu=gname, names=_(" or ").join(sugg)))
            else:
                problems.append(_("{label}: gpu {gpu!r} is not in the GPU catalog").format(label=label, gpu=gname))
        if (r.get("price_per_hour") is None) != (r.get("currency") is None):
            problems.append(_("{label}: price_per_hour and currency must be given together").format(label=label))
    return problems


def stat_key(p: Path | None) -> tuple[str, float, int] | None:
    if p is None:
        return None
    try:
        st = p.stat()
    except OSError:
        return (str(p), -1.0, -1)
    return (str(p), st.st_mtime, st.st_size)


#: Largest overlay read (a hand-written overlay is a few KB; a 30 MB one would slow every command).
MAX_OVERLAY_BYTES = 1 * 2**20


def _loader():
    """``yaml.SafeLoader`` with dates kept as strings (so the schema reports bad ones itself)."""
    import yaml

    class _Loader(getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader):  # type: ignore[misc]
        pass

    _Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)
    return _Loader


def safe_load_yaml(text: str) -> YAMLValue:
    """``yaml.safe_load`` semantics through the input gate (no aliases, depth limit), dates kept as strings."""
    docs = loads_yaml_all(text, what=_("catalog overlay"), error=CatalogError, loader=_loader())
    if len(docs) > 1:
        raise CatalogError(_("catalog overlay holds more than one YAML document"), fix=_("keep one document"))
    return docs[0] if docs else None


def read_yaml(path: Path) -> tuple[YAMLValue, list[str]]:
    try:
        text = read_text_file(path, max_bytes=MAX_OVERLAY_BYTES, what=_("catalog overlay"), error=CatalogError,
                              fix=_("fix or remove the overlay file"))
        docs = loads_yaml_all(text, what=f"{path}", error=CatalogError, loader=_loader())
    except CatalogError as e:
        return None, [e.message.replace(": malformed YAML", ": not valid YAML", 1)]
    if len(docs) > 1:
        return None, [_("{path}: holds {n} YAML documents; an overlay is one mapping").format(path=path, n=len(docs))]
    return (docs[0] if docs else None), []
