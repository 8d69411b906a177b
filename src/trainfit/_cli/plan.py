"""``trainfit plan``: rank instance types and settings by cost or time, explain every rejection."""

from __future__ import annotations

import argparse

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, ident_arg, int_arg,
                                  model_from_args, print_json)
from trainfit.i18n import _
from trainfit._cli.rl_options import add_rl_options
from trainfit._cli.tables import print_plan
from trainfit.options import (PLAN_OPTIONS, add_options, DATA_OPTIONS, RL_OPTION_NAMES, WORKLOAD_OPTION_NAMES,
                              plan_request_from_values)
from trainfit.service import make_plan


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan", help=_("which instance, how many nodes, which settings: ranked by cost or time"),
        description=_("Search the catalog's instance types x node counts x strategies (ZeRO/FSDP/offload/EP) x "
                    "checkpointing x micro-batch; keep what fits GPU memory and host RAM; rank by cost or time; "
                    "explain each rejected instance type. Options you set among --gpus --gpus-per-node "
                    "--strategy --offload --micro-batch --grad-ckpt --grad-accum --tp --pp --ep --cp are pinned; "
                    "the rest is searched."))
    add_model_argument(p)
    add_workload_options(p, unset_defaults=True)
    add_options(p, tuple(o for o in PLAN_OPTIONS if o.name != "ignore_rule") + DATA_OPTIONS)
    p.add_argument("--ignore-rule", action="append", default=[], metavar="RULE_ID", type=ident_arg("--ignore-rule", "job_name"),
                   help=_("do not enforce a platform rule (e.g. pai-public-quota when your quota was raised)"))
    add_rl_options(p)
    p.add_argument("--top", type=int_arg("--top", 1, 10_000), default=10, help=_("plans to show (default 10)"))
    add_json_option(p)
    p.set_defaults(func=run)


def build_request(args: argparse.Namespace):
    names = WORKLOAD_OPTION_NAMES + tuple(o.name for o in PLAN_OPTIONS + DATA_OPTIONS) + RL_OPTION_NAMES
    values = {k: getattr(args, k) for k in names}
    return plan_request_from_values(model_from_args(args), values)


def run(args: argparse.Namespace) -> int:
    result = make_plan(build_request(args))
    out = result.to_dict()
    if args.json:
        print_json(out)
    else:
        print_plan(out, top=args.top)
    return 0 if result.plans else 1  # the same exit status with and without --json: 1 when nothing fits
