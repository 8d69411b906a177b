"""The effective catalog: bundled CSVs, then refresh caches, then the user overlay; lazy and cached.

Layers, later ones winning field by field for the same key (GPU ``name``; instance
``(provider, resource_class, instance_type)``):

1. ``trainfit/catalog/data/gpus.csv`` and ``instances.csv`` (bundled, versioned with the package);
2. refresh caches written by ``trainfit catalog refresh`` under the cache dir (a corrupt cache is skipped
   with a :class:`CatalogWarning`, never fatal);
3. the user overlay (YAML): ``$TRAINFIT_CATALOG_OVERLAY``, else ``$XDG_CONFIG_HOME/trainfit/catalog.yaml``
   (``~/.config/trainfit/catalog.yaml``). An overlay that does not validate raises
   :class:`~trainfit.errors.CatalogError` listing every problem.

The result is cached on the paths and modification times of the files involved.
"""

from __future__ import annotations

import csv
import io
import os
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Hashable, Iterable, Mapping

from trainfit.catalog._schema import GPU_COLUMNS, INSTANCE_COLUMNS, CatalogRow, Column, parse_row
from trainfit.errors import CatalogError
from trainfit import i18n
from trainfit.i18n import _
from trainfit.catalog.gpus import GPU, normalize_gpu_name, gpu_from_row
from trainfit.catalog.instances import instance_from_row
from trainfit.providers.registry import registry_version

ENV_OVERLAY = "TRAINFIT_CATALOG_OVERLAY"
ENV_CACHE_DIR = "TRAINFIT_CACHE_DIR"


class CatalogWarning(UserWarning):
    """A catalog layer was skipped (corrupt refresh cache); the bundled data is used instead."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Catalog:
    gpus: tuple = ()
    instances: tuple = ()
    gpu_index: dict = field(default_factory=dict)
    """normalized name or alias -> GPU."""
    layers: tuple[str, ...] = ()
    """Files merged, in order."""
    warnings: tuple[str, ...] = ()


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

def _read_bundled(name: str) -> str:
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
    g, p1 = parse_rows(GPU_COLUMNS, read_csv_rows(_read_bundled("gpus.csv")), "gpus.csv")
    i, p2 = parse_rows(INSTANCE_COLUMNS, read_csv_rows(_read_bundled("instances.csv")), "instances.csv")
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
            from trainfit.errors import did_you_mean

            sugg = did_you_mean(gname, [g.get("name") or "" for g in gpus])
            if sugg:
                problems.append(_("{label}: gpu {gpu!r} is not in the GPU catalog (did you mean {names}?)").format(
                    label=label, gpu=gname, names=_(" or ").join(sugg)))
            else:
                problems.append(_("{label}: gpu {gpu!r} is not in the GPU catalog").format(label=label, gpu=gname))
        if (r.get("price_per_hour") is None) != (r.get("currency") is None):
            problems.append(_("{label}: price_per_hour and currency must be given together").format(label=label))
    return problems


def _canonical_gpu_refs(instances: list[CatalogRow], index: dict[str, GPU]) -> None:
    for r in instances:
        if r.get("gpu"):
            g = index.get(normalize_gpu_name(r["gpu"]))
            if g is not None:
                r["gpu"] = g.name


# ----------------------------------------------------------------------------------------- build

def _stat_key(p: Path | None) -> tuple[str, float, int] | None:
    if p is None:
        return None
    try:
        st = p.stat()
    except OSError:
        return (str(p), -1.0, -1)
    return (str(p), st.st_mtime, st.st_size)


def current_catalog() -> Catalog:
    """The effective catalog for the current environment (cached on file paths and mtimes, and on the providers
    registered: their names and resource classes decide which rows validate)."""
    ov = overlay_path()
    caches = tuple(_stat_key(p) for p in refresh_cache_files())
    return _build(_stat_key(ov), caches, i18n.current(), registry_version())


def reset_cache() -> None:
    """Forget cached catalogs (tests, or after writing a refresh cache)."""
    _build.cache_clear()


@lru_cache(maxsize=8)
def _build(ov_key, cache_keys, lang: str = "en", _providers: int = 0) -> Catalog:
    """The merged catalog; ``lang`` is part of the cache key because :attr:`Catalog.warnings` is in that language,
    ``_providers`` (the provider registry's version) because the registered providers decide which rows validate."""
    g_base, i_base = bundled_rows()
    g_extra: list[tuple[dict, set[str], str]] = []
    i_extra: list[tuple[dict, set[str], str]] = []
    layers = ["bundled"]
    warns: list[str] = []

    if cache_keys:
        from trainfit.catalog.cache import read_cache_file

        for ck in cache_keys:
            path = Path(ck[0])
            try:
                gpus, insts = read_cache_file(path)
            except CatalogError as e:
                msg = _("ignoring refresh cache {path}: {error}; using the bundled catalog").format(path=path,
                                                                                                   error=e.message)
                warns.append(msg)
                warnings.warn(msg, CatalogWarning, stacklevel=3)
                continue
            origin = f"refresh:{path}"
            g_extra += [(r, set(r), origin) for r in gpus]
            i_extra += [(r, set(r), origin) for r in insts]
            layers.append(str(path))

    if ov_key is not None:
        from trainfit.catalog.overlay import load_overlay

        path = Path(ov_key[0])
        known_g = {gpu_key(r) for r in g_base} | {gpu_key(r) for r, _p, _o in g_extra}
        known_i = {instance_key(r) for r in i_base} | {instance_key(r) for r, _p, _o in i_extra}
        ov = load_overlay(path, known_gpu_keys=known_g, known_instance_keys=known_i)
        origin = f"overlay:{path}"
        g_extra += [(r, present, origin) for r, present in ov.gpus]
        i_extra += [(r, present, origin) for r, present in ov.instances]
        layers.append(str(path))

    g_rows = merge_rows(list(g_base), g_extra, gpu_key)
    i_rows = merge_rows(list(i_base), i_extra, instance_key)
    problems = cross_check([r for r, _o in g_rows], [r for r, _o in i_rows], "merged catalog")
    if problems:
        raise CatalogError(_("the catalog with your overlay/refresh cache does not validate:") + "\n  "
                           + "\n  ".join(problems),
                           fix=_("fix the overlay (see `trainfit catalog validate`) or delete the refresh cache"))
    gpus = tuple(gpu_from_row(r, origin=o) for r, o in g_rows)
    index: dict[str, GPU] = {}
    for g in gpus:
        for n in (g.name, *g.aliases):
            index.setdefault(normalize_gpu_name(n), g)
    if any(g.speed_from for g in gpus):  # GPUs known by memory only: speed figures assumed from a named class
        from trainfit.catalog.gpus import assume_speed

        gpus = tuple(assume_speed(g, index[normalize_gpu_name(g.speed_from)]) if g.speed_from else g for g in gpus)
        index = {}
        for g in gpus:
            for n in (g.name, *g.aliases):
                index.setdefault(normalize_gpu_name(n), g)
    i_dicts = [dict(r) for r, _o in i_rows]
    _canonical_gpu_refs(i_dicts, index)
    instances = tuple(instance_from_row(r, origin=o) for r, (_row, o) in zip(i_dicts, i_rows))
    return Catalog(gpus=gpus, instances=instances, gpu_index=index, layers=tuple(layers), warnings=tuple(warns))
