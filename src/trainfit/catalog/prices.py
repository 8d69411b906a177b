"""Prices with provenance: what an instance-hour costs, where, how it is billed, who says so and when.

Layers, read lazily and cached on file paths and modification times (like the instance catalog):

1. ``trainfit/catalog/data/prices.csv`` (bundled; only figures with a public source URL and a date);
2. ``prices`` lists inside refresh caches (``trainfit catalog refresh --prices``, same cache files and
   format as the spec refresh, see :mod:`trainfit.catalog.cache`);
3. a ``prices:`` list in the user overlay (``~/.config/trainfit/catalog.yaml``), e.g. your own bill.

Rows are never merged field by field: each row is one published figure, and lookups return all matching
rows, newest first. No currency is ever converted; a row states the currency of its source.

Units: ``price_per_hour`` is in ``currency`` per instance (node) hour; ``spot_discount`` is the fraction
of the pay-as-you-go price paid on spot (0.1 = pay 10%), as the Alibaba APIs report ``SpotDiscount`` (PAI-EAS
``DescribeMachineSpec``: ``SpotDiscount`` / ``NonProtectSpotDiscount`` "0.1 代表 1 折", i.e. pay 10%).

Regions: a row whose ``region`` is set is that region's price. Without ``--region`` the cheapest region's
price is used (and the plan says which region); a PAI-DLC public-resource instance (``pai-public``) without a
price of its own is priced with the ECS list price of the same instance type (class ``ecs``), and the price's
``source`` says so: DLC bills its own per-region price, shown in the PAI console
(:data:`trainfit.providers.registry.DLC_BILLING_URL`).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from trainfit.catalog._schema import CURRENCIES, CatalogRow, Cell, Column, parse_row
from trainfit.providers.registry import PriceStandIn, price_stand_in, provider_names, resource_classes
from trainfit.errors import CatalogError
from trainfit.i18n import _
from trainfit.catalog._files import (CatalogWarning, overlay_path, read_bundled, read_csv_rows, read_yaml,
                                     refresh_cache_files, stat_key)
from trainfit.catalog.cache import CACHE_FORMAT, MAX_CACHE_BYTES
from trainfit.inputs import loads_json, read_text_file

if TYPE_CHECKING:
    from trainfit.catalog.instances import Instance

BILLINGS = ("payg", "subscription", "spot")
#: Hours in a month when a monthly (subscription) price is stated per hour: 8,760 h a year / 12.
HOURS_PER_MONTH = 730.0

PRICE_COLUMNS: tuple[Column, ...] = (
    Column(name="provider", kind="enum", required=True, choices=provider_names),
    Column(name="resource_class", kind="enum", required=True, choices=resource_classes),
    Column(name="instance_type", kind="str", required=True, help="the provider's exact spec name"),
    Column(name="region", kind="str", help="region id (cn-hangzhou, ap-guangzhou); empty = not stated by the source"),
    Column(name="billing", kind="enum", required=True, choices=BILLINGS,
           help="payg (pay-as-you-go / post-paid), subscription (monthly, stated per hour), spot"),
    Column(name="price_per_hour", kind="float", min=0, max=1_000_000, unit="currency per instance-hour"),
    Column(name="currency", kind="enum", choices=CURRENCIES),
    Column(name="spot_discount", kind="float", min=0, max=1, unit="fraction of the pay-as-you-go price paid"),
    Column(name="verified", kind="bool", required=True, help="yes = read in the cited source as stated"),
    Column(name="source", kind="str", required=True, help="public URL (bundled rows), API name, or your bill"),
    Column(name="as_of", kind="date", required=True, help="date of the figure (YYYY-MM-DD)"),
    Column(name="notes", kind="str"),
)
_COLUMN_NAMES = tuple(c.name for c in PRICE_COLUMNS)


@dataclass(frozen=True, kw_only=True)
class PriceRow:
    """One published price figure for one instance type."""

    provider: str
    """alibaba | tencent | generic | private."""
    resource_class: str
    """As in the instance catalog (pai-public, pai-lingjun, ecs, tencent-tione...)."""
    instance_type: str
    """The provider's exact spec name."""
    region: str | None = None
    """Region id; None = the source does not say (a list price)."""
    billing: str = "payg"
    """payg | subscription | spot."""
    price_per_hour: float | None = None
    """Price per instance-hour in :attr:`currency`; None = only a spot discount is known."""
    currency: str | None = None
    """ISO 4217 code of :attr:`price_per_hour`; never converted."""
    spot_discount: float | None = None
    """Fraction of the pay-as-you-go price paid on spot (0-1)."""
    verified: bool = False
    """True = the figure was read in the cited source as stated."""
    source: str = ""
    """URL, API name or document the figure comes from."""
    as_of: str = ""
    """Date of the figure, YYYY-MM-DD."""
    notes: str | None = None
    origin: str = "bundled"
    """``bundled``, ``refresh:<cache file>`` or ``overlay:<path>``."""

    def __post_init__(self) -> None:
        problems = row_problems(self.to_dict(), "price")
        if problems:
            raise CatalogError(_("invalid price row:") + "\n  " + "\n  ".join(problems),
                               fix=_("see docs/catalog.md (prices)"))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.provider, self.resource_class, self.instance_type.lower())

    @property
    def age_days(self) -> int:
        """Days between :attr:`as_of` and today (UTC)."""
        return (_dt.datetime.now(_dt.timezone.utc).date() - _dt.date.fromisoformat(self.as_of)).days

    def to_dict(self) -> dict[str, str | float | bool | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def row_problems(row: Mapping[str, Cell], where: str) -> list[str]:
    """Cross-field problems of one typed row (every one, not the first)."""
    problems: list[str] = []
    if (row.get("price_per_hour") is None) != (row.get("currency") is None):
        problems.append(f"{where}: price_per_hour and currency must be given together")
    if row.get("price_per_hour") is None and row.get("spot_discount") is None:
        problems.append(f"{where}: states neither price_per_hour nor spot_discount")
    if row.get("spot_discount") is not None and row.get("billing") != "spot":
        problems.append(f"{where}: spot_discount is only meaningful with billing spot")
    as_of = row.get("as_of")
    if as_of:
        try:
            if _dt.date.fromisoformat(str(as_of)) > _dt.datetime.now(_dt.timezone.utc).date() + _dt.timedelta(days=1):
                problems.append(f"{where}: as_of={as_of} is in the future")
        except ValueError:
            pass  # parse_row reports the bad date
    if not str(row.get("source") or "").strip():
        problems.append(f"{where}: source is required")
    return problems


def parse_price_rows(raws: Iterable[object], where: str) -> tuple[list[CatalogRow], list[str]]:
    """Typed rows and every problem found (schema, ranges, choices, cross-field rules)."""
    rows, problems = [], []
    for i, raw in enumerate(raws):
        label = f"{where}[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{label}: must be a mapping of column: value")
            continue
        row, probs = parse_row(PRICE_COLUMNS, {str(k): v for k, v in raw.items()}, label)
        probs += [p for p in row_problems(row, label) if p not in probs]
        problems += probs
        if not probs:
            rows.append(row)
    return rows, problems


# ------------------------------------------------------------------------------------------ layers

def _bundled_raws() -> list[dict[str, str]]:
    return read_csv_rows(read_bundled("prices.csv"))


@lru_cache(maxsize=1)
def bundled_price_rows() -> tuple[CatalogRow, ...]:
    """Typed rows of the bundled ``prices.csv``. A bundled file that does not validate is a bug: raise."""
    raws = _bundled_raws()
    problems = []
    for i, raw in enumerate(raws):
        if None in raw:
            problems.append(f"prices.csv row {i + 2}: too many fields")
    rows, probs = parse_price_rows(raws, "prices.csv row")
    problems += probs
    if problems:
        raise CatalogError(_("bundled prices do not validate:") + "\n  " + "\n  ".join(problems),
                           fix=_("this is a bug in trainfit; please report it"))
    return tuple(rows)


def read_cache_prices(path: Path) -> list[CatalogRow]:
    """Typed ``prices`` rows of one refresh cache (none if the cache has no ``prices`` list)."""
    # the input gate, as for the cache's GPU and instance rows: a regular file within the size limit, depth limit
    text = read_text_file(path, max_bytes=MAX_CACHE_BYTES, what=_("refresh cache"), error=CatalogError,
                          fix=_("delete it and run `trainfit catalog refresh` again"))
    data = loads_json(text, what=_("refresh cache {path}").format(path=path), error=CatalogError)
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        raise CatalogError("{path}: {error}".format(path=path, error=_("not a {format} file").format(
            format=CACHE_FORMAT)))
    items = data.get("prices")
    if items is None:
        return []
    if not isinstance(items, list):
        raise CatalogError("{path}: {error}".format(path=path, error=_("'{section}' is not a list").format(
            section="prices")))
    if len(items) > 100_000:
        raise CatalogError("{path}: {error}".format(path=path, error=_(
            "'{section}' holds {n:,} rows, more than any provider lists").format(section="prices", n=len(items))))
    rows, problems = parse_price_rows(items, "prices")
    if problems:
        raise CatalogError("{path}: {error}".format(path=path, error=_("invalid price rows: {problems}").format(
            problems="; ".join(problems[:5]))))
    return rows


def overlay_price_rows(path: Path) -> list[CatalogRow]:
    """Typed rows of the overlay's ``prices:`` list; raises :class:`CatalogError` listing every problem."""
    data, problems = read_yaml(Path(path))
    items = data.get("prices") if isinstance(data, dict) else None
    rows: list[CatalogRow] = []
    if not problems and items is not None:
        if not isinstance(items, list):
            problems = [f"{path}: 'prices' must be a list of mappings"]
        else:
            rows, problems = parse_price_rows(items, f"{Path(path).name} prices")
    if problems:
        raise CatalogError(_("catalog overlay {path!r}: prices do not validate:").format(path=str(path)) + "\n  "
                           + "\n  ".join(problems),
                           fix=_("run `trainfit catalog validate {path}` after fixing it").format(path=path))
    return rows


def current_prices() -> tuple[PriceRow, ...]:
    """Every price row in effect: bundled, then refresh caches, then the overlay (cached on mtimes)."""
    return _build(stat_key(overlay_path()), tuple(stat_key(p) for p in refresh_cache_files()))


def reset_price_cache() -> None:
    """Forget cached price tables (tests, or after a refresh)."""
    _build.cache_clear()


@lru_cache(maxsize=8)
def _build(ov_key, cache_keys) -> tuple[PriceRow, ...]:
    import warnings

    out = [PriceRow(**r, origin="bundled") for r in bundled_price_rows()]
    for ck in cache_keys:
        path = Path(ck[0])
        try:
            out += [PriceRow(**r, origin=f"refresh:{path}") for r in read_cache_prices(path)]
        except CatalogError as e:
            warnings.warn(_("ignoring prices in refresh cache {path}: {error}").format(path=path, error=e.message),
                          CatalogWarning, stacklevel=3)
    if ov_key is not None:
        path = Path(ov_key[0])
        out += [PriceRow(**r, origin=f"overlay:{path}") for r in overlay_price_rows(path)]
    return tuple(out)


# ------------------------------------------------------------------------------------------ lookups

def prices_for(provider: str, resource_class: str | None, instance_type: str, region: str | None = None,
               billing: str | None = None) -> list[PriceRow]:
    """Price rows for one instance type: rows of the asked region first, then newest first, then overlay
    before refresh before bundled.

    ``resource_class`` None matches any class. ``region`` given: rows of that region plus rows whose region
    is not stated (list prices); ``billing`` given: only that billing.
    """
    if billing is not None and billing not in BILLINGS:
        raise CatalogError(_("unknown billing {billing!r}").format(billing=billing),
                           fix=_("use one of {names}").format(names=", ".join(BILLINGS)))
    it = instance_type.strip().lower()
    rows = [r for r in current_prices()
            if r.provider == provider.lower() and r.instance_type.lower() == it
            and (resource_class is None or r.resource_class == resource_class.lower())
            and (billing is None or r.billing == billing)
            and (region is None or r.region is None or r.region == region)]
    rank = {"overlay": 0, "refresh": 1, "bundled": 2}
    rows.sort(key=lambda r: (region is not None and r.region == region, r.as_of, -rank[r.origin.split(":", 1)[0]]),
              reverse=True)
    return rows


def latest_price(provider: str, resource_class: str | None, instance_type: str, region: str | None = None,
                 billing: str = "payg") -> PriceRow | None:
    """The first row of :func:`prices_for` that states a price (``price_per_hour``): a row for ``region``
    beats a list price whose region is not stated, then the newest wins. Without ``region``, among the newest
    rows of the best layer in one currency, the cheapest region's. None when no source states one."""
    rows = [r for r in prices_for(provider, resource_class, instance_type, region=region, billing=billing)
            if r.price_per_hour is not None]
    if not rows:
        return None
    if region is None:
        top = rows[0]
        peers = [r for r in rows if r.as_of == top.as_of and r.currency == top.currency
                 and r.origin.split(":", 1)[0] == top.origin.split(":", 1)[0]]
        return min(peers, key=lambda r: r.price_per_hour)  # stable: the first of equal prices
    return rows[0]


def regional_prices(instance: Instance, *, billing: str = "payg") -> list[PriceRow]:
    """One price per region that states one for ``instance`` (the newest of the best layer per region, with the
    ECS stand-in of :func:`price_for_instance`), cheapest first. Rows whose region is not stated are left out."""
    own = [r for r in prices_for(instance.provider, instance.resource_class, instance.instance_type, billing=billing)
           if r.price_per_hour is not None and r.region]
    stand_in = None if own else price_stand_in(instance.provider, instance.resource_class)
    rows = own or ([r for r in prices_for(instance.provider, stand_in.priced_as, instance.instance_type,
                                          billing=billing)
                    if r.price_per_hour is not None and r.region] if stand_in else [])
    first: dict[str, PriceRow] = {}
    for r in rows:
        first.setdefault(r.region, r)
    out = [_as_stand_in(r, instance, stand_in) if stand_in else r for r in first.values()]
    return sorted(out, key=lambda r: (r.currency or "", r.price_per_hour, r.region))


def _as_stand_in(row: PriceRow, instance: Instance, stand_in: PriceStandIn) -> PriceRow:
    """Another class's row (an ECS list price) used for an instance without a price of its own (a PAI-DLC
    public-resource instance), saying so in its source (:attr:`ProviderSpec.price_stand_ins`)."""
    from dataclasses import replace

    return replace(row, resource_class=instance.resource_class, source=f"{row.source}; {stand_in.source_note}",
                   notes=f"{stand_in.note}; " + (row.notes or ""))


def latest_spot_discount(provider: str, resource_class: str | None, instance_type: str,
                         region: str | None = None) -> PriceRow | None:
    """The newest spot row that states a ``spot_discount``, or None."""
    rows = [r for r in prices_for(provider, resource_class, instance_type, region=region, billing="spot")
            if r.spot_discount is not None]
    return rows[0] if rows else None


def price_for_instance(instance: Instance, region: str | None = None, *, billing: str = "payg") -> PriceRow | None:
    """The price to use for one catalog :class:`~trainfit.catalog.instances.Instance`, with its provenance.

    Order: the price table (:func:`latest_price`, region rows before list prices); for a PAI-DLC
    public-resource instance without a price of its own, the ECS list price of the same type (its source says
    so); else the price stated on the instance row itself (an overlay or refresh ``price_per_hour``, kept for
    compatibility), returned as a :class:`PriceRow` whose ``origin`` is the instance's; for ``billing="spot"``
    without a spot row, the instance's ``spot_discount`` applied to the pay-as-you-go price (noted as such).
    None = no source.
    """
    row = latest_price(instance.provider, instance.resource_class, instance.instance_type, region=region,
                       billing=billing)
    if row is not None:
        return row
    stand_in = price_stand_in(instance.provider, instance.resource_class)
    if stand_in is not None and billing != "spot":
        other = latest_price(instance.provider, stand_in.priced_as, instance.instance_type, region=region,
                             billing=billing)
        if other is not None:
            return _as_stand_in(other, instance, stand_in)
    if billing == "spot":
        spot = latest_spot_discount(instance.provider, instance.resource_class, instance.instance_type, region=region)
        disc = spot.spot_discount if spot is not None else getattr(instance, "spot_discount", None)
        base = price_for_instance(instance, region, billing="payg")
        if disc is None or base is None:
            return None
        src = spot.source if spot is not None else instance.source
        return PriceRow(provider=instance.provider, resource_class=instance.resource_class,
                        instance_type=instance.instance_type, region=base.region, billing="spot",
                        price_per_hour=base.price_per_hour * disc, currency=base.currency, spot_discount=disc,
                        verified=base.verified and (spot.verified if spot is not None else instance.verified),
                        source=f"{base.source} x spot discount from {src}",
                        as_of=min(base.as_of, spot.as_of if spot is not None else instance.as_of),
                        notes="derived: pay-as-you-go price x spot_discount", origin=base.origin)
    if billing != "payg" or instance.price_per_hour is None or instance.currency is None:
        return None
    return PriceRow(provider=instance.provider, resource_class=instance.resource_class,
                    instance_type=instance.instance_type, region=None, billing="payg",
                    price_per_hour=instance.price_per_hour, currency=instance.currency, verified=instance.verified,
                    source=instance.source, as_of=instance.as_of, notes="price stated on the instance row",
                    origin=instance.origin)
