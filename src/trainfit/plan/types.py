"""The typed plan: one frozen value for a chosen configuration (model, workload, GPU, instance, memory, fit
verdict, speed, time, cost, warnings) that flows from ``plan`` (or ``memory``) into ``render``, ``check``,
``submit``, ``diagnose`` and the web page. Nothing downstream recomputes it.

``Plan.to_dict()`` / ``Plan.from_dict()`` round-trip losslessly (floats are written unrounded; JSON keeps them
exactly) and carry :data:`PLAN_SCHEMA`; a file with another schema is a clear :class:`PlanFileError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainfit.errors import PlanFileError, TrainfitError
from trainfit.estimate.fit import FitDecision
from trainfit.estimate.memory import MemoryEstimate
from trainfit.models.shapes import ModelShape, model_from_dict
from trainfit.workload import Workload

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
    rl: dict | None = None
    """RL fine-tuning (``--rl grpo|ppo|dpo``), None for SFT: every :class:`~trainfit.rl.RLConfig` field (``algo``,
    ``rollout_util``...) and the planned numbers ``phases_gib`` (rollout/train/sync), ``peak_gib``,
    ``binding_phase``, ``kv_pool_gib``, ``max_concurrent_seqs``, ``steps`` and ``speed`` (the step-time split).
    For an RL plan ``memory`` is the policy update's estimate with ``reserved_gib`` = the binding phase's peak
    and the RL host RAM (what the fit decision judged), ``step_seconds`` is one RL step and ``tokens`` the
    sequence tokens of all steps."""

    def __post_init__(self) -> None:
        if self.nodes * self.gpus_per_node < self.workload.gpus or self.nodes < 1:
            raise PlanFileError(f"plan layout {self.nodes} x {self.gpus_per_node} GPUs does not hold "
                                f"{self.workload.gpus} GPUs", fix="regenerate the plan with `trainfit plan`")
        if self.target is not None:
            from trainfit.launch.targets import PLAN_TARGETS

            if self.target not in PLAN_TARGETS:
                raise PlanFileError(f"the plan's target {str(self.target)[:40]!r} is not a launcher trainfit writes",
                                    fix="one of " + ", ".join(PLAN_TARGETS) + "; or regenerate the plan")
        if self.rl is not None:
            if not isinstance(self.rl, dict) or "algo" not in self.rl:
                raise PlanFileError("the plan's 'rl' part is not an RL configuration",
                                    fix="regenerate the plan with `trainfit plan --rl ...`")
            self.rl_config()  # validates the RL fields

    def rl_config(self) -> Any:
        """The :class:`~trainfit.rl.RLConfig` of an RL plan (None for SFT)."""
        if self.rl is None:
            return None
        from trainfit.rl.config import RL_FIELD_NAMES, RLConfig

        return RLConfig(**{k: v for k, v in self.rl.items() if k in RL_FIELD_NAMES})

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

    def settings(self) -> dict[str, Any]:
        w = self.workload
        return {"strategy": w.strategy, "offload": w.offload, "grad_ckpt": w.grad_ckpt, "micro_batch": w.micro_batch,
                "grad_accum": w.grad_accum, "gpus": w.gpus, "gpus_per_node": w.gpus_per_node, "tp": w.tp,
                "pp": w.pp, "ep": w.ep, "cp": w.cp, "precision": w.precision, "optimizer": w.optimizer,
                "attention": w.attention, "loss": w.loss, "method": w.method, "seq_len": w.seq_len}

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
            "currency": self.currency, "on_demand_cost": self.on_demand_cost, "spot": self.spot,
            "spot_price_fraction": self.spot_price_fraction, "expected_interruptions": self.expected_interruptions,
            "checkpoint_interval_hours": self.checkpoint_interval_hours, "price_per_hour": self.price_per_hour,
            "price_source": self.price_source, "price_as_of": self.price_as_of, "region": self.region, "notes": list(self.notes), "warnings": list(self.warnings),
            "model": self.model.to_dict(), "workload": self.workload.to_dict(),
            "memory": self.memory.to_exact_dict(), "fit": self.fit.to_dict(),
            "gpu_spec": self.gpu_spec.to_dict(), "instance": None if self.instance is None else self.instance.to_dict(),
            "rl": None if self.rl is None else _json_copy(self.rl),
        }

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "plan") -> "Plan":
        """The Plan of :meth:`to_dict`; anything else (another schema, a missing part) is a PlanFileError."""
        if not isinstance(d, dict):
            raise PlanFileError(f"{where} is not an object", fix="regenerate it with `trainfit plan --json`")
        schema = d.get("schema")
        if schema != PLAN_SCHEMA:
            raise PlanFileError(
                f"{where} has schema {schema!r}; this trainfit reads {PLAN_SCHEMA!r}"
                + (" (plans written by trainfit 0.1 carry no schema and rounded numbers)" if schema is None else ""),
                fix="regenerate the plan with this version: `trainfit plan ... --json > plan.json`")
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
                currency=d.get("currency"), on_demand_cost=d.get("on_demand_cost"), spot=d.get("spot", False),
                spot_price_fraction=d.get("spot_price_fraction"), expected_interruptions=d.get("expected_interruptions"),
                checkpoint_interval_hours=d.get("checkpoint_interval_hours"), price_per_hour=d.get("price_per_hour"),
                price_source=d.get("price_source"), price_as_of=d.get("price_as_of"),
                region=d.get("region"), notes=tuple(d.get("notes") or ()), warnings=tuple(d.get("warnings") or ()),
                source=str(d.get("source") or "trainfit plan"),
                rl=None if d.get("rl") is None else _json_copy(d["rl"]))
        except PlanFileError:
            raise
        except TrainfitError as e:
            raise PlanFileError(f"{where} does not describe a valid plan: {e.message}",
                                fix=e.fix or "regenerate it with `trainfit plan --json`") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise PlanFileError(f"{where} does not have the plan's shape ({type(e).__name__}: {str(e)[:80]})",
                                fix="regenerate it with `trainfit plan --json`") from None


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
                    raise InputError(f"{k} must be an integer, not {type(d[k]).__name__}")
                inputs.as_int(k, d[k], lo=1, hi=MAX_GPUS)
        if isinstance(d.get("gpus_per_node"), int) and isinstance(d.get("nodes"), int) \
                and d["gpus_per_node"] * d["nodes"] > MAX_GPUS:
            raise InputError(f"the layout {d['nodes']} nodes x {d['gpus_per_node']} GPUs is over the "
                             f"{MAX_GPUS:,}-GPU limit")
        if "spot" in d and not isinstance(d["spot"], bool):
            raise InputError(f"spot must be true or false (a JSON boolean), not {type(d['spot']).__name__} "
                             f"{str(d['spot'])[:20]!r}")
        for k in ("notes", "warnings"):
            if d.get(k) is not None and (not isinstance(d[k], list) or not all(isinstance(x, str) for x in d[k])):
                raise InputError(f"{k} must be a list of strings")
        name = d.get("model", {}).get("name") if isinstance(d.get("model"), dict) else None
        if name is not None:
            _check_model_name(name)
        for k in _STRING_FIELDS:
            if d.get(k) is not None and not isinstance(d[k], str):
                raise InputError(f"{k} must be a string, not {type(d[k]).__name__}")
        wl = d["workload"]
        if not isinstance(wl, dict):
            raise InputError("workload must be an object")
        parsed = parse_options({k: v for k, v in wl.items() if k in WORKLOAD_OPTION_NAMES}, defaults=False)
    except InputError as e:
        raise PlanFileError(f"{where}: {e.message}", fix="regenerate it with `trainfit plan --json`") from None
    return {**wl, **{k: v for k, v in parsed.items() if v is not None}}


#: JSON types a catalog column may have in a plan file (``Plan.to_dict`` writes each record's typed values).
_COLUMN_JSON_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "enum": (str,), "date": (str,), "int": (int,),
                                                   "float": (int, float), "bool": (bool,), "list": (list,)}


def _checked_record(part: str, rec: Any, where: str) -> Any:
    """The GPU or instance record of a plan file, validated by the catalog's own schema (identifier patterns for
    names and regions, ranges, enums, dates) with strict JSON types (``"verified": "yes"`` is refused: plan files
    are written by trainfit with JSON booleans). A record from elsewhere may carry anything: its regions build the
    PAI image host and its counts the job's layout."""
    from trainfit.catalog._schema import GPU_COLUMNS, INSTANCE_COLUMNS, parse_row
    from trainfit.catalog.gpus import gpu_from_row
    from trainfit.catalog.instances import instance_from_row

    columns = GPU_COLUMNS if part == "gpu_spec" else INSTANCE_COLUMNS
    fix = "regenerate the plan with `trainfit plan --json`"
    if not isinstance(rec, dict):
        raise PlanFileError(f"{where}: {part} must be an object", fix=fix)
    raw = dict(rec)
    origin = raw.pop("origin", "bundled")
    if not isinstance(origin, str) or len(origin) > 4096:
        raise PlanFileError(f"{where}: {part}.origin must be a string", fix=fix)
    for col in columns:
        v = raw.get(col.name)
        if v is None:
            continue
        ok = _COLUMN_JSON_TYPES[col.kind]
        if not isinstance(v, ok) or (isinstance(v, bool) and col.kind != "bool") or \
                (col.kind == "list" and not all(isinstance(x, str) for x in v)):
            raise PlanFileError(f"{where}: {part}.{col.name} must be "
                                + {"bool": "true or false", "list": "a list of strings", "int": "an integer",
                                   "float": "a number"}.get(col.kind, "a string")
                                + f", not {type(v).__name__}", fix=fix)
    row, problems = parse_row(columns, raw, f"{part}")
    if problems:
        raise PlanFileError(f"{where}: {problems[0][:300]}", fix=fix)
    return (gpu_from_row if part == "gpu_spec" else instance_from_row)(row, origin=origin)


def _check_model_name(name: Any) -> None:
    """A plan's model name: a registry name, a Hugging Face repo id (``org/name``) or a config folder's name;
    never a path that climbs (``../``), an absolute path, or a control character: it names the job and the
    model the job files load."""
    from trainfit.errors import InputError

    if not isinstance(name, str) or not name or len(name) > 200:
        raise InputError("model.name must be a non-empty string of at most 200 characters")
    if name.startswith(("/", "~")) or "\\" in name or any(p in ("..", ".") for p in name.split("/")) \
            or "//" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(f"model.name {name[:60]!r} is not a model name (a path that climbs, an absolute "
                         "path or a control character)")


def _json_copy(v: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); tuples become lists, as JSON writes them."""
    if isinstance(v, dict):
        return {str(k): _json_copy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_copy(x) for x in v]
    return v


@dataclass(frozen=True, kw_only=True)
class Rejection:
    instance_type: str
    code: str
    reason: str
    fix: str | None = None
    provider: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"instance_type": self.instance_type, "provider": self.provider, "code": self.code,
                "reason": self.reason, "fix": self.fix}


@dataclass(frozen=True, kw_only=True)
class PlanResult:
    request: Any
    """The :class:`~trainfit.plan.search.PlanRequest`."""
    plans: tuple[Plan, ...]
    rejected: tuple[Rejection, ...]
    pareto: tuple[int, ...]
    """Indices into ``plans`` on the time-vs-cost frontier (GPU-hours stand in for cost without prices)."""
    notes: tuple[str, ...] = field(default=())

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None

    def to_dict(self) -> dict[str, Any]:
        from trainfit.plan.search import PIN_FIELDS

        req = self.request
        wl = req.workload
        w = {k: v for k, v in wl.to_dict().items() if k not in PIN_FIELDS or k in req.pins}
        w.update({"model": req.model.name, "tokens": req.tokens, "global_batch": req.global_batch,
                  "objective": req.objective, "spot": req.spot, "pins": dict(req.pins),
                  "target": getattr(req, "target", None), "framework": req.framework})
        rl = getattr(req, "rl", None)
        if rl is not None:
            w.update({"rl": rl.to_dict(), "steps": getattr(req, "steps", None)})
        return {"schema": PLAN_SCHEMA, "workload": w, "plans": [p.to_dict() for p in self.plans],
                "pareto": list(self.pareto), "rejected": [r.to_dict() for r in self.rejected],
                "notes": list(self.notes)}


def plans_from_document(doc: Any, *, where: str = "plan file") -> list[Plan]:
    """Every plan of a ``trainfit plan --json`` document (or of a single plan's JSON)."""
    if isinstance(doc, dict) and "plans" not in doc and "model" in doc:
        return [Plan.from_dict(doc, where=where)]
    if isinstance(doc, dict) and "schema" not in doc and "plans" not in doc:  # a job file, a ds_config.json ...
        raise PlanFileError(f"{where} is not a trainfit plan (no 'schema' or 'plans' key)",
                            fix="pass the output of `trainfit plan ... --json > plan.json` (a job file is checked "
                                "with `trainfit check`)")
    if not isinstance(doc, dict) or doc.get("schema") != PLAN_SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise PlanFileError(f"{where} has schema {got!r}; this trainfit reads {PLAN_SCHEMA!r}",
                            fix="regenerate it with this version: `trainfit plan ... --json > plan.json`")
    plans = doc.get("plans")
    if not isinstance(plans, list):
        raise PlanFileError(f"{where} has no 'plans' list", fix="regenerate it with `trainfit plan --json`")
    if not plans:
        raise PlanFileError(f"{where} holds no plan (nothing fitted)",
                            fix="see its 'rejected' list, or rerun `trainfit plan` with other options")
    return [Plan.from_dict(p, where=f"{where}, plan {i + 1}") for i, p in enumerate(plans)]
