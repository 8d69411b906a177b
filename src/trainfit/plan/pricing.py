"""Time and money of one planned layout: speed -> hours, the price with its provenance, and spot (竞价) as time
and money: interruptions, lost work and restarts stretch the hours; the checkpoint interval is the Young/Daly
optimum for the checkpoint's write time and the interruption rate (docs/cost-model.md).

Pure over typed values; the catalog's price table is read through :func:`trainfit.catalog.prices.price_for_instance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Sequence

from trainfit.plan.cost import (CHECKPOINT_BYTES_PER_TRAINABLE_PARAM, CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT, Price,
                                SpotPolicy, estimate_cost, spot_elapsed_hours, checkpoint_interval_hours as young_daly)
from trainfit.i18n import _, translate
from trainfit.plan.parts import Cost
from trainfit.catalog.instances import Instance
from trainfit.catalog.prices import PriceRow, price_for_instance, HOURS_PER_MONTH, regional_prices
from trainfit.json_types import JSONObject
from trainfit.estimate.uncertainty import Interval, format_range
from trainfit.providers.registry import provider_spec


if TYPE_CHECKING:
    from trainfit.plan.types import Plan


@dataclass(frozen=True, kw_only=True)
class TimeAndCost:
    """What :func:`time_and_cost` found: the plan's time and cost part, and what the plan says about them."""

    part: Cost
    """The plan's :class:`~trainfit.plan.parts.Cost` (hours are wall-clock: spot's expected, interruptions
    included)."""
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    feasible: bool = True
    """False when spot interruptions come faster than checkpoints save work."""


def _price_rows(inst: Instance, region: str | None, spot: bool) -> tuple[PriceRow | None, PriceRow | None]:
    payg = price_for_instance(inst, region, billing="payg")
    spot_row = price_for_instance(inst, region, billing="spot") if spot else None
    return payg, spot_row


def _subscription_only(inst: Instance, region: str | None) -> str | None:
    """A note when only a subscription price is published (e.g. PAI's Lingjun billing example): shown, never used
    as a pay-as-you-go price."""
    sub = price_for_instance(inst, region, billing="subscription")
    if sub is None:
        return None
    msg = (_("{it}: only a subscription price is published, {price:,.2f} {currency} per node-month in {region} (as "
             "of {as_of}, {source}); not used as a pay-as-you-go price") if sub.region else
           _("{it}: only a subscription price is published, {price:,.2f} {currency} per node-month (as of {as_of}, "
             "{source}); not used as a pay-as-you-go price"))
    return msg.format(it=inst.instance_type, price=sub.price_per_hour * HOURS_PER_MONTH, currency=sub.currency,
                      region=sub.region, as_of=sub.as_of, source=sub.source)


def time_and_cost(*, inst: Instance, hours: float, gpus: int, trainable_params: int, nodes: int, spot: bool,
                  region: str | None, interruption_rate: float | None = None,
                  checkpoint_interval_hours: float | None = None, speed_interval: dict | None = None,
                  tokens: float | None = None) -> TimeAndCost:
    """Hours and cost of ``hours`` of productive training (on ``tokens``) on ``nodes`` x ``inst`` (on demand or
    spot).
    ``speed_interval`` (the plan's, :mod:`trainfit.estimate.uncertainty`): the spot warning's expected interruptions
    and extra hours, both proportional to the hours, carry its p10-p90 range."""
    payg, spot_row = _price_rows(inst, region, spot)
    per = inst.gpu_count or 1
    frac = None
    if payg is not None and spot_row is not None and payg.price_per_hour and spot_row.currency == payg.currency:
        frac = spot_row.price_per_hour / payg.price_per_hour
    price = None if payg is None else Price(instance_type=inst.instance_type, price_per_instance_hour=payg.price_per_hour,
                                            currency=payg.currency, gpus_per_instance=per,
                                            spot_price_fraction=frac if frac and 0 < frac <= 1 else None,
                                            source=payg.source)
    # without a price the instance still has its GPUs: nodes, not GPUs, are billed and interrupted
    c = estimate_cost(hours=hours, gpus=gpus, instance_type=inst.instance_type,
                      price=price or Price(instance_type=inst.instance_type, price_per_instance_hour=None,
                                           gpus_per_instance=per))
    notes: list[str] = []
    warnings: list[str] = []
    if c.cost is None:
        notes.append(c.fix or _("no price"))
        sub = _subscription_only(inst, region) if payg is None else None
        if sub:
            notes.append(sub)
    priced = partial(Cost, tokens=tokens, spot=spot, region=region, on_demand_cost=c.cost, currency=c.currency,
                     price_per_hour=None if payg is None else payg.price_per_hour,
                     price_source=None if payg is None else payg.source,
                     price_as_of=None if payg is None else payg.as_of)
    if not spot:
        return TimeAndCost(part=priced(hours=hours, gpu_hours=c.gpu_hours, cost=c.cost), notes=tuple(notes))
    policy_kw: dict[str, float] = {}
    if interruption_rate is not None:
        policy_kw["interruption_rate_per_node_hour"] = interruption_rate
    policy = SpotPolicy(**policy_kw)
    optimum, write_h = young_daly(trainable_params=trainable_params, nodes=nodes,
                                  interruptions_per_node_hour=policy.interruption_rate_per_node_hour)
    policy = SpotPolicy(**policy_kw, checkpoint_write_hours=write_h)
    interval = checkpoint_interval_hours or optimum
    if interval:
        policy = SpotPolicy(**policy_kw, checkpoint_write_hours=write_h, checkpoint_interval_hours=interval)
    elapsed, interruptions = spot_elapsed_hours(hours=hours, instances=c.instances, policy=policy)
    if elapsed is None:
        return TimeAndCost(part=priced(hours=hours, gpu_hours=c.gpu_hours, cost=None, spot_price_fraction=frac,
                                       checkpoint_interval_hours=policy.checkpoint_interval_hours),
                           feasible=False, notes=tuple(notes))
    inst_hours = elapsed * c.instances
    size_gb = trainable_params * CHECKPOINT_BYTES_PER_TRAINABLE_PARAM / 1e9

    iv = Interval.from_dict(speed_interval) if speed_interval else None

    def _r(v: float) -> str:  # the p10-p90 range of a figure proportional to the hours (inverse of the speed)
        return format_range(iv.scale(v, inverse=True) if iv else None, ".1f")

    warnings.append(_("spot: {n:.1f}{n_range} expected interruptions, +{extra:.1f} h{extra_range}; checkpoint every "
                      "{minutes:.0f} min (Young/Daly: a {size} GB checkpoint at {rate:g} GB/s per node = {write} s, "
                      "{reclaims:g} reclaims per node-hour)").format(
        n=interruptions, n_range=_r(interruptions), extra=elapsed - hours, extra_range=_r(elapsed - hours),
        minutes=policy.checkpoint_interval_hours * 60,
        size=f"{size_gb:,.{0 if size_gb >= 10 else 2}f}", rate=CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT,
        write=f"{write_h * 3600:.{0 if write_h * 3600 >= 10 else 1}f}",
        reclaims=policy.interruption_rate_per_node_hour))
    cost = None
    if price is not None and price.spot_price_fraction is not None:
        cost = inst_hours * price.price_per_instance_hour * price.spot_price_fraction
    elif price is not None:
        cost = inst_hours * price.price_per_instance_hour
        warnings.append(_("no spot discount known for {it}: priced at pay-as-you-go").format(it=inst.instance_type))
    return TimeAndCost(part=priced(hours=elapsed, gpu_hours=inst_hours * per, cost=cost,
                                   spot_price_fraction=price.spot_price_fraction if price is not None else None,
                                   expected_interruptions=interruptions,
                                   checkpoint_interval_hours=policy.checkpoint_interval_hours),
                       notes=tuple(notes), warnings=tuple(warnings))


# ------------------------------------------------------------------------------------------ regions

def _same_price_everywhere(rows: list[PriceRow]) -> bool:
    return len(rows) > 1 and len({(r.currency, r.price_per_hour) for r in rows}) == 1


def region_notes(region: str | None, instances: Sequence[Instance | None]) -> list[str]:
    """What the region did to the prices of ``instances`` (the planned instance types, best first).

    With ``region``: which instance types' prices the region does not change (the same list price in every
    region, or no regional price at all) and which have no price in that region. Without: that each price is
    the cheapest region's, naming it for the first instance type that has regional prices."""
    seen: dict[str, Instance] = {}
    for inst in instances:
        if inst is not None:
            seen.setdefault(inst.instance_type, inst)
    same, no_regional, absent = [], [], []
    first_cheapest = None
    for it, inst in seen.items():
        rows = regional_prices(inst)
        if region is None:
            if first_cheapest is None and len(rows) > 1:
                used = price_for_instance(inst, None)
                if used is not None and used.region:
                    first_cheapest = (it, used.region, len(rows))
            continue
        if not rows:
            no_regional.append(it)
        elif region not in {r.region for r in rows}:
            absent.append(_("{it} ({n} other regions)").format(it=it, n=len(rows)))
        elif _same_price_everywhere(rows):
            same.append(it)
    out: list[str] = []
    if region is None:
        if first_cheapest is not None:
            it, r, n = first_cheapest
            out.append(_("no --region: each Alibaba list price is its instance type's cheapest region ({it}: "
                         "{region}, of {n} regions with a price); pass --region to price one region, or "
                         "--compare-regions").format(it=it, region=r, n=n))
        return out
    if same:
        out.append(_("--region {region} changes nothing for the price of {its}: the same list price in every "
                     "region that lists it").format(region=region, its=_few(same)))
    if no_regional:
        howto = next((h for h in (getattr(provider_spec(seen[it].provider), "regional_price_howto", None)
                                  for it in no_regional) if h), None)
        msg = translate(howto) if howto else _("--region {region} changes nothing for the price of {its}: no source "
                                               "gives a regional price")
        out.append(msg.format(region=region, its=_few(no_regional)))
    if absent:
        out.append(_("no {region} list price for {its}: those plans are unpriced there (see --compare-regions)").format(
            region=region, its=_few(absent)))
    return out


def _few(items: list[str], n: int = 6) -> str:
    if len(items) > n:
        return _("{items} and {more} more").format(items=", ".join(items[:n]), more=len(items) - n)
    return ", ".join(items)


def region_prices(plans: Sequence[Plan]) -> list[JSONObject]:
    """The same plans priced in every region that states a price for their instance type (``plan
    --compare-regions``): per plan, one entry per region, cheapest first. The plan's hours do not depend on the
    region; the cost is its instance-hours x the region's price (x the plan's spot fraction on spot, assumed the
    same in every region), with its p10/p50/p90 (``cost_interval``) from the plan's speed interval."""
    out: list[JSONObject] = []
    for i, p in enumerate(plans):
        inst = p.placement.instance
        if inst is None:
            continue
        rows = regional_prices(inst)
        if not rows:
            continue
        per, tc, siv = inst.gpu_count or 1, p.time_cost, p.speed.speed_interval
        inst_hours = tc.gpu_hours / per
        frac = tc.spot_price_fraction if tc.spot and tc.spot_price_fraction else 1.0
        # the cost in every region moves with the plan's hours: the p10-p90 range of the speed interval, inverted
        iv = Interval.from_dict(siv) if siv else None
        out.append({"plan": i, "instance_type": p.placement.instance_type, "plan_region": tc.region,
                    "same_everywhere": _same_price_everywhere(rows),
                    "regions": [{"region": r.region, "price_per_hour": r.price_per_hour, "currency": r.currency,
                                 "cost": inst_hours * r.price_per_hour * frac,
                                 "cost_interval": iv.scale(inst_hours * r.price_per_hour * frac, inverse=True)
                                 if iv else None, "as_of": r.as_of, "source": r.source}
                                for r in rows]})
    return out
