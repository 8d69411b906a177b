"""``trainfit render``: job files (DeepSpeed, ms-swift, LLaMA-Factory, torchrun, PAI-DLC, PyTorchJob,
SkyPilot) from a plan: the same options as ``trainfit memory``/``plan``, or ``--plan plan.json --pick N``."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, model_from_args,
                                  print_json, workload_from_args)
from trainfit.errors import PlanFileError, RenderError
from trainfit.launch import TARGETS

MAX_PLAN_BYTES = 5 * 2**20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "render", help="write job files (DeepSpeed, ms-swift, LLaMA-Factory, torchrun, DLC, PyTorchJob, SkyPilot)",
        description="Render ready-to-run job files from a plan. Give the model and settings as for `trainfit "
                    "memory`, or `--plan plan.json --pick N` (from `trainfit plan --json`). Every file carries "
                    "a header with the plan's memory, speed and cost.")
    add_model_argument(p)
    add_workload_options(p)
    g = p.add_argument_group("render")
    g.add_argument("--target", default="all",
                   help=f"comma-separated: {', '.join(TARGETS)} or all (default all)")
    g.add_argument("--out", required=True, metavar="DIR", help="folder to write the files into (created)")
    g.add_argument("--plan", metavar="PLAN_JSON", help="output of `trainfit plan ... --json`")
    g.add_argument("--pick", type=int, default=1, metavar="N", help="which plan of --plan, 1 = first (default 1)")
    g = p.add_argument_group("where it runs")
    g.add_argument("--instance-type", metavar="TYPE", help="instance type (ecs.gn7i-c8g1.2xlarge, ml.gu7xf.8xlarge-gu108...)")
    g.add_argument("--gpu", metavar="NAME", help="GPU model when the instance type does not say (e.g. H800)")
    g.add_argument("--spot", action="store_true", help="spot/preemptible: checkpoint mount and resume are wired")
    g.add_argument("--spot-discount-limit", type=float, metavar="F",
                   help="Lingjun spot bid as a fraction of the list price (default 0.5)")
    g.add_argument("--region", help="region id (cn-hangzhou, cn-wulanchabu...)")
    g.add_argument("--workspace-id", help="PAI workspace id (default: your default workspace)")
    g.add_argument("--resource-id", help="PAI resource quota id (default: public resources)")
    g.add_argument("--image", help="container image (default: PAI's Megatron-Patch image of the region)")
    g.add_argument("--dataset", help="dataset id or path (default AI-ModelScope/alpaca-gpt4-data-en)")
    g.add_argument("--job-name", help="job name (default MODEL-METHOD)")
    g.add_argument("--checkpoint-uri", metavar="URI", help="OSS path for checkpoints (oss://bucket/path/)")
    g.add_argument("--vpc-id")
    g.add_argument("--vswitch-id")
    g.add_argument("--security-group-id")
    g.add_argument("--lr", type=float, help="learning rate (default 1e-4 LoRA, 1e-5 full)")
    g.add_argument("--epochs", type=int, default=1)
    g.add_argument("--save-steps", type=int, default=200, help="checkpoint every N steps (default 200)")
    add_json_option(p)
    p.set_defaults(func=run)


def _load_plan(path: str, pick: int) -> tuple[dict[str, Any], dict[str, Any]]:
    from trainfit._io import read_json_limited

    doc = read_json_limited(path, max_bytes=MAX_PLAN_BYTES, error=PlanFileError, what="plan file",
                            fix="write it with `trainfit plan ... --json > plan.json`",
                            too_big_fix="pass the JSON that `trainfit plan --json` wrote")
    plans = doc.get("plans") if isinstance(doc, dict) else None
    if not isinstance(plans, list) or not plans:
        raise PlanFileError(f"plan file {path} has no 'plans' list",
                            fix="no plan fitted? see its 'rejected' list, or rerun `trainfit plan` with other options")
    if not 1 <= pick <= len(plans):
        raise PlanFileError(f"--pick {pick} is out of range: the file has {len(plans)} plan(s)",
                            fix=f"use --pick 1..{len(plans)}")
    plan = plans[pick - 1]
    if not isinstance(plan, dict):
        raise PlanFileError(f"plan {pick} of {path} is not an object", fix="regenerate the file with `trainfit plan`")
    wl = doc.get("workload") if isinstance(doc.get("workload"), dict) else {}
    return wl, plan


def _workload_from_plan(args: argparse.Namespace, base: dict[str, Any], plan: dict[str, Any]):
    from trainfit.errors import PlanFileError, WorkloadError
    from trainfit.workload import Workload

    names = {f.name for f in fields(Workload)}
    kw = {k: v for k, v in base.items() if k in names}
    settings = plan.get("settings") or {}
    if not isinstance(settings, dict):
        raise PlanFileError("the plan's 'settings' is not an object", fix="regenerate the file with `trainfit plan`")
    kw.update({k: v for k, v in settings.items() if k in names})
    gpn, nodes = plan.get("gpus_per_node"), plan.get("nodes")
    if isinstance(gpn, int) and gpn > 0:
        kw.setdefault("gpus_per_node", gpn)
        if isinstance(nodes, int) and nodes > 0:
            kw.setdefault("gpus", gpn * nodes)
    if isinstance(kw.get("lora_targets"), list):
        kw["lora_targets"] = tuple(kw["lora_targets"])
    try:
        return Workload(**kw)
    except TypeError as e:
        raise WorkloadError(f"the plan's settings do not make a workload: {e}",
                            fix="regenerate the file with `trainfit plan`") from None


def compute(args: argparse.Namespace):
    from trainfit.models import get_model
    from trainfit.launch import build_context, render, summary_from_plan

    summary = None
    instance_type, spot, gpu = args.instance_type, args.spot, args.gpu
    if args.plan:
        base, plan = _load_plan(args.plan, args.pick)
        wl = _workload_from_plan(args, base, plan)
        model_name = args.model or base.get("model") or plan.get("model")
        if args.config:
            model = model_from_args(args)
        elif isinstance(model_name, str):
            model = get_model(model_name)
        else:
            raise PlanFileError("the plan file does not name the model", fix="pass MODEL before the options")
        instance_type = instance_type or plan.get("instance_type")
        spot = spot or bool(plan.get("spot"))
        gpu = gpu or plan.get("gpu")
        summary = summary_from_plan(plan, source=f"trainfit plan ({args.plan}, plan {args.pick}: "
                                                 f"{plan.get('provider', '?')} {plan.get('instance_type', '?')})")
        if summary["memory"].get("gpu_mem_gib") is None and gpu:
            from trainfit.launch._context import gpu_memory_gib

            summary["memory"]["gpu_mem_gib"] = gpu_memory_gib(gpu)[1]
    else:
        model = model_from_args(args)
        wl = workload_from_args(args)
    vpc = None
    if args.vpc_id or args.vswitch_id or args.security_group_id:
        vpc = {k: v for k, v in (("VpcId", args.vpc_id), ("SwitchId", args.vswitch_id),
                                 ("SecurityGroupId", args.security_group_id)) if v}
    ctx = build_context(model, wl, instance_type=instance_type, spot=spot, summary=summary, gpu=gpu,
                        region=args.region, workspace_id=args.workspace_id, resource_id=args.resource_id,
                        image=args.image, dataset=args.dataset, job_name=args.job_name,
                        checkpoint_uri=args.checkpoint_uri, vpc=vpc, learning_rate=args.lr, epochs=args.epochs,
                        save_steps=args.save_steps, spot_discount_limit=args.spot_discount_limit)
    return render(ctx, args.target)


def run(args: argparse.Namespace) -> int:
    from trainfit.launch import write

    result = compute(args)
    paths = write(result, args.out)
    if args.json:
        out = result.to_dict()
        out["out"] = str(Path(args.out))
        out["written"] = [p.name for p in paths]
        print_json(out)
        return 0
    ctx = result.context
    for line in ctx.header_lines():
        print(line)
    print(f"wrote {len(paths)} file(s) to {args.out}: " + ", ".join(p.name for p in paths))
    for t, why in result.skipped.items():
        print(f"skipped {t}: {why}")
    mem = ctx.summary.get("memory") or {}
    if mem.get("fits") is False:
        print("warning: the plan does not fit the GPU's memory; `trainfit memory ... --gpu` lists changes that fit")
    return 0
