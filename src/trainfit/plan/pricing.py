"""Time and money of one planned layout: speed -> hours, the price with its provenance, and spot (竞价) as time
and money: interruptions, lost work and restarts stretch the hours; the checkpoint interval is the Young/Daly
optimum for the checkpoint's write time and the interruption rate (docs/cost-model.md).

Pure over typed values; the catalog's price table is read through :func:`trainfit.catalog.prices.price_for_instance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainfit.plan.cost import (CHECKPOINT_BYTES_PER_TRAINABLE_PARAM, CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT, Price,
                                SpotPolicy, estimate_cost, spot_elapsed_hours)
from trainfit.plan.cost import checkpoint_interval_hours as young_daly


@dataclass(frozen=True, kw_only=True)
class TimeAndCost:
    hours: float
    """Wall-clock hours (spot: expected, interruptions included)."""
    gpu_hours: float
    cost: float | None
    on_demand_cost: float | None
    currency: str | None
    price_per_hour: float | None
    price_source: str | None
    price_as_of: str | None
    spot_price_fraction: float | None
    expected_interruptions: float | None
    checkpoint_interval_hours: float | None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    feasible: bool = True
    """False when spot interruptions come faster than checkpoints save work."""


def _price_rows(inst: Any, region: str | None, spot: bool):
    from trainfit.catalog.prices import price_for_instance

    payg = price_for_instance(inst, region, billing="payg")
    spot_row = price_for_instance(inst, region, billing="spot") if spot else None
    return payg, spot_row


def time_and_cost(*, inst: Any, hours: float, gpus: int, trainable_params: int, nodes: int, spot: bool,
                  region: str | None, interruption_rate: float | None = None,
                  checkpoint_interval_hours: float | None = None) -> TimeAndCost:
    """Hours and cost of ``hours`` of productive training on ``nodes`` x ``inst`` (on demand or spot)."""
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
        notes.append(c.fix or "no price")
    base = dict(currency=c.currency, price_per_hour=None if payg is None else payg.price_per_hour,
                price_source=None if payg is None else payg.source, price_as_of=None if payg is None else payg.as_of)
    if not spot:
        return TimeAndCost(hours=hours, gpu_hours=c.gpu_hours, cost=c.cost, on_demand_cost=c.cost,
                           spot_price_fraction=None, expected_interruptions=None, checkpoint_interval_hours=None,
                           notes=tuple(notes), **base)
    policy_kw: dict[str, Any] = {}
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
        return TimeAndCost(hours=hours, gpu_hours=c.gpu_hours, cost=None, on_demand_cost=c.cost,
                           spot_price_fraction=frac, expected_interruptions=None,
                           checkpoint_interval_hours=policy.checkpoint_interval_hours, feasible=False,
                           notes=tuple(notes), **base)
    inst_hours = elapsed * c.instances
    size_gb = trainable_params * CHECKPOINT_BYTES_PER_TRAINABLE_PARAM / 1e9
    warnings.append(f"spot: {interruptions:.1f} expected interruptions, +{elapsed - hours:.1f} h; checkpoint every "
                    f"{policy.checkpoint_interval_hours * 60:.0f} min (Young/Daly: a {size_gb:,.{0 if size_gb >= 10 else 2}f} GB "
                    f"checkpoint at {CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT:g} GB/s per node = "
                    f"{write_h * 3600:.{0 if write_h * 3600 >= 10 else 1}f} s, "
                    f"{policy.interruption_rate_per_node_hour:g} reclaims per node-hour)")
    cost = None
    if price is not None and price.spot_price_fraction is not None:
        cost = inst_hours * price.price_per_instance_hour * price.spot_price_fraction
    elif price is not None:
        cost = inst_hours * price.price_per_instance_hour
        warnings.append(f"no spot discount known for {inst.instance_type}: priced at pay-as-you-go")
    return TimeAndCost(hours=elapsed, gpu_hours=inst_hours * per, cost=cost, on_demand_cost=c.cost,
                       spot_price_fraction=price.spot_price_fraction if price is not None else None,
                       expected_interruptions=interruptions,
                       checkpoint_interval_hours=policy.checkpoint_interval_hours, notes=tuple(notes),
                       warnings=tuple(warnings), **base)
