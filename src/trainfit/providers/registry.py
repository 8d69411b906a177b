"""The providers trainfit knows: one :class:`ProviderSpec` each, in a registry every layer reads (the catalog's
``provider`` and ``resource_class`` columns, the platform rules, the ``--provider`` / ``--resource-class`` options).

A provider is a name, the resource classes its instance rows use and, optionally, its platform rules; its instance
types and prices are catalog rows (the bundled CSVs, a refresh cache or the user's overlay), its job files a render
target (:func:`trainfit.targets.register_target`). A new provider is one :func:`register_provider` call,
from inside ``src/`` or outside it (``tests/test_extension.py`` registers a fake one). Pure: no I/O at import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Union

from trainfit.i18n import N_

if TYPE_CHECKING:
    from trainfit.json_types import YAMLValue

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


@dataclass(frozen=True, kw_only=True)
class RefreshRequest:
    """What ``trainfit catalog refresh`` asks of a refresh source: its options, one field each."""

    region: str = ""
    prices: bool = False
    instance_types: list[str] | None = None
    site: str = "cn"
    url: str | None = None
    zone: str | None = None
    image_id: str | None = None
    currency: str = "CNY"
    endpoint: str | None = None
    protocol: str = "https"
    timeout_s: float = 15.0
    total_timeout_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class SpecsRefreshed:
    """What a ``specs`` source wrote (PAI-DLC ListEcsSpecs)."""

    provider: str
    region: str
    path: Path
    instances: int
    new_gpus: tuple[str, ...]
    fetched_at: str


@dataclass(frozen=True, kw_only=True)
class CloudRefreshed:
    """What a ``cloud`` source wrote: specs, or with ``--prices`` price rows, of one region."""

    region: str
    path: Path
    instances: int = 0
    new_gpus: tuple[str, ...] = ()
    prices: int = 0
    skipped: tuple[str, ...] = ()
    """Instance types the region does not sell (prices only)."""
    fetched_at: str = ""


@dataclass(frozen=True, kw_only=True)
class PriceListRefreshed:
    """What a ``public`` source wrote: a public price list's rows, every region."""

    site: str
    path: Path
    url: str
    version: str | None
    publication_date: str | None
    currency: str
    prices: int
    regions: tuple[str, ...]
    instance_types: int
    missing: tuple[str, ...]
    """Instance types asked for that the list does not name."""
    fetched_at: str
    how: str = ""
    """How the list was found: ``--url``, the pricing page's link, or the pinned default."""


Refreshed = Union[SpecsRefreshed, CloudRefreshed, PriceListRefreshed]
RefreshKind = Literal["specs", "cloud", "public"]


@dataclass(frozen=True, kw_only=True)
class RefreshSource:
    """One ``trainfit catalog refresh --provider NAME`` choice: where live specs or prices come from."""

    name: str
    """The ``--provider`` choice: an API's name (``pai``, ``ecs``) or, for a public price list, the provider's."""
    kind: RefreshKind
    """``specs``: one region's specs, no prices; ``cloud``: one region's specs or (``--prices``) prices;
    ``public``: a public price list of every region (``--public-prices``, ``--url``, ``--site``)."""
    run: str | Callable[[RefreshRequest], Refreshed]
    """The refresh, or ``"module:function"`` naming it (imported when used: the SDKs stay unloaded)."""
    api: str = ""
    """The API it reads for specs (``ECS DescribeInstanceTypes``), shown in its report."""
    price_api: str = ""
    """The API it reads for ``--prices``."""
    misuse: tuple[str, str] | None = None
    """The error (a message id) and its fix for what it does not do: ``--prices`` of a ``specs`` source; a
    ``public`` source without ``--public-prices`` (and ``--public-prices`` with another source)."""

    def load(self) -> Callable[[RefreshRequest], Refreshed]:
        if callable(self.run):
            return self.run
        module, _, name = self.run.partition(":")
        fn: Callable[[RefreshRequest], Refreshed] = getattr(import_module(module), name)
        return fn


@dataclass(frozen=True, kw_only=True)
class PriceStandIn:
    """Another resource class's price rows used for instances of a class without a price of its own."""

    resource_class: str
    """The class priced this way (``pai-public``)."""
    priced_as: str
    """The class whose rows stand in (``ecs``)."""
    source_note: str
    """Appended to the row's source (says what the stand-in is)."""
    note: str
    """Put before the row's notes."""


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
    regional_price_howto: str | None = None
    """How to get per-region prices (a message id, with ``{region}`` and ``{its}``), shown by a plan whose
    ``--region`` changes nothing for its instance types; None: the plan just says so."""
    price_stand_ins: tuple[PriceStandIn, ...] = ()
    """Resource classes priced with another class's rows when they have none (PAI-DLC public resources with ECS
    list prices)."""
    platforms: Mapping[str, str] = field(default_factory=dict)
    """The platform (``applies_to`` of its rules) of a resource class, where it is not the class itself."""
    refresh: tuple[RefreshSource, ...] = ()
    """Its ``catalog refresh --provider`` choices."""
    default_regions: Mapping[str, str] = field(default_factory=dict)
    """The region a render uses for a resource class when neither the plan nor the instance row names one
    (else :data:`DEFAULT_REGION`)."""
    listed: bool = True
    """Named in ``plan --provider``'s help (``private``, your own cluster's overlay rows, is not)."""

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


def listed_provider_names() -> tuple[str, ...]:
    """The providers ``plan --provider``'s help names, in registration order."""
    return tuple(s.name for s in _REGISTRY.values() if s.listed)


#: The region a render uses when neither the plan, the instance row nor its provider names one.
DEFAULT_REGION = "cn-hangzhou"


def default_region(resource_class: str | None) -> str:
    """The region to render a job on ``resource_class`` in when nothing else names one."""
    spec = spec_of_class(resource_class)
    return (spec.default_regions.get(resource_class or "") if spec is not None else None) or DEFAULT_REGION


def spec_of_class(resource_class: str | None) -> ProviderSpec | None:
    """The provider whose instance rows use ``resource_class``."""
    return next((s for s in _REGISTRY.values() if resource_class in s.resource_classes), None)


def platform_of(resource_class: str | None) -> str:
    """The platform the rules of a job on ``resource_class`` apply to (``pai-lingjun`` -> ``pai-dlc``); the class
    itself where its provider names none, ``generic`` without one."""
    spec = spec_of_class(resource_class)
    return (spec.platforms.get(resource_class or "") if spec is not None else None) or resource_class or "generic"


def price_stand_in(provider: str, resource_class: str) -> PriceStandIn | None:
    """How an instance of ``resource_class`` without prices of its own is priced (None: it is not)."""
    spec = _REGISTRY.get(provider)
    return next((p for p in spec.price_stand_ins if p.resource_class == resource_class), None) if spec else None


def refresh_sources() -> tuple[RefreshSource, ...]:
    """Every ``catalog refresh --provider`` choice: the API sources in registration order, then the public price
    lists."""
    every = [r for s in _REGISTRY.values() for r in s.refresh]
    return tuple([r for r in every if r.kind != "public"] + [r for r in every if r.kind == "public"])


def refresh_source(name: str) -> RefreshSource | None:
    return next((r for r in refresh_sources() if r.name == name), None)


#: PAI-DLC billing: public resources are pay-as-you-go at a per-region price per instance type shown in the PAI
#: console (not the ECS list price).
DLC_BILLING_URL = "https://www.alibabacloud.com/help/en/pai/product-overview/billing-of-dlc"

_ALIBABA = ProviderSpec(
    name="alibaba", resource_classes=("pai-public", "pai-quota", "pai-lingjun", "pai-eas", "ecs"),
    rules_package="trainfit.providers.alibaba", spot_notice="alibaba",
    price_howto=N_("`trainfit catalog refresh --provider alibaba --public-prices` (Alibaba's public ECS "
                   "list prices, no credentials), `trainfit catalog refresh --provider ecs --region "
                   "REGION --prices` (your account's, with your credentials), or a price_per_hour row "
                   "in ~/.config/trainfit/catalog.yaml"),
    regional_price_howto=N_("--region {region} changes nothing for the price of {its}: no source gives a regional "
                            "price (`trainfit catalog refresh --provider alibaba --public-prices` reads Alibaba's "
                            "per-region list prices)"),
    price_stand_ins=(PriceStandIn(
        resource_class="pai-public", priced_as="ecs",
        source_note=f"ECS list price used for PAI-DLC public resources, which bill their own per-region price shown "
                    f"in the PAI console ({DLC_BILLING_URL})",
        note="ECS list price (class ecs) standing in for pai-public"),),
    default_regions={"pai-lingjun": "cn-wulanchabu"},
    platforms={"pai-public": "pai-dlc", "pai-quota": "pai-dlc", "pai-lingjun": "pai-dlc", "pai-eas": "pai-dlc"},
    refresh=(
        RefreshSource(name="pai", kind="specs", run="trainfit.providers.alibaba.refresh:refresh_request",
                      misuse=(N_("--prices is not available for --provider pai (ListEcsSpecs already reports the "
                                 "spot discount)"), N_("use --provider ecs --prices for ECS list and spot prices"))),
        RefreshSource(name="ecs", kind="cloud", run="trainfit.providers.alibaba.ecs_refresh:refresh_request",
                      api="ECS DescribeInstanceTypes", price_api="ECS DescribePrice/DescribeSpotPriceHistory"),
        RefreshSource(name="alibaba", kind="public", run="trainfit.providers.alibaba.public_prices:refresh_request",
                      misuse=(N_("--public-prices reads Alibaba's public ECS price list: use it with --provider "
                                 "alibaba"), "trainfit catalog refresh --provider alibaba --public-prices "
                                             "[--site cn|intl]"))))

for _spec in (
        _ALIBABA,
        ProviderSpec(name="tencent", resource_classes=("tencent-tione",), rules_package="trainfit.providers.tencent",
                     spot_notice="tencent",
                     price_howto=N_("`trainfit catalog refresh --provider tencent --region REGION --prices --image-id "
                                    "ID` (your credentials), or a price_per_hour row in ~/.config/trainfit/catalog.yaml"),
                     refresh=(RefreshSource(name="tencent", kind="cloud",
                                            run="trainfit.providers.tencent.refresh:refresh_request",
                                            api="CVM DescribeInstanceTypeConfigs",
                                            price_api="CVM InquiryPriceRunInstances"),)),
        ProviderSpec(name="generic", resource_classes=("generic",), rules_package="trainfit.providers.generic",
                     rents_whole_nodes=False),
        ProviderSpec(name="private", resource_classes=("private",), rents_whole_nodes=False, listed=False)):
    register_provider(_spec)
del _spec

__all__ = ["CloudRefreshed", "DEFAULT_REGION", "DLC_BILLING_URL", "default_region", "PriceListRefreshed", "PriceStandIn", "ProviderSpec", "RefreshKind",
           "RefreshRequest", "RefreshSource", "Refreshed", "SpecsRefreshed", "listed_provider_names", "platform_of",
           "price_stand_in", "provider_names", "provider_spec", "provider_specs", "refresh_source", "refresh_sources",
           "register_provider", "registry_version", "rents_whole_nodes", "resource_classes", "spec_of_class",
           "unregister_provider"]
