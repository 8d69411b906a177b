"""Which engine each render target runs: the one table that ties ``--target`` (a launcher) to ``--framework``
(the engine profile whose kernels the speed model times).

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

from typing import Any, Mapping

from trainfit.errors import PlanError
from trainfit.i18n import N_, _, ngettext, translate
from trainfit.workload import Workload

#: Targets that run ms-swift's trainer (the launch line differs, the engine does not).
SWIFT_TARGETS: tuple[str, ...] = ("swift", "torchrun", "dlc", "pytorchjob", "skypilot")
#: RL targets -> the ``--rl-framework`` they run.
RL_TARGET_FRAMEWORK: dict[str, str] = {"verl": "verl", "swift_grpo": "ms-swift"}
#: Targets ``plan --target`` accepts (every render target that launches training; ``monitoring`` does not).
PLAN_TARGETS: tuple[str, ...] = SWIFT_TARGETS + ("llamafactory", "deepspeed") + tuple(RL_TARGET_FRAMEWORK)

#: target -> the ``--framework`` values it can run at all (some only with the right layout).
TARGET_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    **{t: ("hf-trainer", "deepspeed", "megatron") for t in SWIFT_TARGETS},
    "llamafactory": ("hf-trainer", "deepspeed"),
    "deepspeed": ("deepspeed",),
}
#: target -> what it launches, in words (help text, messages, docs).
TARGET_RUNS: dict[str, str] = {
    **{t: N_("ms-swift (`swift sft`: HF Trainer + DeepSpeed/FSDP; `megatron sft`: Megatron-Core for tp/pp/ep/cp > 1)")
       for t in SWIFT_TARGETS},
    "llamafactory": N_("LLaMA-Factory (HF Trainer, + DeepSpeed for ZeRO)"),
    "deepspeed": N_("a DeepSpeed config for the HF Trainer"),
    "verl": N_("verl (FSDP workers, colocated vLLM/SGLang)"),
    "swift_grpo": N_("ms-swift `swift rlhf` (DDP / DeepSpeed)"),
}


def _hf_engine(wl: Workload) -> str:
    return "deepspeed" if wl.strategy.startswith("zero") else "hf-trainer"


def target_framework(target: str, wl: Workload) -> str | None:
    """The engine ``target`` runs for ``wl``'s layout (a ``--framework`` value; ``--rl-framework`` for the RL
    targets); None for a target that launches no training (``monitoring``)."""
    if target in RL_TARGET_FRAMEWORK:
        return RL_TARGET_FRAMEWORK[target]
    if target in SWIFT_TARGETS:  # ms-swift's engine for the layout is the speed model's default
        from trainfit.estimate.speed import default_framework

        return default_framework(wl)
    if target in ("llamafactory", "deepspeed"):
        return _hf_engine(wl)
    return None


def speed_framework(framework: str | None, target: str | None, wl: Workload) -> str | None:
    """The framework the speed model times for ``wl``: an explicit ``--framework``, else the engine ``target``
    runs for the layout; None without either (``estimate_speed`` then takes the workload's default)."""
    if framework is not None or target is None:
        return framework
    return target_framework(target, wl)


def layout_reason(target: str, wl: Workload) -> str | None:
    """Why ``target`` cannot write ``wl``'s layout (None when it can): the writers' own checks on the workload
    (their ``applies`` calls the same functions), so the planner searches only what the target renders."""
    if target in SWIFT_TARGETS:
        from trainfit.launch._common import swift_layout_reason

        return swift_layout_reason(wl)
    if target == "llamafactory":
        from trainfit.launch.llamafactory import layout_reason as lf

        return lf(wl)
    if target == "deepspeed":
        from trainfit.launch.deepspeed import layout_reason as ds

        return ds(wl)
    return None


def same_engine(a: str | None, b: str | None) -> bool:
    """Whether the speed model times ``a`` and ``b`` with the same kernels and communication (hf-trainer and
    deepspeed are both Hugging Face modeling code; they differ only in name where the layout is not ZeRO)."""
    if a is None or b is None or a == b:
        return True
    from trainfit.estimate.engines import FAMILY_OF

    hf = {"hf-trainer", "deepspeed"}
    return a in hf and b in hf and FAMILY_OF.get(a) == FAMILY_OF.get(b)


def check_target(target: str, framework: str | None, *, rl: bool, model: Any = None,
                 pins: Mapping[str, Any] | None = None) -> None:
    """A target that cannot run ``framework`` (or a plan kind it does not write) is a :class:`PlanError` with the
    fix. With the planner's ``model`` and ``pins``: ``megatron`` on an ms-swift target needs a layout the search
    can reach (tp/pp/ep/cp > 1 pinned, or an MoE model it lays out with expert parallelism)."""
    if target not in PLAN_TARGETS:
        raise PlanError(_("unknown target {target!r}").format(target=target),
                        fix=_("use one of {choices}").format(choices=", ".join(PLAN_TARGETS)))
    if rl != (target in RL_TARGET_FRAMEWORK):
        if rl:
            raise PlanError(_("--target {target} writes a supervised fine-tuning job, not an --rl launch").format(
                target=target), fix=_("use --target verl or swift_grpo with --rl"))
        raise PlanError(_("--target {target} writes an RL launch; pass --rl grpo|ppo|dpo").format(target=target),
                        fix=_("or use an SFT target: {targets}").format(
                            targets=", ".join(t for t in PLAN_TARGETS if t not in RL_TARGET_FRAMEWORK)))
    if rl or framework is None:
        return
    can = TARGET_FRAMEWORKS[target]
    if framework not in can:
        others = [t for t, fws in TARGET_FRAMEWORKS.items() if framework in fws]
        fix = (_("drop --framework (the target's engine, {engines}, is used) or use --target {targets}").format(
                   engines="/".join(can), targets=" / ".join(others)) if others else
               _("no render target writes a {framework} job: drop --target to plan {framework} without rendering, or "
                 "drop --framework ({target} runs {engines})").format(framework=framework, target=target,
                                                                      engines="/".join(can)))
        raise PlanError(_("--target {target} runs {runs}; it cannot run --framework {framework}").format(
                            target=target, runs=translate(TARGET_RUNS[target]), framework=framework),
                        fix=fix)
    if (framework == "megatron" and target in SWIFT_TARGETS and model is not None and not model.is_moe
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
    if framework is not None and target not in RL_TARGET_FRAMEWORK and not same_engine(runs, framework):
        return _("{target} runs {runs} for this layout (tp {tp} pp {pp} ep {ep} cp {cp}, {strategy}), not "
                 "--framework {framework}").format(target=target, runs=runs, tp=wl.tp, pp=wl.pp, ep=wl.ep, cp=wl.cp,
                                                   strategy=wl.strategy, framework=framework)
    return None


def engine_mismatch(plan_framework: str | None, plan_target: str | None, targets: Any,
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
        how = (_("re-plan with --target {target}") if ts[0] in RL_TARGET_FRAMEWORK else
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


def _hf_trainer_targets(targets: Any, wl: Workload) -> list[str]:
    """The targets among ``targets`` that run ``wl`` under the Hugging Face trainer (with or without DeepSpeed)."""
    return [t for t in targets if target_framework(t, wl) in ("hf-trainer", "deepspeed")]


def experts_mismatch(targets: Any, wl: Workload, is_moe: bool) -> tuple[str, ...]:
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


def loss_mismatch(targets: Any, wl: Workload) -> tuple[str, ...]:
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


__all__ = ["PLAN_TARGETS", "RL_TARGET_FRAMEWORK", "SWIFT_TARGETS", "TARGET_FRAMEWORKS", "TARGET_RUNS",
           "check_target", "engine_mismatch", "experts_mismatch", "layout_reason", "loss_mismatch", "same_engine", "search_reason", "speed_framework",
           "target_framework"]
