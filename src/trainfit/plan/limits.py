"""The planner's limits on one instance type: the node layouts it may try (``--gpus``, ``--gpus-per-node``,
``--max-gpus``), the precision a GPU trains a bf16 request in, the network bound (``slow-network``) and the time,
deadline and budget limits; each broken limit is recorded as the instance's nearest miss with a checked fix. Used by
:mod:`trainfit.plan.search` (which re-exports these names)."""

from __future__ import annotations

import math

from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.estimate.speed import SpeedEstimate
from trainfit.i18n import _
from trainfit.catalog.hardware import precision_on
from trainfit.plan.request import NODE_COUNTS, NearestMiss, PlanRequest
from trainfit.plan.types import FixOption, Plan, Rejection
from trainfit.providers.registry import rents_whole_nodes


SLOW_NETWORK_COMM_SHARE = 0.5
"""A multi-node plan whose nodes talk without RDMA (TCP, or a network the catalog does not state, timed at one
25 Gbit/s NIC) is rejected (code ``slow-network``) when the communication the speed model cannot hide behind compute
(``SpeedEstimate.comm_seconds_exposed``) exceeds this share of the step: beyond it the GPUs wait on the network more
than they compute, so over half of every GPU-hour bought is idle, and the speed model has no TCP-bound run to check
such a plan against (docs/cost-model.md, "Ranking"). ``--ignore-rule slow-network`` keeps such plans."""


def layouts_for(req: PlanRequest, inst: Instance) -> list[tuple[int, int]] | Rejection:
    """(GPUs per node, nodes) layouts to try on ``inst``."""
    it = inst.instance_type
    if "gpus" in req.pins:
        g = req.pins["gpus"]
        gpn = req.pins.get("gpus_per_node", min(g, inst.gpu_count))
        if gpn < inst.gpu_count and rents_whole_nodes(inst.provider):  # a cloud spec is rented whole
            return Rejection(instance_type=it, provider=inst.provider, code="partial-node",
                             reason=_("{gpn} of the {count} GPUs per {it} node: launchers start one process per GPU "
                                      "of the node and the whole node is billed").format(gpn=gpn, count=inst.gpu_count,
                                                                                         it=it),
                             fix=_("use --gpus-per-node {count}, or an instance type with {gpn} GPU(s)").format(
                                 count=inst.gpu_count, gpn=gpn),
                             fix_options=({"gpus_per_node": inst.gpu_count,
                                           "gpus": -(-g // inst.gpu_count) * inst.gpu_count},))
        if gpn > inst.gpu_count or g % gpn:
            return Rejection(instance_type=it, provider=inst.provider, code="layout",
                             reason=_("{g} GPUs in nodes of {gpn} do not fit {it} ({count} GPUs per instance)").format(
                                 g=g, gpn=gpn, it=it, count=inst.gpu_count),
                             fix=_("choose --gpus as a multiple of the instance's GPU count"),
                             fix_options=({"gpus": -(-g // inst.gpu_count) * inst.gpu_count,
                                           "gpus_per_node": inst.gpu_count},))
        return [(gpn, g // gpn)]
    gpn = req.pins.get("gpus_per_node", inst.gpu_count)
    layouts = [(gpn, n) for n in NODE_COUNTS if gpn * n <= req.max_gpus]
    if not layouts:
        return Rejection(instance_type=it, provider=inst.provider, code="max-gpus",
                         reason=_("{gpn} GPUs per instance > --max-gpus {max}").format(gpn=gpn, max=req.max_gpus),
                         fix=_("--max-gpus {gpn} or more").format(gpn=gpn),
                         fix_options=({"max_gpus": gpn},))
    return layouts


def precision_for(req: PlanRequest, gpu: GPU) -> tuple[str | None, str]:
    """bf16 on a GPU without bf16 tensor cores (V100, T4) is planned as fp16 mixed precision (fp32 master weights),
    with its memory and speed, and the row says so. (None, "") when the requested precision runs as it is. The one
    rule ``memory`` applies too (:func:`trainfit.catalog.hardware.precision_on`)."""
    return precision_on(gpu, req.workload.precision, "planned")


def slow_network(inst: Instance, nodes: int, sp: SpeedEstimate) -> tuple[str, str, str, tuple[FixOption, ...]] | None:
    """(code, reason, fix, fix options) when a multi-node plan without RDMA spends more than
    :data:`SLOW_NETWORK_COMM_SHARE` of its step in exposed communication; None otherwise."""
    net = (getattr(inst, "inter_node", None) or "").lower()
    if nodes <= 1 or net == "rdma" or not sp.step_seconds:
        return None
    share = sp.comm_seconds_exposed / sp.step_seconds
    if share <= SLOW_NETWORK_COMM_SHARE:
        return None
    if net:
        reason = _("{nodes} nodes over {net}: communication the compute cannot hide is {share:.0%} of each step "
                   "(bound {bound:.0%}), so most GPU-hours would wait on the network")
    else:
        reason = _("{nodes} nodes over a network the catalog does not state (timed as one 25 Gbit/s NIC): "
                   "communication the compute cannot hide is {share:.0%} of each step (bound {bound:.0%}), so most "
                   "GPU-hours would wait on the network")
    return ("slow-network",
            reason.format(nodes=nodes, net=net, share=share, bound=SLOW_NETWORK_COMM_SHARE),
            _("RDMA nodes (e.g. --resource-class pai-lingjun; for your own cluster set inter_node: rdma and "
              "inter_node_gbit_per_s in ~/.config/trainfit/catalog.yaml), a GPU with more memory so the job fits on "
              "fewer nodes, or --ignore-rule slow-network to keep the plan"),
            ({"ignore_rule": ["slow-network"]},))


def within_limits(req: PlanRequest, p: Plan, miss: NearestMiss) -> bool:
    """Deadline, wall-clock limit and budget; records the closest miss."""
    limit_h = req.max_days * 24
    tc = p.time_cost
    if tc.hours > limit_h:
        days = math.ceil(tc.hours / 24 * 1.01)
        miss.other = ("too-slow", _("{hours:,.0f} h ({days:.1f} days) > --max-days {max:g}").format(
                          hours=tc.hours, days=tc.hours / 24, max=req.max_days),
                      _("more GPUs, a faster GPU, fewer tokens, or --max-days {days}").format(days=days),
                      ({"max_days": days},))
        return False
    if req.deadline_hours is not None and tc.hours > req.deadline_hours:
        allow = math.ceil(tc.hours * 1.01)
        miss.other = ("deadline", _("{hours:.1f} h > deadline {deadline:g} h").format(
                          hours=tc.hours, deadline=req.deadline_hours),
                      _("more nodes, a faster GPU, or allow --deadline {allow}").format(allow=allow),
                      ({"deadline": allow},))
        return False
    if req.budget is not None:
        if tc.cost is None:
            miss.other = ("unknown-price", _("no price for {it}; cannot check --budget").format(
                              it=p.placement.instance_type),
                          _("add price_per_hour in ~/.config/trainfit/catalog.yaml, or drop --budget"),
                          ({"budget": None},))
            return False
        if tc.cost > req.budget:
            allow = math.ceil(tc.cost * 1.01)
            miss.other = ("over-budget", _("{cost:,.0f} {currency} > budget {budget:,.0f}").format(
                              cost=tc.cost, currency=tc.currency, budget=req.budget),
                          _("fewer tokens, a cheaper instance, --spot, or --budget {allow}").format(allow=allow),
                          ({"budget": allow},))
            return False
    return True


__all__ = ["SLOW_NETWORK_COMM_SHARE", "slow_network"]
