"""The typed plan: one frozen value for a chosen configuration (model, workload, GPU, instance, memory, fit
verdict, speed, time, cost, warnings) that flows from ``plan`` (or ``memory``) into ``render``, ``check``,
``submit``, ``diagnose`` and the web page. Nothing downstream recomputes it.

``Plan.to_dict()`` / ``Plan.from_dict()`` round-trip losslessly (floats are written unrounded; JSON keeps them
exactly) and carry :data:`PLAN_SCHEMA`; a file with another schema is a clear :class:`PlanFileError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainfit.errors import PlanFileError, TrainfitError
from trainfit.estimate.fit import FitDecision
from trainfit.estimate.memory import MemoryEstimate
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape, model_from_dict
from trainfit.workload import Workload

if TYPE_CHECKING:
    from trainfit.rl.config import RLConfig
    from trainfit.rl.summary import RLSummary

#: Schema of plan JSON (``trainfit plan --json`` and every plan inside it). Version 1 was the unversioned
#: output of trainfit 0.1 (rounded numbers, no model, no fit verdict); it cannot be read back losslessly.
PLAN_SCHEMA = "trainfit.plan/2"


@dataclass(frozen=True, kw_only=True)
class Plan:
    """One planned configuration: where it runs, how it is laid out, and what it needs and costs."""

    model: ModelShape
    workload: Workload
    """Every training setting, the layout (gpus, gpus_per_node, strategy, tp/pp/ep/cp) included."""
    gpu: str
    """Canonical GPU name (catalog)."""
    gpu_spec: Any
    """The catalog's :class:`~trainfit.catalog.gpus.GPU` record as it was when planned."""
    instance: Any = None
    """The catalog's :class:`~trainfit.catalog.instances.Instance` record, or None (a GPU without an instance)."""
    provider: str = "generic"
    resource_class: str = "generic"
    instance_type: str | None = None
    gpus_per_node: int
    nodes: int
    memory: MemoryEstimate
    fit: FitDecision
    """The verdict (:func:`trainfit.estimate.fit.decide_fit`)."""
    gpu_mem_gib: float
    """Usable memory of one GPU (after ECC on GDDR6)."""
    tokens: float | None = None
    """Training tokens the time and cost are for (None: memory only)."""
    tokens_per_s: float | None = None
    step_seconds: float | None = None
    mfu: float | None = None
    framework: str | None = None
    """Engine profile of the speed estimate (``--framework``, else the engine of ``target``)."""
    target: str | None = None
    """The launcher planned for (``plan --target``; None = any): ``render`` without ``--target`` writes it, and
    warns when it writes a target whose engine differs from ``framework`` (:mod:`trainfit.launch.targets`).
    Plan files written before this field existed read back with None."""
    calibration: str | None = None
    """The measured speed calibration the estimate used ("calibrated on <GPU> (<family> engine), <date>: ..."
    from ``trainfit calibrate``), None = the fitted engine model alone."""
    speed_interval: dict | None = None
    """Prediction interval of the speed (:class:`trainfit.estimate.uncertainty.Interval` as a dict: ``p10``,
    ``p50``, ``p90`` of measured / predicted tokens/s for the plan's regime, the group, ``out_of_domain`` and a
    ``note``); tokens/s, MFU, step time, hours, GPU-hours and cost ranges follow from it (:meth:`intervals`).
    None when there is no speed, and in plan files written before it existed."""
    hours: float | None = None
    gpu_hours: float | None = None
    cost: float | None = None
    currency: str | None = None
    on_demand_cost: float | None = None
    spot: bool = False
    spot_price_fraction: float | None = None
    """Fraction of the pay-as-you-go price paid on spot (None = unknown: priced on demand)."""
    expected_interruptions: float | None = None
    """Spot: expected reclaims over the run."""
    checkpoint_interval_hours: float | None = None
    """Spot: the checkpoint interval the hours assume (Young/Daly optimum unless you set one)."""
    price_per_hour: float | None = None
    """Pay-as-you-go price of one instance (node) per hour, in ``currency``."""
    price_source: str | None = None
    """Where the price came from (URL, refresh cache, overlay)."""
    price_as_of: str | None = None
    """Date of the price (ISO)."""
    region: str | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    source: str = "trainfit plan"
    """What produced it (``trainfit plan``, ``trainfit memory``...)."""
    rl: RLSummary | None = None
    """RL fine-tuning (``--rl grpo|ppo|dpo``), None for SFT: the :class:`~trainfit.rl.summary.RLSummary` (the
    RLConfig and the planned per-phase memory, KV pool, steps and step-time split)."""
    data: Any = None
    """``plan --dataset``: the :class:`~trainfit.dataset.budget.DataBudget` (rows per epoch, epochs, cut-off,
    packing) the token budget and :meth:`optimizer_steps` come from; None = a ``--tokens`` budget."""

    def __post_init__(self) -> None:
        if self.nodes * self.gpus_per_node < self.workload.gpus or self.nodes < 1:
            raise PlanFileError(_("plan layout {nodes} x {gpn} GPUs does not hold {gpus} GPUs").format(
                nodes=self.nodes, gpn=self.gpus_per_node, gpus=self.workload.gpus),
                fix=_("regenerate the plan with `trainfit plan`"))
        if self.target is not None:
            from trainfit.launch.targets import plan_targets

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

    @property
    def lingjun(self) -> bool:
        return self.resource_class == "pai-lingjun"

    def intervals(self) -> dict[str, dict[str, float]]:
        """p10/p50/p90 of every speed-derived figure (tokens/s and MFU with the speed; step time, hours,
        GPU-hours and cost against it) and of the memory per GPU (``per_gpu_gib``, from the fit corpus)."""
        from trainfit.estimate.uncertainty import Interval, memory_range

        out: dict[str, dict[str, float]] = {}
        mem = memory_range(self.memory.reserved_gib)
        if mem:
            out["per_gpu_gib"] = mem
        if self.speed_interval is None:
            return out
        iv = Interval.from_dict(self.speed_interval)
        for name, inverse in (("tokens_per_s", False), ("mfu", False), ("step_seconds", True), ("hours", True),
                              ("gpu_hours", True), ("cost", True), ("on_demand_cost", True)):
            r = iv.scale(getattr(self, name), inverse=inverse)
            if r is not None:
                out[name] = r
        return out

    def out_of_domain_note(self) -> str | None:
        """The speed interval's note when the plan's regime is outside the calibration domain, else None."""
        siv = self.speed_interval or {}
        return siv.get("note") if siv.get("out_of_domain") else None

    def optimizer_steps(self) -> int | None:
        """Optimizer steps that train the plan's budget, as the launcher counts them: the data's rows over all
        epochs per global batch (``plan --dataset``), else tokens / (global batch x sequence length)."""
        wl = self.workload
        if self.data is not None:
            return self.data.steps(wl.global_batch)
        if not self.tokens:
            return None
        return max(1, math.ceil(self.tokens / (wl.global_batch * wl.seq_len)))

    def settings(self) -> dict[str, Any]:
        w = self.workload
        return {"strategy": w.strategy, "offload": w.offload, "grad_ckpt": w.grad_ckpt, "micro_batch": w.micro_batch,
                "grad_accum": w.grad_accum, "gpus": w.gpus, "gpus_per_node": w.gpus_per_node, "tp": w.tp,
                "pp": w.pp, "ep": w.ep, "cp": w.cp, "ulysses": w.ulysses, "precision": w.precision,
                "optimizer": w.optimizer,
                "attention": w.attention, "loss": w.loss, "method": w.method, "seq_len": w.seq_len,
                "packing": w.packing, "global_batch": w.global_batch, "precision_mode": _precision_mode(w),
                "tokens_per_step": w.global_batch * w.seq_len}

    # ------------------------------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """Lossless JSON-ready dict: summary keys first (what tables and scripts read), then the typed parts."""
        return {
            "schema": PLAN_SCHEMA, "source": self.source,
            "provider": self.provider, "resource_class": self.resource_class, "instance_type": self.instance_type,
            "gpu": self.gpu, "gpus_per_node": self.gpus_per_node, "nodes": self.nodes, "settings": self.settings(),
            "verdict": self.fit.verdict, "per_gpu_gib": self.memory.reserved_gib, "gpu_mem_gib": self.gpu_mem_gib,
            "tensor_peak_gib": self.memory.tensor_peak_gib, "peak_phase": self.memory.peak_phase,
            "host_ram_gib": self.memory.host_ram_gib, "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s, "step_seconds": self.step_seconds, "mfu": self.mfu,
            "framework": self.framework, "target": self.target, "calibration": self.calibration, "hours": self.hours, "gpu_hours": self.gpu_hours, "cost": self.cost,
            "intervals": self.intervals(), "speed_interval": self.speed_interval,
            "oom_probability": self.fit.oom_probability,
            "currency": self.currency, "on_demand_cost": self.on_demand_cost, "spot": self.spot,
            "spot_price_fraction": self.spot_price_fraction, "expected_interruptions": self.expected_interruptions,
            "checkpoint_interval_hours": self.checkpoint_interval_hours, "price_per_hour": self.price_per_hour,
            "price_source": self.price_source, "price_as_of": self.price_as_of, "region": self.region, "notes": list(self.notes), "warnings": list(self.warnings),
            "model": self.model.to_dict(), "workload": self.workload.to_dict(),
            "memory": self.memory.to_exact_dict(), "fit": self.fit.to_dict(),
            "gpu_spec": self.gpu_spec.to_dict(), "instance": None if self.instance is None else self.instance.to_dict(),
            "rl": None if self.rl is None else self.rl.to_dict(),
            "optimizer_steps": self.optimizer_steps(),
            "data": None if self.data is None else self.data.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "plan") -> "Plan":
        """The Plan of :meth:`to_dict`; anything else (another schema, a missing part) is a PlanFileError."""
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
            workload = Workload(**{**wl, "lora_targets": tuple(wl["lora_targets"])})
            gpu_spec = _checked_record("gpu_spec", d["gpu_spec"], where)
            inst = None if d.get("instance") is None else _checked_record("instance", d["instance"], where)
            return cls(
                model=model_from_dict(d["model"]), workload=workload, gpu=d["gpu"], gpu_spec=gpu_spec, instance=inst,
                provider=d["provider"], resource_class=d["resource_class"], instance_type=d["instance_type"],
                gpus_per_node=d["gpus_per_node"], nodes=d["nodes"], memory=MemoryEstimate.from_dict(d["memory"]),
                fit=FitDecision.from_dict(d["fit"]), gpu_mem_gib=d["gpu_mem_gib"], tokens=d.get("tokens"),
                tokens_per_s=d.get("tokens_per_s"), step_seconds=d.get("step_seconds"), mfu=d.get("mfu"),
                framework=d.get("framework"), target=d.get("target"), calibration=d.get("calibration"), hours=d.get("hours"), gpu_hours=d.get("gpu_hours"), cost=d.get("cost"),
                speed_interval=_speed_interval(d.get("speed_interval")), currency=d.get("currency"),
                on_demand_cost=d.get("on_demand_cost"), spot=d.get("spot", False),
                spot_price_fraction=d.get("spot_price_fraction"), expected_interruptions=d.get("expected_interruptions"),
                checkpoint_interval_hours=d.get("checkpoint_interval_hours"), price_per_hour=d.get("price_per_hour"),
                price_source=d.get("price_source"), price_as_of=d.get("price_as_of"),
                region=d.get("region"), notes=tuple(d.get("notes") or ()), warnings=tuple(d.get("warnings") or ()),
                source=str(d.get("source") or "trainfit plan"),
                rl=_rl_part(d.get("rl")), data=_data_budget(d.get("data")))
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


#: Plan fields that are numbers (None = not estimated) and strings, as :meth:`Plan.to_dict` writes them.
_NUMBER_FIELDS = ("tokens", "tokens_per_s", "step_seconds", "mfu", "hours", "gpu_hours", "cost", "on_demand_cost",
                  "gpu_mem_gib", "spot_price_fraction", "expected_interruptions", "checkpoint_interval_hours",
                  "price_per_hour")
_STRING_FIELDS = ("gpu", "provider", "resource_class", "instance_type", "currency", "framework", "target", "calibration", "region",
                  "source",
                  "price_source", "price_as_of")


def _checked_fields(d: dict, where: str) -> dict:
    """Every scalar of a plan file through the input gate (finite non-negative numbers, counts in range, strings
    that are strings) and the workload through the option table's ranges; returns the workload dict."""
    from trainfit import inputs
    from trainfit.errors import InputError
    from trainfit.options import MAX_GPUS, WORKLOAD_OPTION_NAMES, parse_options

    try:
        for k in _NUMBER_FIELDS:
            if d.get(k) is not None:
                inputs.as_float(k, d[k], lo=0)
        for k in ("gpus_per_node", "nodes"):
            if k in d:  # a missing part is reported as a wrong shape below
                if not isinstance(d[k], int) or isinstance(d[k], bool):
                    raise InputError(_("{field} must be an integer, not {type}").format(field=k, type=type(d[k]).__name__))
                inputs.as_int(k, d[k], lo=1, hi=MAX_GPUS)
        if isinstance(d.get("gpus_per_node"), int) and isinstance(d.get("nodes"), int) \
                and d["gpus_per_node"] * d["nodes"] > MAX_GPUS:
            raise InputError(_("the layout {nodes} nodes x {gpn} GPUs is over the {limit:,}-GPU limit").format(
                nodes=d["nodes"], gpn=d["gpus_per_node"], limit=MAX_GPUS))
        if "spot" in d and not isinstance(d["spot"], bool):
            raise InputError(_("spot must be true or false (a JSON boolean), not {type} {value!r}").format(
                type=type(d["spot"]).__name__, value=str(d["spot"])[:20]))
        for k in ("notes", "warnings"):
            if d.get(k) is not None and (not isinstance(d[k], list) or not all(isinstance(x, str) for x in d[k])):
                raise InputError(_("{field} must be a list of strings").format(field=k))
        name = d.get("model", {}).get("name") if isinstance(d.get("model"), dict) else None
        if name is not None:
            _check_model_name(name)
        for k in _STRING_FIELDS:
            if d.get(k) is not None and not isinstance(d[k], str):
                raise InputError(_("{field} must be a string, not {type}").format(field=k, type=type(d[k]).__name__))
        wl = d["workload"]
        if not isinstance(wl, dict):
            raise InputError(_("workload must be an object"))
        parsed = parse_options({k: v for k, v in wl.items() if k in WORKLOAD_OPTION_NAMES}, defaults=False)
    except InputError as e:
        raise PlanFileError(f"{where}: {e.message}", fix=_("regenerate it with `trainfit plan --json`")) from None
    return {**wl, **{k: v for k, v in parsed.items() if v is not None}}


#: JSON types a catalog column may have in a plan file (``Plan.to_dict`` writes each record's typed values).
_COLUMN_JSON_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "enum": (str,), "date": (str,), "int": (int,),
                                                   "float": (int, float), "bool": (bool,), "list": (list,)}


def _checked_record(part: str, rec: Any, where: str) -> Any:
    """The GPU or instance record of a plan file, validated by the catalog's own schema (identifier patterns for
    names and regions, ranges, enums, dates) with strict JSON types (``"verified": "yes"`` is refused: plan files
    are written by trainfit with JSON booleans). A record from elsewhere may carry anything: its regions build the
    PAI image host and its counts the job's layout."""
    from trainfit.catalog import GPU_COLUMNS, INSTANCE_COLUMNS, parse_row
    from trainfit.catalog.gpus import gpu_from_row
    from trainfit.catalog.instances import instance_from_row

    columns = GPU_COLUMNS if part == "gpu_spec" else INSTANCE_COLUMNS
    fix = _("regenerate the plan with `trainfit plan --json`")
    if not isinstance(rec, dict):
        raise PlanFileError(_("{where}: {part} must be an object").format(where=where, part=part), fix=fix)
    raw = dict(rec)
    origin = raw.pop("origin", "bundled")
    if not isinstance(origin, str) or len(origin) > 4096:
        raise PlanFileError(_("{where}: {part}.origin must be a string").format(where=where, part=part), fix=fix)
    for col in columns:
        v = raw.get(col.name)
        if v is None:
            continue
        ok = _COLUMN_JSON_TYPES[col.kind]
        if not isinstance(v, ok) or (isinstance(v, bool) and col.kind != "bool") or \
                (col.kind == "list" and not all(isinstance(x, str) for x in v)):
            what = {"bool": _("true or false"), "list": _("a list of strings"), "int": _("an integer"),
                    "float": _("a number")}.get(col.kind) or _("a string")
            raise PlanFileError(_("{where}: {field} must be {what}, not {type}").format(
                where=where, field=f"{part}.{col.name}", what=what, type=type(v).__name__), fix=fix)
    derived: dict[str, Any] = {}
    if part == "gpu_spec":  # what the planner derived for the plan (speed assumed from a class, --gpu-mem), not columns
        from trainfit.catalog.gpus import SPEED_FIELDS

        assumed = raw.pop("assumed", [])
        if not isinstance(assumed, list) or not all(a in SPEED_FIELDS for a in assumed):
            raise PlanFileError(_("{where}: gpu_spec.assumed must list speed fields ({fields})").format(
                where=where, fields=", ".join(SPEED_FIELDS)), fix=fix)
        mem_from_user = raw.pop("mem_from_user", False)
        if not isinstance(mem_from_user, bool):
            raise PlanFileError(_("{where}: gpu_spec.mem_from_user must be true or false").format(where=where), fix=fix)
        derived = {"assumed": tuple(assumed), "mem_from_user": mem_from_user}
    row, problems = parse_row(columns, raw, f"{part}")
    if problems:
        raise PlanFileError(f"{where}: {problems[0][:300]}", fix=fix)
    if part == "gpu_spec":
        from dataclasses import replace

        return replace(gpu_from_row(row, origin=origin), **derived)
    return instance_from_row(row, origin=origin)


def _check_model_name(name: Any) -> None:
    """A plan's model name: a registry name, a Hugging Face repo id (``org/name``) or a config folder's name;
    never a path that climbs (``../``), an absolute path, or a control character: it names the job and the
    model the job files load."""
    from trainfit.errors import InputError

    if not isinstance(name, str) or not name or len(name) > 200:
        raise InputError(_("model.name must be a non-empty string of at most 200 characters"))
    if name.startswith(("/", "~")) or "\\" in name or any(p in ("..", ".") for p in name.split("/")) \
            or "//" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(_("model.name {name!r} is not a model name (a path that climbs, an absolute path or a "
                           "control character)").format(name=name[:60]))


def _precision_mode(w: Workload) -> str:
    from trainfit.estimate.states import precision_mode

    return precision_mode(w)


def _data_budget(d: Any) -> Any:
    """A plan file's ``data`` record checked (:meth:`~trainfit.dataset.budget.DataBudget.from_dict`), or None."""
    if d is None:
        return None
    from trainfit.dataset.budget import DataBudget

    return DataBudget.from_dict(d)


def _speed_interval(d: Any) -> dict | None:
    """A plan file's ``speed_interval`` checked (finite positive quantiles in order), or None."""
    if d is None:
        return None
    from trainfit.estimate.uncertainty import Interval
    from trainfit import inputs

    if not isinstance(d, dict):
        raise TypeError("speed_interval must be an object")
    iv = Interval.from_dict(d)
    for k in ("p10", "p50", "p90"):
        inputs.as_float(f"speed_interval.{k}", getattr(iv, k), lo=1e-6, hi=1e6)
    if not iv.p10 <= iv.p50 <= iv.p90:
        raise ValueError("speed_interval quantiles out of order")
    for k in ("group", "note"):  # printed into job file headers: one line of printable text
        v = d.get(k, "")
        if not isinstance(v, str) or len(v) > 400 or not v.isprintable():
            raise ValueError(f"speed_interval.{k} must be one line of text")
    return iv.to_dict()


def _rl_part(d: object) -> RLSummary | None:
    """A plan file's ``rl`` part (:meth:`~trainfit.rl.summary.RLSummary.from_dict`), or None for SFT."""
    if d is None:
        return None
    if not isinstance(d, dict) or "algo" not in d:
        raise PlanFileError(_("the plan's 'rl' part is not an RL configuration"),
                            fix=_("regenerate the plan with `trainfit plan --rl ...`"))
    from trainfit.rl.summary import RLSummary  # rl.speed imports the plan package (plan.hardware)

    return RLSummary.from_dict(d)


@dataclass(frozen=True, kw_only=True)
class Rejection:
    instance_type: str
    code: str
    reason: str
    fix: str | None = None
    provider: str = ""
    fix_options: tuple[dict[str, Any], ...] = ()
    """The fix as option changes a program can apply: alternatives, each {option name: value} (None = drop the
    option), in the words of ``options.py`` (``{"allow_fp16": True}`` is ``--allow-fp16``); empty when the fix is
    not a change of options (a catalog overlay, a quota raise)."""
    tried: dict[str, Any] | None = None
    """``memory``: the settings of the closest miss (``Workload.to_dict()``), which ``trainfit memory`` judges alike."""

    def to_dict(self) -> dict[str, Any]:
        return {"instance_type": self.instance_type, "provider": self.provider, "code": self.code,
                "reason": self.reason, "fix": self.fix, "fix_options": [dict(o) for o in self.fix_options],
                "tried": self.tried}


@dataclass(frozen=True, kw_only=True)
class PlanResult:
    request: Any
    """The :class:`~trainfit.plan.search.PlanRequest`."""
    plans: tuple[Plan, ...]
    rejected: tuple[Rejection, ...]
    pareto: tuple[int, ...]
    """Indices into ``plans`` on the time-vs-cost frontier (GPU-hours stand in for cost without prices)."""
    notes: tuple[str, ...] = field(default=())
    region_prices: tuple[dict[str, Any], ...] = field(default=())
    """``plan --compare-regions``: per plan, its cost in every region with a price (:func:`~trainfit.plan.pricing.
    region_prices`); empty otherwise."""
    ranking: Any = None
    """How the plans were ranked and why #1 is #1 (:class:`~trainfit.plan.rank.Ranking`)."""

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None

    def to_dict(self) -> dict[str, Any]:
        from trainfit.plan.search import PIN_FIELDS

        req = self.request
        wl = req.workload
        w = {k: v for k, v in wl.to_dict().items() if k not in PIN_FIELDS or k in req.pins}
        w.update({"model": req.model.name, "tokens": req.tokens, "global_batch": req.global_batch,
                  "global_batch_target": getattr(req, "target_global_batch", None),
                  "objective": req.objective, "spot": req.spot, "pins": dict(req.pins),
                  "target": getattr(req, "target", None), "framework": req.framework})
        rl = getattr(req, "rl", None)
        if rl is not None:
            w.update({"rl": rl.to_dict(), "steps": getattr(req, "steps", None)})
        return {"schema": PLAN_SCHEMA, "workload": w, "plans": [p.to_dict() for p in self.plans],
                "pareto": list(self.pareto), "ties": [] if self.ranking is None else list(self.ranking.ties),
                "rejected": [r.to_dict() for r in self.rejected],
                "notes": list(self.notes), "ranking": None if self.ranking is None else self.ranking.to_dict(),
                **({"region_prices": list(self.region_prices)} if self.region_prices else {})}


def plans_from_document(doc: Any, *, where: str | None = None) -> list[Plan]:
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
