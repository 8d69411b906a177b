"""Reading a plan file back: every value a plan's JSON carries is checked before it becomes a typed
:class:`~trainfit.plan.types.Plan` (a plan file from elsewhere may carry anything; its strings reach job files). The
scalars of the plan's parts are checked by the kinds their dataclass fields declare
(:func:`~trainfit.plan.parts.scalar_fields`), the GPU and instance records by the catalog's own schema."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from trainfit import inputs
from trainfit.catalog import GPU_COLUMNS, INSTANCE_COLUMNS, parse_row
from trainfit.catalog.gpus import GPU, SPEED_FIELDS, gpu_from_row
from trainfit.catalog.instances import Instance, instance_from_row
from trainfit.dataset.budget import DataBudget
from trainfit.errors import InputError, PlanFileError
from trainfit.estimate.uncertainty import Interval
from trainfit.i18n import _
from trainfit.json_types import JSONObject
from trainfit.plan.parts import ScalarField


def check_scalars(d: Mapping[str, object], parts: tuple[tuple[ScalarField, ...], ...], *, max_gpus: int) -> None:
    """Every scalar of a plan file through the input gate, by kind: numbers finite and non-negative (None = not
    estimated), counts integers in ``[1, max_gpus]`` (and the layout within ``max_gpus``), flags JSON booleans,
    text strings; notes and warnings lists of strings, the model's name a name (an InputError otherwise)."""
    scalars = [f for part in parts for f in part]
    for f in scalars:
        if f.kind == "number" and d.get(f.name) is not None:
            inputs.as_float(f.name, d[f.name], lo=0)
    counts = [f.name for f in scalars if f.kind == "count"]
    for k in counts:
        if k in d:  # a missing part is reported as a wrong shape
            v = d[k]
            if not isinstance(v, int) or isinstance(v, bool):
                raise InputError(_("{field} must be an integer, not {type}").format(field=k, type=type(v).__name__))
            inputs.as_int(k, v, lo=1, hi=max_gpus)
    gpn, nodes = d.get("gpus_per_node"), d.get("nodes")
    if isinstance(gpn, int) and isinstance(nodes, int) and gpn * nodes > max_gpus:
        raise InputError(_("the layout {nodes} nodes x {gpn} GPUs is over the {limit:,}-GPU limit").format(
            nodes=nodes, gpn=gpn, limit=max_gpus))
    for f in scalars:
        if f.kind == "flag" and f.name in d and not isinstance(d[f.name], bool):
            raise InputError(_("{field} must be true or false (a JSON boolean), not {type} {value!r}").format(
                field=f.name, type=type(d[f.name]).__name__, value=str(d[f.name])[:20]))
    for k in ("notes", "warnings"):
        v = d.get(k)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            raise InputError(_("{field} must be a list of strings").format(field=k))
    model = d.get("model")
    name = model.get("name") if isinstance(model, dict) else None
    if name is not None:
        check_model_name(name)
    for f in scalars:
        if f.kind == "text" and d.get(f.name) is not None and not isinstance(d[f.name], str):
            raise InputError(_("{field} must be a string, not {type}").format(field=f.name,
                                                                               type=type(d[f.name]).__name__))


def checked_gpu(rec: object, where: str) -> GPU:
    """A plan file's ``gpu_spec`` record (see :func:`_checked_record`)."""
    gpu = _checked_record("gpu_spec", rec, where)
    assert isinstance(gpu, GPU)
    return gpu


def checked_instance(rec: object, where: str) -> Instance | None:
    """A plan file's ``instance`` record (see :func:`_checked_record`), or None."""
    if rec is None:
        return None
    inst = _checked_record("instance", rec, where)
    assert isinstance(inst, Instance)
    return inst


#: JSON types a catalog column may have in a plan file (``Plan.to_dict`` writes each record's typed values).
COLUMN_JSON_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "enum": (str,), "date": (str,), "int": (int,),
                                                   "float": (int, float), "bool": (bool,), "list": (list,)}


def _checked_record(part: str, rec: object, where: str) -> GPU | Instance:
    """The GPU or instance record of a plan file, validated by the catalog's own schema (identifier patterns for
    names and regions, ranges, enums, dates) with strict JSON types (``"verified": "yes"`` is refused: plan files
    are written by trainfit with JSON booleans). A record from elsewhere may carry anything: its regions build the
    PAI image host and its counts the job's layout."""
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
        ok = COLUMN_JSON_TYPES[col.kind]
        if not isinstance(v, ok) or (isinstance(v, bool) and col.kind != "bool") or \
                (col.kind == "list" and not all(isinstance(x, str) for x in v)):
            what = {"bool": _("true or false"), "list": _("a list of strings"), "int": _("an integer"),
                    "float": _("a number")}.get(col.kind) or _("a string")
            raise PlanFileError(_("{where}: {field} must be {what}, not {type}").format(
                where=where, field=f"{part}.{col.name}", what=what, type=type(v).__name__), fix=fix)
    derived: dict[str, tuple[str, ...] | bool] = {}
    if part == "gpu_spec":  # what the planner derived for the plan (speed assumed from a class, --gpu-mem), not columns
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
        return replace(gpu_from_row(row, origin=origin), **derived)
    return instance_from_row(row, origin=origin)


def check_model_name(name: object) -> None:
    """A plan's model name: a registry name, a Hugging Face repo id (``org/name``) or a config folder's name;
    never a path that climbs (``../``), an absolute path, or a control character: it names the job and the
    model the job files load."""
    if not isinstance(name, str) or not name or len(name) > 200:
        raise InputError(_("model.name must be a non-empty string of at most 200 characters"))
    if name.startswith(("/", "~")) or "\\" in name or any(p in ("..", ".") for p in name.split("/")) \
            or "//" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(_("model.name {name!r} is not a model name (a path that climbs, an absolute path or a "
                           "control character)").format(name=name[:60]))


def data_budget(d: object) -> DataBudget | None:
    """A plan file's ``data`` record checked (:meth:`~trainfit.dataset.budget.DataBudget.from_dict`), or None."""
    if d is None:
        return None
    return DataBudget.from_dict(d)


def speed_interval(d: object) -> JSONObject | None:
    """A plan file's ``speed_interval`` checked (finite positive quantiles in order), or None."""
    if d is None:
        return None
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


__all__ = ["COLUMN_JSON_TYPES", "check_model_name", "check_scalars", "checked_gpu", "checked_instance", "data_budget",
           "speed_interval"]
