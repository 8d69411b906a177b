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
from typing import Any, Mapping

from trainfit.models.shapes import ModelShape
from trainfit.errors import RenderError
from trainfit.launch._context import (CKPT_MOUNT, PAI_IMAGE, PLACEHOLDER, RenderContext,
                                              gpu_memory_gib, is_lingjun_type, lookup_instance, model_repo_id,
                                              slug)
from trainfit.workload import Workload

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
}
TARGETS: tuple[str, ...] = tuple(TARGET_MODULES)

__all__ = ["TARGETS", "RenderContext", "RenderError", "RenderResult", "build_context", "render", "write",
           "summary_from_estimate", "summary_from_plan"]


@dataclass(frozen=True, kw_only=True)
class RenderResult:
    files: dict[str, str]
    """File name -> text, in target order."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Target -> why it does not apply to this plan (only when rendering ``all``)."""
    context: RenderContext

    def to_dict(self) -> dict[str, Any]:
        return {"files": sorted(self.files), "skipped": dict(self.skipped), "summary": self.context.summary}


def summary_from_estimate(model: ModelShape, workload: Workload, gpu_mem_gib: float | None) -> dict[str, Any]:
    """Plan summary from the memory model alone (speed and cost need ``trainfit plan``)."""
    from trainfit.estimate.memory import estimate_memory

    est = estimate_memory(model, workload)
    mem = {"reserved_gib": round(est.reserved_gib, 2), "tensor_peak_gib": round(est.tensor_peak_gib, 2),
           "peak_phase": est.peak_phase, "gpu_mem_gib": gpu_mem_gib,
           "fits": None if gpu_mem_gib is None else est.reserved_gib <= gpu_mem_gib}
    return {"source": "trainfit memory estimate (speed and cost need `trainfit plan`)", "memory": mem,
            "speed": None, "cost": None}


def summary_from_plan(plan: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """Plan summary from one entry of ``trainfit plan --json``'s ``plans`` list."""
    per_gpu = plan.get("per_gpu_gib")
    speed = {k: plan.get(k) for k in ("tokens_per_s", "step_seconds", "mfu")}
    cost = {k: plan.get(k) for k in ("hours", "gpu_hours", "cost", "currency")}
    return {"source": source,
            "memory": {"reserved_gib": per_gpu, "tensor_peak_gib": plan.get("tensor_peak_gib"),
                       "peak_phase": plan.get("peak_phase"), "gpu_mem_gib": plan.get("gpu_mem_gib"),
                       "fits": plan.get("fits", True if per_gpu is not None else None)},
            "speed": speed if any(v is not None for v in speed.values()) else None,
            "cost": cost if any(v is not None for v in cost.values()) else None}


def build_context(model: ModelShape, workload: Workload, *, instance_type: str | None = None, spot: bool = False,
                  summary: Mapping[str, Any] | None = None, gpu: str | None = None, region: str | None = None,
                  workspace_id: str | None = None, resource_id: str | None = None, image: str | None = None,
                  dataset: str | None = None, job_name: str | None = None, checkpoint_uri: str | None = None,
                  vpc: Mapping[str, str] | None = None, learning_rate: float | None = None, epochs: int = 1,
                  save_steps: int = 200, spot_discount_limit: float | None = None) -> RenderContext:
    """A consistent :class:`RenderContext`; raises :class:`RenderError` for contradictions."""
    inst = lookup_instance(instance_type)
    gpus_per_instance = getattr(inst, "gpu_count", None) if inst is not None else None
    if gpu is None and inst is not None:
        gpu = getattr(inst, "gpu", None)
    gpu_name, mem = gpu_memory_gib(gpu)
    if gpus_per_instance and workload.gpus_per_node > gpus_per_instance and workload.gpus > gpus_per_instance:
        raise RenderError(
            f"{instance_type} has {gpus_per_instance} GPU(s) per node but the plan puts "
            f"{min(workload.gpus, workload.gpus_per_node)} on each node",
            fix=f"use --gpus-per-node {gpus_per_instance} (and a multiple of it for --gpus) or a larger instance")
    regions = tuple(getattr(inst, "regions", ()) or ()) if inst is not None else ()
    lingjun = is_lingjun_type(instance_type)
    if region is None:
        region = regions[0] if len(regions) == 1 else ("cn-wulanchabu" if lingjun else "cn-hangzhou")
    if spot_discount_limit is not None and not 0 < spot_discount_limit <= 1:
        raise RenderError(f"spot discount limit must be in (0, 1]; got {spot_discount_limit}",
                          fix="e.g. --spot-discount-limit 0.5 (bid at most 50% of the list price)")
    name = slug(job_name or f"{model.name}-{workload.method}")
    default_image = PAI_IMAGE.format(region=region)
    img = image or default_image
    custom = bool(image) and not image.startswith(("dsw-registry", "registry.", "registry-vpc."))
    if vpc is None and lingjun:
        vpc = {"VpcId": f"vpc-{PLACEHOLDER}", "SwitchId": f"vsw-{PLACEHOLDER}",
               "SecurityGroupId": f"sg-{PLACEHOLDER}"}
    if summary is None:
        summary = summary_from_estimate(model, workload, mem)
    return RenderContext(
        model=model, model_id=model_repo_id(model), workload=workload, instance_type=instance_type, gpu=gpu_name,
        gpu_mem_gib=mem, gpus_per_instance=gpus_per_instance, lingjun=lingjun, spot=spot,
        spot_discount_limit=spot_discount_limit, region=region, workspace_id=workspace_id,
        resource_id=resource_id, image=img, custom_image=custom, dataset=dataset or "AI-ModelScope/alpaca-gpt4-data-en",
        job_name=name, checkpoint_uri=checkpoint_uri or f"oss://{PLACEHOLDER}-bucket/trainfit/{name}/",
        vpc=dict(vpc) if vpc else None, learning_rate=learning_rate, epochs=epochs, save_steps=save_steps,
        summary=dict(summary))


def _module(target: str):
    return import_module(TARGET_MODULES[target])


def render(ctx: RenderContext, targets: list[str] | tuple[str, ...] | str = "all") -> RenderResult:
    """Render ``targets`` (names from :data:`TARGETS`, or ``all``)."""
    if isinstance(targets, str):
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    want_all = "all" in targets
    chosen = list(TARGETS) if want_all else list(dict.fromkeys(targets))
    unknown = [t for t in chosen if t not in TARGETS]
    if unknown:
        from trainfit.errors import did_you_mean

        sugg = did_you_mean(unknown[0], list(TARGETS) + ["all"], n=1)
        raise RenderError(f"unknown render target '{unknown[0]}'",
                          fix=(f"did you mean {sugg[0]}? " if sugg else "") + "targets: " + ", ".join(TARGETS) + ", all")
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for t in chosen:
        mod = _module(t)
        why = mod.applies(ctx)
        if why:
            if not want_all:
                raise RenderError(f"target {t} does not apply: {why}", fix="pick another --target or change the plan")
            skipped[t] = why
            continue
        files.update(mod.render(ctx))
    return RenderResult(files=files, skipped=skipped, context=ctx)


def readme(result: RenderResult) -> str:
    ctx = result.context
    lines = ["# Job files rendered by trainfit", ""]
    lines += [f"- {ln}" for ln in ctx.header_lines()]
    lines += ["", "## Files", ""]
    for name in result.files:
        lines.append(f"- `{name}`")
    if result.skipped:
        lines += ["", "## Targets not rendered", ""]
        lines += [f"- {t}: {why}" for t, why in result.skipped.items()]
    lines += ["", "## Notes", "",
              "- `dlc_job.json` is a PAI-DLC CreateJob body; JSON carries no comments, so its plan header is this "
              "file (and `dlc_submit.sh`). `ds_config.json` carries it in a top-level `_trainfit` key, which "
              "DeepSpeed's config reader ignores.",
              f"- Checkpoints: `{ctx.checkpoint_uri}` mounted at `{CKPT_MOUNT}`; output and checkpoints go to "
              f"`{ctx.ckpt_dir}`; the launch scripts resume from the newest checkpoint there.",
              f"- Values containing `{PLACEHOLDER}` must be filled in before submitting (`trainfit check` "
              "lists them).",
              "- Next: `trainfit check FILE` on any of these, then `trainfit submit DIR` (dry run) and "
              "`trainfit submit DIR --yes`.", ""]
    return "\n".join(lines)


def write(result: RenderResult, out_dir: str | Path) -> list[Path]:
    """Write the files and README.md into ``out_dir`` (created); shell scripts are made executable."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RenderError(f"cannot create {out}: {e.strerror or e}", fix="choose another --out folder") from None
    written: list[Path] = []
    for name, text in {**result.files, "README.md": readme(result)}.items():
        p = out / name
        try:
            p.write_text(text, encoding="utf-8")
            if name.endswith(".sh"):
                p.chmod(0o755)
        except OSError as e:
            raise RenderError(f"cannot write {p}: {e.strerror or e}", fix="check the folder's permissions") from None
        written.append(p)
    return written
