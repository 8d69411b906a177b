"""Ranking of the planner's plans: one basis for every plan compared, the sort key under it, the time-vs-money
frontier, and why #1 is #1.

Whether a row has a price never decides the order. Plans are ranked by cost only when every plan compared has a
price in one currency; otherwise all are ranked by GPU-hours (``--objective cost``; GPU-hours are what every price
multiplies) or by hours (``--objective time``), the cost is shown where known, and the rows without a price are
named with how to get one (docs/cost-model.md, "Ranking").
"""

from __future__ import annotations

import math

from trainfit.estimate.fit import OOM_RISK_LIMIT
from trainfit.estimate.uncertainty import format_probability, format_range, ranges_overlap
from trainfit.i18n import N_, _, translate
from trainfit.plan.parts import Basis, Ranking
from trainfit.plan.request import PlanRequest
from trainfit.plan.types import Plan
from trainfit.providers.registry import ProviderSpec, provider_spec

_BASIS_WORDS = {"cost": N_("cost"), "gpu_hours": N_("GPU-hours"), "hours": N_("hours (wall clock)")}


def common_currency(plans: list[Plan] | tuple[Plan, ...]) -> str | None:
    """The one currency every plan is priced in, or None when a plan has no price or currencies differ."""
    if not plans or any(p.time_cost.cost is None for p in plans):
        return None
    currencies = {p.time_cost.currency for p in plans}
    return next(iter(currencies)) if len(currencies) == 1 else None


def ranking_basis(objective: str, plans: list[Plan] | tuple[Plan, ...]) -> Basis:
    """What the plans are ranked by: hours under ``--objective time``; else cost when every plan has a price in one
    currency, else GPU-hours for all."""
    if objective == "time":
        return "hours"
    return "cost" if common_currency(plans) is not None else "gpu_hours"


def is_unsure(p: Plan) -> bool:
    """Whether a plan ranks after the sure ones: its verdict is not a clean ``fits``, or its P(OOM) is at least the
    planner's risk limit (``estimate.fit.OOM_RISK_LIMIT``; the search tries settings below it first,
    ``layout_fit.Limit.below_oom_risk``)."""
    return p.fit.verdict != "fits" or (p.fit.oom_probability or 0.0) >= OOM_RISK_LIMIT


def score(req: PlanRequest, p: Plan, basis: Basis | None = None) -> tuple:
    """Sort key of a plan (smaller ranks first). ``basis`` None: compare plans of one instance type (one price
    status, so cost and GPU-hours order them alike)."""
    # a plan whose verdict is not a clean "fits" (host RAM unknown), or whose P(OOM) reaches the planner's limit, is
    # never ranked above one that is a clean fit below it
    unsure, tc = is_unsure(p), p.time_cost
    if basis is None:
        basis = "hours" if req.objective == "time" else ("cost" if tc.cost is not None else "gpu_hours")
    if basis == "hours":
        # the tie-break is money in one unit for all: GPU-hours (cost would favour whichever rows have a price)
        return (unsure, tc.hours, tc.gpu_hours)
    if basis == "cost":
        return (unsure, tc.cost if tc.cost is not None else math.inf, tc.hours)
    return (unsure, tc.gpu_hours, tc.hours)


def _value(p: Plan, basis: Basis) -> float:
    tc = p.time_cost
    return {"cost": tc.cost, "gpu_hours": tc.gpu_hours, "hours": tc.hours}[basis] or 0.0


def _fmt(p: Plan, basis: Basis) -> str:
    """The ranking figure of a plan with its p10-p90 range (``Plan.intervals``): ``56 GPU-h (43-99)``."""
    r, tc = format_range(p.intervals().get(basis), ",.1f" if basis == "hours" else ",.0f"), p.time_cost
    if basis == "cost":
        return f"{tc.cost:,.0f} {tc.currency or ''}".strip() + r
    if basis == "gpu_hours":
        return f"{tc.gpu_hours:,.0f} GPU-h{r}"
    return f"{tc.hours:,.1f} h{r}"


#: How to get a price for an unknown provider's instance types (a registered one says it: ``ProviderSpec.price_howto``).
PRICE_HOWTO_DEFAULT = ProviderSpec.price_howto


def rank(req: PlanRequest, plans: list[Plan]) -> tuple[list[Plan], Ranking]:
    """``plans`` sorted under one basis for all, and the :class:`Ranking` that says how and why."""
    basis = ranking_basis(req.objective, plans)
    ordered = sorted(plans, key=lambda p: score(req, p, basis))
    currency = common_currency(ordered)
    unpriced = tuple(i for i, p in enumerate(ordered) if p.time_cost.cost is None)
    if basis == "hours":
        summary = _("ranked by hours (--objective time); ties broken by GPU-hours")
    elif basis == "cost":
        summary = _("ranked by cost: every plan has a price in {currency}").format(currency=currency)
    elif not unpriced and ordered:
        currencies = sorted({str(p.time_cost.currency) for p in ordered})
        summary = _("ranked by GPU-hours: prices are in {currencies}, which trainfit does not convert; cost shown per "
                    "row").format(currencies=" / ".join(currencies))
    elif len(unpriced) == len(ordered):
        summary = _("ranked by GPU-hours: no plan has a price")
    else:
        summary = _("ranked by GPU-hours: {priced} of {n} plans have a price, so cost cannot rank them all; cost "
                    "shown where known").format(priced=len(ordered) - len(unpriced), n=len(ordered))
    why, tied = "", ()
    if ordered:
        first = ordered[0]
        word = {"cost": _("#1 ({it}, {layout} {gpu}) is the cheapest: {value}"),
                "gpu_hours": _("#1 ({it}, {layout} {gpu}) uses the fewest GPU-hours: {value}"),
                "hours": _("#1 ({it}, {layout} {gpu}) is the fastest: {value}")}[basis]
        pl = first.placement
        why = word.format(it=pl.instance_type, layout=f"{pl.nodes}×{pl.gpus_per_node}", gpu=pl.gpu,
                          value=_fmt(first, basis))
        if len(ordered) > 1:
            second = ordered[1]
            v1, v2 = _value(first, basis), _value(second, basis)
            if v2 > 0 and v1 > 0:
                why += _("; #2 {value} ({delta:+.0%})").format(value=_fmt(second, basis), delta=v2 / v1 - 1)
            tied = tuple(i for i in ties(basis, ordered) if score(req, ordered[i], basis)[0] == score(req, first, basis)[0])
            if tied:
                why += _("; {tied} tied with #1 (their p10-p90 ranges of {basis} overlap): the order is within the "
                         "model's error, choose among them on the other columns").format(
                             tied=", ".join(f"#{i + 1}" for i in tied), basis=translate(_BASIS_WORDS[basis]))
        if first.fit.verdict != "fits":
            why += _("; its fit is not a clean 'fits' (see its warnings), and no plan that surely fits was found")
        elif is_unsure(first):
            why += _("; its P(OOM) is {p}: no plan below {limit} was found").format(
                p=format_probability(first.fit.oom_probability or 0.0), limit=format_probability(OOM_RISK_LIMIT))
        elif any(is_unsure(p) for p in ordered):
            why += _("; plans whose fit is unsure (host RAM unknown, or P(OOM) of {limit} or more) rank after the "
                     "sure ones").format(limit=format_probability(OOM_RISK_LIMIT))
    by_provider = tuple((prov, translate(getattr(provider_spec(prov), "price_howto", PRICE_HOWTO_DEFAULT)))
                        for prov in sorted({ordered[i].provider for i in unpriced}))
    price_fix = "; ".join(f"{prov}: {how}" for prov, how in by_provider) or None
    return ordered, Ranking(basis=basis, currency=currency, summary=summary, why_first=why, ties=tied,
                            unpriced=unpriced, price_fix=price_fix, price_fix_by_provider=by_provider)


def pareto(plans: list[Plan]) -> tuple[int, ...]:
    """Plans on the time-vs-money frontier. Money is compared only in one unit: cost when every plan has a price in
    the same currency, else GPU-hours for all (a cost in CNY, a cost in USD and GPU-hours never meet)."""
    priced = common_currency(plans) is not None

    def c(p: Plan) -> float:
        return p.time_cost.cost if priced else p.time_cost.gpu_hours

    def h(p: Plan) -> float:
        return p.time_cost.hours

    idx = []
    for i, p in enumerate(plans):
        dominated = any((h(q) <= h(p) and c(q) <= c(p)) and (h(q) < h(p) or c(q) < c(p)) for q in plans)
        if not dominated:
            idx.append(i)
    return tuple(sorted(idx, key=lambda i: h(plans[i])))


def basis_range(basis: Basis, p: Plan) -> dict[str, float] | None:
    """The p10-p90 range of the figure plans are ranked by (:func:`ranking_basis`)."""
    return p.intervals().get(basis)


def ties(objective: str, plans: list[Plan] | tuple[Plan, ...]) -> tuple[int, ...]:
    """Indices of ranked plans after #1 whose p10-p90 range on the ranking basis (``objective`` or a basis name)
    overlaps #1's: a tie within the model's
    error. Two plans with the same workload and speed estimate on the same GPU are not compared (they differ in
    price only, and one speed error moves both, so their order holds)."""
    if not plans:
        return ()
    basis = objective if objective in ("cost", "gpu_hours", "hours") else ranking_basis(objective, plans)
    first = plans[0]
    out = []
    for i in range(1, len(plans)):
        p = plans[i]
        if (p.placement.gpu == first.placement.gpu and p.workload == first.workload
                and p.speed.speed_interval == first.speed.speed_interval):
            continue
        if ranges_overlap(basis_range(basis, first), basis_range(basis, p)):
            out.append(i)
    return tuple(out)


__all__ = ["PRICE_HOWTO_DEFAULT", "Ranking", "basis_range", "common_currency", "pareto", "rank", "ranking_basis",
           "score", "ties"]
