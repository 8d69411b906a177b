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

import warnings
from functools import lru_cache
from pathlib import Path

from trainfit.catalog._current import Catalog, install
from trainfit.catalog._files import (CatalogWarning, bundled_rows, cross_check, gpu_key, instance_key, merge_rows,
                                     overlay_path, refresh_cache_files, stat_key)
from trainfit.catalog.cache import read_cache_file
from trainfit.catalog.gpus import assume_speed, gpu_from_row, normalize_gpu_name, GPU
from trainfit.catalog.instances import instance_from_row
from trainfit.catalog.overlay import load_overlay
from trainfit.errors import CatalogError
from trainfit import i18n
from trainfit.i18n import _
from trainfit.providers.registry import registry_version
from trainfit.catalog._schema import CatalogRow


def _canonical_gpu_refs(instances: list[CatalogRow], index: dict[str, GPU]) -> None:
    for r in instances:
        if r.get("gpu"):
            g = index.get(normalize_gpu_name(r["gpu"]))
            if g is not None:
                r["gpu"] = g.name


# ----------------------------------------------------------------------------------------- build

def current_catalog() -> Catalog:
    """The effective catalog for the current environment (cached on file paths and mtimes, and on the providers
    registered: their names and resource classes decide which rows validate)."""
    ov = overlay_path()
    caches = tuple(stat_key(p) for p in refresh_cache_files())
    return _build(stat_key(ov), caches, i18n.current(), registry_version())


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
        gpus = tuple(assume_speed(g, index[normalize_gpu_name(g.speed_from)]) if g.speed_from else g for g in gpus)
        index = {}
        for g in gpus:
            for n in (g.name, *g.aliases):
                index.setdefault(normalize_gpu_name(n), g)
    i_dicts = [dict(r) for r, _o in i_rows]
    _canonical_gpu_refs(i_dicts, index)
    instances = tuple(instance_from_row(r, origin=o) for r, (_row, o) in zip(i_dicts, i_rows))
    return Catalog(gpus=gpus, instances=instances, gpu_index=index, layers=tuple(layers), warnings=tuple(warns))


#: the lookups of gpus.py and instances.py read the catalog this module builds (see _current.py)
install(current_catalog)
