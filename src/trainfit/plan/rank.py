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


__all__ = ["pareto", "score"]
