"""The planner: which instance type, how many nodes, which settings — ranked, with every rejection
explained.

For a :class:`PlanRequest` it searches instance types (catalog, filtered by provider / region / GPU) x
node counts x strategies (DDP, ZeRO-1/2/3, FSDP, CPU offload, expert parallelism for MoE) x gradient
checkpointing x micro-batch, keeps what fits GPU memory (``reserved_gib`` plus a safety margin) and host
RAM, estimates speed (``estimate/speed.py``), time and cost (``cost.py``), applies the platform rules
(``platforms/rules.py``), and ranks them on one basis (``rank.py``). Per instance type it keeps the best configuration;
instance types with no feasible configuration are returned as rejections with a code, a reason and a fix.

Pure: no I/O beyond the lazily loaded bundled catalog; no torch.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from trainfit.calibration_file import load_calibrations
from trainfit.catalog.gpus import GPU, assumed_note, get_gpu, is_model, sized_gpu
from trainfit.catalog.instances import Instance, get_instance, list_instances
from trainfit.errors import TrainfitError, WorkloadError
from trainfit.estimate.calibration import Calibrations
from trainfit.estimate.fit import FitDecision, decide_fit
from trainfit.estimate.hardware import kernel_gaps
from trainfit.estimate.memory import MemoryEstimate
from trainfit.estimate.speed import estimate_speed, training_time
from trainfit.estimate.uncertainty import plan_speed_interval
from trainfit.i18n import _, current, language
from trainfit.targets import search_reason, speed_framework, target_spec
from trainfit.models.shapes import ModelShape
from trainfit.plan.explain import explain_rejection as _explain, no_instance_has, unknown_region_note as _region_note
from trainfit.catalog.hardware import gpu_class_of, hardware_for
from trainfit.plan.layout_fit import Limit as _Limit, fit_layout as _fit_layout
from trainfit.plan.limits import SLOW_NETWORK_COMM_SHARE, layouts_for, precision_for, slow_network, within_limits
from trainfit.plan.pricing import region_notes, region_prices, time_and_cost
from trainfit.plan.rank import pareto as _pareto, rank as _rank, score as _score
from trainfit.plan.request import NearestMiss, PlanRequest
from trainfit.plan.rl import evaluate_rl_layout
from trainfit.plan.parts import Speed
from trainfit.plan.types import Plan, PlanResult, Rejection, build_plan
from trainfit.rules import evaluate_instance, get_rule
from trainfit.workload import Workload, check_layout, layout_error

#: Strategies in order of expected speed (fastest first) for one GPU and for several.
_SINGLE = (("ddp", "none"), ("zero2", "optimizer"), ("zero3", "all"))
_MULTI = (("ddp", "none"), ("zero1", "none"), ("zero2", "none"), ("fsdp", "none"), ("zero3", "none"),
          ("zero1", "optimizer"), ("zero3", "optimizer"), ("zero3", "all"), ("fsdp", "all"))
#: What Megatron (tp/pp/ep/cp > 1) can run: plain data parallel, or its distributed optimizer (= ZeRO-1), with
#: optional optimizer CPU offload.
_MEGATRON = (("ddp", "none"), ("zero1", "none"), ("zero1", "optimizer"))


# ------------------------------------------------------------------------------------------ search
def _instances(req: PlanRequest) -> list[Instance]:
    out = []
    spec = target_spec(req.target) if req.target else None
    only = spec.provider if spec is not None else None
    for inst in list_instances():
        if req.provider and inst.provider.lower() != req.provider.lower():
            continue
        if req.resource_class and inst.resource_class != req.resource_class:
            continue
        if req.instance_type and inst.instance_type.lower() != req.instance_type.lower():
            continue
        if only is not None and inst.provider != only:
            continue  # a platform target's job runs on its provider's instance types only (PAI-DLC: Alibaba PAI)
        out.append(inst)
    if req.instance_type and not out:
        out.append(get_instance(req.instance_type))  # raises with "did you mean"
    return out


def _gpu_of(inst: Instance) -> GPU | None:
    try:
        g = inst.gpu_spec
        return g() if callable(g) else g
    except TrainfitError:  # an unknown GPU reference is a rejection, not a crash
        return None


def _configs(req: PlanRequest, model: ModelShape, gpn: int, nodes: int,
             precision: str | None = None) -> tuple[list[Workload], WorkloadError | None]:
    """Candidate workloads for one node layout, fastest strategies first, each valid under the one layout rule
    (``workload.layout_error``); when none is, the first rule broken (what ``memory`` says for that layout)."""
    base = req.workload if precision is None else req.workload.with_(precision=precision)
    pins = req.pins
    gpus = gpn * nodes
    strategies = _SINGLE if gpus == 1 else _MULTI
    if "strategy" in pins:
        strategies = tuple((s, o) for s, o in strategies if s == pins["strategy"]) or ((pins["strategy"], "none"),)
    if "offload" in pins:
        # de-duplicated in order (a set would make the fastest-first order depend on the hash seed)
        strategies = tuple(dict.fromkeys((s, pins["offload"]) for s, _o in strategies))
    eps = [pins.get("ep", 1)]
    if "ep" not in pins and model.is_moe and gpus >= 8 and base.method == "full":
        for e in (gpn, gpus):
            if e > 1 and model.num_experts % e == 0 and e not in eps:
                eps.append(e)
    mp_pinned = max(pins.get("tp", 1), pins.get("pp", 1), pins.get("cp", 1)) > 1
    gcs = [pins["grad_ckpt"]] if "grad_ckpt" in pins else [False, True]
    out = []
    errors: list[WorkloadError] = []
    for s, o in strategies:
        for ep in eps:
            if (ep > 1 or mp_pinned) and (s, o) not in _MEGATRON and "strategy" not in pins:
                continue  # Megatron layouts shard optimizer states only (distributed optimizer)
            for gc in gcs:
                kw = dict(gpus=gpus, gpus_per_node=gpn, strategy=s, offload=o, grad_ckpt=gc, ep=ep,
                          tp=pins.get("tp", 1), pp=pins.get("pp", 1), cp=pins.get("cp", 1), micro_batch=1,
                          grad_accum=pins.get("grad_accum", 1))
                try:
                    w = base.with_(**kw)
                    check_layout(w, model)
                except WorkloadError as e:
                    # the layout rule with the model's shape first (an expert count ep cannot split is the cause
                    # whatever the GPU count), else the Workload's own complaint
                    errors.append(layout_error(SimpleNamespace(**{**base.__dict__, **kw}), model) or e)
                    continue
                out.append(w)
    return out, (errors[0] if errors and not out else None)


def _for_target(req: PlanRequest, configs: list[Workload], miss: NearestMiss) -> list[Workload]:
    """The candidates ``req.target`` writes (with the engine an explicit ``--framework`` names); when none is
    left, why, as the instance's nearest miss. ``--framework megatron`` without a target keeps the layouts
    Megatron runs (data parallel or its distributed optimizer, with optional optimizer offload)."""
    if req.target is None:
        if req.framework == "megatron":
            return [w for w in configs if (w.strategy, w.offload) in _MEGATRON]
        return configs

    reasons = [search_reason(req.target, req.framework, w) for w in configs]
    kept = [w for w, why in zip(configs, reasons) if why is None]
    if configs and not kept and miss.other is None:
        miss.other = ("target", _("--target {target} writes none of the layouts that fit here: {why}").format(
                          target=req.target, why=reasons[0]),
                      _("drop --target (or --framework), or pin a layout the target writes"),
                      ({"target": None, "framework": None},))
    return kept


def plan(req: PlanRequest, *, calibrations: Calibrations | None = None) -> PlanResult:
    """Search, evaluate and rank (see module docstring). Every candidate is timed with the user's speed
    ``calibrations`` (read from the overlay once for the search when not given)."""
    cals = load_calibrations() if calibrations is None else calibrations
    # the language every message of the search is written in, read from the environment once (not per message)
    with language(current()):
        return _plan(req, cals)


def _plan(req: PlanRequest, cals: Calibrations) -> PlanResult:
    gpu_filter = None
    if req.gpu:
        gpu_filter = get_gpu(req.gpu)
    plans: list[Plan] = []
    rejected: list[Rejection] = []
    config_cache: dict[tuple[int, int], list[Workload]] = {}
    for inst in _instances(req):
        try:
            got = _instance_gpu(req, inst, gpu_filter)
            if got is None:
                continue
            if isinstance(got, Rejection):
                rejected.append(got)
                continue
            gpu, stated = got
            layouts = layouts_for(req, inst)
            if isinstance(layouts, Rejection):
                rejected.append(layouts)
                continue
            best, miss = _best_on_instance(req, inst, gpu, stated, layouts, config_cache, cals)
            if best is not None:
                plans.append(best)
            else:
                rejected.append(_explain(inst, gpu, gpu.usable_mem_gib * (1 - req.memory_margin), miss, req))
        except TrainfitError as e:
            rejected.append(Rejection(instance_type=inst.instance_type, provider=inst.provider, code=e.code,
                                      reason=e.message, fix=e.fix))
    if not plans and not rejected and gpu_filter is not None:
        no_instance_has(req, gpu_filter, _instances(req))
    if req.target is not None:  # the plan records the launcher it was planned for (render writes it)
        plans = [replace(p, target=req.target) for p in plans]
    if req.data is not None:  # the plan records the data it was planned from (render counts its steps with it)
        plans = [replace(p, data=req.data) for p in plans]
    plans, ranking = _rank(req, plans)
    note = _region_note(req.region) if req.region else None
    notes = ((note,) if note else ()) + tuple(region_notes(req.region, [p.placement.instance for p in plans]))
    return PlanResult(request=req, plans=tuple(plans), rejected=tuple(rejected), pareto=_pareto(plans), notes=notes,
                      region_prices=tuple(region_prices(plans)) if req.compare_regions else (), ranking=ranking)


def _instance_gpu(req: PlanRequest, inst: Instance, gpu_filter: GPU | None) -> tuple[GPU, str] | Rejection | None:
    """(GPU record, note) of an instance; a Rejection when it cannot be planned; None when --gpu filters it out.

    ``--gpu`` selects rows with that GPU. A GPU *model* (one with its own published figures) may also stand for a
    row whose GPU no public source names: a code without memory (GU108; only with ``--resource-class``, as the
    console shows it) or a part known only by its memory, when the model has that memory (only with
    ``--provider`` or ``--resource-class``: a bare ``--gpu H200`` asks for H200s, it says nothing about gn8e).
    A code (``--gpu GU108``) selects rows of that code only and never relabels another. ``--gpu-mem`` sizes rows
    whose GPU memory is unknown; their speed figures are then assumed from a named class. Every such substitution
    is stated."""
    it = inst.instance_type
    gpu = _gpu_of(inst)
    stated = ""
    if gpu_filter is not None and gpu is not None and gpu.name != gpu_filter.name and is_model(gpu_filter) \
            and inst.gpu_count and not is_model(gpu):
        if gpu.mem_gib is None and req.resource_class:
            # the user says which GPU this resource class has (e.g. what the PAI console shows for a Lingjun quota)
            stated = _("GPU of {it} ({code}) is not publicly documented: planned as {gpu} because you passed "
                       "--gpu {arg}").format(it=it, code=inst.gpu, gpu=gpu_filter.name, arg=req.gpu)
            gpu = gpu_filter
        elif gpu.mem_gib is not None and gpu.mem_gib == gpu_filter.mem_gib and gpu.assumed \
                and (req.provider or req.resource_class):  # scoped to a provider: the user read its console
            stated = _("GPU of {it} ({code}, {gib:g} GiB, model not published): planned as {gpu} because you "
                       "passed --gpu {arg}").format(it=it, code=inst.gpu, gib=gpu.mem_gib, gpu=gpu_filter.name,
                                                    arg=req.gpu)
            gpu = gpu_filter
    elif gpu is None and gpu_filter is not None and inst.gpu_count and req.resource_class and is_model(gpu_filter):
        stated = _("GPU of {it} (not named) is not publicly documented: planned as {gpu} because you passed "
                   "--gpu {arg}").format(it=it, gpu=gpu_filter.name, arg=req.gpu)
        gpu = gpu_filter
    if gpu is None or not inst.gpu_count:
        if gpu_filter is not None and not req.instance_type:
            return None  # cannot tell whether it has the requested GPU
        return Rejection(instance_type=it, provider=inst.provider, code="unknown-gpu",
                         reason=_("GPU model or count of {it} is not in the catalog").format(it=it),
                         fix=_("add gpu and gpu_count for it in ~/.config/trainfit/catalog.yaml, or with "
                               "--resource-class pass --gpu NAME (what your console shows)"))
    if gpu_filter is not None and gpu.name != gpu_filter.name:
        return None
    if req.region and inst.regions and req.region not in inst.regions:
        return Rejection(instance_type=it, provider=inst.provider, code="region",
                         reason=_("not listed in region {region} (listed: {listed})").format(
                             region=req.region, listed=", ".join(inst.regions)),
                         fix=_("drop --region or pick one of the listed regions"),
                         fix_options=({"region": None}, {"region": inst.regions[0]}))
    gpu = sized_gpu(gpu, req.gpu_mem_gib)  # a code sized by --gpu-mem gets a named class's speed, said
    if gpu.mem_gib is None:
        return Rejection(instance_type=it, provider=inst.provider, code="unknown-gpu-memory",
                         reason=_("memory of {gpu} is unknown (no public source maps it)").format(gpu=gpu.name),
                         fix=_("pass --gpu-mem GIB (the GPU memory your console shows for {gpu}), set mem_gib "
                               "for it in the catalog overlay, `trainfit catalog refresh --provider pai`, or with "
                               "--resource-class pass --gpu NAME").format(gpu=gpu.name))
    note = assumed_note(gpu)
    stated = "; ".join(x for x in (stated, note) if x)
    gaps = kernel_gaps(req.workload.attention, gpu_class_of(gpu), gpu.name)
    if gaps:  # `check` would refuse every file rendered from it (rule kernel-support)
        return Rejection(instance_type=it, provider=inst.provider, code="kernel-support", reason=gaps[0],
                         fix=_("--attention sdpa, or a GPU that runs the kernel (FlashAttention-3: H800 / H100 / "
                               "H200 / H20; FlashAttention-2: Ampere or newer)"),
                         fix_options=({"attention": "sdpa"},))
    if (req.rl is None and req.workload.precision in ("bf16", "amp-bf16") and gpu.bf16_dense_tflops is None
            and not (req.allow_fp16 or req.gpu or req.instance_type)):
        # (RL: the RL writers train and generate in bf16 only, rejected as `precision` in plan/rl.py)
        return Rejection(instance_type=it, provider=inst.provider, code="no-bf16",
                         reason=_("{gpu} has no bf16: Qwen3 is trained in bf16, and fp16 mixed precision (the only "
                                  "16-bit mode here) can overflow (max 65,504) where bf16 does not").format(gpu=gpu.name),
                         fix=_("--allow-fp16 to plan it in fp16 mixed precision, --gpu {gpu} to pin it, or a GPU "
                               "with bf16 (A10, L20, A100, H100...)").format(gpu=gpu.name),
                         fix_options=({"allow_fp16": True},))
    return gpu, stated


def _best_on_instance(req: PlanRequest, inst: Instance, gpu: GPU, stated: str, layouts: list[tuple[int, int]],
                      config_cache: dict, cals: Calibrations) -> tuple[Plan | None, NearestMiss]:
    """The best plan on one instance type over its layouts, and the closest miss when none fits."""
    miss = NearestMiss()
    best: tuple[tuple, Plan] | None = None
    limit = _Limit(gib=gpu.usable_mem_gib * (1 - req.memory_margin))
    sure = _Limit.below_oom_risk(gpu.usable_mem_gib, limit.gib)  # first below the P(OOM) limit, then the verdict's
    precision, prec_note = precision_for(req, gpu)
    if prec_note:
        stated = "; ".join(x for x in (stated, prec_note) if x)
    for gpn, nodes in layouts:
        all_v = [v for v in evaluate_instance(inst, nodes=nodes, gpus=gpn, spot=req.spot, region=req.region)
                 if v.rule not in req.ignore_rules]
        viol = [v for v in all_v if v.severity == "error" or get_rule(v.rule).plan_blocks]
        if viol:
            miss.rule = miss.rule or viol[0]
            continue
        if req.rl is not None:  # RL fine-tuning: per-phase memory, RL step time x steps (plan/rl.py)
            warn = ((stated,) if stated else ()) + tuple(f"{v.rule}: {v.message}" for v in all_v
                                                         if v.severity == "warning")
            p = evaluate_rl_layout(req, inst=inst, gpu=gpu, gpn=gpn, nodes=nodes, usable=gpu.usable_mem_gib,
                                   miss=miss, rule_warnings=warn, precision=precision, calibrations=cals)
            if p is not None and within_limits(req, p, miss):
                score = _score(req, p)
                if best is None or score < best[0]:
                    best = (score, p)
            continue
        key = (gpn, nodes, precision)
        if key not in config_cache:
            config_cache[key] = _configs(req, req.model, gpn, nodes, precision)
        rule_warnings = tuple(f"{v.rule}: {v.message}" for v in all_v if v.severity == "warning")
        configs, layout_err = config_cache[key]
        if layout_err is not None and miss.layout is None:
            miss.layout = layout_err
        cands = _for_target(req, configs, miss)
        fitted = _fit_layout(req, cands, sure, miss, inst) if sure.gib < limit.gib else []
        for wl, est in fitted or _fit_layout(req, cands, limit, miss, inst):
            fit = decide_fit(est, usable_gib=gpu.usable_mem_gib, gpus_per_node=gpn, host_ram_gib=inst.ram_gib,
                             margin=req.memory_margin)
            if fit.verdict in ("oom", "tight"):
                if fit.host_verdict in ("oom", "tight"):
                    miss.host = (est.host_ram_gib, inst.ram_gib)
                    miss.host_wl = wl
                elif est.reserved_gib < miss.need_gib:  # the GPU verdict (not the raw reserve) refused it
                    miss.need_gib, miss.need_wl = est.reserved_gib, wl
                continue
            p = _evaluate(req, inst, gpu, gpn, nodes, wl, est, fit, ((stated,) if stated else ()) + rule_warnings,
                          cals, miss)
            if p is None or not within_limits(req, p, miss):
                continue
            score = _score(req, p)
            if best is None or score < best[0]:
                best = (score, p)
    return (best[1] if best else None), miss


def _evaluate(req: PlanRequest, inst: Instance, gpu: GPU, gpn: int, nodes: int, wl: Workload, est: MemoryEstimate,
              fit: FitDecision, warnings: tuple[str, ...], cals: Calibrations,
              miss: NearestMiss | None = None) -> Plan | None:
    """Speed, time and cost of one fitting configuration, as a typed Plan; None when its spot run cannot finish or
    its network is too slow (:data:`SLOW_NETWORK_COMM_SHARE`, recorded in ``miss``)."""
    framework = speed_framework(req.framework, req.target, wl)
    hw = hardware_for(gpu, inst, gpus_per_node=gpn)
    sp = estimate_speed(req.model, wl, hw, framework=framework, calibrations=cals)
    slow = slow_network(inst, nodes, sp)
    if slow is not None and "slow-network" not in req.ignore_rules:
        if miss is not None:
            miss.other = slow
        return None
    tt = training_time(sp, req.tokens)
    siv = plan_speed_interval(req.model, wl, sp.framework, hw.gpu_class)
    tc = time_and_cost(inst=inst, hours=tt.hours, gpus=wl.gpus, trainable_params=est.params.trainable, nodes=nodes,
                       spot=req.spot, region=req.region, interruption_rate=req.interruption_rate_per_node_hour,
                       checkpoint_interval_hours=req.checkpoint_interval_hours, speed_interval=siv, tokens=req.tokens)
    if not tc.feasible:
        if miss is not None:
            miss.other = ("spot-infeasible", _("spot interruptions on {nodes} node(s) come faster than checkpoints "
                                               "save the work").format(nodes=nodes),
                          _("drop --spot, use fewer nodes, or a lower --checkpoint-interval"),
                          ({"spot": False},))
        return None
    return build_plan(model=req.model, workload=wl, gpu=gpu, usable_gib=gpu.usable_mem_gib, inst=inst,
                      gpus_per_node=gpn, nodes=nodes, memory=est, fit=fit,
                      speed=Speed.of(sp, siv),
                      time_cost=tc.part, notes=tc.notes,
                      warnings=warnings[:1] + tuple(fit.reasons) + _batch_warning(req, wl) + tuple(sp.warnings)
                      + tc.warnings + warnings[1:])


def _batch_warning(req: PlanRequest, wl: Workload) -> tuple[str, ...]:
    """A plan whose global batch stays below the planner's target (accumulating gradients does not fit)."""
    gb = req.target_global_batch
    if not gb or wl.global_batch >= gb:
        return ()
    return (_("global batch {gb} ({tokens:,} tokens per step) is below the planned {target} ({target_tokens:,}): "
              "accumulating gradients does not fit in memory with this layout (docs/launch.md, Global batch)").format(
                  gb=wl.global_batch, tokens=wl.global_batch * wl.seq_len, target=gb, target_tokens=gb * wl.seq_len),)


#: ``PlanRequest`` (:mod:`trainfit.plan.request`) and the network limit (:mod:`trainfit.plan.limits`) are read from
#: here too.
__all__ = ["SLOW_NETWORK_COMM_SHARE", "PlanRequest", "plan"]
