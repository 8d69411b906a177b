"""``trainfit plan``: rank instance types and settings by cost or time, explain every rejection."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import model_from_args, print_json
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.options import DATA_OPTIONS, PLAN_OPTIONS, RL_OPTION_NAMES, WORKLOAD_OPTION_NAMES, OptionValue
from trainfit.service_commands import plan_command
from trainfit._cli.tables import print_plan


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan", help=_("which instance, how many nodes, which settings: ranked by cost or time"),
        description=_("Search the catalog's instance types x node counts x strategies (ZeRO/FSDP/offload/EP) x "
                    "checkpointing x micro-batch; keep what fits GPU memory and host RAM; rank by cost or time; "
                    "explain each rejected instance type. Options you set among --gpus --gpus-per-node "
                    "--strategy --offload --micro-batch --grad-ckpt --grad-accum --tp --pp --ep --cp are pinned; "
                    "the rest is searched."))
    add_options(p, COMMAND_OPTIONS["plan"])
    p.set_defaults(func=run)


def option_values(args: argparse.Namespace) -> dict[str, OptionValue]:
    """The values of the options ``plan`` shares with the web API (workload, plan, data and RL options)."""
    names = WORKLOAD_OPTION_NAMES + tuple(o.name for o in PLAN_OPTIONS + DATA_OPTIONS) + RL_OPTION_NAMES
    return {k: getattr(args, k) for k in names}


def run(args: argparse.Namespace) -> int:
    result = plan_command(model_from_args(args), option_values(args))
    out = result.to_dict()
    if args.json:
        print_json(out)
    else:
        print_plan(result, top=args.top)
    return 0 if result.plans else 1  # the same exit status with and without --json: 1 when nothing fits
