"""The providers trainfit knows: one :class:`ProviderSpec` each, in a registry every layer reads (the catalog's
``provider`` and ``resource_class`` columns, the platform rules, the ``--provider`` / ``--resource-class`` options).

A provider is a name, the resource classes its instance rows use and, optionally, its platform rules; its instance
types and prices are catalog rows (the bundled CSVs, a refresh cache or the user's overlay), its job files a render
target (:func:`trainfit.launch.targets.register_target`). A new provider is one :func:`register_provider` call,
from inside ``src/`` or outside it (``tests/test_extension.py`` registers a fake one). Pure: no I/O at import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from trainfit.i18n import N_

if TYPE_CHECKING:
    from trainfit.jsontypes import YAMLValue

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


@dataclass(frozen=True, kw_only=True)
class ProviderSpec:
    """One provider."""

    name: str
    """The catalog's ``provider`` value and the ``--provider`` choice: lower case, digits and ``-``."""
    resource_classes: tuple[str, ...]
    """The ``resource_class`` values its instance rows use (``pai-lingjun``, ``ecs``...): platform rules apply to
    them (``applies_to``)."""
    rules_package: str | None = None
    """A package holding its ``rules.yaml`` (the built-in providers' folders)."""
    rules: Callable[[], YAMLValue] | None = None
    """Or a function returning its rules as parsed YAML (a list of rule mappings, ``rules/__init__.py`` validates
    them like the bundled ones)."""
    rents_whole_nodes: bool = True
    """A cloud rents an instance whole (a job uses every GPU of its nodes, and pays for them); a cluster of your own
    (``generic``, ``private``) shares its nodes, so a job may take part of one."""
    spot_notice: str | None = None
    """The ``trainfit watch --provider`` notice source of its spot instances (:mod:`trainfit.watch.notice`)."""
    price_howto: str = N_("add price_per_hour and currency for it in ~/.config/trainfit/catalog.yaml (docs/catalog.md)")
    """How to get a price for its instance types (a message id), shown by a plan without one."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"provider name {self.name!r}: lower case letters, digits and -, at most 32")
        if not self.resource_classes or not all(_NAME.match(c) for c in self.resource_classes):
            raise ValueError(f"provider {self.name}: name its resource classes (lower case letters, digits and -)")


_REGISTRY: dict[str, ProviderSpec] = {}
_VERSION = [0]


def register_provider(spec: ProviderSpec) -> ProviderSpec:
    """Add a provider; its name and resource classes must be new."""
    if spec.name in _REGISTRY:
        raise ValueError(f"provider {spec.name!r} is already registered")
    taken = set(resource_classes()) & set(spec.resource_classes)
    if taken:
        raise ValueError(f"provider {spec.name}: resource classes {sorted(taken)} belong to another provider")
    _REGISTRY[spec.name] = spec
    _VERSION[0] += 1
    return spec


def unregister_provider(name: str) -> None:
    """Remove a registered provider (tests and plug-ins that registered it)."""
    if _REGISTRY.pop(name, None) is not None:
        _VERSION[0] += 1


def registry_version() -> int:
    """Changes whenever a provider is registered or removed: caches of what providers contribute (the platform
    rules) key on it."""
    return _VERSION[0]


def provider_spec(name: str) -> ProviderSpec | None:
    return _REGISTRY.get(name)


def provider_specs() -> tuple[ProviderSpec, ...]:
    return tuple(_REGISTRY.values())


def provider_names() -> tuple[str, ...]:
    """Every provider, in registration order (the catalog's ``provider`` values, ``--provider`` choices)."""
    return tuple(_REGISTRY)


def rents_whole_nodes(provider: str | None) -> bool:
    """Whether ``provider`` rents its instances whole (an unknown one is taken to)."""
    spec = _REGISTRY.get(provider or "")
    return True if spec is None else spec.rents_whole_nodes


def resource_classes() -> tuple[str, ...]:
    """Every resource class of every provider, in registration order."""
    return tuple(c for s in _REGISTRY.values() for c in s.resource_classes)


for _spec in (
        ProviderSpec(name="alibaba", resource_classes=("pai-public", "pai-quota", "pai-lingjun", "pai-eas", "ecs"),
                     rules_package="trainfit.providers.alibaba", spot_notice="alibaba",
                     price_howto=N_("`trainfit catalog refresh --provider alibaba --public-prices` (Alibaba's public ECS "
                                    "list prices, no credentials), `trainfit catalog refresh --provider ecs --region "
                                    "REGION --prices` (your account's, with your credentials), or a price_per_hour row "
                                    "in ~/.config/trainfit/catalog.yaml")),
        ProviderSpec(name="tencent", resource_classes=("tencent-tione",), rules_package="trainfit.providers.tencent",
                     spot_notice="tencent",
                     price_howto=N_("`trainfit catalog refresh --provider tencent --region REGION --prices --image-id "
                                    "ID` (your credentials), or a price_per_hour row in ~/.config/trainfit/catalog.yaml")),
        ProviderSpec(name="generic", resource_classes=("generic",), rules_package="trainfit.providers.generic",
                     rents_whole_nodes=False),
        ProviderSpec(name="private", resource_classes=("private",), rents_whole_nodes=False)):
    register_provider(_spec)
del _spec

__all__ = ["ProviderSpec", "provider_names", "rents_whole_nodes", "provider_spec", "provider_specs", "register_provider",
           "registry_version", "resource_classes", "unregister_provider"]
