"""Why the planner rejected an instance type: the nearest miss, as a :class:`~trainfit.plan.types.Rejection` with
its fix."""

from __future__ import annotations

import math
from typing import Callable

from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.estimate.fit import HOST_RAM_USABLE, host_ram_verdict
from trainfit.i18n import _
from trainfit.plan.request import NODE_COUNTS, NearestMiss, PlanRequest, fit_rollout_tp
from trainfit.plan.types import FixOption, Rejection
from trainfit.workload import Workload
from trainfit.errors import TrainfitError, PlanError, did_you_mean
from trainfit.estimate.memory import estimate_memory
from trainfit.rl.memory import estimate_rl_memory
from trainfit.catalog import list_instances
from trainfit.catalog.prices import current_prices
from trainfit.rules import load_rules


def explain_rejection(inst: Instance, gpu: GPU, limit: float, miss: NearestMiss, req: PlanRequest) -> Rejection:
    """Why instance type ``inst`` got no plan: the nearest miss recorded in ``miss`` (a broken limit, host RAM,
    GPU memory, a blocking rule), with the fix."""
    it = inst.instance_type
    if miss.other is not None:  # something fitted but broke a limit (time, deadline, budget, network): the nearest miss
        code, reason, fix, *opts = miss.other
        return Rejection(instance_type=it, provider=inst.provider, code=code, reason=reason, fix=fix,
                         fix_options=opts[0] if opts else ())
    if miss.host is not None:  # a config fitted GPU memory but not host RAM: nearer than a GPU-memory miss
        options = host_fix_options(req, miss.host_wl, limit, inst) if miss.host_wl is not None else ()
        if options:
            fix = _("checked to fit GPU memory and host RAM: {options}; or an instance type with more RAM").format(
                options=" | ".join(as_flags(o) for o in options))
        elif miss.host_wl is not None:
            fix = _("an instance type with more RAM (no GPU count or offload change the search can make fits both "
                    "GPU memory and host RAM here)")
        else:
            fix = _("an instance type with more RAM")
        return Rejection(instance_type=it, provider=inst.provider, code="host-ram",
                         reason=_("needs {need:.0f} GiB host RAM per node > {ram:g} x {usable:.0%}").format(
                             need=miss.host[0], ram=miss.host[1], usable=HOST_RAM_USABLE),
                         fix=fix, fix_options=options)
    if miss.need_wl is not None and math.isfinite(miss.need_gib):
        w = miss.need_wl
        options = memory_fix_options(req, w, limit, gpu=gpu, inst=inst)
        if req.rl is not None and options:
            fix = _("checked with the RL memory model to fit here: {options}; or a GPU with more memory").format(
                options=" | ".join(as_flags(o) for o in options))
        elif req.rl is not None:
            fix = _("nothing the search can change fits {gpu} (up to {max} GPUs, trainer/reference offload, rollout "
                    "tensor parallelism up to the node's GPUs, LoRA were checked): a GPU with more memory, or shorter "
                    "--prompt-len/--response-len").format(gpu=gpu.name, max=FIX_MAX_GPUS)
        elif options:
            fix = _("checked with the memory model to fit here: {options}; or a GPU with more memory").format(
                options=" | ".join(as_flags(o) for o in options))
        else:
            fix = (_("nothing the search can change fits {gpu} (up to {max} GPUs, ZeRO-3, (Q)LoRA were checked): a "
                     "GPU with more memory, or a shorter --seq-len") if w.seq_len > 512 else
                   _("nothing the search can change fits {gpu} (up to {max} GPUs, ZeRO-3, (Q)LoRA were checked): a "
                     "GPU with more memory")).format(gpu=gpu.name, max=FIX_MAX_GPUS)
        more = [o["gpus"] for o in options if "gpus" in o]
        if miss.rule is not None and more and "gpus" not in req.pins and more[0] <= _largest_searched(req, w):
            # a larger layout the search tries would fit, but a platform rule blocked it
            fix = _("larger layouts are blocked by {rule} ({message}); pass --ignore-rule {rule} if your quota "
                    "allows more, or: {fix}").format(rule=miss.rule.rule, message=miss.rule.message, fix=fix)
            options = ({"ignore_rule": [miss.rule.rule]},) + options
        return Rejection(instance_type=it, provider=inst.provider, code="memory",
                         reason=_("needs {need:.1f} GiB/GPU > {limit:.1f} usable ({usable:g} GiB less a {margin:.0%} "
                                  "margin; best try: {gpus} GPU, {strategy}, GC {gc}, micro-batch {mb})").format(
                             need=miss.need_gib, limit=limit, usable=gpu.usable_mem_gib, margin=req.memory_margin,
                             gpus=w.gpus, strategy=w.strategy + ("+offload " + w.offload if w.offload != "none" else ""),
                             gc=_("on") if w.grad_ckpt else _("off"), mb=w.micro_batch),
                         fix=fix, fix_options=options, tried=w.to_dict())
    if miss.rule is not None:
        v = miss.rule
        return Rejection(instance_type=it, provider=inst.provider, code=v.rule, reason=v.message,
                         fix=v.fix if f"--ignore-rule {v.rule}" in v.fix
                         else _("{fix} (or --ignore-rule {rule} when that is done)").format(fix=v.fix, rule=v.rule),
                         fix_options=({"ignore_rule": [v.rule]},))
    if miss.layout is not None:  # the pinned layout cannot be formed here: its true cause, as `memory` says it
        return Rejection(instance_type=it, provider=inst.provider, code="layout", reason=miss.layout.message,
                         fix=miss.layout.fix or _("choose another --tp/--pp/--ep/--cp"))
    return Rejection(instance_type=it, provider=inst.provider, code="no-config",
                     reason=_("no configuration within the limits"), fix=_("raise --max-gpus"))


def host_fix_options(req: PlanRequest, w: Workload, limit: float, inst: Instance) -> tuple[FixOption, ...]:
    """Host-RAM fixes checked with the memory model (GPU memory and the node's RAM): less offload where the offload
    was pinned, more GPUs (offloaded states shard over more nodes)."""
    def fits(**changes: str | int | bool) -> bool:
        try:
            w2 = w.with_(**changes)
            e = estimate_memory(req.model, w2)
        except TrainfitError:
            return False
        return (e.reserved_gib <= limit
                and host_ram_verdict(e.host_ram_gib, inst.ram_gib, w2.gpus_per_node)[0] not in ("tight", "oom"))

    out: list[FixOption] = []
    if "offload" in req.pins:
        for off in ("optimizer", "none"):
            if off != w.offload and (off == "none" or w.offload == "all") and fits(offload=off):
                out.append({"offload": off})
                break
    out.extend(_more_gpus(w, fits))
    return tuple(out)


def _more_gpus(w: Workload, fits: Callable[..., bool]) -> list[FixOption]:
    """The more-GPUs fix: the smallest power-of-two multiple of ``w``'s GPUs up to :data:`FIX_MAX_GPUS` that
    ``fits`` (pinned, so any node count), as ``[{"gpus": n}]``, or ``[]``."""
    g = w.gpus
    while g < FIX_MAX_GPUS:
        g *= 2
        if fits(gpus=g, gpus_per_node=w.gpus_per_node if g >= w.gpus_per_node else g):
            return [{"gpus": g}]
    return []


def _largest_searched(req: PlanRequest, w: Workload) -> int:
    """The most GPUs the search tries on ``w``'s node size (``--max-gpus``, at most the largest node count)."""
    return max((w.gpus_per_node * n for n in NODE_COUNTS if w.gpus_per_node * n <= req.max_gpus), default=0)


def _rl_memory_fix_options(req: PlanRequest, w: Workload, gpu: GPU | None,
                           inst: Instance | None) -> tuple[FixOption, ...]:
    """RL memory fixes checked with :func:`trainfit.rl.memory.estimate_rl_memory` (every phase, the KV pool)."""
    if gpu is None or not gpu.usable_mem_gib:
        return ()
    rl0, _tp_note = fit_rollout_tp(req.rl, w.gpus_per_node)

    def fits(rl_changes: dict[str, bool | int | float] | None = None, **changes: str | int | bool) -> bool:
        try:
            w2 = w.with_(**changes)
            rl, _tp_note = fit_rollout_tp(req.rl.with_(**(rl_changes or {})), w2.gpus_per_node)
            e = estimate_rl_memory(req.model, w2, rl, gpu.usable_mem_gib, strict=False,
                                   host_ram_gib=getattr(inst, "ram_gib", None), margin=req.memory_margin)
        except TrainfitError:
            return False
        return e.verdict not in ("oom", "tight") and (e.max_concurrent_seqs is None or e.max_concurrent_seqs >= 1)

    out: list[FixOption] = []
    out.extend(_more_gpus(w, fits))
    for knob in ("trainer_offload", "ref_offload"):
        if not getattr(rl0, knob, None) and fits({knob: True}):
            out.append({knob: True})
    node = int(getattr(inst, "gpu_count", None) or w.gpus_per_node)
    tp = rl0.rollout_tp * 2 if rl0.has_rollout else node + 1
    while tp <= node:  # the engine's weights split over more GPUs of a node (alone, then with both offloads)
        g = max(w.gpus, tp)
        layout = {} if g == w.gpus else {"gpus": g}
        shape = {"gpus": g, "gpus_per_node": min(g, node)}
        if fits({"rollout_tp": tp}, **shape):
            out.append({"rollout_tp": tp, **layout})
            break
        both = {"rollout_tp": tp, "trainer_offload": True, "ref_offload": True}
        if fits(both, **shape):
            out.append({**both, **layout})
            break
        tp *= 2
    if w.method == "full" and fits(method="lora"):
        out.append({"method": "lora"})
    return tuple(out)


def as_flags(option: FixOption) -> str:
    """A fix option as command-line flags (``{"gpus": 32}`` -> ``--gpus 32``; None drops the option)."""
    parts = []
    for k, v in option.items():
        flag = "--" + k.replace("_", "-")
        if v is None:
            parts.append(_("drop {flag}").format(flag=flag))
        elif v is True:
            parts.append(flag)
        elif isinstance(v, (list, tuple)):
            parts.extend(f"{flag} {x}" for x in v)
        else:
            parts.append(f"{flag} {v}")
    return " ".join(parts)


#: The largest job a memory fix proposes (GPUs).
FIX_MAX_GPUS = 4096


def memory_fix_options(req: PlanRequest, w: Workload, limit: float, *, gpu: GPU | None = None,
                       inst: Instance | None = None) -> tuple[FixOption, ...]:
    """The memory fixes that work, as option changes: each alternative is checked with the memory model (RL: the RL
    memory model over all phases) on the closest miss ``w`` before it is offered."""
    if req.rl is not None:
        return _rl_memory_fix_options(req, w, gpu, inst)

    def fits(**changes: str | int | bool) -> bool:
        try:
            return estimate_memory(req.model, w.with_(**changes)).reserved_gib <= limit
        except TrainfitError:
            return False

    out: list[FixOption] = []
    out.extend(_more_gpus(w, fits))
    pinned = req.pins
    if pinned.get("strategy") not in (None, "zero3") and fits(strategy="zero3"):
        out.append({"strategy": "zero3"})
    if pinned.get("grad_ckpt") is False and fits(grad_ckpt=True):
        out.append({"grad_ckpt": True})
    if pinned.get("micro_batch", 1) > 1 and fits(micro_batch=1):
        out.append({"micro_batch": None})
    for method in {"full": ("lora", "qlora"), "freeze": ("lora", "qlora"), "lora": ("qlora",)}.get(w.method, ()):
        if fits(method=method):
            out.append({"method": method})
            break
    return tuple(out)


def no_instance_has(req: PlanRequest, gpu_filter: GPU, instances: list[Instance]) -> None:
    """--gpu filtered out every instance type (``--provider alibaba --gpu A100``): one error naming the GPUs the
    other filters leave, instead of an empty result."""
    have = sorted({str(i.gpu) for i in instances if i.gpu})

    scope = " / ".join(x for x in (f"--provider {req.provider}" if req.provider else "",
                                 f"--resource-class {req.resource_class}" if req.resource_class else "") if x)
    msg = (_("no instance type in the catalog of {scope} has {gpu}") if scope
           else _("no instance type in the catalog has {gpu}")).format(scope=scope, gpu=gpu_filter.name)
    if have:
        msg = _("{message} (their GPUs: {gpus})").format(message=msg, gpus=", ".join(have))
    raise PlanError(msg, fix=_("pick one of those GPUs or drop --gpu; for a Lingjun quota name its GPU with "
                               "--resource-class pai-lingjun --gpu NAME; private instance types go in "
                               "~/.config/trainfit/catalog.yaml"))


__all__ = ["as_flags", "explain_rejection", "host_fix_options", "memory_fix_options", "no_instance_has"]



def known_regions() -> set[str]:
    """Region ids trainfit's data names anywhere: instance rows, price rows, platform rules."""
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

    close = did_you_mean(region, sorted(known))
    if close:
        return _("region {region!r} appears in no catalog row and no platform rule; did you mean {close}? (instance "
                 "types listed for other regions are rejected, those without a region list are kept)").format(
                     region=region, close=" or ".join(close))
    return _("region {region!r} appears in no catalog row and no platform rule (instance types listed for other "
             "regions are rejected, those without a region list are kept)").format(region=region)
