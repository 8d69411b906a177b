"""Read a job file's training settings back into a :class:`~trainfit.workload.Workload`, then ask the same memory
model and the same fit decision as ``memory`` and ``plan``.

What the file states wins (the launcher's node and GPU counts, the ms-swift / LLaMA-Factory arguments, the
DeepSpeed config they point to); what it does not state comes from its trainfit header (the machine-readable
``trainfit-plan {...}`` line that ``render`` writes), then from ``check``'s options. The readers sit next to the
writers (``launch/_common.py``, ``launch/llamafactory.py``, ``launch/deepspeed.py``) and share their tables, so a
rendered file reads back to exactly the plan's workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from trainfit.jobspec.facts import JobFacts
from trainfit.errors import LayoutError, TrainfitError
from trainfit.i18n import _
from trainfit.check.context import first_instance, gpus_per_node, rl_launch_text
from trainfit.rules.types import ERROR, INFO, WARNING, Violation
from trainfit.models import get_model
from trainfit.launch.kit import swift_workload
from trainfit.launch.deepspeed import strategy_from_config
from trainfit.launch.llamafactory import llamafactory_workload
from trainfit.catalog.gpus import get_gpu
from trainfit.workload import Workload
from trainfit.estimate.fit import decide_fit
from trainfit.estimate.memory import estimate_memory
from trainfit.json_types import JSON, JSONObject

if TYPE_CHECKING:
    from trainfit.catalog.gpus import GPU
    from trainfit.catalog.instances import Instance
    from trainfit.check.context import CheckOptions
    from trainfit.estimate.fit import FitDecision
    from trainfit.estimate.memory import MemoryEstimate
    from trainfit.models.shapes import ModelShape

#: :class:`~trainfit.workload.Workload` keyword arguments read back from a file (lists of the header made tuples).
WorkloadKwargs: TypeAlias = dict[str, JSON | tuple[JSON, ...]]
from trainfit.catalog.hardware import gpu_class_of


@dataclass(frozen=True, kw_only=True)
class Readback:
    model: ModelShape
    workload: Workload
    estimate: MemoryEstimate
    decision: FitDecision
    gpu: str
    gpu_class: str | None = None
    """Efficiency class of the GPU (hopper, ampere, ...; None when the catalog cannot say)."""
    planned_gib: float | None
    """reserved_gib of the plan in the file's header (None without a header)."""
    assumed: tuple[str, ...] = ()
    max_steps: int | None = None
    """Optimizer steps the file trains (ms-swift / LLaMA-Factory ``max_steps``, Megatron ``train_iters``); None when
    it states none (an epoch budget, or a DeepSpeed config)."""

    @property
    def tokens_trained(self) -> int | None:
        """Tokens the file's steps train: max_steps x global batch x seq_len (packed rows: seq_len data tokens each)."""
        if self.max_steps is None:
            return None
        return self.max_steps * self.workload.global_batch * self.workload.seq_len


def _max_steps(f: JobFacts) -> int | None:
    for k in ("max_steps", "train_iters"):
        v = f.train.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
        if isinstance(v, str) and v.strip().isdecimal() and int(v) > 0:
            return int(v)
    return None


def _model_name(f: JobFacts) -> str | None:
    for k in ("model", "model_name_or_path", "model_id_or_path"):
        v = f.train.get(k)
        if v:
            return v
    return f.plan.get("model") if isinstance(f.plan.get("model"), str) else None


def _resolve_model(f: JobFacts, plan: JSONObject) -> ModelShape | Violation | None:
    """The registry model the file trains, or None (an RL launch, no model, a model outside the registry, or a
    file with neither an engine, a DeepSpeed config nor a trainfit header)."""
    if plan.get("rl") or rl_launch_text(f) is not None:
        return None  # an RL launch: sized per phase by rule_rl
    name = _model_name(f)
    if not name:
        return None
    try:
        model = get_model(name)
    except TrainfitError:
        if not f.engine and not f.ds_config and not plan:
            return None
        # a local folder or another family: say so, "no problems found" would read as "it fits"
        return Violation(rule="memory-fit", severity=INFO,
                         message=_("model {name} is not in trainfit's registry, so the fit was not checked").format(
                             name=name[:120]),
                         fix=_("size it with `trainfit memory --config path/to/config.json` and the file's settings"))
    if not f.engine and not f.ds_config and not plan:
        return None
    return model


def _ds_stage_from_name(path: str, kw: WorkloadKwargs, assumed: list[str]) -> None:
    """A DeepSpeed config the file names but that is not beside it (LLaMA-Factory's
    ``examples/deepspeed/ds_z3_offload_config.json``, a path on the cluster): its ZeRO stage from its name, as
    ms-swift's presets map (zero3_offload offloads parameters too), said as assumed; else DDP, said too."""
    import re

    name = Path(path).name.lower()
    m = re.search(r"(?:^|[_.-])(?:z|zero|stage)[_-]?([0-3])(?:[_.-]|$)", name)
    if not m:
        kw["strategy"] = "ddp"
        assumed.append(_("DeepSpeed config {path} not found beside the file and its name gives no ZeRO stage: read as "
                         "DDP").format(path=path[:120]))
        return
    stage, off = int(m.group(1)), "offload" in name
    kw["strategy"] = f"zero{stage}" if stage else "ddp"
    kw["offload"] = ("all" if stage == 3 else "optimizer") if off and stage else "none"
    if off and stage:
        assumed.append(_("DeepSpeed config {path} not found beside the file: ZeRO stage {stage} + offload taken from its "
                         "name").format(path=path[:120], stage=stage))
    else:
        assumed.append(_("DeepSpeed config {path} not found beside the file: ZeRO stage {stage} taken from its "
                         "name").format(path=path[:120], stage=stage))


def _keep_planned_loss(kw: WorkloadKwargs, got: WorkloadKwargs) -> None:
    """A job file states a chunked (Liger) loss or not; which Hugging Face loss code runs without it (``standard``, or
    ``shift-copy`` with transformers < 4.49) depends on the installed transformers, which the file does not state:
    the header's ``shift-copy`` stands when the file reads back as ``standard``."""
    if kw.get("loss") == "shift-copy" and got.get("loss") == "standard":
        got["loss"] = "shift-copy"


def _workload_kwargs(f: JobFacts, o: CheckOptions, plan: JSONObject, model: ModelShape
                     ) -> tuple[WorkloadKwargs, list[str], int]:
    """Workload keyword arguments: the header's workload, overridden by what the file states (launcher, engine
    arguments, DeepSpeed config); with the assumptions made and the GPUs per node."""
    kw: WorkloadKwargs = {}
    assumed: list[str] = []
    base = plan.get("workload") if isinstance(plan.get("workload"), dict) else None
    if base:
        kw.update({k: (tuple(v) if isinstance(v, list) else v) for k, v in base.items()})
    nodes = f.nodes or o.nodes or plan.get("nodes") or 1
    gpn = gpus_per_node(f) or o.gpus_per_node or plan.get("gpus_per_node") or 1
    gpus = nodes * gpn
    if f.engine in ("swift", "megatron"):
        got, assumed = swift_workload(f.train, num_layers=model.num_layers, gpus=gpus)
        _keep_planned_loss(kw, got)
        kw.update(got)
    elif f.engine == "llamafactory":
        got, assumed = llamafactory_workload(f.train, num_layers=model.num_layers)
        _keep_planned_loss(kw, got)
        kw.update(got)
    if f.ds_config:
        kw.update(strategy_from_config(f.ds_config, hidden_size=getattr(model, "hidden_size", None)))
    elif not base and str(f.train.get("deepspeed", "")).endswith(".json"):
        _ds_stage_from_name(f.train["deepspeed"], kw, assumed)
    elif f.engine in ("swift", "llamafactory") and "strategy" not in kw and not base:
        kw["strategy"] = "ddp"
    if base and f.engine and not f.ds_config and "deepspeed" not in f.train and kw.get("strategy", "").startswith("zero") \
            and f.engine != "megatron":
        assumed.append(_("DeepSpeed config not found beside the file: ZeRO stage taken from the trainfit header"))
    kw["gpus"], kw["gpus_per_node"] = gpus, gpn
    return kw, assumed, gpn


def _resolve_gpu(f: JobFacts, o: CheckOptions, plan: JSONObject) -> tuple[GPU | Violation | None, Instance | None]:
    """(GPU record, catalog instance or None): the GPU from the options, the file, its instance type or the
    header. The record is None when nothing names a GPU, or a Violation when its memory is unknown."""
    gpu = o.gpu or f.gpu
    inst = first_instance([o.instance_type, *f.instance_types, plan.get("instance_type")])
    if not gpu and inst is not None:
        gpu = inst.gpu
    gpu = gpu or plan.get("gpu")
    if not gpu:
        return None, inst
    try:
        g = get_gpu(gpu)
    except TrainfitError:
        if plan.get("gpu") and plan["gpu"] != gpu:
            g = get_gpu(plan["gpu"])
        else:
            return Violation(rule="memory-fit", severity=INFO,
                             message=_("GPU {gpu} is not in the catalog, so the fit was not checked").format(gpu=gpu),
                             fix=_("pass --gpu NAME (e.g. H800) or add the GPU to your catalog overlay")), inst
    user_mem = plan.get("gpu_mem_gib_user")
    if g.usable_mem_gib is None and g.name == plan.get("gpu") and isinstance(user_mem, (int, float)) \
            and not isinstance(user_mem, bool) and 0 < user_mem <= 4096:
        from dataclasses import replace

        return replace(g, mem_gib=float(user_mem), mem_from_user=True), inst  # the plan's --gpu-mem, said below
    if g.usable_mem_gib is None:
        return Violation(rule="memory-fit", severity=INFO,
                         message=_("GPU {gpu}'s memory is not in the catalog, so the fit was not checked").format(
                             gpu=g.name),
                         fix=_("pass --gpu NAME (e.g. H800) or add the GPU to your catalog overlay")), inst
    return g, inst


def read_settings(f: JobFacts, o: CheckOptions) -> Workload | None:
    """The training settings the file states as a Workload (the same read-back as :func:`read_workload`, without
    the GPU it needs for a verdict); None when they cannot be read or modelled."""
    model = _resolve_model(f, f.plan)
    if model is None or isinstance(model, Violation):
        return None
    try:
        kw, _assumed, _gpn = _workload_kwargs(f, o, f.plan, model)
        return Workload(**kw)
    except (TrainfitError, TypeError):
        return None


def read_epochs(f: JobFacts) -> float | None:
    """``num_train_epochs`` the file states (None when it states none)."""
    v = f.train.get("num_train_epochs")
    try:
        x = float(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None
    return x if x is not None and 0 < x < 1e6 else None


def read_max_steps(f: JobFacts) -> int | None:
    return _max_steps(f)


def read_workload(f: JobFacts, o: CheckOptions) -> Readback | Violation | None:
    """A :class:`Readback`, a Violation when the settings cannot be modelled, or None when the file says nothing
    about training (no model, or a model outside the registry)."""
    plan = f.plan
    model = _resolve_model(f, plan)
    if model is None or isinstance(model, Violation):
        return model
    try:
        kw, assumed, gpn = _workload_kwargs(f, o, plan, model)  # a layout the engine cannot start raises here
        wl = Workload(**kw)
        est = estimate_memory(model, wl)
    except LayoutError as e:  # groups the engine cannot form: the job stops at start, whatever its memory
        return Violation(rule="parallel-layout", severity=ERROR,
                         message=_("the file's parallel layout cannot start: {error}").format(error=e.message),
                         fix=e.fix or _("check the parallel sizes against the GPU count"))
    except (TrainfitError, TypeError) as e:
        msg = getattr(e, "message", str(e))
        return Violation(rule="memory-fit", severity=WARNING,
                         message=_("the training settings could not be modelled: {error}").format(error=msg),
                         fix=getattr(e, "fix", None) or _("check the parallel sizes against the GPU count"))
    g, inst = _resolve_gpu(f, o, plan)
    if g is None:  # say so: "no problems found" would read as "it fits"
        return Violation(rule="memory-fit", severity=INFO,
                         message=_("{model} {method} needs {gib:.1f} GiB per GPU; the file names no GPU or instance "
                                   "type, so the fit was not checked").format(model=model.name, method=wl.method,
                                                                             gib=est.reserved_gib),
                         fix=_("pass --gpu NAME (e.g. H800) or --instance-type TYPE"))
    if isinstance(g, Violation):
        return g
    if g.mem_from_user:
        assumed.append(_("memory of {gpu} ({gib:g} GiB per GPU) from the plan's --gpu-mem (trainfit header), not from "
                         "a public source").format(gpu=g.name, gib=g.mem_gib))
    decision = decide_fit(est, usable_gib=g.usable_mem_gib, gpus_per_node=gpn,
                          host_ram_gib=getattr(inst, "ram_gib", None))
    planned = plan.get("reserved_gib") if isinstance(plan.get("reserved_gib"), (int, float)) else None

    return Readback(model=model, workload=wl, estimate=est, decision=decision, gpu=g.name,
                    gpu_class=gpu_class_of(g), planned_gib=planned,
                    assumed=tuple(assumed), max_steps=_max_steps(f))
