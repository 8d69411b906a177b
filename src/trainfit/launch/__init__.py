"""Job files from a plan: one small module per target, each with ``FILES``, ``applies(ctx)`` and
``render(ctx) -> {filename: text}``.

:func:`build_context` turns a model, a workload, an optional instance type and an optional plan summary
into a :class:`RenderContext`; :func:`render` runs the chosen targets and returns a :class:`RenderResult`
(files plus notes on targets that were skipped); :func:`write` puts the files and a ``README.md`` carrying
the plan into a folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trainfit import inputs
from trainfit.errors import InputError, RenderError, did_you_mean
from trainfit.estimate.hardware import kernel_gaps
from trainfit.estimate.states import pure_bf16_warning
from trainfit.i18n import _
from trainfit.json_types import JSONObject
from trainfit.launch._common import comment_text
from trainfit.launch._context import (CKPT_MOUNT, DEFAULT_DATASET, PAI_IMAGE, PLACEHOLDER, RenderContext,
                                      RenderOptions, is_lingjun_placement, model_repo_id, slug)
from trainfit.launch._plan_notes import packing_budget_warning, save_steps
from trainfit.launch.llamafactory import dataset_entry
from trainfit.catalog.hardware import gpu_class_of
from trainfit.plan.types import Plan
from trainfit.providers.alibaba.images import is_pai_image, pai_image_region
from trainfit.providers.registry import default_region
from trainfit.targets import (Writer, engine_mismatch, experts_mismatch, loss_mismatch, render_targets,
                              target_spec, target_specs)
from trainfit.writes import write_set


def __getattr__(name: str) -> tuple[str, ...]:
    """``TARGETS`` / ``RL_TARGETS``: the registered render targets (all, in render order / the RL ones), read from
    the registry (:mod:`trainfit.targets`) each time, so a target registered later is among them."""
    if name == "TARGETS":
        return render_targets()
    if name == "RL_TARGETS":
        return tuple(s.name for s in target_specs("rl"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    (:func:`trainfit.targets.engine_mismatch`), and kernels the plan's GPU cannot run."""

    def to_dict(self) -> JSONObject:
        return {"files": sorted(self.files), "skipped": dict(self.skipped), "summary": self.context.summary_dict(),
                "warnings": list(self.warnings)}


def _check_plan_strings(plan: Plan) -> None:
    """Every string of the plan that a target writes into a script or a job file passes the input gate's strict
    patterns (a plan file from elsewhere may carry anything)."""
    pl = plan.placement
    checks = [("instance_type", pl.instance_type, "instance_type"), ("gpu", pl.gpu, "gpu"),
              ("region", plan.time_cost.region, "region"), ("provider", pl.provider, "resource_id"),
              ("resource_class", pl.resource_class, "resource_id"), ("model", model_repo_id(plan.model), "dataset")]
    checks += [("lora_targets", t, "module") for t in plan.workload.lora_targets]
    for field_name, value, kind in checks:
        if value is None:
            continue
        try:
            if inputs.as_ident(f"plan {field_name}", value, kind) != value:
                raise inputs._bad(f"plan {field_name}", value, _("has leading or trailing white space"))
        except InputError as e:
            raise RenderError(_("the plan's {message}").format(message=e.message),
                              fix=_("regenerate the plan with `trainfit plan --json`; trainfit never writes such a "
                                    "value into a job file")) from None


def _check_region(region: str, what: str) -> None:
    """The region a job file is written for (and the PAI image host is built from) passes the region pattern,
    whichever of ``--region``, the plan's region or the instance record's first region it came from."""
    try:
        if inputs.as_ident(what, region, "region") != region:
            raise inputs._bad(what, region, _("has leading or trailing white space"))
    except InputError as e:
        raise RenderError(_("the plan's {message}").format(message=e.message),
                          fix=_("regenerate the plan with `trainfit plan --json`, or pass --region")) from None


def job_dataset(plan: Plan, o: RenderOptions) -> tuple[str, bool, str | None]:
    """(the dataset the job trains on, whether it is the plan's data file, a note): ``--dataset``, else the file the
    plan's data was counted from (``plan --dataset``) when it passes the input gate's ``dataset`` pattern (the same
    gate every value passes before it reaches a job file), else a ``REPLACE_ME`` placeholder with the reason;
    without data, the public sample dataset."""
    data = plan.data if plan.rl is None else None
    if o.dataset:
        note = None
        if data is not None and o.dataset not in data.files:
            note = _("--dataset {dataset} is not the data the plan counted ({files}): the steps, the cut-off and the "
                     "hours are those of the plan's data").format(dataset=o.dataset, files=", ".join(data.files)[:300])
        return o.dataset, False, note
    if data is None:
        return DEFAULT_DATASET, False, None
    if len(data.files) != 1:
        why = _("the plan's data is {n} files; name them in the job by hand (ms-swift: --dataset A B; LLaMA-Factory: "
                "one dataset_info.json entry each) or pass --dataset").format(n=len(data.files))
    else:
        f = data.files[0]
        try:
            if inputs.as_ident("dataset", f, "dataset") == f:
                note = None if f.startswith("/") else _("the dataset path {path} is relative: the job reads it from "
                                                        "the folder it starts in").format(path=f)
                return f, True, note
            why = _("the plan's data file {path!r} has leading or trailing white space").format(path=f[:200])
        except InputError as e:
            why = _("the plan's data file is not written into a job file: {message}").format(message=e.message)
    return f"{PLACEHOLDER}/train.jsonl", False, _("dataset left as {placeholder}: {why}; pass --dataset PATH (a path "
                                                  "without spaces or shell characters)").format(
                                                      placeholder=PLACEHOLDER, why=why)


def build_context(plan: Plan, options: RenderOptions | None = None) -> RenderContext:
    """A consistent :class:`RenderContext` from a typed plan and render options (no catalog look-ups)."""
    o = options or RenderOptions()
    _check_plan_strings(plan)
    pl, planned_region = plan.placement, plan.time_cost.region
    inst = pl.instance
    regions = tuple(getattr(inst, "regions", ()) or ()) if inst is not None else ()
    lingjun = is_lingjun_placement(pl)
    region = o.region or planned_region or (regions[0] if regions else
                                            default_region("pai-lingjun" if lingjun else pl.resource_class))
    _check_region(region, _("the instance record's first region") if not (o.region or planned_region) else "region")
    if regions and region not in regions:
        raise RenderError(_("{it} is documented only in {regions}, not {region}").format(
                              it=pl.instance_type, regions=", ".join(regions)[:300], region=region),
                          fix=_("use --region {region} or another instance type").format(region=regions[0]))
    name = slug(o.job_name or f"{plan.model.name}-{plan.workload.method}")
    img = o.image or PAI_IMAGE.format(region=region)
    if not o.image and pai_image_region(img) != region:  # pragma: no cover - _check_region makes this unreachable
        raise RenderError(_("the default image {image!r} is not on PAI's registry").format(image=img[:120]),
                          fix=_("pass --image"))
    custom = bool(o.image) and not is_pai_image(o.image)
    vpc = o.vpc
    if vpc is None and lingjun:
        vpc = {"VpcId": f"vpc-{PLACEHOLDER}", "SwitchId": f"vsw-{PLACEHOLDER}", "SecurityGroupId": f"sg-{PLACEHOLDER}"}
    if plan.rl is not None:  # RL: the planned RL steps (rollout + update rounds)
        max_steps = plan.rl.steps
    else:
        max_steps = None if o.epochs is not None else plan.optimizer_steps()
    save, save_why = (o.save_steps, "--save-steps") if o.save_steps else save_steps(plan, plan.speed.step_seconds,
                                                                                         max_steps)
    dataset, from_data, dataset_note = job_dataset(plan, o)
    return RenderContext(
        plan=plan, model_id=model_repo_id(plan.model), region=region, image=img, custom_image=custom,
        dataset=dataset, dataset_from_data=from_data, dataset_note=dataset_note, job_name=name,
        checkpoint_uri=o.checkpoint_uri or f"oss://{PLACEHOLDER}-bucket/trainfit/{name}/",
        vpc=dict(vpc) if vpc else None, workspace_id=o.workspace_id, resource_id=o.resource_id,
        learning_rate=o.learning_rate, epochs=o.epochs, max_steps=max_steps, save_steps=save, save_reason=save_why,
        spot_discount_limit=o.spot_discount_limit)


def _module(target: str) -> Writer:
    return target_spec(target).module()


def render(ctx: RenderContext, targets: list[str] | tuple[str, ...] | str | None = None) -> RenderResult:
    """Render ``targets`` (names from :data:`TARGETS`, or ``all``; None = the plan's target, else ``all``)."""
    all_targets = render_targets()
    if targets is None:
        targets = ctx.plan.target or "all"
    if isinstance(targets, str):
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    want_all = "all" in targets
    rl_plan = ctx.plan.rl is not None
    kind = [s.name for s in target_specs("rl" if rl_plan else "sft")]  # the tools are rendered only when named
    named = [t for t in dict.fromkeys(targets) if t != "all"]
    chosen = (kind + [t for t in named if t not in kind]) if want_all else named  # all,monitoring: both
    unknown = [t for t in chosen if t not in all_targets]
    if unknown:
        sugg = did_you_mean(unknown[0], list(all_targets) + ["all"], n=1)
        targets_list = ", ".join(all_targets) + ", all"
        raise RenderError(_("unknown render target '{target}'").format(target=unknown[0]),
                          fix=(_("did you mean {s}? targets: {targets}") if sugg else _("targets: {targets}")).format(
                              s=sugg[0] if sugg else "", targets=targets_list))
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}
    rendered: list[str] = []
    for t in chosen:
        mod = _module(t)
        why = mod.applies(ctx)
        if why:
            if not want_all:
                fitting = [x for x in kind if not _module(x).applies(ctx)]
                raise RenderError(_("target {target} does not apply to this plan: {why}").format(target=t, why=why),
                                  fix=_("targets that fit this plan: {targets}").format(targets=", ".join(fitting)))
            skipped[t] = why
            continue
        files.update(mod.render(ctx))
        rendered.append(t)
    warnings = (engine_mismatch(ctx.plan.speed.framework, ctx.plan.target, rendered, ctx.workload)
                + experts_mismatch(rendered, ctx.workload, ctx.model.is_moe) + loss_mismatch(rendered, ctx.workload))
    return RenderResult(files=files, skipped=skipped, context=ctx,
                        warnings=warnings + _kernel_gaps(ctx) + _packing_notes(ctx, rendered))


def _packing_notes(ctx: RenderContext, rendered: list[str]) -> tuple[str, ...]:
    """A job without packing trains fewer tokens than its step budget on short samples (``--no-packing``); a full
    fine-tuning in pure bf16 loses small updates to bf16 rounding (:func:`~trainfit.estimate.states.pure_bf16_warning`)."""
    if ctx.plan.rl is not None or not rendered:
        return ()
    data = ctx.plan.data
    # with the plan's data the step budget counts the data's rows (packed or not): no guess to warn about
    out = tuple(w for w in (None if data is not None else packing_budget_warning(ctx.workload),
                            pure_bf16_warning(ctx.workload), ctx.dataset_note) if w)
    if "llamafactory" in rendered and ctx.dataset_from_data:
        _entry, why = dataset_entry(ctx)
        if why:
            out += (_("llamafactory.yaml: dataset left as {placeholder}: {why}").format(placeholder=PLACEHOLDER, why=why),)
    return out


def _kernel_gaps(ctx: RenderContext) -> tuple[str, ...]:
    """Kernels the rendered files ask for that the plan's GPU cannot run (``--attention flash3`` off Hopper): the
    same gate that ``plan`` rejects on and ``trainfit check`` reports as a ``kernel-support`` error."""
    spec = ctx.plan.placement.gpu_spec
    if spec is None or ctx.plan.rl is not None:  # the RL launches write no attention kernel
        return ()
    return tuple(_("{gap} (`trainfit check` rejects these files: rule kernel-support)").format(gap=gap)
                 for gap in kernel_gaps(ctx.workload.attention, gpu_class_of(spec), ctx.plan.placement.gpu))


def readme(result: RenderResult) -> str:
    ctx = result.context
    lines = ["# " + _("Job files rendered by trainfit"), ""]
    lines += [f"- {comment_text(ln)}" for ln in ctx.header_lines()]
    lines += ["", "## " + _("Files"), ""]
    for name in result.files:
        lines.append(f"- `{name}`")
    if result.warnings:
        lines += ["", "## " + _("Warnings"), ""]
        lines += [f"- {comment_text(w)}" for w in result.warnings]
    if result.skipped:
        lines += ["", "## " + _("Targets not rendered"), ""]
        lines += [f"- {t}: {comment_text(why)}" for t, why in result.skipped.items()]
    lines += ["", "## " + _("Notes"), "",
              "- " + _("`dlc_job.json` is a PAI-DLC CreateJob body; JSON carries no comments, so its plan header is "
                       "this file (and `dlc_submit.sh`). `ds_config.json` carries it in a top-level `_trainfit` key, "
                       "which DeepSpeed's config reader ignores."),
              "- " + _("Checkpoints: `{uri}` mounted at `{mount}`; output and checkpoints go to `{dir}`; the launch "
                       "scripts resume from the newest checkpoint there.").format(
                  uri=ctx.checkpoint_uri, mount=CKPT_MOUNT, dir=ctx.ckpt_dir),
              "- " + _("Values containing `{placeholder}` must be filled in before submitting (`trainfit check` "
                       "lists them).").format(placeholder=PLACEHOLDER),
              "- " + _("Next: `trainfit check FILE` on any job file here (not the monitoring configs), then "
                       "`trainfit submit DIR` (dry run) and `trainfit submit DIR --yes`."), ""]
    return "\n".join(lines)


def write(result: RenderResult, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Write the files and README.md into ``out_dir`` (created) through the safe writer
    (:func:`trainfit.writes.write_set`): atomic, no links or special files, shell scripts executable, a manifest
    of what was written; a file trainfit did not write (or that was edited since) is refused unless ``force``, and
    files of an earlier render that this one does not write are removed."""
    written, _manifest = write_set(out_dir, {**result.files, "README.md": readme(result)}, force=force, error=RenderError)
    return written
