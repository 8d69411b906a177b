"""Ranking of the planner's plans: the sort key under the objective and the time-vs-money frontier."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from trainfit.plan.types import Plan

if TYPE_CHECKING:
    from trainfit.plan.search import PlanRequest


def score(req: PlanRequest, p: Plan) -> tuple:
    """Sort key of a plan under ``req.objective`` (smaller ranks first)."""
    # a plan whose verdict is not a clean "fits" (host RAM unknown) is never ranked above one that is
    unsure = p.fit.verdict != "fits"
    if req.objective == "time":
        return (unsure, p.hours, p.cost if p.cost is not None else math.inf, p.gpu_hours)
    # cost: priced plans first by cost; unpriced ones after, by GPU-hours
    return (unsure, 0 if p.cost is not None else 1, p.cost if p.cost is not None else p.gpu_hours, p.hours)


def pareto(plans: list[Plan]) -> tuple[int, ...]:
    """Plans on the time-vs-money frontier. Money is compared only in one unit: cost when every plan has a price in
    the same currency, else GPU-hours for all (a cost in CNY, a cost in USD and GPU-hours never meet)."""
    currencies = {p.currency for p in plans if p.cost is not None}
    priced = all(p.cost is not None for p in plans) and len(currencies) == 1

    def c(p: Plan) -> float:
        return p.cost if priced else p.gpu_hours

    idx = []
    for i, p in enumerate(plans):
        dominated = any((q.hours <= p.hours and c(q) <= c(p)) and (q.hours < p.hours or c(q) < c(p)) for q in plans)
        if not dominated:
            idx.append(i)
    return tuple(sorted(idx, key=lambda i: plans[i].hours))


def objective_range(objective: str, p: Plan) -> dict[str, float] | None:
    """The p10-p90 range of the figure a plan is ranked by: hours for ``time``; cost for ``cost`` (GPU-hours when
    the plan has no price)."""
    iv = p.intervals()
    if objective == "time":
        return iv.get("hours")
    return iv.get("cost") if p.cost is not None else iv.get("gpu_hours")


def ties(objective: str, plans: list[Plan] | tuple[Plan, ...]) -> tuple[int, ...]:
    """Indices ``i`` (from 1) of ranked plans whose p10-p90 range of the objective overlaps that of plan ``i - 1``:
    the ranking between them is within the model's error (a tie). Plans priced in different currencies, or one
    priced and one not, are not compared; nor are two plans with the same workload and speed estimate on the same
    GPU (they differ in price only: one speed error moves both)."""
    from trainfit.estimate.uncertainty import ranges_overlap

    out = []
    for i in range(1, len(plans)):
        a, b = plans[i - 1], plans[i]
        if objective != "time" and ((a.cost is None) != (b.cost is None)
                                    or (a.cost is not None and a.currency != b.currency)):
            continue
        if a.gpu == b.gpu and a.workload == b.workload and a.speed_interval == b.speed_interval:
            continue  # the same speed estimate on the same GPU: one error moves both, the order holds
        if ranges_overlap(objective_range(objective, a), objective_range(objective, b)):
            out.append(i)
    return tuple(out)


__all__ = ["objective_range", "pareto", "score", "ties"]
