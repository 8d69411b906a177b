"""Cost model: node-hours x price, and the expected cost of spot (preemptible) capacity.

Pure functions over frozen dataclasses; no I/O. Formulas and the reasoning behind every default:
``docs/cost-model.md``.

Money fields are named ``cost`` / ``price_per_instance_hour`` and always travel with a ``currency`` field:
the currency is whatever the price source states (the catalog's Alibaba rows are CNY, a user overlay may
give USD); nothing is converted. Prices are per *instance* (node) hour, never per GPU: a job is billed for
``ceil(gpus / gpus_per_instance)`` whole instances.

Spot model (first order, Poisson interruptions at ``lambda`` per job-hour, ``lambda = instances x
interruption_rate_per_node_hour`` because losing any node stops the job - PAI DLC: "When the resource is
reclaimed the DLC job fails and stops", pai-facts.md section 5):

* writing checkpoints stretches the productive time ``T`` to ``T' = T * (1 + w / c)`` (``w`` = write
  stall per checkpoint, ``c`` = checkpoint interval);
* each interruption wastes the work since the last checkpoint, ``c/2`` on average, plus the restart time
  ``r`` (re-queue, bid, image pull, checkpoint load);
* interruptions also strike during redone work, so the elapsed time solves ``E = T' + lambda*E*(c/2 + r)``:
  ``E = T' / (1 - lambda*(c/2 + r))``, finite only while ``lambda*(c/2 + r) < 1``;
* expected interruptions ``N = lambda * E``; expected spot cost ``E x instances x spot price``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from trainfit.catalog.instances import Instance
from trainfit.errors import CostError
from trainfit.i18n import _

OVERLAY_PATH = "~/.config/trainfit/catalog.yaml"

INTERRUPTION_RATE_PER_NODE_HOUR_DEFAULT = 0.02
"""Assumption (pessimistic on purpose; set your own): one reclaim per 50 node-hours. No provider
publishes a per-hour rate. AWS's Spot Instance Advisor buckets the share of instances reclaimed in the
trailing month (<5% ... >20%); GPU families sit at 5-10% (A100, p4d) and 10-20% (H100, p5) (thundercompute
blog, citing the Advisor, May 2025 and Feb 2026). Spread evenly over a month that is only ~3e-4 per hour,
but reclaims cluster in capacity crunches and the same page warns that above 10% "you should expect at least
one cut-off during a day-long training run" (~0.04/h). Alibaba publishes no rate; DLC spot jobs stop on
reclaim. 0.02 sits between those readings."""

CHECKPOINT_INTERVAL_HOURS_DEFAULT = 0.5
"""Assumption: save every 30 minutes (the spot guides cited above recommend 5-15 minutes; HF Trainer
saves every ``save_steps`` = 500 steps by default, which is often longer)."""

RESTART_HOURS_DEFAULT = 0.25
"""Assumption: 15 minutes from reclaim to training again: DLC re-queues and bids (Creating -> Queuing ->
Bidding -> EnvPreparing -> Running, pai-facts.md section 4), pulls the image and loads the checkpoint."""


@dataclass(frozen=True, kw_only=True)
class Price:
    """What one instance (node) costs."""

    instance_type: str = ""
    price_per_instance_hour: float | None
    """On-demand (list) price per node-hour in ``currency``; None = unknown."""
    currency: str | None = None
    gpus_per_instance: int = 1
    spot_price_fraction: float | None = None
    """Fraction of the on-demand price paid on spot (0.3 = pay 30%, i.e. a 70% discount); Alibaba's
    ``SpotDiscountLimit`` uses the same convention. None = spot price unknown."""
    source: str = ""

    def __post_init__(self) -> None:
        if self.price_per_instance_hour is not None and self.price_per_instance_hour < 0:
            raise CostError(f"price_per_instance_hour must be >= 0, got {self.price_per_instance_hour}")
        if self.spot_price_fraction is not None and not 0 < self.spot_price_fraction <= 1:
            raise CostError(f"spot_price_fraction must be in (0, 1] (fraction of the list price paid), "
                            f"got {self.spot_price_fraction}")
        if not isinstance(self.gpus_per_instance, int) or self.gpus_per_instance < 1:
            raise CostError(f"gpus_per_instance must be a positive integer, got {self.gpus_per_instance!r}")

    @property
    def spot_discount(self) -> float | None:
        """Fraction saved on spot (``1 - spot_price_fraction``)."""
        return None if self.spot_price_fraction is None else 1.0 - self.spot_price_fraction


@dataclass(frozen=True, kw_only=True)
class SpotPolicy:
    """How a spot run is operated (all user-settable; defaults are documented assumptions)."""

    interruption_rate_per_node_hour: float = INTERRUPTION_RATE_PER_NODE_HOUR_DEFAULT
    checkpoint_interval_hours: float = CHECKPOINT_INTERVAL_HOURS_DEFAULT
    restart_hours: float = RESTART_HOURS_DEFAULT
    checkpoint_write_hours: float = 0.0
    """Training stall per checkpoint save (0 = asynchronous checkpointing)."""

    def __post_init__(self) -> None:
        if self.interruption_rate_per_node_hour < 0:
            raise CostError("interruption_rate_per_node_hour must be >= 0")
        if self.checkpoint_interval_hours <= 0:
            raise CostError("checkpoint_interval_hours must be > 0")
        if self.restart_hours < 0 or self.checkpoint_write_hours < 0:
            raise CostError("restart_hours and checkpoint_write_hours must be >= 0")


@dataclass(frozen=True, kw_only=True)
class SpotCost:
    """Expected time and cost of the same job on spot instances."""

    price_per_instance_hour: float
    spot_price_fraction: float
    discount: float
    """Fraction off the on-demand price (``1 - spot_price_fraction``)."""
    interruption_rate_per_job_hour: float
    lost_hours_per_interruption: float
    """``c/2 + r``."""
    feasible: bool
    """False when ``lambda*(c/2 + r) >= 1``: interruptions come faster than work is saved."""
    expected_hours: float | None
    """Elapsed wall-clock hours including checkpoint stalls, lost work and restarts."""
    expected_extra_hours: float | None
    """``expected_hours - on-demand hours``."""
    expected_interruptions: float | None
    expected_instance_hours: float | None
    expected_cost: float | None
    savings_vs_on_demand: float | None
    """On-demand cost minus expected spot cost (negative: spot costs more)."""
    savings_fraction: float | None
    fix: str | None = None


@dataclass(frozen=True, kw_only=True)
class CostEstimate:
    """On-demand cost of a job, and its spot alternative when a spot price is known."""

    hours: float
    """Wall-clock training hours on on-demand capacity."""
    gpus: int
    instances: int
    instance_hours: float
    gpu_hours: float
    """GPU-hours billed (whole instances)."""
    instance_type: str
    currency: str | None
    price_per_instance_hour: float | None
    cost: float | None
    """On-demand cost in ``currency``; None when no price is known (see ``fix``)."""
    spot: SpotCost | None
    fix: str | None
    """How to make a missing number available."""
    assumptions: tuple[str, ...] = ()


def _no_price_fix(instance_type: str) -> str:
    name = instance_type or "<instance type>"
    return _("add a price to {path}: under 'instances:' give provider, resource_class, instance_type: {name}, "
             "price_per_hour, currency (and spot_discount = fraction paid on spot), with source and as_of; or run "
             "`trainfit catalog refresh --provider pai` for live prices").format(path=OVERLAY_PATH, name=name)


def spot_expected(*, hours: float, instances: int, spot_price_per_instance_hour: float,
                  spot_price_fraction: float, policy: SpotPolicy,
                  on_demand_cost: float | None) -> SpotCost:
    """Expected elapsed time and cost of a job of ``hours`` productive hours on spot (module docstring)."""
    lam = policy.interruption_rate_per_node_hour * instances
    c = policy.checkpoint_interval_hours
    lost = c / 2 + policy.restart_hours
    productive = hours * (1 + policy.checkpoint_write_hours / c)
    waste = lam * lost
    if waste >= 1:
        return SpotCost(
            price_per_instance_hour=spot_price_per_instance_hour, spot_price_fraction=spot_price_fraction,
            discount=1 - spot_price_fraction, interruption_rate_per_job_hour=lam, lost_hours_per_interruption=lost,
            feasible=False, expected_hours=None, expected_extra_hours=None, expected_interruptions=None,
            expected_instance_hours=None, expected_cost=None, savings_vs_on_demand=None, savings_fraction=None,
            fix=_("{lam:.3g} interruptions per job-hour x {lost:.3g} h lost each >= 1: checkpoint more often "
                  "(interval < {interval:.3g} h) or use fewer nodes").format(
                lam=lam, lost=lost, interval=2 * (1 / lam - policy.restart_hours)),
        )
    elapsed = productive / (1 - waste)
    inst_hours = elapsed * instances
    cost = inst_hours * spot_price_per_instance_hour
    savings = None if on_demand_cost is None else on_demand_cost - cost
    frac = None if not on_demand_cost else savings / on_demand_cost  # type: ignore[operator]
    return SpotCost(
        price_per_instance_hour=spot_price_per_instance_hour, spot_price_fraction=spot_price_fraction,
        discount=1 - spot_price_fraction, interruption_rate_per_job_hour=lam, lost_hours_per_interruption=lost,
        feasible=True, expected_hours=elapsed, expected_extra_hours=elapsed - hours,
        expected_interruptions=lam * elapsed, expected_instance_hours=inst_hours, expected_cost=cost,
        savings_vs_on_demand=savings, savings_fraction=frac,
    )


def estimate_cost(*, hours: float, gpus: int, price: Price | None, spot: SpotPolicy | None = None,
                  instance_type: str | None = None) -> CostEstimate:
    """Cost of running ``gpus`` GPUs for ``hours`` wall-clock hours.

    ``price`` None (or without an on-demand price) gives ``cost=None`` and a ``fix`` message. The spot
    estimate is computed whenever the price has ``spot_price_fraction`` (with ``spot`` or the default
    :class:`SpotPolicy`).
    """
    if not isinstance(hours, (int, float)) or hours < 0 or math.isnan(hours):
        raise CostError(f"hours must be >= 0, got {hours!r}")
    if not isinstance(gpus, int) or gpus < 1:
        raise CostError(f"gpus must be a positive integer, got {gpus!r}")
    name = instance_type or (price.instance_type if price else "") or ""
    per = price.gpus_per_instance if price else 1
    instances = -(-gpus // per)
    inst_hours = hours * instances
    assumptions: list[str] = [_("billed per whole instance-hour of wall-clock time, no minimum or rounding")]
    if gpus % per:
        assumptions.append(_("{gpus} GPUs use {instances} instances of {per} GPUs: {idle} GPUs are paid for and "
                             "idle").format(gpus=gpus, instances=instances, per=per, idle=instances * per - gpus))
    if price is None or price.price_per_instance_hour is None:
        return CostEstimate(hours=hours, gpus=gpus, instances=instances, instance_hours=inst_hours,
                            gpu_hours=inst_hours * per, instance_type=name,
                            currency=price.currency if price else None, price_per_instance_hour=None, cost=None,
                            spot=None, fix=_no_price_fix(name), assumptions=tuple(assumptions))
    cost = inst_hours * price.price_per_instance_hour
    spot_cost = None
    fix = None
    if price.spot_price_fraction is not None:
        policy = spot or SpotPolicy()
        spot_cost = spot_expected(
            hours=hours, instances=instances,
            spot_price_per_instance_hour=price.price_per_instance_hour * price.spot_price_fraction,
            spot_price_fraction=price.spot_price_fraction, policy=policy, on_demand_cost=cost)
        assumptions.append(
            _("spot: {rate:g} interruptions per node-hour, checkpoint every {interval:g} h, restart {restart:g} h, "
              "checkpoint stall {stall:g} h; spot price constant at the stated fraction").format(
                rate=policy.interruption_rate_per_node_hour, interval=policy.checkpoint_interval_hours,
                restart=policy.restart_hours, stall=policy.checkpoint_write_hours))
    elif spot is not None:
        fix = _("no spot price for this instance: {fix}").format(fix=_no_price_fix(name))
    return CostEstimate(hours=hours, gpus=gpus, instances=instances, instance_hours=inst_hours,
                        gpu_hours=inst_hours * per, instance_type=name, currency=price.currency,
                        price_per_instance_hour=price.price_per_instance_hour, cost=cost, spot=spot_cost,
                        fix=fix, assumptions=tuple(assumptions))


def price_from_catalog(instance: Mapping[str, object] | Instance) -> Price:
    """A :class:`Price` from a catalog instance record (attribute or dict access, missing fields -> None).

    Reads ``instance_type``, ``price_per_hour`` (per node-hour), ``currency``, ``gpu_count`` and
    ``spot_discount`` (the catalog's fraction of the list price paid on spot).
    """
    def get(name: str) -> object:
        return instance.get(name) if isinstance(instance, dict) else getattr(instance, name, None)

    def num(name: str) -> float | None:
        v = get(name)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    gpus = num("gpu_count") or num("gpus")
    return Price(
        instance_type=str(get("instance_type") or get("name") or ""),
        price_per_instance_hour=num("price_per_hour"),
        currency=get("currency") if isinstance(get("currency"), str) else None,
        gpus_per_instance=int(gpus) if gpus and gpus >= 1 else 1,
        spot_price_fraction=num("spot_discount"),
        source=str(get("source") or ""),
    )


CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT = 1.0
"""Assumption: each node writes its shard of a checkpoint at 1 GB/s to the mounted store (OSS through JindoFuse,
NAS, a PVC). Alibaba documents no OSS throughput per mount; set your own with the overlay (docs/cost-model.md)."""

CHECKPOINT_BYTES_PER_TRAINABLE_PARAM = 16.0
"""What a resumable checkpoint holds per trainable parameter: the 16-bit weight (2), an fp32 master copy (4) and
two fp32 Adam moments (8), plus 2 for gradients-free metadata slack; frozen base weights are not saved."""


def checkpoint_write_hours(*, trainable_params: int, nodes: int,
                           write_gbytes_per_s: float = CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT) -> float:
    """Training stall per checkpoint: the checkpoint split over the nodes, each writing at ``write_gbytes_per_s``."""
    if write_gbytes_per_s <= 0 or nodes < 1:
        raise CostError("write bandwidth and nodes must be positive")
    size_gb = trainable_params * CHECKPOINT_BYTES_PER_TRAINABLE_PARAM / 1e9
    return size_gb / (write_gbytes_per_s * nodes) / 3600.0


def young_daly_interval_hours(*, write_hours: float, interruptions_per_job_hour: float) -> float | None:
    """The checkpoint interval that minimises expected lost time (Young 1974, Daly 2006): sqrt(2 C / lambda), with
    C the stall per checkpoint and lambda the interruption rate of the whole job. None when lambda is 0."""
    if interruptions_per_job_hour <= 0:
        return None
    return math.sqrt(2.0 * max(write_hours, 1e-6) / interruptions_per_job_hour)


ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR = 419 / (54 * 24 * 2048)
"""Unexpected interruptions of an on-demand job per node-hour: Llama 3's pre-training saw 419 unexpected job
interruptions (failed GPUs, host and network faults) in a 54-day snapshot on 16,384 H100 GPUs = 2,048 nodes of 8
(Llama Team, "The Llama 3 Herd of Models", 2024, sec. 3.3.4, https://arxiv.org/abs/2407.21783): 1.6e-4 per
node-hour, 0.0013 per node per 8-hour day. An assumption for any other fleet; spot reclaims are far more frequent
(``SpotPolicy``)."""


def checkpoint_interval_hours(*, trainable_params: int, nodes: int, interruptions_per_node_hour: float,
                              write_gbytes_per_s: float = CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT) -> tuple[float | None, float]:
    """(Young/Daly checkpoint interval in hours, stall per checkpoint in hours) of a job: its checkpoint size
    (:data:`CHECKPOINT_BYTES_PER_TRAINABLE_PARAM` per trainable parameter) written by every node in parallel at
    ``write_gbytes_per_s``, against ``nodes x interruptions_per_node_hour``. The one function ``plan --spot`` prices
    with and ``render`` turns into ``save_steps`` (on demand at :data:`ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR`)."""
    write_h = checkpoint_write_hours(trainable_params=trainable_params, nodes=nodes, write_gbytes_per_s=write_gbytes_per_s)
    return young_daly_interval_hours(write_hours=write_h, interruptions_per_job_hour=interruptions_per_node_hour * nodes), write_h


def spot_elapsed_hours(*, hours: float, instances: int, policy: SpotPolicy) -> tuple[float | None, float | None]:
    """(expected wall-clock hours on spot, expected interruptions) for ``hours`` of productive training: checkpoint
    stalls, lost work since the last checkpoint and restarts included (module docstring). (None, None) when
    interruptions come faster than checkpoints save work."""
    lam = policy.interruption_rate_per_node_hour * instances
    c = policy.checkpoint_interval_hours
    productive = hours * (1 + policy.checkpoint_write_hours / c)
    waste = lam * (c / 2 + policy.restart_hours)
    if waste >= 1:
        return None, None
    elapsed = productive / (1 - waste)
    return elapsed, lam * elapsed
