"""What the planner is asked (:class:`PlanRequest`), the search's vocabulary (node counts, pinnable fields, the
RL layouts the launch writers express) and the record of an instance type's nearest miss (:class:`NearestMiss`).

The bottom of ``plan/``: the options table builds a request from it and every planner module reads it; it imports
no other planner module but :mod:`trainfit.plan.batch`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from trainfit.dataset.budget import DataBudget
from trainfit.errors import PlanError, WorkloadError
from trainfit.estimate.fit import SAFETY_MARGIN_DEFAULT
from trainfit.i18n import _
from trainfit.json_types import JSON
from trainfit.targets import check_target
from trainfit.models.shapes import ModelShape
from trainfit.plan.batch import default_global_batch
from trainfit.rl.config import RLConfig
from trainfit.rules.types import Violation
from trainfit.workload import LAYOUT_FIELDS, Workload

Objective = Literal["cost", "time"]
#: A pinned workload field's value (``--gpus 8``, ``--strategy zero3``, ``--grad-ckpt``).
PinValue = int | str | bool

#: The safety margin of the one fit decision (``estimate/fit.py``); ``PlanRequest.memory_margin`` changes it.
MEMORY_MARGIN_DEFAULT = SAFETY_MARGIN_DEFAULT
#: Node counts the search tries per instance type.
NODE_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128)
#: Pinnable distribution / settings fields (the same names as Workload's).
PIN_FIELDS = LAYOUT_FIELDS


@dataclass(frozen=True, kw_only=True)
class PlanRequest:
    """What to plan: the model, the training request and the search limits."""

    model: ModelShape
    workload: Workload
    """Method, sequence, precision, optimizer... Distribution fields are searched unless pinned."""
    tokens: float
    """Training tokens in total (all epochs)."""
    pins: dict[str, PinValue] = field(default_factory=dict)
    """Workload fields fixed by the user (gpus, strategy, micro_batch...); the rest is searched."""
    global_batch: int | None = None
    """Samples per optimizer step (``--global-batch``); None = the planner's choice, :attr:`target_global_batch`."""
    objective: Objective = "cost"
    budget: float | None = None
    """Maximum cost in the instance's currency."""
    deadline_hours: float | None = None
    provider: str | None = None
    region: str | None = None
    resource_class: str | None = None
    gpu: str | None = None
    gpu_mem_gib: float | None = None
    """GiB per GPU for rows whose GPU memory no source states (``--gpu-mem``: a Lingjun code such as GU108, as the
    console shows it); never applied to a GPU whose memory is known."""
    instance_type: str | None = None
    spot: bool = False
    max_gpus: int = 64
    allow_fp16: bool = False
    """Search GPUs without bf16 for a bf16 request (planned in fp16 mixed precision); without it they are rejected
    (code ``no-bf16``) unless ``gpu`` or ``instance_type`` names them."""
    framework: str | None = None
    """Engine profile of the speed model (``--framework``); None = the engine ``target`` runs for each layout."""
    target: str | None = None
    """The launcher the plan is for (``--target``, :func:`trainfit.targets.plan_targets`): its engine is
    the speed model's framework unless ``framework`` is given, and only layouts it writes are searched."""
    memory_margin: float = MEMORY_MARGIN_DEFAULT
    ignore_rules: frozenset[str] = frozenset()
    """Rule ids not to enforce (e.g. ``pai-public-quota`` when your quota was raised)."""
    interruption_rate_per_node_hour: float | None = None
    checkpoint_interval_hours: float | None = None
    max_days: float = 14.0
    """Plans that run longer than this many days (wall clock) are rejected as impractical."""
    rl: RLConfig | None = None
    """RL fine-tuning (:class:`~trainfit.rl.RLConfig`), None = SFT: candidates are evaluated by ``plan/rl.py``."""
    steps: int | None = None
    """RL steps (hours = RL step time x steps); required with ``rl``."""
    data: DataBudget | None = None
    """``plan --dataset``: the :class:`~trainfit.dataset.budget.DataBudget` the token budget and the step count
    come from (None: ``--tokens``)."""
    compare_regions: bool = False
    """Also price every plan in every region with a price for its instance type (``PlanResult.region_prices``)."""
    rl_searched: frozenset[str] = frozenset()
    """RL settings the planner searches instead of taking them from ``rl`` (``rollout_tp``, ``trainer_offload``:
    those the user did not set; :data:`RL_SEARCHED`)."""

    def __post_init__(self) -> None:
        if not self.tokens or self.tokens <= 0:
            raise PlanError(_("--tokens must be positive"), fix=_("e.g. --tokens 2B, or --dataset-tokens 500M --epochs 3"))
        if self.objective not in ("cost", "time"):
            raise PlanError(_("objective must be cost or time, got {value!r}").format(value=self.objective))
        if self.max_gpus < 1:
            raise PlanError(_("--max-gpus must be >= 1"))
        unknown = set(self.pins) - set(PIN_FIELDS)
        if unknown:
            raise PlanError(_("cannot pin {fields}").format(fields=sorted(unknown)))
        if not 0 <= self.memory_margin < 0.5:
            raise PlanError(_("memory margin must be in [0, 0.5)"))
        if self.rl is not None:
            check_rl_request(self)
        if self.target is not None:
            check_target(self.target, self.framework, rl=self.rl is not None, model=self.model, pins=self.pins)


    @cached_property
    def target_global_batch(self) -> int | None:
        """Samples per optimizer step the search aims at: ``global_batch`` when pinned, else the method's tokens per
        step (:func:`trainfit.plan.batch.default_global_batch`); None with ``--grad-accum`` pinned or for RL (its
        batch is the rollout's)."""
        if self.global_batch:
            return self.global_batch
        if self.rl is not None or "grad_accum" in self.pins:
            return None
        return default_global_batch(self.workload.method, self.workload.seq_len, self.tokens)


@dataclass
class NearestMiss:
    """The closest miss for an instance type, to explain its rejection."""

    need_gib: float = math.inf
    need_wl: Workload | None = None
    rule: Violation | None = None
    host: tuple[float, float] | None = None
    host_wl: Workload | None = None
    """The candidate that fitted GPU memory but not host RAM (SFT), for a checked fix."""
    other: tuple[str | tuple[dict[str, JSON], ...], ...] | None = None
    """(code, reason, fix[, fix options]) of the nearest miss that fitted but broke a limit."""
    layout: WorkloadError | None = None
    """A node layout whose every candidate broke the layout rule (``workload.layout_error``): the rejection names
    that true cause (tp x pp x cp must divide the GPUs, ep the tp x cp x dp ranks of a stage...), not "no-config"."""


#: (strategy, offload) per framework, fastest first, for one GPU and for several. Each pair is one the
#: framework's writer (``trainfit.rl.launch``) writes and its reader reads back to the same pair.
_VERL = (("fsdp", "none"), ("fsdp", "optimizer"))
_SWIFT_SINGLE = (("ddp", "none"), ("zero2", "optimizer"), ("zero3", "all"))
_SWIFT_MULTI = (("ddp", "none"), ("zero2", "none"), ("zero3", "none"), ("zero2", "optimizer"), ("zero3", "all"))
_ANY_SINGLE = (("ddp", "none"), ("fsdp", "none"), ("zero2", "optimizer"), ("fsdp", "optimizer"), ("zero3", "all"))
_ANY_MULTI = (("ddp", "none"), ("zero2", "none"), ("fsdp", "none"), ("zero3", "none"), ("zero2", "optimizer"),
              ("fsdp", "optimizer"), ("zero3", "all"))
#: RL settings ``plan --rl`` searches when the user does not set them (``PlanRequest.rl_searched``).
RL_SEARCHED = ("rollout_tp", "trainer_offload")


def rl_strategies(framework: str | None, gpus: int, algo: str | None = None) -> tuple[tuple[str, str], ...]:
    """(strategy, offload) candidates that ``framework``'s launch writer expresses, fastest first. DPO has only
    ms-swift's writer (verl has no offline DPO trainer), so no FSDP."""
    if framework == "ms-swift" or (framework is None and algo == "dpo"):
        return _SWIFT_SINGLE if gpus == 1 else _SWIFT_MULTI
    if framework == "verl":
        return _VERL
    return _ANY_SINGLE if gpus == 1 else _ANY_MULTI


def fit_rollout_tp(rl: RLConfig, gpus_per_node: int) -> tuple[RLConfig, str | None]:
    """``rl`` with a rollout tensor-parallel size that divides the GPUs of a node (an engine's tensor-parallel
    group sits inside one node; verl's default tp 2 cannot run on one GPU), and the warning saying so."""
    if not rl.has_rollout or gpus_per_node % rl.rollout_tp == 0:
        return rl, None
    tp = max(d for d in range(1, min(rl.rollout_tp, gpus_per_node) + 1) if gpus_per_node % d == 0)
    return rl.with_(rollout_tp=tp), _("rollout tp {tp0} does not divide the {gpn} GPU(s) of a node: planned with "
                                      "rollout tp {tp}").format(tp0=rl.rollout_tp, gpn=gpus_per_node, tp=tp)


def check_rl_request(req: PlanRequest) -> None:
    """Reject RL requests the planner cannot lay out (a PlanError with a fix)."""
    rl = req.rl
    if not req.steps:
        raise PlanError(_("how many RL steps? `plan --rl` ranks by hours and cost of the steps"),
                        fix=_("pass --steps N (e.g. --steps 500)"))
    if rl.has_rollout and not rl.colocate:
        raise PlanError(_("`plan --rl` lays out colocated jobs (engine and trainer share the GPUs); the engine GPUs "
                          "of a non-colocated job are not counted"),
                        fix=_("drop --no-colocate, or size it with `trainfit memory --rl ... --no-colocate`"))
    if rl.algo == "dpo" and rl.rl_framework == "verl":
        raise PlanError(_("verl has no offline DPO trainer"), fix=_("use --rl-framework ms-swift for --rl dpo"))
    par = {k: req.pins[k] for k in ("tp", "pp", "ep", "cp") if req.pins.get(k, 1) != 1}
    if par:
        raise PlanError(_("RL launch files run data-parallel trainers (verl FSDP, ms-swift DeepSpeed); {flags} does "
                          "not map").format(flags=", ".join(f"--{k} {v}" for k, v in par.items())),
                        fix=_("drop --tp/--pp/--ep/--cp for --rl"))
    if (rl.trainer_offload and req.pins.get("offload", "none") != "none" and "trainer_offload" not in
            req.rl_searched and (rl.rl_framework == "verl" or req.pins.get("strategy") == "fsdp")):
        raise PlanError(_("verl writes --trainer-offload and --offload {offload} both as its FSDP "
                          "param_offload/optimizer_offload: the launch file cannot tell them apart").format(
                            offload=req.pins["offload"]),
                        fix=_("drop --offload (verl's offload is --trainer-offload), or drop --trainer-offload"))
    if req.pins.get("strategy") is not None and req.pins.get("offload") is not None:
        pairs = set(rl_strategies(rl.rl_framework, 2, rl.algo)) | set(rl_strategies(rl.rl_framework, 1, rl.algo))
        if (req.pins["strategy"], req.pins["offload"]) not in pairs:
            raise PlanError(_("--strategy {strategy} with --offload {offload} has no RL launch file for "
                              "{framework}").format(strategy=req.pins["strategy"], offload=req.pins["offload"],
                                                    framework=rl.rl_framework or "verl / ms-swift"),
                            fix=_("use one of {choices}").format(
                                choices=", ".join(f"--strategy {a} --offload {b}" for a, b in sorted(pairs))))
    if req.pins.get("strategy") is not None:
        allowed = {s for s, _o in rl_strategies(rl.rl_framework, 2, rl.algo) + rl_strategies(rl.rl_framework, 1, rl.algo)}
        if req.pins["strategy"] not in allowed:
            raise PlanError(_("--strategy {strategy} has no launch file for {framework}").format(
                                strategy=req.pins["strategy"], framework=rl.rl_framework or "verl / ms-swift"),
                            fix=_("use one of {choices}").format(choices=", ".join(sorted(allowed))))
