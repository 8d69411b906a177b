"""The typed parts a :class:`~trainfit.plan.types.Plan` is composed of: where it runs (:class:`Placement`), how fast
(:class:`Speed`) and what it takes and costs (:class:`Cost`); the memory estimate, the fit decision and the RL part
(:class:`~trainfit.rl.summary.RLSummary`) are typed values of their own packages.

A part's scalar fields are what a plan file carries under the same names: :func:`scalar_fields` reads them from the
dataclass fields (their annotations say number, count, flag or text), so reading a plan file and checking its
values (:mod:`trainfit.plan.plan_file`) follow the parts with no list of names kept by hand.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from functools import cache
from typing import Literal, Mapping

from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.estimate.calibration import calibration_note
from trainfit.estimate.speed import SpeedEstimate
from trainfit.json_types import JSON, JSONObject

#: What the ranking compares (:func:`trainfit.plan.rank.ranking_basis`).
Basis = Literal["cost", "gpu_hours", "hours"]
#: What a scalar field holds, from its annotation.
ScalarKind = Literal["number", "count", "flag", "text"]


@dataclass(frozen=True)
class ScalarField:
    """One scalar field of a part: its name, kind, whether None is allowed and whether a plan file must have it."""

    name: str
    kind: ScalarKind
    optional: bool
    required: bool
    default: JSON = None


_BUILTINS: dict[str, ScalarKind] = {"float": "number", "int": "count", "bool": "flag", "str": "text"}


@cache
def scalar_fields(cls: type) -> tuple[ScalarField, ...]:
    """The scalar fields of a dataclass (numbers, counts, flags, text, each possibly None), in declaration order,
    read from their annotations; records, dicts and tuples are not scalars."""
    out: list[ScalarField] = []
    for f in fields(cls):
        names = [a.strip() for a in str(f.type).split("|")]
        kinds = [a for a in names if a != "None"]
        if len(kinds) != 1 or kinds[0] not in _BUILTINS:
            continue
        out.append(ScalarField(name=f.name, kind=_BUILTINS[kinds[0]], optional="None" in names,
                               required=f.default is MISSING and f.default_factory is MISSING,
                               default=None if f.default is MISSING else f.default))
    return tuple(out)


def scalars_from(cls: type, d: Mapping[str, object]) -> dict[str, object]:
    """A part's scalar fields from a plan file's flat object: required ones by name (a missing one is a KeyError),
    the others with their defaults. Values are checked by :func:`trainfit.plan.plan_file.check_scalars`."""
    return {f.name: d[f.name] if f.required else d.get(f.name, f.default) for f in scalar_fields(cls)}


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where a plan runs: provider, instance type, GPU and the node layout."""

    provider: str
    resource_class: str
    instance_type: str | None
    gpu: str
    """Canonical GPU name (catalog)."""
    gpus_per_node: int
    nodes: int
    gpu_mem_gib: float
    """Usable memory of one GPU (after ECC on GDDR6)."""
    gpu_spec: GPU
    """The catalog's GPU record as it was when planned."""
    instance: Instance | None = None
    """The catalog's instance record, or None (a GPU without an instance)."""

    @classmethod
    def of(cls, gpu: GPU, inst: Instance | None, *, gpus_per_node: int, nodes: int, usable_gib: float) -> "Placement":
        """The placement on ``gpu`` (and the instance ``inst``, else a ``generic`` node)."""
        return cls(provider=inst.provider if inst is not None else "generic",
                   resource_class=inst.resource_class if inst is not None else "generic",
                   instance_type=inst.instance_type if inst is not None else None, gpu=gpu.name,
                   gpus_per_node=gpus_per_node, nodes=nodes, gpu_mem_gib=usable_gib, gpu_spec=gpu, instance=inst)


@dataclass(frozen=True, kw_only=True)
class Speed:
    """How fast a plan trains: the speed model's figures (all None when the GPU's compute is unknown)."""

    tokens_per_s: float | None = None
    step_seconds: float | None = None
    mfu: float | None = None
    framework: str | None = None
    """Engine profile of the speed estimate (``--framework``, else the engine of the plan's target)."""
    calibration: str | None = None
    """The measured speed calibration the estimate used ("calibrated on <GPU> (<family> engine), <date>: ..." from
    ``trainfit calibrate``), None = the fitted engine model alone."""
    speed_interval: JSONObject | None = None
    """Prediction interval of the speed (:class:`trainfit.estimate.uncertainty.Interval` as a dict: ``p10``,
    ``p50``, ``p90`` of measured / predicted tokens/s for the plan's regime, the group, ``out_of_domain`` and a
    ``note``); tokens/s, MFU, step time, hours, GPU-hours and cost ranges follow from it. None when there is no
    speed, and in plan files written before it existed."""

    @classmethod
    def of(cls, sp: SpeedEstimate, speed_interval: JSONObject | None) -> Speed:
        """The plan's figures of the speed model's estimate ``sp``, with its interval."""
        return cls(tokens_per_s=sp.tokens_per_s, step_seconds=sp.step_seconds, mfu=sp.mfu, framework=sp.framework,
                   calibration=calibration_note(sp.assumptions), speed_interval=speed_interval)


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What a plan takes and costs: the token budget, hours, GPU-hours, the price with its provenance, and spot."""

    tokens: float | None = None
    """Training tokens the time and cost are for (None: memory only)."""
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


__all__ = ["Cost", "Placement", "ScalarField", "Speed", "scalar_fields", "scalars_from"]


@dataclass(frozen=True, kw_only=True)
class Ranking:
    """How the plans were ranked, in words a user can check."""

    basis: Basis
    """cost | gpu_hours | hours: what the order compares (the Pareto frontier uses the same money unit)."""
    currency: str | None
    """The one currency of every plan's cost when ``basis`` is cost (or every plan is priced in it), else None."""
    summary: str
    """"ranked by X" with the reason for X."""
    why_first: str
    """Why #1 is #1 ("" without plans)."""
    ties: tuple[int, ...]
    """0-based indices of the plans after #1 tied with it (:func:`ties`: their p10-p90 ranges on the basis overlap)."""
    unpriced: tuple[int, ...]
    """0-based indices of the plans without a price."""
    price_fix: str | None
    """How to price the unpriced rows (per provider), None when every row has a price."""
    price_fix_by_provider: tuple[tuple[str, str], ...] = ()
    """(provider, how to price its rows) for the providers of the unpriced rows."""

    def to_dict(self) -> JSONObject:
        return {"basis": self.basis, "currency": self.currency, "summary": self.summary, "why_first": self.why_first,
                "ties": list(self.ties), "unpriced": list(self.unpriced), "price_fix": self.price_fix,
                "price_fix_by_provider": dict(self.price_fix_by_provider)}
