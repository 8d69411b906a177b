"""The typed plan: one frozen value for a chosen configuration (model, workload, GPU, instance, memory, fit
verdict, speed, time, cost, warnings) that flows from ``plan`` (or ``memory``) into ``render``, ``check``,
``submit``, ``diagnose`` and the web page. Nothing downstream recomputes it.

``Plan.to_dict()`` / ``Plan.from_dict()`` round-trip losslessly (floats are written unrounded; JSON keeps them
exactly) and carry :data:`PLAN_SCHEMA`; a file with another schema is a clear :class:`PlanFileError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Generic, Mapping, TypeAlias, TypeVar

from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.dataset.budget import DataBudget
from trainfit.errors import InputError, PlanFileError, TrainfitError
from trainfit.estimate.fit import FitDecision
from trainfit.estimate.memory import MemoryEstimate
from trainfit.estimate.states import precision_mode
from trainfit.estimate.uncertainty import Interval, memory_range
from trainfit.i18n import _
from trainfit.json_types import JSON, JSONObject, Quantiles
from trainfit.targets import plan_targets
from trainfit.models.shapes import ModelShape, model_from_dict
from trainfit.plan.parts import Cost, Placement, Ranking, Speed, scalar_fields, scalars_from
from trainfit.plan.plan_file import check_scalars, checked_gpu, checked_instance, data_budget, speed_interval
from trainfit.plan.request import PIN_FIELDS, PlanRequest
from trainfit.rl.config import RLConfig
from trainfit.rl.summary import RLSummary
from trainfit.workload import Workload
from trainfit.workload_options import MAX_GPUS, WORKLOAD_OPTION_NAMES, parse_options

#: Schema of plan JSON (``trainfit plan --json`` and every plan inside it). Version 1 was the unversioned
#: output of trainfit 0.1 (rounded numbers, no model, no fit verdict); it cannot be read back losslessly.
PLAN_SCHEMA = "trainfit.plan/2"

T = TypeVar("T")
#: A fix as option changes a program can apply: {option name: value} (None = drop the option), in the words of
#: ``options.py`` (``{"allow_fp16": True}`` is ``--allow-fp16``).
FixOption: TypeAlias = dict[str, JSON]


class _PartView(Generic[T]):
    """A read-only view of one field of one of the plan's parts under the plan's own name (``plan.hours`` is
    ``plan.time_cost.hours``): the names plan files, tables and scripts use."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, plan: object, owner: type | None = None) -> T:
        value: T = getattr(getattr(plan, self.part), self.name)
        return value


@dataclass(frozen=True, kw_only=True)
class Plan:
    """One planned configuration, composed of typed parts: where it runs (:class:`~trainfit.plan.parts.Placement`),
    what it needs (the memory estimate and the fit decision), how fast (:class:`~trainfit.plan.parts.Speed`), what
    it takes and costs (:class:`~trainfit.plan.parts.Cost`) and, for RL, the RL part. Built by :func:`build_plan`."""

    model: ModelShape
    workload: Workload
    """Every training setting, the layout (gpus, gpus_per_node, strategy, tp/pp/ep/cp) included."""
    placement: Placement
    memory: MemoryEstimate
    fit: FitDecision
    """The verdict (:func:`trainfit.estimate.fit.decide_fit`)."""
    speed: Speed = field(default_factory=Speed)
    time_cost: Cost = field(default_factory=Cost)
    target: str | None = None
    """The launcher planned for (``plan --target``; None = any): ``render`` without ``--target`` writes it, and
    warns when it writes a target whose engine differs from ``speed.framework`` (:mod:`trainfit.targets`).
    Plan files written before this field existed read back with None."""
    rl: RLSummary | None = None
    """RL fine-tuning (``--rl grpo|ppo|dpo``), None for SFT: the :class:`~trainfit.rl.summary.RLSummary` (the
    RLConfig and the planned per-phase memory, KV pool, steps and step-time split)."""
    data: DataBudget | None = None
    """``plan --dataset``: the data budget (rows per epoch, epochs, cut-off, packing) the token budget and
    :meth:`optimizer_steps` come from; None = a ``--tokens`` budget."""
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    source: str = "trainfit plan"
    """What produced it (``trainfit plan``, ``trainfit memory``...)."""

    # the parts' fields under the plan's own names, read-only: the names plan files carry and the library's users
    # (scripts, tests) read; the render path, the limits and the pricing read the parts themselves
    provider = _PartView[str]("placement")
    resource_class = _PartView[str]("placement")
    instance_type = _PartView["str | None"]("placement")
    gpu = _PartView[str]("placement")
    gpus_per_node = _PartView[int]("placement")
    nodes = _PartView[int]("placement")
    gpu_mem_gib = _PartView[float]("placement")
    gpu_spec = _PartView["GPU"]("placement")
    instance = _PartView["Instance | None"]("placement")
    tokens_per_s = _PartView["float | None"]("speed")
    step_seconds = _PartView["float | None"]("speed")
    mfu = _PartView["float | None"]("speed")
    framework = _PartView["str | None"]("speed")
    calibration = _PartView["str | None"]("speed")
    speed_interval = _PartView["JSONObject | None"]("speed")
    tokens = _PartView["float | None"]("time_cost")
    hours = _PartView["float | None"]("time_cost")
    gpu_hours = _PartView["float | None"]("time_cost")
    cost = _PartView["float | None"]("time_cost")
    currency = _PartView["str | None"]("time_cost")
    on_demand_cost = _PartView["float | None"]("time_cost")
    spot = _PartView[bool]("time_cost")
    spot_price_fraction = _PartView["float | None"]("time_cost")
    expected_interruptions = _PartView["float | None"]("time_cost")
    checkpoint_interval_hours = _PartView["float | None"]("time_cost")
    price_per_hour = _PartView["float | None"]("time_cost")
    price_source = _PartView["str | None"]("time_cost")
    price_as_of = _PartView["str | None"]("time_cost")
    region = _PartView["str | None"]("time_cost")

    def __post_init__(self) -> None:
        pl = self.placement
        if pl.nodes * pl.gpus_per_node < self.workload.gpus or pl.nodes < 1:
            raise PlanFileError(_("plan layout {nodes} x {gpn} GPUs does not hold {gpus} GPUs").format(
                nodes=pl.nodes, gpn=pl.gpus_per_node, gpus=self.workload.gpus),
                fix=_("regenerate the plan with `trainfit plan`"))
        if self.target is not None:
            if self.target not in plan_targets():
                raise PlanFileError(_("the plan's target {target!r} is not a launcher trainfit writes").format(
                    target=str(self.target)[:40]),
                    fix=_("one of {choices}; or regenerate the plan").format(choices=", ".join(plan_targets())))

    def rl_config(self) -> RLConfig | None:
        """The :class:`~trainfit.rl.RLConfig` of an RL plan (None for SFT)."""
        return None if self.rl is None else self.rl.config

    # ------------------------------------------------------------------------------------------ views
    @property
    def verdict(self) -> str:
        return self.fit.verdict

    @property
    def per_gpu_gib(self) -> float:
        return self.memory.reserved_gib

    def intervals(self) -> dict[str, Quantiles]:
        """p10/p50/p90 of every speed-derived figure (tokens/s and MFU with the speed; step time, hours,
        GPU-hours and cost against it) and of the memory per GPU (``per_gpu_gib``, from the fit corpus)."""
        out: dict[str, Quantiles] = {}
        mem = memory_range(self.memory.reserved_gib)
        if mem:
            out["per_gpu_gib"] = mem
        sp, tc = self.speed, self.time_cost
        if sp.speed_interval is None:
            return out
        iv = Interval.from_dict(sp.speed_interval)
        for name, value, inverse in (("tokens_per_s", sp.tokens_per_s, False), ("mfu", sp.mfu, False),
                                     ("step_seconds", sp.step_seconds, True), ("hours", tc.hours, True),
                                     ("gpu_hours", tc.gpu_hours, True), ("cost", tc.cost, True),
                                     ("on_demand_cost", tc.on_demand_cost, True)):
            r = iv.scale(value, inverse=inverse)
            if r is not None:
                out[name] = r
        return out

    def out_of_domain_note(self) -> str | None:
        """The speed interval's note when the plan's regime is outside the calibration domain, else None."""
        siv = self.speed.speed_interval or {}
        note = siv.get("note")
        return str(note) if siv.get("out_of_domain") and note is not None else None

    def optimizer_steps(self) -> int | None:
        """Optimizer steps that train the plan's budget, as the launcher counts them: the data's rows over all
        epochs per global batch (``plan --dataset``), else tokens / (global batch x sequence length)."""
        wl = self.workload
        if self.data is not None:
            return self.data.steps(wl.global_batch)
        tokens = self.time_cost.tokens
        if not tokens:
            return None
        return max(1, math.ceil(tokens / (wl.global_batch * wl.seq_len)))

    def settings(self) -> JSONObject:
        w = self.workload
        return {"strategy": w.strategy, "offload": w.offload, "grad_ckpt": w.grad_ckpt, "micro_batch": w.micro_batch,
                "grad_accum": w.grad_accum, "gpus": w.gpus, "gpus_per_node": w.gpus_per_node, "tp": w.tp,
                "pp": w.pp, "ep": w.ep, "cp": w.cp, "ulysses": w.ulysses, "precision": w.precision,
                "optimizer": w.optimizer,
                "attention": w.attention, "loss": w.loss, "method": w.method, "seq_len": w.seq_len,
                "packing": w.packing, "global_batch": w.global_batch, "precision_mode": precision_mode(w),
                "tokens_per_step": w.global_batch * w.seq_len}

    # ------------------------------------------------------------------------------------------ JSON
    def to_dict(self) -> JSONObject:
        """Lossless JSON-ready dict, one flat object: the summary first (what tables and scripts read: every scalar
        field of the parts under its own name, with the views between them), then the typed records. Which keys
        it writes follows the parts' fields (:func:`~trainfit.plan.parts.scalar_fields`, checked by the tests);
        the order is the document's, unchanged since plan files carry it."""
        pl, sp, tc = self.placement, self.speed, self.time_cost
        return {
            "schema": PLAN_SCHEMA, "source": self.source,
            "provider": pl.provider, "resource_class": pl.resource_class, "instance_type": pl.instance_type,
            "gpu": pl.gpu, "gpus_per_node": pl.gpus_per_node, "nodes": pl.nodes, "settings": self.settings(),
            "verdict": self.fit.verdict, "per_gpu_gib": self.memory.reserved_gib, "gpu_mem_gib": pl.gpu_mem_gib,
            "tensor_peak_gib": self.memory.tensor_peak_gib, "peak_phase": self.memory.peak_phase,
            "host_ram_gib": self.memory.host_ram_gib, "tokens": tc.tokens,
            "tokens_per_s": sp.tokens_per_s, "step_seconds": sp.step_seconds, "mfu": sp.mfu,
            "framework": sp.framework, "target": self.target, "calibration": sp.calibration,
            "hours": tc.hours, "gpu_hours": tc.gpu_hours, "cost": tc.cost,
            "intervals": self.intervals(), "speed_interval": sp.speed_interval,
            "oom_probability": self.fit.oom_probability,
            "currency": tc.currency, "on_demand_cost": tc.on_demand_cost, "spot": tc.spot,
            "spot_price_fraction": tc.spot_price_fraction, "expected_interruptions": tc.expected_interruptions,
            "checkpoint_interval_hours": tc.checkpoint_interval_hours, "price_per_hour": tc.price_per_hour,
            "price_source": tc.price_source, "price_as_of": tc.price_as_of, "region": tc.region,
            "notes": list(self.notes), "warnings": list(self.warnings),
            "model": self.model.to_dict(), "workload": self.workload.to_dict(),
            "memory": self.memory.to_exact_dict(), "fit": self.fit.to_dict(),
            "gpu_spec": pl.gpu_spec.to_dict(), "instance": None if pl.instance is None else pl.instance.to_dict(),
            "rl": None if self.rl is None else self.rl.to_dict(),
            "optimizer_steps": self.optimizer_steps(),
            "data": None if self.data is None else self.data.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: object, *, where: str = "plan") -> "Plan":
        """The Plan of :meth:`to_dict`; anything else (another schema, a missing part) is a PlanFileError. Each
        part is read from the fields it declares (:func:`~trainfit.plan.parts.scalars_from`), every value checked
        first (:mod:`trainfit.plan.plan_file`)."""
        if not isinstance(d, dict):
            raise PlanFileError(_("{where} is not an object").format(where=where),
                                fix=_("regenerate it with `trainfit plan --json`"))
        schema = d.get("schema")
        if schema != PLAN_SCHEMA:
            raise PlanFileError(
                (_("{where} has schema {schema!r}; this trainfit reads {want!r} (plans written by trainfit 0.1 carry "
                   "no schema and rounded numbers)") if schema is None else
                 _("{where} has schema {schema!r}; this trainfit reads {want!r}")).format(
                    where=where, schema=schema, want=PLAN_SCHEMA),
                fix=_("regenerate the plan with this version: `trainfit plan ... --json > plan.json`"))
        try:
            wl = _checked_fields(d, where)
            placement = Placement(**scalars_from(Placement, d), gpu_spec=checked_gpu(d["gpu_spec"], where),
                                  instance=checked_instance(d.get("instance"), where))
            return cls(
                model=model_from_dict(d["model"]), workload=Workload(**{**wl, "lora_targets": tuple(wl["lora_targets"])}),
                placement=placement, memory=MemoryEstimate.from_dict(d["memory"]), fit=FitDecision.from_dict(d["fit"]),
                speed=Speed(**scalars_from(Speed, d), speed_interval=speed_interval(d.get("speed_interval"))),
                time_cost=Cost(**scalars_from(Cost, d)), target=d.get("target"), rl=_rl_part(d.get("rl")),
                data=data_budget(d.get("data")), notes=tuple(d.get("notes") or ()),
                warnings=tuple(d.get("warnings") or ()), source=str(d.get("source") or "trainfit plan"))
        except PlanFileError:
            raise
        except TrainfitError as e:
            raise PlanFileError(_("{where} does not describe a valid plan: {message}").format(
                where=where, message=e.message),
                fix=e.fix or _("regenerate it with `trainfit plan --json`")) from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise PlanFileError(_("{where} does not have the plan's shape ({error})").format(
                where=where, error=f"{type(e).__name__}: {str(e)[:80]}"),
                fix=_("regenerate it with `trainfit plan --json`")) from None


def build_plan(*, model: ModelShape, workload: Workload, gpu: GPU, usable_gib: float, inst: Instance | None,
               gpus_per_node: int, nodes: int, memory: MemoryEstimate, fit: FitDecision, speed: Speed | None = None,
               time_cost: Cost, target: str | None = None, rl: RLSummary | None = None,
               notes: tuple[str, ...] = (), warnings: tuple[str, ...] = (), source: str = "trainfit plan") -> Plan:
    """The one place a Plan is assembled (``plan``'s search, ``plan --rl`` and ``render`` without a plan file):
    the placement from the GPU and instance records, the parts as given."""
    return Plan(model=model, workload=workload,
                placement=Placement.of(gpu, inst, gpus_per_node=gpus_per_node, nodes=nodes, usable_gib=usable_gib),
                memory=memory, fit=fit, speed=speed or Speed(), time_cost=time_cost, target=target, rl=rl,
                notes=notes, warnings=warnings, source=source)


#: The plan's own scalar fields and its parts' (numbers, counts, flags, text) a plan file carries.
_PLAN_SCALARS = (scalar_fields(Placement), scalar_fields(Speed), scalar_fields(Cost))


def _checked_fields(d: Mapping[str, object], where: str) -> dict[str, JSON]:
    """Every scalar of a plan file through the input gate (:func:`~trainfit.plan.plan_file.check_scalars`: the
    parts' fields and the plan's own ``target`` and ``source``) and the workload through the option table's
    ranges; returns the workload dict."""
    try:
        check_scalars(d, _PLAN_SCALARS + (scalar_fields(Plan),), max_gpus=MAX_GPUS)
        wl = d["workload"]
        if not isinstance(wl, dict):
            raise InputError(_("workload must be an object"))
        parsed = parse_options({k: v for k, v in wl.items() if k in WORKLOAD_OPTION_NAMES}, defaults=False)
    except InputError as e:
        raise PlanFileError(f"{where}: {e.message}", fix=_("regenerate it with `trainfit plan --json`")) from None
    return {**wl, **{k: v for k, v in parsed.items() if v is not None}}


def _rl_part(d: object) -> RLSummary | None:
    """A plan file's ``rl`` part (:meth:`~trainfit.rl.summary.RLSummary.from_dict`), or None for SFT."""
    if d is None:
        return None
    if not isinstance(d, dict) or "algo" not in d:
        raise PlanFileError(_("the plan's 'rl' part is not an RL configuration"),
                            fix=_("regenerate the plan with `trainfit plan --rl ...`"))
    return RLSummary.from_dict(d)


@dataclass(frozen=True, kw_only=True)
class Rejection:
    instance_type: str
    code: str
    reason: str
    fix: str | None = None
    provider: str = ""
    fix_options: tuple[FixOption, ...] = ()
    """The fix as option changes a program can apply: alternatives, each {option name: value} (None = drop the
    option), in the words of ``options.py`` (``{"allow_fp16": True}`` is ``--allow-fp16``); empty when the fix is
    not a change of options (a catalog overlay, a quota raise)."""
    tried: JSONObject | None = None
    """``memory``: the settings of the closest miss (``Workload.to_dict()``), which ``trainfit memory`` judges alike."""

    def to_dict(self) -> JSONObject:
        return {"instance_type": self.instance_type, "provider": self.provider, "code": self.code,
                "reason": self.reason, "fix": self.fix, "fix_options": [dict(o) for o in self.fix_options],
                "tried": self.tried}


@dataclass(frozen=True, kw_only=True)
class PlanResult:
    request: PlanRequest
    """The :class:`~trainfit.plan.search.PlanRequest`."""
    plans: tuple[Plan, ...]
    rejected: tuple[Rejection, ...]
    pareto: tuple[int, ...]
    """Indices into ``plans`` on the time-vs-cost frontier (GPU-hours stand in for cost without prices)."""
    notes: tuple[str, ...] = field(default=())
    region_prices: tuple[JSONObject, ...] = field(default=())
    """``plan --compare-regions``: per plan, its cost in every region with a price (:func:`~trainfit.plan.pricing.
    region_prices`); empty otherwise."""
    ranking: Ranking | None = None
    """How the plans were ranked and why #1 is #1 (:class:`~trainfit.plan.parts.Ranking`)."""

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None

    def to_dict(self) -> JSONObject:
        req = self.request
        wl = req.workload
        w = {k: v for k, v in wl.to_dict().items() if k not in PIN_FIELDS or k in req.pins}
        w.update({"model": req.model.name, "tokens": req.tokens, "global_batch": req.global_batch,
                  "global_batch_target": req.target_global_batch,
                  "objective": req.objective, "spot": req.spot, "pins": dict(req.pins),
                  "target": req.target, "framework": req.framework})
        if req.rl is not None:
            w.update({"rl": req.rl.to_dict(), "steps": req.steps})
        return {"schema": PLAN_SCHEMA, "workload": w, "plans": [p.to_dict() for p in self.plans],
                "pareto": list(self.pareto), "ties": [] if self.ranking is None else list(self.ranking.ties),
                "rejected": [r.to_dict() for r in self.rejected],
                "notes": list(self.notes), "ranking": None if self.ranking is None else self.ranking.to_dict(),
                **({"region_prices": list(self.region_prices)} if self.region_prices else {})}


def plans_from_document(doc: object, *, where: str | None = None) -> list[Plan]:
    """Every plan of a ``trainfit plan --json`` document (or of a single plan's JSON)."""
    where = _("plan file") if where is None else where
    if isinstance(doc, dict) and "plans" not in doc and "model" in doc:
        return [Plan.from_dict(doc, where=where)]
    if isinstance(doc, dict) and "schema" not in doc and "plans" not in doc:  # a job file, a ds_config.json ...
        raise PlanFileError(_("{where} is not a trainfit plan (no 'schema' or 'plans' key)").format(where=where),
                            fix=_("pass the output of `trainfit plan ... --json > plan.json` (a job file is checked "
                                  "with `trainfit check`)"))
    if not isinstance(doc, dict) or doc.get("schema") != PLAN_SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise PlanFileError(_("{where} has schema {schema!r}; this trainfit reads {want!r}").format(
                                where=where, schema=got, want=PLAN_SCHEMA),
                            fix=_("regenerate it with this version: `trainfit plan ... --json > plan.json`"))
    plans = doc.get("plans")
    if not isinstance(plans, list):
        raise PlanFileError(_("{where} has no 'plans' list").format(where=where),
                            fix=_("regenerate it with `trainfit plan --json`"))
    if not plans:
        raise PlanFileError(_("{where} holds no plan (nothing fitted)").format(where=where),
                            fix=_("see its 'rejected' list, or rerun `trainfit plan` with other options"))
    return [Plan.from_dict(p, where=_("{where}, plan {n}").format(where=where, n=i + 1)) for i, p in enumerate(plans)]
