"""RL fine-tuning in the planner (``trainfit plan --rl grpo --steps N``): the candidates and the evaluation of one
node layout, called by :func:`trainfit.plan.search.plan` when ``request.rl`` is set.

For every candidate layout (strategy x offload x gradient checkpointing x micro-batch, fastest first) the RL
per-phase memory (:func:`trainfit.rl.memory.estimate_rl_memory`: rollout, train, weight sync) gives the verdict
over all phases through the one fit decision (:func:`trainfit.estimate.fit.decide_fit` on the binding phase's
peak and the RL host RAM, an empty KV pool being ``oom``); the first that fits is kept. Its hours are the RL
step time (:func:`trainfit.rl.speed.rl_step_speed`, the one function ``memory --rl`` calls too) x ``steps``, its cost price x instance-hours through
:func:`trainfit.plan.pricing.time_and_cost` (the cost model of ``plan/cost.py``, spot interruptions included).

Candidates are limited to layouts the launch writers of :mod:`trainfit.rl.launch` express: verl's FSDP backend
(``fsdp``, optimizer offload), ms-swift's DDP / DeepSpeed presets (``ddp``, ``zero2``, ``zero3``,
``zero2_offload``, ``zero3_offload``); without ``--rl-framework`` both. No tensor/pipeline/expert/context
parallelism (the writers emit data-parallel trainers), and the rollout engine is colocated (the engines of a
non-colocated job run on GPUs the plan would not count).

:func:`rl_plan` turns one evaluated layout into the typed :class:`~trainfit.plan.types.Plan` (also used by
:func:`trainfit.service.plan_for` for ``render MODEL --rl ...`` without a plan file).
"""

from __future__ import annotations

import math
from dataclasses import replace

from trainfit.calibration_file import load_calibrations
from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.errors import TrainfitError, WorkloadError
from trainfit.estimate.calibration import Calibrations
from trainfit.estimate.fit import SAFETY_MARGIN_DEFAULT, decide_fit
from trainfit.estimate.memory import MemoryEstimate
from trainfit.estimate.uncertainty import rl_speed_interval
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.catalog.hardware import gpu_class_of
from trainfit.plan.parts import Cost, Speed
from trainfit.plan.pricing import time_and_cost
from trainfit.plan.rank import score
from trainfit.plan.request import NearestMiss, PlanRequest, fit_rollout_tp, rl_strategies
from trainfit.plan.types import Plan, build_plan
from trainfit.rl.config import RLConfig
from trainfit.rl.memory import RLMemoryEstimate, estimate_rl_memory, estimate_with
from trainfit.rl.speed import rl_step_speed
from trainfit.rl.summary import RLSummary
from trainfit.workload import Workload

#: Largest policy-update micro-batch the search tries (as the SFT search's MAX_MICRO_BATCH).
MAX_RL_MICRO_BATCH = 16


def rl_configs(req: PlanRequest, gpn: int, nodes: int) -> list[Workload]:
    """Candidate policy-update workloads of one node layout, fastest first (micro-batch 1)."""
    rl = req.rl
    gpus = gpn * nodes
    pins = req.pins
    strategies = rl_strategies(rl.rl_framework, gpus, rl.algo)
    if "strategy" in pins:
        strategies = tuple(p for p in strategies if p[0] == pins["strategy"])
    if "offload" in pins:
        strategies = tuple(p for p in strategies if p[1] == pins["offload"])
    gcs = [pins["grad_ckpt"]] if "grad_ckpt" in pins else [False, True]
    out = []
    for s, o in strategies:
        for gc in gcs:
            try:
                out.append(req.workload.with_(gpus=gpus, gpus_per_node=gpn, strategy=s, offload=o, grad_ckpt=gc,
                                              tp=1, pp=1, ep=1, cp=1, micro_batch=1, seq_len=rl.seq_len,
                                              grad_accum=pins.get("grad_accum", 1)))
            except WorkloadError:
                continue
    return out


def memory_view(est: RLMemoryEstimate) -> MemoryEstimate:
    """The Plan's ``memory`` for an RL estimate: the policy update's estimate with ``reserved_gib`` = the binding
    phase's peak, the RL host RAM, ``peak_phase`` ``rl-<phase>`` and the binding phase's terms as the breakdown
    (they add up to the peak): exactly what the fit decision judged."""
    train = est.train
    terms = est.terms_gib.get(est.binding_phase) or {"policy_update": est.peak_gib}
    return replace(train, reserved_gib=est.peak_gib, host_ram_gib=est.host_ram_gib,
                   peak_phase=f"rl-{est.binding_phase}", breakdown_gib=dict(terms),
                   assumptions=tuple(train.assumptions) + tuple(est.assumptions))


def rl_plan(model: ModelShape, wl: Workload, rl: RLConfig, est: RLMemoryEstimate, *, gpu: GPU, usable: float,
            gpus_per_node: int, inst: Instance | None = None, steps: int | None = None, spot: bool = False, region: str | None = None,
            margin: float = SAFETY_MARGIN_DEFAULT, interruption_rate: float | None = None,
            checkpoint_interval_hours: float | None = None, rule_warnings: tuple[str, ...] = (),
            source: str = "trainfit plan", strict_speed: bool = True,
            calibrations: Calibrations | None = None) -> Plan | None:
    """One typed RL :class:`Plan` from an evaluated layout: the fit decision on :func:`memory_view`, the RL step
    time when the GPU's compute is known, with ``steps`` the hours and, on an instance type, the cost
    (:func:`trainfit.plan.pricing.time_and_cost`: price x instance-hours, spot interruptions included).
    ``strict_speed`` (the planner): a speed-model error (no compute peak or memory bandwidth in the catalog) is
    raised, so the instance type is rejected with it, and None is returned when spot interruptions outpace the
    checkpoints; otherwise (``render`` without a plan file) they become warnings. ``calibrations``: the user's
    speed calibrations (the planner reads them once per search); None reads the overlay here, where an unusable
    file is a speed-model error like the others."""
    mem = memory_view(est)
    fit = decide_fit(mem, usable_gib=usable, gpus_per_node=gpus_per_node,
                     host_ram_gib=getattr(inst, "ram_gib", None), margin=margin)
    if est.kv_shortfall is not None:
        fit = replace(fit, verdict="oom", gpu_verdict="oom", oom_probability=1.0,
                      reasons=fit.reasons + (f"{est.kv_shortfall[0]}: {est.kv_shortfall[1]}",))
    warnings = list(rule_warnings[:1]) + list(fit.reasons) + list(est.warnings) + list(rule_warnings[1:])
    sp = None
    try:
        if est.kv_shortfall is None:  # an engine that holds no sequence has no step time
            cals = load_calibrations() if calibrations is None else calibrations
            sp = rl_step_speed(model, wl, rl, est, gpu=gpu, instance=inst, calibrations=cals)
    except TrainfitError as e:
        if strict_speed:
            raise
        warnings.append(_("RL speed not estimated: {message}").format(message=e.message))
    speed, time_cost, notes = Speed(), Cost(spot=spot, region=region), ()
    if sp is not None:
        warnings += list(sp.warnings)
        seq_tokens = rl.seqs_per_step * rl.seq_len
        speed = Speed(tokens_per_s=seq_tokens / sp.step_seconds, step_seconds=sp.step_seconds,
                      framework=rl.rl_framework, speed_interval=rl_speed_interval(model, wl, gpu_class_of(gpu)))
        if steps:
            hours = sp.step_seconds * steps / 3600
            tokens = float(steps * seq_tokens)
            time_cost = Cost(tokens=tokens, hours=hours, gpu_hours=hours * wl.gpus, spot=spot, region=region)
            if inst is not None:
                tc = time_and_cost(inst=inst, hours=hours, gpus=wl.gpus, trainable_params=est.train.params.trainable,
                                   nodes=wl.nodes, spot=spot, region=region, interruption_rate=interruption_rate,
                                   checkpoint_interval_hours=checkpoint_interval_hours,
                                   speed_interval=speed.speed_interval, tokens=tokens)
                if not tc.feasible and strict_speed:
                    return None
                time_cost = tc.part
                notes = tc.notes
                warnings += list(tc.warnings)
    return build_plan(model=model, workload=wl, gpu=gpu, usable_gib=usable, inst=inst, gpus_per_node=gpus_per_node,
                      nodes=wl.nodes, memory=mem, fit=fit, speed=speed, time_cost=time_cost,
                      rl=RLSummary.of(rl, est, steps=steps, speed=sp), notes=tuple(notes),
                      warnings=tuple(dict.fromkeys(warnings)), source=source)


def rl_candidates(req: PlanRequest, gpn: int) -> list[list[RLConfig]]:
    """The RL settings one node layout of ``gpn`` GPUs per node is evaluated with, grouped by rollout TP, smallest
    first: the request's, with each setting of :data:`trainfit.plan.request.RL_SEARCHED` the user left unset (``req.rl_searched``)
    varied: rollout tensor-parallel sizes that divide the node's GPUs and the model's attention heads (vLLM splits
    the heads over TP ranks; an engine sits inside one node), and the trainer offloaded to host RAM during
    rollout or not. A rollout TP the user set that does not divide the node is lowered (:func:`fit_rollout_tp`)."""
    rl = req.rl
    searched = req.rl_searched
    if not rl.has_rollout:
        return [[rl]]
    if "rollout_tp" in searched:
        tps = [t for t in (1, 2, 4, 8, 16) if t <= gpn and gpn % t == 0 and req.model.num_heads % t == 0]
    else:
        tps = [fit_rollout_tp(rl, gpn)[0].rollout_tp]
    offs = [rl.trainer_offload]
    if "trainer_offload" in searched and rl.colocate:
        offs = [False, True]
    return [[rl.with_(rollout_tp=tp, trainer_offload=off) for off in offs] for tp in tps]


def evaluate_rl_layout(req: PlanRequest, *, inst: Instance, gpu: GPU, gpn: int, nodes: int, usable: float,
                       miss: NearestMiss, rule_warnings: tuple[str, ...] = (), precision: str | None = None,
                       calibrations: Calibrations | None = None) -> Plan | None:
    """The best RL plan of one node layout of one instance type (None when nothing fits; ``miss`` records the
    closest miss for the rejection). RL settings of :func:`rl_candidates`, each with its first fitting trainer
    layout: the rollout TP is the smallest whose KV pool holds one group of ``num_generations`` sequences (else
    the smallest that fits at all): more engines beat larger ones when memory allows (verl's performance tuning
    guide, docs/perf/perf_tuning.rst: "use a smaller tensor_parallel_size"; the decode model does not charge the
    TP all-reduce, so it cannot rank TP sizes itself); at that TP, trainer offload on or off, whichever ranks
    first (:func:`trainfit.plan.rank.score`). ``precision``: what the SFT planner would train in on this GPU
    (fp16 where it has no bf16), which the RL writers cannot express: such GPUs are rejected."""
    if precision is not None and precision != req.workload.precision:
        # the SFT planner would train in fp16 here (no bf16 on this GPU); verl and ms-swift RL launches run bf16
        miss.other = ("precision", _("{gpu} has no bf16; the RL launch files train and generate in bf16").format(
                          gpu=gpu.name),
                      _("a GPU with bf16 (A10, L20, A100, H100...)"))
        return None
    fallback: Plan | None = None
    for group in rl_candidates(req, gpn):
        best: tuple[tuple, Plan] | None = None
        for rl in group:
            warn = tuple(rule_warnings)
            if rl.rollout_tp != req.rl.rollout_tp and "rollout_tp" not in req.rl_searched:
                warn = (fit_rollout_tp(req.rl, gpn)[1],) + warn
            p = _evaluate_rl_setting(req, rl, inst=inst, gpu=gpu, gpn=gpn, nodes=nodes, usable=usable, miss=miss,
                                     rule_warnings=warn, calibrations=calibrations)
            if p is not None and (best is None or score(req, p) < best[0]):
                best = (score(req, p), p)
        if best is None:
            continue
        seqs = None if best[1].rl is None else best[1].rl.max_concurrent_seqs
        if seqs is None or seqs >= req.rl.num_generations:
            return best[1]
        fallback = fallback or best[1]
    return fallback


def _evaluate_rl_setting(req: PlanRequest, rl: RLConfig, *, inst: Instance, gpu: GPU, gpn: int, nodes: int,
                         usable: float, miss: NearestMiss, rule_warnings: tuple[str, ...],
                         calibrations: Calibrations | None) -> Plan | None:
    """The plan of one RL setting on one node layout: every trainer candidate that fits, each with the largest
    micro-batch that fits, timed; the one that ranks first (:func:`trainfit.plan.rank.score`) is kept."""
    best_plan: tuple[tuple, Plan] | None = None

    model = req.model
    limit = usable * (1 - req.memory_margin)

    def est_of(w: Workload) -> RLMemoryEstimate:
        return estimate_rl_memory(model, w, rl, usable, strict=False, host_ram_gib=inst.ram_gib,
                                  margin=req.memory_margin)

    def ok(e: RLMemoryEstimate) -> bool:
        return e.verdict not in ("oom", "tight")

    for wl in rl_configs(req, gpn, nodes):
        if rl.trainer_offload and wl.strategy == "fsdp" and wl.offload != "none":
            # verl writes both as fsdp_config.param_offload/optimizer_offload: the file cannot tell them apart and
            # reads back as the trainer offload alone (rl/launch.py parse_verl), so that is the one candidate
            continue
        cap = req.pins.get("micro_batch")
        if cap is None:
            cap = max(1, min(MAX_RL_MICRO_BATCH, math.ceil(rl.seqs_per_step / wl.dp)))
            b = 1
        else:
            b = cap
        w1 = wl._with_batch(b, wl.grad_accum)
        e1 = est_of(w1)
        if not ok(e1):
            if e1.peak_gib > limit:
                if e1.peak_gib < miss.need_gib:
                    miss.need_gib, miss.need_wl = e1.peak_gib, w1
            elif e1.kv_shortfall is not None:
                opts = _kv_fix_options(req, w1, rl, gpn, usable, inst)
                miss.other = ("kv-pool", *e1.kv_shortfall, opts)
            elif e1.fit.get("host_verdict") in ("oom", "tight"):
                miss.host = (e1.host_ram_gib, inst.ram_gib)
            continue
        best = (w1, e1)
        b *= 2
        while b <= cap and "micro_batch" not in req.pins:
            w2 = wl._with_batch(b, wl.grad_accum)
            e2 = est_of(w2)
            if not ok(e2):
                break
            best = (w2, e2)
            b *= 2
        w, e = best
        p = rl_plan(model, w, rl, e, gpu=gpu, usable=usable, gpus_per_node=gpn, inst=inst, steps=req.steps,
                    spot=req.spot, region=req.region, margin=req.memory_margin,
                    interruption_rate=req.interruption_rate_per_node_hour,
                    checkpoint_interval_hours=req.checkpoint_interval_hours, rule_warnings=rule_warnings,
                    calibrations=calibrations)
        if p is None:
            miss.other = ("spot-infeasible", _("spot interruptions come faster than checkpoints save the work"),
                          _("drop --spot or use fewer nodes"), ({"spot": False},))
            continue
        if best_plan is None or score(req, p) < best_plan[0]:
            best_plan = (score(req, p), p)
    return best_plan[1] if best_plan else None


def _kv_fix_options(req: PlanRequest, w: Workload, rl: RLConfig, gpn: int, usable: float,
                    inst: Instance) -> tuple[dict[str, float], ...]:
    """The KV-pool fixes checked with the RL memory model: a larger engine share or tensor-parallel size."""
    def works(**changes: float) -> bool:
        e = estimate_with(req.model, w, rl, usable, changes, host_ram_gib=inst.ram_gib, margin=req.memory_margin)
        return e is not None and e.verdict not in ("oom", "tight") and (e.max_concurrent_seqs is None
                                                                       or e.max_concurrent_seqs >= 1)

    out: list[dict[str, float]] = []
    for util in (0.6, 0.7, 0.8, 0.9):
        if util > (rl.rollout_util or 0) and works(rollout_util=util):
            out.append({"rollout_util": util})
            break
    tp = rl.rollout_tp * 2
    while tp <= gpn:
        if gpn % tp == 0 and works(rollout_tp=tp):
            out.append({"rollout_tp": tp})
            break
        tp *= 2
    return tuple(out)


__all__ = ["MAX_RL_MICRO_BATCH", "evaluate_rl_layout", "fit_rollout_tp",
           "memory_view", "rl_candidates", "rl_configs", "rl_plan", "rl_strategies"]
