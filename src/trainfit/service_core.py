"""The core of :mod:`trainfit.service`: every command's logic as functions over typed values (the list is in that
module's docstring). Below :mod:`trainfit.service_commands` and :mod:`trainfit.service_web`, which call these; import
them from :mod:`trainfit.service`, which gathers them with the web adapters."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from trainfit.calibration_file import load_calibrations
from trainfit.errors import InputError, PlanFileError, UnknownGPUError, WorkloadError, RenderError, SubmitError
from trainfit.estimate.fit import OOM_RISK_LIMIT, SAFETY_MARGIN_DEFAULT, FitAnswer, decide_fit, fit_answer
from trainfit.estimate.memory import MemoryEstimate, estimate_memory
from trainfit.estimate.uncertainty import headroom_range, memory_range, plan_speed_interval
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.rl.config import RLConfig
from trainfit.rl.report import RLMemoryReport, rl_report
from trainfit.workload import Workload
from trainfit.catalog.gpus import GPU, get_gpu, assumed_note, sized_gpu
from trainfit.catalog.instances import Instance, get_instance, gpu_on_instance
from trainfit.plan.parts import Cost, Speed
from trainfit.plan.types import Plan, PlanResult, build_plan, plans_from_document
from trainfit.json_types import JSON, JSONObject
from trainfit.dataset.budget import DataBudget
from trainfit.providers.registry import rents_whole_nodes
from trainfit import inputs
from trainfit.check import check_file as _check
from trainfit.dataset import stats_or_scan
from trainfit.estimate.hardware import kernel_gaps
from trainfit.estimate.speed import estimate_speed, training_time
from trainfit.inputs import check_depth, loads_json, read_text_file
from trainfit.launch import build_context, render, write
from trainfit.targets import check_target, speed_framework, plan_targets
from trainfit.models import from_hf_config, get_model, load_config_path
from trainfit.catalog.hardware import gpu_class_of, precision_on, hardware_for
from trainfit.plan.rl import fit_rollout_tp, rl_plan
from trainfit.plan.search import plan
from trainfit.providers.alibaba.submit import SubmitResult, job_target, load_job, resolve_region, submit
from trainfit.rl.memory import estimate_rl_memory

if TYPE_CHECKING:
    from trainfit.check import CheckResult
    from trainfit.launch import RenderOptions, RenderResult
    from trainfit.plan.search import PlanRequest

#: Largest plan file read (a plan of every catalog row is far below).
MAX_PLAN_BYTES = 8 * 2**20


# ---------------------------------------------------------------------------------------------- model

def resolve_model(name: str | None = None, *, config: str | Path | Mapping[str, JSON] | None = None) -> ModelShape:
    """A registry model by name, or any supported config (a path to config.json / a model folder, or the parsed
    dict, e.g. pasted into the web page)."""
    if config is not None:
        if isinstance(config, Mapping):
            check_depth(config, what="config.json")
            return from_hf_config(config, name=str(config.get("_name_or_path") or "custom"), source="pasted config")
        return load_config_path(config)
    if not name:
        raise WorkloadError(_("no model given"), fix=_("name one (e.g. Qwen3-8B) or pass --config PATH"))
    return get_model(name)


# --------------------------------------------------------------------------------------------- memory

@dataclass(frozen=True, kw_only=True)
class MemoryReport:
    """What ``trainfit memory`` reports."""

    model: ModelShape
    workload: Workload
    estimate: MemoryEstimate
    gpu: str | None = None
    """Canonical GPU name, when a GPU was named."""
    usable_gib: float | None = None
    """Usable memory of that GPU (or ``--gpu-mem``); None = no fit question asked."""
    host_ram_gib: float | None = None
    answer: FitAnswer | None = None
    warnings: tuple[str, ...] = ()
    """What the named GPU cannot run whatever the memory (``--attention flash3`` off Hopper): the kernel gate that
    ``plan`` reports as a warning and ``trainfit check`` as a ``kernel-support`` error."""
    data: DataBudget | None = None
    """``memory --dataset``: the :class:`~trainfit.dataset.budget.DataBudget` whose longest row the memory is sized
    at (``workload.seq_len``)."""

    def to_dict(self) -> JSONObject:
        out = self.estimate.to_dict()
        if self.data is not None:
            out["data"] = {**self.data.to_dict(), "sized_at": self.data.memory_note()}
        out["workload"] = self.workload.to_dict()
        out["reserved_interval_gib"] = memory_range(self.estimate.reserved_gib)
        out.update({"gpu": self.gpu, "gpu_mem_gib": self.usable_gib, "host_ram_node_gib": self.host_ram_gib,
                    "verdict": None, "fits": None, "fit": None, "headroom_gib": None, "max_micro_batch": None,
                    "max_seq_len": None, "suggestions": [], "warnings": list(self.warnings)})
        if self.answer is not None:
            a = self.answer
            out.update({"verdict": a.decision.verdict, "fits": a.decision.fits, "fit": a.decision.to_dict(),
                        "headroom_gib": round(a.decision.headroom_gib, 2),
                        "headroom_interval_gib": headroom_range(self.usable_gib, self.estimate.reserved_gib),
                        "max_micro_batch": a.max_micro_batch,
                        "max_seq_len": a.max_seq_len, "suggestions": [s.to_dict() for s in a.suggestions],
                        "oom_risk_limit": OOM_RISK_LIMIT})
        return out


def gpu_usable_gib(gpu: str) -> tuple[str, float]:
    """(canonical name, usable GiB) of a catalog GPU; UnknownGPUError when unknown or its memory is unknown."""
    g = get_gpu(gpu)
    if g.usable_mem_gib is None:
        raise UnknownGPUError(_("the catalog does not know the memory of {gpu}").format(gpu=g.name),
                              fix=_("pass --gpu-mem GIB"))
    return g.name, g.usable_mem_gib


def memory_report(model: ModelShape, workload: Workload, *, gpu: str | None = None, gpu_mem_gib: float | None = None,
                  host_ram_gib: float | None = None, instance_type: str | None = None,
                  margin: float = SAFETY_MARGIN_DEFAULT, data: DataBudget | None = None) -> MemoryReport:
    """Memory by term and, with a GPU (name, ``gpu_mem_gib`` or an instance type), the one fit verdict. With
    ``data`` (``memory --dataset``: a :class:`~trainfit.dataset.budget.DataBudget`) the sequence is the data's
    longest row (:attr:`~trainfit.dataset.budget.DataBudget.longest_gib_len`): the cut-off with packing, the longest
    sample after the cut without."""
    if data is not None:
        workload = replace(workload, seq_len=data.longest_gib_len)
    est = estimate_memory(model, workload)
    name, usable = None, None
    if instance_type:
        inst = get_instance(instance_type)
        gpu = gpu_on_instance(inst, gpu)
        if host_ram_gib is None:
            host_ram_gib = inst.ram_gib
    warnings: list[str] = []
    if gpu:
        g = sized_gpu(get_gpu(gpu), gpu_mem_gib)  # a code without memory (GU108) takes --gpu-mem, as in plan
        name, usable = gpu_usable_gib(g)
        prec, note = precision_on(g, workload.precision)  # no bf16 (V100, T4): fp16, as plan does, and say so
        if prec is not None:
            workload = replace(workload, precision=prec)
            est = estimate_memory(model, workload)
            warnings.append(note)
        warnings += kernel_gaps(workload.attention, gpu_class_of(g), name)
        if note := assumed_note(g):  # sized by memory, speed figures assumed from a named class
            warnings.append(note)
    if gpu_mem_gib is not None:
        usable = gpu_mem_gib
    answer = None
    if usable is not None:
        answer = fit_answer(model, workload, usable, estimate=est, host_ram_gib=host_ram_gib, margin=margin)
    return MemoryReport(model=model, workload=workload, estimate=est, gpu=name, usable_gib=usable,
                        host_ram_gib=host_ram_gib, answer=answer, warnings=tuple(warnings), data=data)


def rl_memory_report(model: ModelShape, workload: Workload, rl: RLConfig, *, gpu: str | None = None,
                     gpu_mem_gib: float | None = None, host_ram_gib: float | None = None,
                     instance_type: str | None = None, steps: int | None = None,
                     margin: float | None = None) -> RLMemoryReport:
    """RL sizing of ``rl`` around the policy update ``workload`` on a GPU (name, ``gpu_mem_gib`` or an instance
    type): memory per phase and the one verdict over all phases; with a catalog GPU also the step time and, with
    ``steps``, the hours. A KV pool below one sequence is the verdict ``oom`` with the reason and its fix, as
    every other non-fit."""
    gpu_rec = None
    inst = None
    if instance_type:
        inst = get_instance(instance_type)
        gpu = gpu_on_instance(inst, gpu)
        if host_ram_gib is None:
            host_ram_gib = inst.ram_gib
    name, usable = None, None
    if gpu:
        gpu_rec = get_gpu(gpu)
        name, usable = gpu_usable_gib(gpu)
        usable = round(usable, 3)
    if gpu_mem_gib is not None:
        usable = gpu_mem_gib
    if usable is None:
        raise WorkloadError(_("--rl needs the GPU: the rollout engine's budget is a fraction of its memory"),
                            fix=_("pass --gpu NAME (e.g. H100), --gpu-mem GIB or --instance-type TYPE"))
    rep = rl_report(model, workload, rl, float(usable), gpu=gpu_rec, instance=inst, steps=steps,
                    host_ram_gib=host_ram_gib, margin=margin, calibrations=load_calibrations())
    return RLMemoryReport(model=model, report=rep, gpu=name, usable_gib=usable, host_ram_gib=host_ram_gib)


MEMORY_EXTRA = ("model", "config", "gpu", "gpu_mem", "host_ram", "instance_type")


# ----------------------------------------------------------------------------------------------- plan

def make_plan(request: PlanRequest) -> PlanResult:
    """Search, evaluate and rank (:func:`trainfit.plan.search.plan`; it reads the calibration overlay once, before
    the search, so a file that cannot be used is one clear error, not a rejection of every instance type)."""
    return plan(request)


def plan_for(model: ModelShape, workload: Workload, *, gpu: str | None = None, instance_type: str | None = None,
             gpu_mem_gib: float | None = None, tokens: float | None = None, spot: bool = False,
             region: str | None = None, framework: str | None = None, target: str | None = None,
             margin: float = SAFETY_MARGIN_DEFAULT, source: str = "trainfit render (no plan file)",
             rl: RLConfig | None = None, steps: int | None = None) -> Plan:
    """One typed Plan for ``workload`` on a GPU or an instance type: memory and the fit verdict always; speed when
    the GPU's compute is known; time and cost when ``tokens`` is given. With ``rl`` (an
    :class:`~trainfit.rl.RLConfig`) the RL plan: per-phase memory, the verdict over all phases, the RL step
    time and, with ``steps``, hours and cost (:func:`trainfit.plan.rl.rl_plan`). ``target`` (one launcher of
    :func:`~trainfit.targets.plan_targets`) is recorded, and its engine is the speed model's framework
    unless ``framework`` is given."""
    inst = None
    if instance_type:
        inst = get_instance(instance_type)
        gpu = gpu_on_instance(inst, gpu)
        gpn_used = workload.gpus_on_node
        whole = rents_whole_nodes(inst.provider)  # a cloud spec is rented whole; a cluster node is shared
        if inst.gpu_count and (gpn_used > inst.gpu_count or (whole and gpn_used != inst.gpu_count)):
            raise RenderError(
                _("{it} has {count} GPU(s) per node but the workload puts {used} on each node (launchers start one "
                  "process per GPU of the node, and the whole node is billed)").format(
                    it=inst.instance_type, count=inst.gpu_count, used=gpn_used),
                fix=_("use --gpus-per-node {count} and a multiple of it for --gpus, or an instance type with {used} "
                      "GPU(s)").format(count=inst.gpu_count, used=gpn_used))
    if gpu:
        g = sized_gpu(get_gpu(gpu), gpu_mem_gib)  # as plan sizes and times it (--gpu-mem for a code, speed_from)
    elif gpu_mem_gib is not None:
        g = GPU(name="custom", mem_gib=gpu_mem_gib, source="--gpu-mem", as_of="")
    else:
        raise WorkloadError(_("which GPU? a plan needs the GPU (or an instance type) it runs on"),
                            fix=_("pass --gpu NAME (A10, H800...) or --instance-type TYPE, or render --plan plan.json"))
    usable = gpu_mem_gib if gpu_mem_gib is not None else g.usable_mem_gib
    if usable is None:
        raise UnknownGPUError(_("the catalog does not know the memory of {gpu}").format(gpu=g.name),
                              fix=_("pass --gpu-mem GIB"))
    gpn = workload.gpus_on_node
    if rl is not None:
        rl, tp_warning = fit_rollout_tp(rl, gpn)
        wl = workload.with_(seq_len=rl.seq_len) if workload.seq_len != rl.seq_len else workload
        rest = estimate_rl_memory(model, wl, rl, usable, strict=False, host_ram_gib=getattr(inst, "ram_gib", None),
                                  margin=margin)
        planned = rl_plan(model, wl, rl, rest, gpu=g, usable=usable, gpus_per_node=gpn, inst=inst, steps=steps,
                          spot=spot, region=region, margin=margin, source=source, strict_speed=False,
                          rule_warnings=(tp_warning,) if tp_warning else ())
        assert planned is not None  # without strict_speed an RL plan is never dropped
        return planned
    if target is not None:
        check_target(target, framework, rl=False)
        framework = speed_framework(framework, target, workload)
    est = estimate_memory(model, workload)
    fit = decide_fit(est, usable_gib=usable, gpus_per_node=gpn,
                     host_ram_gib=getattr(inst, "ram_gib", None), margin=margin)
    warnings: list[str] = list(fit.reasons)
    if note := assumed_note(g):
        warnings.append(note)
    speed, time_cost = _plan_speed(model, workload, g, inst, framework=framework, tokens=tokens, warnings=warnings)
    return build_plan(model=model, workload=workload, gpu=g, usable_gib=usable, inst=inst, gpus_per_node=gpn,
                      nodes=workload.nodes, memory=est, fit=fit, speed=speed,
                      time_cost=replace(time_cost, tokens=tokens, spot=spot, region=region), target=target,
                      warnings=tuple(warnings), source=source)


def _plan_speed(model: ModelShape, workload: Workload, g: GPU, inst: Instance | None, *, framework: str | None,
                tokens: float | None, warnings: list[str]) -> tuple[Speed, Cost]:
    """The speed and time of :func:`plan_for`'s Plan (empty when the GPU's compute is unknown); appends warnings."""
    if not (g.bf16_dense_tflops or g.fp16_dense_tflops):
        return Speed(), Cost()
    cals = load_calibrations()  # a broken overlay is an error, not "speed not estimated"
    try:
        hw = hardware_for(g, inst, gpus_per_node=workload.gpus_on_node)
        sp = estimate_speed(model, workload, hw, framework=framework, calibrations=cals)
    except WorkloadError as e:
        warnings.append(_("speed not estimated: {message}").format(message=e.message))
        return Speed(), Cost()
    speed = Speed.of(sp, plan_speed_interval(model, workload, sp.framework, hw.gpu_class))
    warnings += list(sp.warnings)
    if not tokens:
        return speed, Cost()
    tt = training_time(sp, tokens)
    return speed, Cost(hours=tt.hours, gpu_hours=tt.gpu_hours)


def load_plan(path: str | Path, pick: int = 1) -> Plan:
    """Plan ``pick`` (1 = first) of a ``trainfit plan --json`` file."""
    text = read_text_file(path, max_bytes=MAX_PLAN_BYTES, what=_("plan file"), error=PlanFileError,
                          fix=_("write it with `trainfit plan ... --json > plan.json`"))
    where = _("plan file {path}").format(path=path)
    doc = loads_json(text, what=where, error=PlanFileError)
    plans = plans_from_document(doc, where=where)
    if not 1 <= pick <= len(plans):
        raise PlanFileError(_("--pick {pick} is out of range: the file has {n} plan(s)").format(pick=pick, n=len(plans)),
                            fix=_("use --pick 1..{n}").format(n=len(plans)))
    return plans[pick - 1]


# --------------------------------------------------------------------------------------------- render

def render_plan(plan: Plan, options: RenderOptions | None = None,
                targets: str | list[str] | tuple[str, ...] | None = None) -> RenderResult:
    """Job files for ``plan`` (a :class:`~trainfit.launch.RenderResult`); nothing is recomputed. ``targets`` None:
    the plan's target (``plan --target``), else all that apply. A target whose engine differs from the one the
    plan's speed assumed is rendered with a warning in ``RenderResult.warnings``."""
    return render(build_context(plan, options), targets)


def single_target(targets: str | None) -> str | None:
    """The one launcher named by a render ``--target`` value (None for ``all``, a list, or a non-launcher)."""
    t = (targets or "").strip()
    return t if t in plan_targets() else None


def write_rendered(result: RenderResult, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    if not str(out_dir).strip():
        raise InputError(_("--out is empty"), fix=_("name a folder, e.g. --out job/"))
    return write(result, out_dir, force=force)


# ---------------------------------------------------------------------------------------------- check

def check_file(path: str | Path, *, region: str | None = None, gpu: str | None = None,
               instance_type: str | None = None, nodes: int | None = None, gpus_per_node: int | None = None,
               dataset: str | None = None, tokenizer: str | None = None) -> CheckResult:
    """Every finding of a job file (:class:`~trainfit.check.CheckResult`); with ``dataset`` (a stats file, or a
    dataset counted with ``tokenizer``) also the job's cut-off, packing and steps against the data."""
    if region is not None:
        region = inputs.as_ident("--region", region, "region")
    if gpu is not None:
        gpu = get_gpu(gpu).name  # an unknown GPU is an error with "did you mean", never silently ignored
    if instance_type is not None:
        instance_type = inputs.as_ident("--instance-type", instance_type, "instance_type")
        get_instance(instance_type)  # an unknown type is an error with "did you mean", never silently ignored
    stats = None
    if dataset is not None:
        stats, _scanned = stats_or_scan(dataset, tokenizer=tokenizer)
    elif tokenizer is not None:
        raise InputError(_("--tokenizer counts a dataset: it needs --dataset FILE"), fix=_("pass --dataset train.jsonl"))
    return _check(path, region=region, gpu=gpu, instance_type=instance_type, nodes=nodes, gpus_per_node=gpus_per_node,
                  dataset=stats)


# --------------------------------------------------------------------------------------------- submit

def submit_job(path: str | Path, *, region: str | None = None, yes: bool = False, gate: bool = True,
               endpoint: str | None = None, protocol: str = "https",
               timeout_s: float = 30.0) -> tuple[SubmitResult, CheckResult]:
    """Check the job (the same rules as ``trainfit check``), then dry-run or send it through the official SDK.
    ``region`` None: the region the job file was rendered for (its trainfit header, else its image registry;
    :func:`trainfit.providers.alibaba.submit.job_target`), so a job rendered for cn-wulanchabu is checked and sent
    there. With ``gate`` (default) an error-level finding, or a value still to fill in (``placeholder``: a job sent
    with ``REPLACE_ME`` in its bucket or VPC fails on the platform after it is queued), stops a real submission.
    Returns (SubmitResult, CheckResult)."""
    p, body = load_job(path)
    given = None if region is None else inputs.as_ident("--region", region, "region")
    region = inputs.as_ident("--region", resolve_region(given, job_target(body))[0], "region")
    res_check = check_file(p, region=region)
    blocking = [v for v in res_check.violations if v.severity == "error" or v.rule == "placeholder"]
    if gate and blocking and yes:
        first = blocking[0]
        raise SubmitError(_("`trainfit check` found {n} problem(s) that stop a submission in {path}, e.g. {rule}: "
                            "{message}").format(n=len(blocking), path=p, rule=first.rule, message=first.message),
                          fix=_("{fix}; or pass --no-check").format(fix=first.fix))
    return submit(p, region=given, yes=yes, endpoint=endpoint, protocol=protocol, timeout_s=timeout_s), res_check
