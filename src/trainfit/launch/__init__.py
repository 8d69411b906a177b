"""Job files from a plan: one small module per target, each with ``FILES``, ``applies(ctx)`` and
``render(ctx) -> {filename: text}``.

:func:`build_context` turns a model, a workload, an optional instance type and an optional plan summary
into a :class:`RenderContext`; :func:`render` runs the chosen targets and returns a :class:`RenderResult`
(files plus notes on targets that were skipped); :func:`write` puts the files and a ``README.md`` carrying
the plan into a folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from trainfit.errors import RenderError
from trainfit.launch._context import (CKPT_MOUNT, DEFAULT_DATASET, PAI_IMAGE, PLACEHOLDER, RenderContext,
                                      RenderOptions, is_lingjun_type, model_repo_id, slug)

#: Render targets -> the module that writes them. Engine targets live here in ``launch/``; platform targets
#: (job specs of one provider) live in that provider's folder.
TARGET_MODULES: dict[str, str] = {
    "deepspeed": "trainfit.launch.deepspeed",
    "swift": "trainfit.launch.swift",
    "llamafactory": "trainfit.launch.llamafactory",
    "torchrun": "trainfit.launch.torchrun",
    "dlc": "trainfit.providers.alibaba.dlc_writer",
    "pytorchjob": "trainfit.providers.generic.pytorchjob",
    "skypilot": "trainfit.providers.generic.skypilot",
    "verl": "trainfit.launch.verl",
    "swift_grpo": "trainfit.launch.swift_grpo",
    "monitoring": "trainfit.launch.monitoring",
}
TARGETS: tuple[str, ...] = tuple(TARGET_MODULES)
#: Targets that write RL fine-tuning launches (``plan --rl``); the others write supervised fine-tuning jobs.
#: ``all`` means the targets of the plan's kind.
RL_TARGETS: tuple[str, ...] = ("verl", "swift_grpo")
#: Targets rendered only when named (not part of ``all``).
ON_REQUEST: tuple[str, ...] = ("monitoring",)

__all__ = ["RL_TARGETS", "TARGETS", "RenderContext", "RenderError", "RenderOptions", "RenderResult", "build_context",
           "render", "write"]


@dataclass(frozen=True, kw_only=True)
class RenderResult:
    files: dict[str, str]
    """File name -> text, in target order."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Target -> why it does not apply to this plan (only when rendering ``all``)."""
    context: RenderContext
    warnings: tuple[str, ...] = ()
    """A rendered target whose engine differs from the one the plan's speed figures assume
    (:func:`trainfit.launch.targets.engine_mismatch`), and kernels the plan's GPU cannot run."""

    def to_dict(self) -> dict[str, Any]:
        return {"files": sorted(self.files), "skipped": dict(self.skipped), "summary": self.context.summary,
                "warnings": list(self.warnings)}


#: Checkpoint interval when the plan has no step time to convert hours into steps (HF's common choice).
SAVE_STEPS_FALLBACK = 200


def _save_steps(plan: Any, step_seconds: float | None, max_steps: int | None) -> tuple[int, str]:
    """(checkpoint interval in steps, why): the plan's interval (spot: Young/Daly at the spot reclaim rate, or
    ``--checkpoint-interval``), else Young/Daly for an on-demand job (:func:`trainfit.plan.cost.checkpoint_interval_hours`
    at :data:`~trainfit.plan.cost.ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR`): its checkpoint size, written by every
    node at the assumed bandwidth, against the nodes' interruption rate. Never more than the run; every
    :data:`SAVE_STEPS_FALLBACK` steps when the plan has no step time."""
    from trainfit.plan.cost import (CHECKPOINT_BYTES_PER_TRAINABLE_PARAM, CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT,
                                    ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR, checkpoint_interval_hours)

    hours, why = plan.checkpoint_interval_hours, "the plan's spot checkpoint interval"
    trainable = getattr(getattr(plan.memory, "params", None), "trainable", None)
    if not hours and trainable:
        hours, write_h = checkpoint_interval_hours(trainable_params=trainable, nodes=plan.nodes,
                                                   interruptions_per_node_hour=ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR)
        size_gb = trainable * CHECKPOINT_BYTES_PER_TRAINABLE_PARAM / 1e9
        why = (f"Young/Daly: a {size_gb:,.1f} GB checkpoint at {CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT:g} GB/s per node "
               f"= {write_h * 3600:,.{0 if write_h * 3600 >= 10 else 1}f} s, {plan.nodes} node(s) x {ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR:.2g} "
               f"interruptions per node-hour -> every {hours:,.1f} h")
    if hours and step_seconds:
        n = max(1, int(hours * 3600 / step_seconds))
    else:
        n, why = SAVE_STEPS_FALLBACK, "no step time in the plan: every 200 steps"
    if max_steps and n >= max_steps:
        return max_steps, why + "; capped at the run's end"
    return n, why


def _check_plan_strings(plan: Any) -> None:
    """Every string of the plan that a target writes into a script or a job file passes the input gate's strict
    patterns (a plan file from elsewhere may carry anything)."""
    from trainfit import inputs
    from trainfit.errors import InputError

    checks = [("instance_type", plan.instance_type, "instance_type"), ("gpu", plan.gpu, "gpu"),
              ("region", plan.region, "region"), ("provider", plan.provider, "resource_id"),
              ("resource_class", plan.resource_class, "resource_id"), ("model", model_repo_id(plan.model), "dataset")]
    checks += [("lora_targets", t, "module") for t in plan.workload.lora_targets]
    for field_name, value, kind in checks:
        if value is None:
            continue
        try:
            if inputs.as_ident(f"plan {field_name}", value, kind) != value:
                raise inputs._bad(f"plan {field_name}", value, "has leading or trailing white space")
        except InputError as e:
            raise RenderError(f"the plan's {e.message}", fix="regenerate the plan with `trainfit plan --json`; "
                              "trainfit never writes such a value into a job file") from None


def _check_region(region: Any, what: str) -> None:
    """The region a job file is written for (and the PAI image host is built from) passes the region pattern,
    whichever of ``--region``, the plan's region or the instance record's first region it came from."""
    from trainfit import inputs
    from trainfit.errors import InputError

    try:
        if inputs.as_ident(what, region, "region") != region:
            raise inputs._bad(what, region, "has leading or trailing white space")
    except InputError as e:
        raise RenderError(f"the plan's {e.message}", fix="regenerate the plan with `trainfit plan --json`, or "
                          "pass --region") from None


def job_dataset(plan: Any, o: RenderOptions) -> tuple[str, bool, str | None]:
    """(the dataset the job trains on, whether it is the plan's data file, a note): ``--dataset``, else the file the
    plan's data was counted from (``plan --dataset``) when it passes the input gate's ``dataset`` pattern (the same
    gate every value passes before it reaches a job file), else a ``REPLACE_ME`` placeholder with the reason;
    without data, the public sample dataset."""
    from trainfit import inputs
    from trainfit.errors import InputError

    data = getattr(plan, "data", None) if getattr(plan, "rl", None) is None else None
    if o.dataset:
        note = None
        if data is not None and o.dataset not in data.files:
            note = (f"--dataset {o.dataset} is not the data the plan counted ({', '.join(data.files)[:300]}): the "
                    "steps, the cut-off and the hours are those of the plan's data")
        return o.dataset, False, note
    if data is None:
        return DEFAULT_DATASET, False, None
    if len(data.files) != 1:
        why = (f"the plan's data is {len(data.files)} files; name them in the job by hand (ms-swift: --dataset A B; "
               "LLaMA-Factory: one dataset_info.json entry each) or pass --dataset")
    else:
        f = data.files[0]
        try:
            if inputs.as_ident("dataset", f, "dataset") == f:
                note = None if f.startswith("/") else (f"the dataset path {f} is relative: the job reads it from the "
                                                       "folder it starts in")
                return f, True, note
            why = f"the plan's data file {f[:200]!r} has leading or trailing white space"
        except InputError as e:
            why = f"the plan's data file is not written into a job file: {e.message}"
    return f"{PLACEHOLDER}/train.jsonl", False, (f"dataset left as {PLACEHOLDER}: {why}; pass --dataset PATH (a path "
                                                  "without spaces or shell characters)")


def build_context(plan: Any, options: RenderOptions | None = None) -> RenderContext:
    """A consistent :class:`RenderContext` from a typed plan and render options (no catalog look-ups)."""
    o = options or RenderOptions()
    _check_plan_strings(plan)
    inst = plan.instance
    regions = tuple(getattr(inst, "regions", ()) or ()) if inst is not None else ()
    lingjun = plan.resource_class == "pai-lingjun" or (inst is None and is_lingjun_type(plan.instance_type))
    region = o.region or plan.region or (regions[0] if regions else ("cn-wulanchabu" if lingjun else "cn-hangzhou"))
    _check_region(region, "the instance record's first region" if not (o.region or plan.region) else "region")
    if regions and region not in regions:
        raise RenderError(f"{plan.instance_type} is documented only in {', '.join(regions)[:300]}, not {region}",
                          fix=f"use --region {regions[0]} or another instance type")
    name = slug(o.job_name or f"{plan.model.name}-{plan.workload.method}")
    img = o.image or PAI_IMAGE.format(region=region)
    from trainfit.providers.alibaba.images import is_pai_image, pai_image_region

    if not o.image and pai_image_region(img) != region:  # pragma: no cover - _check_region makes this unreachable
        raise RenderError(f"the default image {img[:120]!r} is not on PAI's registry", fix="pass --image")
    custom = bool(o.image) and not is_pai_image(o.image)
    vpc = o.vpc
    if vpc is None and lingjun:
        vpc = {"VpcId": f"vpc-{PLACEHOLDER}", "SwitchId": f"vsw-{PLACEHOLDER}", "SecurityGroupId": f"sg-{PLACEHOLDER}"}
    if getattr(plan, "rl", None) is not None:  # RL: the planned RL steps (rollout + update rounds)
        max_steps = plan.rl.get("steps")
    else:
        max_steps = None if o.epochs is not None else plan.optimizer_steps()
    save, save_why = (o.save_steps, "--save-steps") if o.save_steps else _save_steps(plan, plan.step_seconds,
                                                                                         max_steps)
    dataset, from_data, dataset_note = job_dataset(plan, o)
    return RenderContext(
        plan=plan, model_id=model_repo_id(plan.model), region=region, image=img, custom_image=custom,
        dataset=dataset, dataset_from_data=from_data, dataset_note=dataset_note, job_name=name,
        checkpoint_uri=o.checkpoint_uri or f"oss://{PLACEHOLDER}-bucket/trainfit/{name}/",
        vpc=dict(vpc) if vpc else None, workspace_id=o.workspace_id, resource_id=o.resource_id,
        learning_rate=o.learning_rate, epochs=o.epochs, max_steps=max_steps, save_steps=save, save_reason=save_why,
        spot_discount_limit=o.spot_discount_limit)


def _module(target: str):
    return import_module(TARGET_MODULES[target])


def render(ctx: RenderContext, targets: list[str] | tuple[str, ...] | str | None = None) -> RenderResult:
    """Render ``targets`` (names from :data:`TARGETS`, or ``all``; None = the plan's target, else ``all``)."""
    from trainfit.launch.targets import engine_mismatch, experts_mismatch, loss_mismatch

    if targets is None:
        targets = getattr(ctx.plan, "target", None) or "all"
    if isinstance(targets, str):
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    want_all = "all" in targets
    rl_plan = getattr(ctx.plan, "rl", None) is not None
    kind = [t for t in TARGETS if (t in RL_TARGETS) == rl_plan and t not in ON_REQUEST]
    named = [t for t in dict.fromkeys(targets) if t != "all"]
    chosen = (kind + [t for t in named if t not in kind]) if want_all else named  # all,monitoring: both
    unknown = [t for t in chosen if t not in TARGETS]
    if unknown:
        from trainfit.errors import did_you_mean

        sugg = did_you_mean(unknown[0], list(TARGETS) + ["all"], n=1)
        raise RenderError(f"unknown render target '{unknown[0]}'",
                          fix=(f"did you mean {sugg[0]}? " if sugg else "") + "targets: " + ", ".join(TARGETS) + ", all")
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}
    rendered: list[str] = []
    for t in chosen:
        mod = _module(t)
        why = mod.applies(ctx)
        if why:
            if not want_all:
                fitting = [x for x in kind if not _module(x).applies(ctx)]
                raise RenderError(f"target {t} does not apply to this plan: {why}",
                                  fix="targets that fit this plan: " + ", ".join(fitting))
            skipped[t] = why
            continue
        files.update(mod.render(ctx))
        rendered.append(t)
    warnings = (engine_mismatch(ctx.plan.framework, getattr(ctx.plan, "target", None), rendered, ctx.workload)
                + experts_mismatch(rendered, ctx.workload, ctx.model.is_moe) + loss_mismatch(rendered, ctx.workload))
    return RenderResult(files=files, skipped=skipped, context=ctx,
                        warnings=warnings + _kernel_gaps(ctx) + _packing_notes(ctx, rendered))


def _packing_notes(ctx: RenderContext, rendered: list[str]) -> tuple[str, ...]:
    """A job without packing trains fewer tokens than its step budget on short samples (``--no-packing``); a full
    fine-tuning in pure bf16 loses small updates to bf16 rounding (:func:`~trainfit.estimate.states.pure_bf16_warning`)."""
    from trainfit.launch._common import packing_budget_warning

    if getattr(ctx.plan, "rl", None) is not None or not rendered:
        return ()
    from trainfit.estimate.states import pure_bf16_warning

    data = getattr(ctx.plan, "data", None)
    # with the plan's data the step budget counts the data's rows (packed or not): no guess to warn about
    out = tuple(w for w in (None if data is not None else packing_budget_warning(ctx.workload),
                            pure_bf16_warning(ctx.workload), ctx.dataset_note) if w)
    if "llamafactory" in rendered and ctx.dataset_from_data:
        from trainfit.launch.llamafactory import dataset_entry

        _, why = dataset_entry(ctx)
        if why:
            out += (f"llamafactory.yaml: dataset left as {PLACEHOLDER}: {why}",)
    return out


def _kernel_gaps(ctx: RenderContext) -> tuple[str, ...]:
    """Kernels the rendered files ask for that the plan's GPU cannot run (``--attention flash3`` off Hopper): the
    same gate that ``plan`` rejects on and ``trainfit check`` reports as a ``kernel-support`` error."""
    from trainfit.estimate.hardware import kernel_gaps
    from trainfit.plan.hardware import gpu_class_of

    spec = getattr(ctx.plan, "gpu_spec", None)
    if spec is None or getattr(ctx.plan, "rl", None) is not None:  # the RL launches write no attention kernel
        return ()
    return tuple(f"{gap} (`trainfit check` rejects these files: rule kernel-support)"
                 for gap in kernel_gaps(ctx.workload.attention, gpu_class_of(spec), ctx.plan.gpu))


def readme(result: RenderResult) -> str:
    ctx = result.context
    lines = ["# Job files rendered by trainfit", ""]
    from trainfit.launch._common import comment_text

    lines += [f"- {comment_text(ln)}" for ln in ctx.header_lines()]
    lines += ["", "## Files", ""]
    for name in result.files:
        lines.append(f"- `{name}`")
    if result.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {comment_text(w)}" for w in result.warnings]
    if result.skipped:
        lines += ["", "## Targets not rendered", ""]
        lines += [f"- {t}: {comment_text(why)}" for t, why in result.skipped.items()]
    lines += ["", "## Notes", "",
              "- `dlc_job.json` is a PAI-DLC CreateJob body; JSON carries no comments, so its plan header is this "
              "file (and `dlc_submit.sh`). `ds_config.json` carries it in a top-level `_trainfit` key, which "
              "DeepSpeed's config reader ignores.",
              f"- Checkpoints: `{ctx.checkpoint_uri}` mounted at `{CKPT_MOUNT}`; output and checkpoints go to "
              f"`{ctx.ckpt_dir}`; the launch scripts resume from the newest checkpoint there.",
              f"- Values containing `{PLACEHOLDER}` must be filled in before submitting (`trainfit check` "
              "lists them).",
              "- Next: `trainfit check FILE` on any job file here (not the monitoring configs), then `trainfit submit DIR` (dry run) and "
              "`trainfit submit DIR --yes`.", ""]
    return "\n".join(lines)


def write(result: RenderResult, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Write the files and README.md into ``out_dir`` (created) through the safe writer
    (:func:`trainfit.writes.write_set`): atomic, no links or special files, shell scripts executable, a manifest
    of what was written; a file trainfit did not write (or that was edited since) is refused unless ``force``, and
    files of an earlier render that this one does not write are removed."""
    from trainfit.writes import write_set

    written, _ = write_set(out_dir, {**result.files, "README.md": readme(result)}, force=force, error=RenderError)
    return written
