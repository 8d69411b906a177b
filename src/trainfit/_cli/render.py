"""``trainfit render``: job files (DeepSpeed, ms-swift, LLaMA-Factory, torchrun, PAI-DLC, PyTorchJob,
SkyPilot; verl and ms-swift RL launches for ``--rl`` plans) from a typed plan: ``--plan plan.json --pick N``,
or the model and settings (as for ``memory``) with the GPU or instance type they run on."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, count_arg, float_arg,
                                  ident_arg, int_arg, model_from_args, print_json, workload_from_args)
from trainfit.launch.targets import render_targets
from trainfit._cli.labels import VERDICT, label
from trainfit.i18n import _
from trainfit import service
from trainfit._cli.rl_options import add_rl_options
from trainfit.dataset import is_stats_file
from trainfit.dataset.budget import budget_from_values
from trainfit.errors import InputError
from trainfit.launch import RenderOptions
from trainfit.options import rl_config_from_values, rl_workload_from_values, RL_OPTIONS, WORKLOAD_OPTIONS
from trainfit.plan.batch import with_target_batch


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "render", help=_("write job files (DeepSpeed, ms-swift, LLaMA-Factory, torchrun, DLC, PyTorchJob, SkyPilot)"),
        description=_("Render ready-to-run job files from a plan: `--plan plan.json --pick N` (from `trainfit plan "
                    "--json`), or the model and settings as for `trainfit memory` with --gpu or --instance-type. "
                    "Every file carries a header with the plan's memory verdict, speed and cost."))
    add_model_argument(p)
    add_workload_options(p, unset_defaults=True)  # None = not given (the Workload's default), so --plan can refuse them
    g = p.add_argument_group(_("render"))
    g.add_argument("--target", default=None,
                   help=_("comma-separated: {targets} or all (default: the plan's --target, else all); a target whose "
                          "engine differs from the one the plan's speed assumed is written with a warning").format(
                       targets=", ".join(render_targets())))
    g.add_argument("--out", required=True, metavar="DIR", help=_("folder to write the files into (created)"))
    g.add_argument("--force", action="store_true",
                   help=_("overwrite files in --out that trainfit did not write or that were edited since (default: "
                        "refuse them; files of an earlier render are replaced, its leftovers removed)"))
    g.add_argument("--plan", metavar="PLAN_JSON", help=_("output of `trainfit plan ... --json`"))
    g.add_argument("--pick", type=int_arg("--pick", 1, 10_000), default=1, metavar="N",
                   help=_("which plan of --plan, 1 = first (default 1)"))
    g = p.add_argument_group(_("where it runs (without --plan)"))
    g.add_argument("--instance-type", metavar="TYPE", type=ident_arg("--instance-type", "instance_type"),
                   help=_("instance type (ecs.gn7i-c8g1.2xlarge, ml.gu7xf.8xlarge-gu108...)"))
    g.add_argument("--gpu", metavar="NAME", type=ident_arg("--gpu", "gpu"), help=_("GPU model (e.g. H800)"))
    g.add_argument("--tokens", type=count_arg("--tokens"), help=_("training tokens (sets the steps and the time)"))
    g.add_argument("--spot", action="store_true", help=_("spot/preemptible: checkpoint mount and resume are wired"))
    g = p.add_argument_group(_("job"))
    g.add_argument("--spot-discount-limit", type=float_arg("--spot-discount-limit", 0, 1, lo_open=True), metavar="F",
                   help=_("Lingjun spot bid as a fraction of the list price (default 0.5)"))
    g.add_argument("--region", type=ident_arg("--region", "region"), help=_("region id (cn-hangzhou, cn-wulanchabu...)"))
    g.add_argument("--workspace-id", type=ident_arg("--workspace-id", "workspace_id"),
                   help=_("PAI workspace id (default: your default workspace)"))
    g.add_argument("--resource-id", type=ident_arg("--resource-id", "resource_id"),
                   help=_("PAI resource quota id (default: public resources)"))
    g.add_argument("--image", type=ident_arg("--image", "image"),
                   help=_("container image (default: PAI's Megatron-Patch image of the region)"))
    g.add_argument("--dataset", type=ident_arg("--dataset", "dataset"),
                   help=_("dataset id or path the job trains on (default: the plan's data file, else "
                        "AI-ModelScope/alpaca-gpt4-data-en); without --plan, a stats file from `trainfit data --json` "
                        "or a dataset file with --tokenizer also sets the steps, the cut-off and the budget as "
                        "`plan --dataset` does"))
    g.add_argument("--tokenizer", metavar="DIR",
                   help=_("without --plan, with --dataset FILE: count the dataset in place with this model folder's "
                        "tokenizer and chat template (as `trainfit data`)"))
    g.add_argument("--seq-len-percentile", choices=("p50", "p90", "p95", "p99", "max"), metavar="PCT",
                   help=_("without --plan, with a --dataset that is counted: the cut-off is the smallest in the stats "
                        "at or above this percentile of sample lengths (default p99, unless --seq-len)"))
    g.add_argument("--job-name", type=ident_arg("--job-name", "job_name"), help=_("job name (default MODEL-METHOD)"))
    g.add_argument("--checkpoint-uri", metavar="URI", type=ident_arg("--checkpoint-uri", "uri"),
                   help=_("OSS path for checkpoints (oss://bucket/path/)"))
    g.add_argument("--vpc-id", type=ident_arg("--vpc-id", "vpc"))
    g.add_argument("--vswitch-id", type=ident_arg("--vswitch-id", "vpc"))
    g.add_argument("--security-group-id", type=ident_arg("--security-group-id", "vpc"))
    g.add_argument("--lr", type=float_arg("--lr", 0, 1, lo_open=True), help=_("learning rate (default 1e-4 LoRA, 1e-5 full)"))
    g.add_argument("--epochs", type=float_arg("--epochs", 0, 10_000, lo_open=True),
                   help=_("epochs over the dataset instead of the plan's token budget"))
    g.add_argument("--save-steps", type=int_arg("--save-steps", 1, 10**9),
                   help=_("checkpoint every N steps (default: from the plan, else 200)"))
    add_rl_options(p)
    add_json_option(p)
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace):
    counted = not args.plan and args.dataset and (args.tokenizer or is_stats_file(args.dataset))

    vpc = None
    if args.vpc_id or args.vswitch_id or args.security_group_id:
        vpc = {k: v for k, v in (("VpcId", args.vpc_id), ("SwitchId", args.vswitch_id),
                                 ("SecurityGroupId", args.security_group_id)) if v}
    return RenderOptions(region=args.region, workspace_id=args.workspace_id, resource_id=args.resource_id,
                         image=args.image, dataset=None if counted else args.dataset, job_name=args.job_name,
                         checkpoint_uri=args.checkpoint_uri, vpc=vpc, learning_rate=args.lr,
                         epochs=None if counted else args.epochs,  # counted data: --epochs is in the data's budget
                         save_steps=args.save_steps, spot_discount_limit=args.spot_discount_limit)


def plan_from_args(args: argparse.Namespace):
    if args.plan:
        _refuse_options_the_plan_fixes(args)
        return service.load_plan(args.plan, args.pick)
    rl = rl_config_from_values(vars(args))
    data = _data_budget(args) if rl is None else None
    tokens = args.tokens if data is None else data.tokens
    wl = (workload_from_args(args) if data is None else workload_from_args(args, seq_len=data.seq_len)) \
        if rl is None else rl_workload_from_values(vars(args), rl)
    if rl is None and args.grad_accum is None:  # the global batch the planner would aim at
        wl = with_target_batch(wl, tokens)
    plan = service.plan_for(model_from_args(args), wl, gpu=args.gpu,
                            instance_type=args.instance_type, tokens=tokens, spot=args.spot, region=args.region,
                            rl=rl, steps=args.steps if rl is not None else None,
                            target=None if rl is not None else service.single_target(args.target))
    if data is None:
        return plan
    from dataclasses import replace

    return replace(plan, data=data)


def _data_budget(args: argparse.Namespace):
    """``render MODEL --dataset STATS|FILE [--tokenizer DIR]``: the data budget ``plan --dataset`` computes (the same
    function), when --dataset is a stats file or a dataset counted with --tokenizer; None when it is a dataset id
    (or a path) that the job only names."""
    if not args.dataset or not (args.tokenizer or is_stats_file(args.dataset)):
        if args.tokenizer or args.seq_len_percentile:
            raise InputError(_("--tokenizer and --seq-len-percentile count a dataset: they need --dataset FILE"),
                             fix=_("pass --dataset train.jsonl --tokenizer DIR (or --dataset stats.json)"))
        return None
    return budget_from_values({"dataset": args.dataset, "tokenizer": args.tokenizer, "seq_len": args.seq_len,
                                    "seq_len_percentile": args.seq_len_percentile, "packing": args.packing,
                                    "epochs": args.epochs, "tokens": args.tokens})


def _refuse_options_the_plan_fixes(args: argparse.Namespace) -> None:
    """With --plan the model, the training settings and the GPU come from the plan: any of them given as well would
    be ignored in silence (``render --plan plan.json Qwen3-14B --method full`` renders the plan's own model)."""
    given = ["MODEL"] if args.model else []
    given += [o.cli_flag for o in (*WORKLOAD_OPTIONS, *RL_OPTIONS) if getattr(args, o.name, None) is not None]
    given += [f for f, v in (("--config", args.config), ("--gpu", args.gpu), ("--instance-type", args.instance_type),
                             ("--tokens", args.tokens), ("--spot", args.spot or None), ("--tokenizer", args.tokenizer),
                             ("--seq-len-percentile", args.seq_len_percentile)) if v is not None]
    if given:
        raise InputError(_("--plan fixes the model, the training settings and the GPU; {given} would be "
                           "ignored").format(given=", ".join(given)),
                         fix=_("drop them, or re-plan with them (`trainfit plan ... --json > plan.json`), or render "
                               "without --plan (MODEL options --gpu/--instance-type)"))


def compute(args: argparse.Namespace):
    return service.render_plan(plan_from_args(args), options_from_args(args), args.target)


def run(args: argparse.Namespace) -> int:
    result = compute(args)
    paths = service.write_rendered(result, args.out, force=args.force)
    if args.json:
        out = result.to_dict()
        out["out"] = str(Path(args.out))
        out["written"] = [p.name for p in paths]
        print_json(out)
        return _exit_status(result)
    ctx = result.context
    for i, line in enumerate(ctx.header_lines()[:-1]):
        if i == 0 and args.plan:  # which file and plan (the files stay the same whatever the plan file is called)
            line += _(" ({file}, plan {pick}: {provider} {instance_type})").format(
                file=Path(args.plan).name, pick=args.pick, provider=ctx.plan.provider,
                instance_type=ctx.plan.instance_type)
        print(line)
    print(_("wrote {n} file(s) to {out}: {names}").format(n=len(paths), out=args.out,
                                                          names=", ".join(p.name for p in paths)))
    for t, why in result.skipped.items():
        print(_("skipped {target}: {why}").format(target=t, why=why))
    for w in result.warnings:
        print(_("warning: {text}").format(text=w))
    if ctx.plan.fit.verdict != "fits":
        print(_("warning: the plan's verdict is {verdict}: {reasons}").format(
            verdict=label(VERDICT, ctx.plan.fit.verdict), reasons="; ".join(ctx.plan.fit.reasons)))
    return _exit_status(result)


def _exit_status(result: object) -> int:
    """The exit-code table (README): the files are written, but a plan that does not fit exits 1, as memory does."""
    return 1 if result.context.plan.fit.verdict == "oom" else 0  # type: ignore[attr-defined]
