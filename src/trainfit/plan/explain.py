"""Why the planner rejected an instance type: the nearest miss, as a :class:`~trainfit.plan.types.Rejection` with
its fix."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from trainfit.estimate.fit import HOST_RAM_USABLE
from trainfit.plan.types import Rejection
from trainfit.workload import Workload

if TYPE_CHECKING:
    from trainfit.plan.search import PlanRequest, _Best


def explain_rejection(inst: Any, gpu: Any, limit: float, miss: _Best, req: PlanRequest) -> Rejection:
    """Why instance type ``inst`` got no plan: the nearest miss recorded in ``miss`` (a broken limit, host RAM,
    GPU memory, a blocking rule), with the fix."""
    it = inst.instance_type
    if miss.other is not None:  # something fitted but broke a limit (time, deadline, budget): the nearest miss
        code, reason, fix = miss.other
        return Rejection(instance_type=it, provider=inst.provider, code=code, reason=reason, fix=fix)
    if miss.host is not None:  # a config fitted GPU memory but not host RAM: nearer than a GPU-memory miss
        return Rejection(instance_type=it, provider=inst.provider, code="host-ram",
                         reason=f"needs {miss.host[0]:.0f} GiB host RAM per node > {miss.host[1]:g} x {HOST_RAM_USABLE:.0%}",
                         fix="less offload or an instance with more RAM")
    if miss.need_wl is not None and math.isfinite(miss.need_gib):
        w = miss.need_wl
        fix = memory_fix(req, w, gpu)
        if miss.rule is not None:
            fix = (f"larger layouts are blocked by {miss.rule.rule} ({miss.rule.message}); "
                   f"pass --ignore-rule {miss.rule.rule} if your quota allows more, or: " + fix)
        return Rejection(instance_type=it, provider=inst.provider, code="memory",
                         reason=(f"needs {miss.need_gib:.1f} GiB/GPU > {limit:.1f} usable "
                                 f"({gpu.usable_mem_gib:g} GiB less a "
                                 f"{req.memory_margin:.0%} margin; best try: {w.gpus} GPU, {w.strategy}"
                                 f"{'+offload ' + w.offload if w.offload != 'none' else ''}, "
                                 f"GC {'on' if w.grad_ckpt else 'off'}, micro-batch {w.micro_batch})"),
                         fix=fix)
    if miss.rule is not None:
        v = miss.rule
        return Rejection(instance_type=it, provider=inst.provider, code=v.rule, reason=v.message, fix=v.fix)
    if miss.other is not None:
        code, reason, fix = miss.other
        return Rejection(instance_type=it, provider=inst.provider, code=code, reason=reason, fix=fix)
    if miss.layout is not None:  # the pinned layout cannot be formed here: its true cause, as `memory` says it
        return Rejection(instance_type=it, provider=inst.provider, code="layout", reason=miss.layout.message,
                         fix=miss.layout.fix or "choose another --tp/--pp/--ep/--cp")
    return Rejection(instance_type=it, provider=inst.provider, code="no-config",
                     reason="no configuration within the limits", fix="raise --max-gpus")


def memory_fix(req: PlanRequest, w: Workload, gpu: Any) -> str:
    """The fix for a GPU-memory rejection, by what the request pinned and its method (RL: the RL knobs)."""
    if req.rl is not None:
        return ("a lower --rollout-util, --trainer-offload / --ref-offload, --rollout-tp > 1, shorter "
                "--prompt-len/--response-len, more GPUs or --method lora")
    if "gpus" in req.pins:
        return "more GPUs (--gpus), --strategy zero3, or --method lora"
    if req.workload.method == "full":
        return f"more GPUs (up to --max-gpus {req.max_gpus} were tried), --method lora, or a GPU with more memory"
    if req.workload.method == "lora":
        return "--method qlora, a shorter --seq-len, or a GPU with more memory"
    return "a shorter --seq-len or a GPU with more memory"


def no_instance_has(req: Any, gpu_filter: Any, instances: Any) -> None:
    """--gpu filtered out every instance type (``--provider alibaba --gpu A100``): one error naming the GPUs the
    other filters leave, instead of an empty result."""
    have = sorted({str(i.gpu) for i in instances if i.gpu})
    from trainfit.errors import PlanError

    raise PlanError(f"no instance type in the catalog{f' of --provider {req.provider}' if req.provider else ''}"
                    f"{f' / --resource-class {req.resource_class}' if req.resource_class else ''} has "
                    f"{gpu_filter.name}" + (f" (their GPUs: {', '.join(have)})" if have else ""),
                    fix="pick one of those GPUs or drop --gpu; for a Lingjun quota name its GPU with --resource-class "
                        "pai-lingjun --gpu NAME; private instance types go in ~/.config/trainfit/catalog.yaml")


__all__ = ["explain_rejection", "memory_fix", "no_instance_has"]



def known_regions() -> set[str]:
    """Region ids trainfit's data names anywhere: instance rows, price rows, platform rules."""
    from trainfit.catalog import list_instances
    from trainfit.catalog.prices import current_prices
    from trainfit.rules import load_rules

    out = {r for i in list_instances() for r in i.regions}
    out |= {p.region for p in current_prices() if p.region}
    out |= {r for rule in load_rules() if rule.kind == "region_in" for r in rule.params.get("regions", ())}
    return out


def unknown_region_note(region: str) -> str | None:
    """A note when ``--region`` appears nowhere in the catalog or the platform rules (a typo such as
    cn-hangzou would otherwise only drop the region-listed instance types in silence)."""
    known = known_regions()
    if region in known:
        return None
    from trainfit.errors import did_you_mean

    close = did_you_mean(region, sorted(known))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return (f"region {region!r} appears in no catalog row and no platform rule{hint} "
            "(instance types listed for other regions are rejected, those without a region list are kept)")
