"""The render targets: one :class:`TargetSpec` per target in a registry (:func:`register_target`) that every command
reads: what it writes, which engine it runs for a layout (``--target`` -> ``--framework``, the engine profile whose
kernels the speed model times), the layouts it can write and how ``check`` reads its files. A new target is one
``register_target`` call, from inside ``src/`` or outside it (``tests/test_extension.py`` registers a fake one).

Every decision about a target's engine is made here, once: the planner (``plan --target X``) takes the speed
model's framework from :func:`target_framework` when ``--framework`` is not given and searches only layouts the
target writes (:func:`layout_reason`); ``render`` compares the plan's framework with the engine of each target it
writes (:func:`engine_mismatch`). Pure: no I/O, no heavy imports.

What each target launches (read from its writer in ``launch/`` and ``providers/``):

=============================================  ===============================================================
target                                         engine (``--framework``)
=============================================  ===============================================================
swift, torchrun, dlc, pytorchjob, skypilot     ms-swift: ``megatron sft`` (Megatron-Core) for tp/pp/ep/cp > 1
                                               -> ``megatron``; else ``swift sft`` (HF Trainer): ZeRO ->
                                               ``deepspeed``, DDP / FSDP (accelerate) -> ``hf-trainer``
llamafactory                                   HF Trainer: ZeRO -> ``deepspeed``, DDP -> ``hf-trainer``
deepspeed                                      ``ds_config.json`` for the HF Trainer under DeepSpeed ->
                                               ``deepspeed``
verl (``--rl``)                                verl's FSDP workers -> ``verl`` (the RL speed model)
swift_grpo (``--rl``)                          ms-swift ``swift rlhf`` -> ``ms-swift`` (the RL speed model)
=============================================  ===============================================================

No target writes a native FSDP2 (torchtitan) or NeMo AutoModel job: ``--framework fsdp2`` / ``automodel`` plan
without ``--target``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol

from trainfit.errors import PlanError
from trainfit.estimate.engines import FAMILY_OF
from trainfit.i18n import N_, _, ngettext, translate
from trainfit.target_layouts import deepspeed_layout_reason, llamafactory_layout_reason, swift_layout_reason
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload, default_framework

if TYPE_CHECKING:  # the context type only; the writers import this registry's module, not the reverse
    from trainfit.launch.kit import RenderContext

#: What a target writes: a supervised fine-tuning job, an RL launch, or a tool's config (``monitoring``: rendered
#: only when named, never planned for).
TARGET_KINDS: tuple[str, ...] = ("sft", "rl", "tool")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


@dataclass(frozen=True, kw_only=True)
class JobReader:
    """How ``trainfit check`` reads the files of a registered target (:func:`trainfit.check.facts.read_facts` asks
    every registered reader before its built-in formats)."""

    kind: str
    """The ``kind`` check reports for such a file."""
    matches: Callable[[str, str], bool]
    """``matches(path, text)``: whether the file is one of this target's."""
    read: Callable[[str, str, Any], None]
    """``read(path, text, facts)``: fill the :class:`~trainfit.jobspec.facts.JobFacts` (nodes, GPUs, settings...)."""


class Writer(Protocol):
    """What a render target's writer (a module or an object) offers."""

    FILES: tuple[str, ...]

    def applies(self, ctx: RenderContext) -> str | None: ...

    def render(self, ctx: RenderContext) -> dict[str, str]: ...


@dataclass(frozen=True, kw_only=True)
class TargetSpec:
    """One render target (``render --target NAME``; ``plan --target NAME`` unless a tool): the module that writes its
    files, the engine it runs for a layout, the layouts it can write and how ``check`` reads its files back. Register
    one with :func:`register_target`; every command finds it there (``plan``, ``render``, ``check``, the web page)."""

    name: str
    """The ``--target`` value: lower case, digits and ``_``."""
    writer: str | ModuleType | Writer
    """The module (or its import path) with ``FILES``, ``applies(ctx) -> why-not or None`` and
    ``render(ctx) -> {file name: text}`` (:class:`~trainfit.launch.RenderContext`)."""
    kind: str = "sft"
    """``sft``, ``rl`` or ``tool`` (:data:`TARGET_KINDS`)."""
    runs: str = ""
    """What it launches, in words (a message id marked with ``N_``): help text and messages."""
    frameworks: tuple[str, ...] = ()
    """SFT: the ``--framework`` values it can run at all (some only with the right layout)."""
    engine: Callable[[Workload], str | None] | None = None
    """SFT: the ``--framework`` it runs for a layout (the speed model times that engine)."""
    layout_reason: Callable[[Workload], str | None] | None = None
    """Why it cannot write a layout (None: it can); the planner searches only what it renders."""
    rl_framework: str | None = None
    """RL: the ``--rl-framework`` it runs."""
    megatron_layouts_only: bool = False
    """Runs Megatron-Core only for tp/pp/ep/cp > 1 (ms-swift's ``megatron sft``): ``--framework megatron`` needs such a
    layout."""
    provider: str | None = None
    """A platform target writes jobs for one provider's instance types only (``dlc``: Alibaba PAI); the planner
    searches only that provider's for it."""
    plan_rank: int = 100
    """Position among the ``plan --target`` choices (lower first; ties in registration order)."""
    reader: JobReader | None = None
    """How ``check`` reads its files; None for the built-in formats, which check reads itself."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"target name {self.name!r}: lower case letters, digits and _, at most 32")
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"target {self.name}: kind must be one of {TARGET_KINDS}, got {self.kind!r}")
        if (self.kind == "rl") != (self.rl_framework is not None):
            raise ValueError(f"target {self.name}: an rl target names its rl_framework, and only an rl target does")
        if self.kind != "sft" and (self.frameworks or self.engine):
            raise ValueError(f"target {self.name}: frameworks and engine are for sft targets")

    def module(self) -> Writer:
        """The writer module (imported on first use when given as a path)."""
        return import_module(self.writer) if isinstance(self.writer, str) else self.writer

    def engine_for(self, wl: Workload) -> str | None:
        """The engine it runs for ``wl``: the ``--rl-framework`` of an RL target, the layout's ``--framework`` of an
        SFT target, None for a tool."""
        if self.kind == "rl":
            return self.rl_framework
        return self.engine(wl) if self.engine is not None else None

    def why_not(self, wl: Workload) -> str | None:
        return self.layout_reason(wl) if self.layout_reason is not None else None


_REGISTRY: dict[str, TargetSpec] = {}


def register_target(spec: TargetSpec) -> TargetSpec:
    """Add a render target (a :class:`TargetSpec`); its name must be new."""
    if spec.name in _REGISTRY or spec.name == "all":
        raise ValueError(f"render target {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister_target(name: str) -> None:
    """Remove a registered target (tests and plug-ins that registered it)."""
    _REGISTRY.pop(name, None)


def target_spec(name: str) -> TargetSpec | None:
    return _REGISTRY.get(name)


def target_specs(kind: str | None = None) -> tuple[TargetSpec, ...]:
    """The registered targets in render order (registration order), optionally of one kind."""
    return tuple(s for s in _REGISTRY.values() if kind is None or s.kind == kind)


def render_targets() -> tuple[str, ...]:
    """Every ``render --target`` name, in render order."""
    return tuple(_REGISTRY)


def plan_targets() -> tuple[str, ...]:
    """The ``plan --target`` choices: every target that launches training (not the tools), by ``plan_rank``."""
    ranked = sorted((s for s in _REGISTRY.values() if s.kind != "tool"), key=lambda s: s.plan_rank)
    return tuple(s.name for s in ranked)


def rl_target_frameworks() -> dict[str, str]:
    """RL target -> the ``--rl-framework`` it runs."""
    return {s.name: s.rl_framework for s in _REGISTRY.values() if s.kind == "rl" and s.rl_framework}


def is_rl_target(name: str) -> bool:
    spec = _REGISTRY.get(name)
    return spec is not None and spec.kind == "rl"


def _hf_engine(wl: Workload) -> str:
    return "deepspeed" if wl.strategy.startswith("zero") else "hf-trainer"


_SWIFT_RUNS = N_("ms-swift (`swift sft`: HF Trainer + DeepSpeed/FSDP; `megatron sft`: Megatron-Core for tp/pp/ep/cp > 1)")


def _swift(name: str, writer: str, rank: int, provider: str | None = None) -> TargetSpec:
    return TargetSpec(name=name, writer=writer, runs=_SWIFT_RUNS, frameworks=("hf-trainer", "deepspeed", "megatron"),
                      engine=default_framework, layout_reason=swift_layout_reason, megatron_layouts_only=True, plan_rank=rank,
                      provider=provider)


# The built-in targets, in render order. Engine targets live in ``launch/``; platform targets (job specs of one
# provider) in that provider's folder.
for _spec in (
        TargetSpec(name="deepspeed", writer="trainfit.launch.deepspeed", runs=N_("a DeepSpeed config for the HF Trainer"),
                   frameworks=("deepspeed",), engine=_hf_engine, layout_reason=deepspeed_layout_reason, plan_rank=6),
        _swift("swift", "trainfit.launch.swift", 0),
        TargetSpec(name="llamafactory", writer="trainfit.launch.llamafactory",
                   runs=N_("LLaMA-Factory (HF Trainer, + DeepSpeed for ZeRO)"), frameworks=("hf-trainer", "deepspeed"),
                   engine=_hf_engine, layout_reason=llamafactory_layout_reason, plan_rank=5),
        _swift("torchrun", "trainfit.launch.torchrun", 1),
        _swift("dlc", "trainfit.providers.alibaba.dlc_writer", 2, provider="alibaba"),
        _swift("pytorchjob", "trainfit.providers.generic.pytorchjob", 3),
        _swift("skypilot", "trainfit.providers.generic.skypilot", 4),
        TargetSpec(name="verl", writer="trainfit.launch.verl", kind="rl", rl_framework="verl",
                   runs=N_("verl (FSDP workers, colocated vLLM/SGLang)"), plan_rank=7),
        TargetSpec(name="swift_grpo", writer="trainfit.launch.swift_grpo", kind="rl", rl_framework="ms-swift",
                   runs=N_("ms-swift `swift rlhf` (DDP / DeepSpeed)"), plan_rank=8),
        TargetSpec(name="monitoring", writer="trainfit.launch.monitoring", kind="tool")):
    register_target(_spec)
del _spec

def target_framework(target: str, wl: Workload) -> str | None:
    """The engine ``target`` runs for ``wl``'s layout (a ``--framework`` value; ``--rl-framework`` for the RL
    targets); None for a target that launches no training (``monitoring``) or an unknown one."""
    spec = _REGISTRY.get(target)
    return spec.engine_for(wl) if spec is not None else None


def speed_framework(framework: str | None, target: str | None, wl: Workload) -> str | None:
    """The framework the speed model times for ``wl``: an explicit ``--framework``, else the engine ``target``
    runs for the layout; None without either (``estimate_speed`` then takes the workload's default)."""
    if framework is not None or target is None:
        return framework
    return target_framework(target, wl)


def layout_reason(target: str, wl: Workload) -> str | None:
    """Why ``target`` cannot write ``wl``'s layout (None when it can): the writers' own checks on the workload
    (their ``applies`` calls the same functions), so the planner searches only what the target renders."""
    spec = _REGISTRY.get(target)
    return spec.why_not(wl) if spec is not None else None


def same_engine(a: str | None, b: str | None) -> bool:
    """Whether the speed model times ``a`` and ``b`` with the same kernels and communication (hf-trainer and
    deepspeed are both Hugging Face modeling code; they differ only in name where the layout is not ZeRO)."""
    if a is None or b is None or a == b:
        return True
    hf = {"hf-trainer", "deepspeed"}
    return a in hf and b in hf and FAMILY_OF.get(a) == FAMILY_OF.get(b)


def check_target(target: str, framework: str | None, *, rl: bool, model: ModelShape | None = None,
                 pins: Mapping[str, Any] | None = None) -> None:
    """A target that cannot run ``framework`` (or a plan kind it does not write) is a :class:`PlanError` with the
    fix. With the planner's ``model`` and ``pins``: ``megatron`` on an ms-swift target needs a layout the search
    can reach (tp/pp/ep/cp > 1 pinned, or an MoE model it lays out with expert parallelism)."""
    choices = plan_targets()
    if target not in choices:
        raise PlanError(_("unknown target {target!r}").format(target=target),
                        fix=_("use one of {choices}").format(choices=", ".join(choices)))
    spec = _REGISTRY[target]
    if rl != (spec.kind == "rl"):
        if rl:
            raise PlanError(_("--target {target} writes a supervised fine-tuning job, not an --rl launch").format(
                target=target), fix=_("use --target verl or swift_grpo with --rl"))
        raise PlanError(_("--target {target} writes an RL launch; pass --rl grpo|ppo|dpo").format(target=target),
                        fix=_("or use an SFT target: {targets}").format(
                            targets=", ".join(t for t in choices if not is_rl_target(t))))
    if rl or framework is None:
        return
    can = spec.frameworks
    if framework not in can:
        others = [s.name for s in target_specs("sft") if framework in s.frameworks]
        fix = (_("drop --framework (the target's engine, {engines}, is used) or use --target {targets}").format(
                   engines="/".join(can), targets=" / ".join(others)) if others else
               _("no render target writes a {framework} job: drop --target to plan {framework} without rendering, or "
                 "drop --framework ({target} runs {engines})").format(framework=framework, target=target,
                                                                      engines="/".join(can)))
        raise PlanError(_("--target {target} runs {runs}; it cannot run --framework {framework}").format(
                            target=target, runs=translate(spec.runs), framework=framework),
                        fix=fix)
    if (framework == "megatron" and spec.megatron_layouts_only and model is not None and not model.is_moe
            and not any((pins or {}).get(k, 1) > 1 for k in ("tp", "pp", "ep", "cp"))):
        raise PlanError(_("--target {target} writes `megatron sft` (Megatron-Core) only for tp/pp/ep/cp > 1, and a "
                          "dense model is searched with tp = pp = cp = 1").format(target=target),
                        fix=_("pin a Megatron layout (e.g. --tp 2), or drop --framework megatron"))


def search_reason(target: str | None, framework: str | None, wl: Workload) -> str | None:
    """Why the planner skips candidate ``wl`` for ``target`` (None: keep it): a layout the target cannot write,
    or one where the target runs another engine than an explicit ``--framework``."""
    if target is None:
        return None
    why = layout_reason(target, wl)
    if why:
        return why
    runs = target_framework(target, wl)
    if framework is not None and not is_rl_target(target) and not same_engine(runs, framework):
        return _("{target} runs {runs} for this layout (tp {tp} pp {pp} ep {ep} cp {cp}, {strategy}), not "
                 "--framework {framework}").format(target=target, runs=runs, tp=wl.tp, pp=wl.pp, ep=wl.ep, cp=wl.cp,
                                                   strategy=wl.strategy, framework=framework)
    return None


def engine_mismatch(plan_framework: str | None, plan_target: str | None, targets: Iterable[str],
                    wl: Workload) -> tuple[str, ...]:
    """The warnings ``render`` gives when rendered ``targets`` run another engine than the one the plan's speed
    figures assumed: one per engine, naming its targets (empty when they agree or the plan has no speed)."""
    by_engine: dict[str, list[str]] = {}
    for t in targets:
        runs = target_framework(t, wl)
        if plan_framework is not None and runs is not None and not same_engine(runs, plan_framework):
            by_engine.setdefault(runs, []).append(t)
    out = []
    for runs, ts in by_engine.items():
        how = (_("re-plan with --target {target}") if is_rl_target(ts[0]) else
               _("re-plan with --target {target} and without --framework")).format(target=ts[0])
        msg = (ngettext("{targets} runs {runs} but the plan's speed, hours and cost assume {framework} for target "
                        "{plan_target}: the figures in the file headers are for another engine ({how})",
                        "{targets} run {runs} but the plan's speed, hours and cost assume {framework} for target "
                        "{plan_target}: the figures in the file headers are for another engine ({how})", len(ts))
               if plan_target else
               ngettext("{targets} runs {runs} but the plan's speed, hours and cost assume {framework}: the figures "
                        "in the file headers are for another engine ({how})",
                        "{targets} run {runs} but the plan's speed, hours and cost assume {framework}: the figures in "
                        "the file headers are for another engine ({how})", len(ts)))
        out.append(msg.format(targets=", ".join(ts), runs=runs, framework=plan_framework, plan_target=plan_target,
                              how=how))
    return tuple(out)


def _hf_trainer_targets(targets: Iterable[str], wl: Workload) -> list[str]:
    """The targets among ``targets`` that run ``wl`` under the Hugging Face trainer (with or without DeepSpeed)."""
    return [t for t in targets if target_framework(t, wl) in ("hf-trainer", "deepspeed")]


def experts_mismatch(targets: Iterable[str], wl: Workload, is_moe: bool) -> tuple[str, ...]:
    """The warning ``render`` gives when a Hugging Face MoE job's speed was timed with transformers < 5's
    per-expert loop (``--experts-impl modulelist``, the default) while the rendered jobs install ms-swift >= 4.6 or
    LLaMA-Factory, which resolve to transformers 5: its default ``grouped_mm`` experts run without the loop."""
    hf = _hf_trainer_targets(targets, wl) if is_moe and wl.experts_impl == "modulelist" else []
    if not hf:
        return ()
    return (_("{targets}: the plan times transformers < 5's per-expert MoE loop (--experts-impl modulelist); a fresh "
              "install of ms-swift >= 4.6 or LLaMA-Factory brings transformers 5, whose default grouped_mm experts run "
              "without that loop, so the job would beat the planned hours: on transformers 5 re-plan with "
              "--experts-impl grouped_mm").format(targets=", ".join(hf)),)


def loss_mismatch(targets: Iterable[str], wl: Workload) -> tuple[str, ...]:
    """The warning ``render`` gives for ``--loss half`` (a cross-entropy over 16-bit logits, no fp32 copy: the loss
    of remote model code such as Qwen v1's, run without autocast) on targets that run the Hugging Face trainer:
    transformers' own models upcast the logits to fp32 before the loss (``ForCausalLMLoss``), 6 B more per logit
    than the plan counted, and a trainer under autocast casts cross_entropy to fp32 whatever the model does."""
    hf = _hf_trainer_targets(targets, wl) if wl.loss == "half" else []
    if not hf:
        return ()
    return (_("{targets}: --loss half counts the loss over 16-bit logits (remote code such as Qwen v1's, no "
              "autocast); transformers' own models upcast the logits to fp32 (6 B more per logit): unless the job "
              "runs such a model, re-plan with --loss standard").format(targets=", ".join(hf)),)


__all__ = ["JobReader", "TargetSpec", "is_rl_target", "plan_targets", "register_target", "render_targets",
           "rl_target_frameworks", "target_spec", "target_specs", "unregister_target",
           "check_target", "engine_mismatch", "experts_mismatch", "layout_reason", "loss_mismatch", "same_engine", "search_reason", "speed_framework",
           "target_framework"]
