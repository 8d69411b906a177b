"""The effective catalog's type, and where the lookups (``gpus.get_gpu``, ``instances.get_instance``...) find it.

:mod:`trainfit.catalog._store` builds that catalog from the records of :mod:`.gpus` and :mod:`.instances`, so they
cannot import it: it installs its ``current_catalog`` here when it loads (``trainfit/catalog/__init__.py`` imports
it, so it is in place before any lookup runs), and the lookups call :func:`current_catalog`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True, kw_only=True, eq=False)
class Catalog:
    gpus: tuple = ()
    instances: tuple = ()
    gpu_index: dict = field(default_factory=dict)
    """normalized name or alias -> GPU."""
    layers: tuple[str, ...] = ()
    """Files merged, in order."""
    warnings: tuple[str, ...] = ()


_source: list[Callable[[], Catalog]] = []


def install(source: Callable[[], Catalog]) -> None:
    """Make ``source`` the effective catalog's builder (``_store.current_catalog``)."""
    _source[:] = [source]


def current_catalog() -> Catalog:
    """The effective catalog, from the builder ``_store`` installed."""
    return _source[0]()
