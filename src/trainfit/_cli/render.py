"""``trainfit render``: job files (DeepSpeed, ms-swift, LLaMA-Factory, torchrun, PAI-DLC, PyTorchJob,
SkyPilot; verl and ms-swift RL launches for ``--rl`` plans) from a typed plan: ``--plan plan.json --pick N``,
or the model and settings (as for ``memory``) with the GPU or instance type they run on."""

from __future__ import annotations

import argparse
from pathlib import Path

from typing import TYPE_CHECKING

from trainfit import service
from trainfit._cli.arguments import add_options
from trainfit._cli.common import model_from_args, print_json
from trainfit._cli.labels import VERDICT, label
from trainfit.dataset import is_stats_file
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.plan.types import Plan
from trainfit.service_commands import Where, plan_to_render
from trainfit.errors import InputError
from trainfit.launch import RenderOptions
from trainfit.options import RL_OPTIONS, WORKLOAD_OPTIONS

if TYPE_CHECKING:
    from trainfit.launch import RenderResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "render", help=_("write job files (DeepSpeed, ms-swift, LLaMA-Factory, torchrun, DLC, PyTorchJob, SkyPilot)"),
        description=_("Render ready-to-run job files from a plan: `--plan plan.json --pick N` (from `trainfit plan "
                    "--json`), or the model and settings as for `trainfit memory` with --gpu or --instance-type. "
                    "Every file carries a header with the plan's memory verdict, speed and cost."))
    add_options(p, COMMAND_OPTIONS["render"])
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> RenderOptions:
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


def plan_from_args(args: argparse.Namespace) -> Plan:
    if args.plan:
        _refuse_options_the_plan_fixes(args)
        return service.load_plan(args.plan, args.pick)
    where = Where(gpu=args.gpu, instance_type=args.instance_type, tokens=args.tokens, spot=args.spot)
    return plan_to_render(lambda: model_from_args(args), vars(args), lambda: where, region=args.region,
                          target=args.target)


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


def compute(args: argparse.Namespace) -> RenderResult:
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
                file=Path(args.plan).name, pick=args.pick, provider=ctx.plan.placement.provider,
                instance_type=ctx.plan.placement.instance_type)
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


def _exit_status(result: RenderResult) -> int:
    """The exit-code table (README): the files are written, but a plan that does not fit exits 1, as memory does."""
    return 1 if result.context.plan.fit.verdict == "oom" else 0
