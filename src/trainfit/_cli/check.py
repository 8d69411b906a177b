"""``trainfit check FILE``: every problem of a job spec at once; exit 1 when any is an error."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import print_json
from trainfit._cli.labels import SEVERITY, label
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help=_("lint a job spec (DLC JSON, pai dlc command, launch script, PyTorchJob, SkyPilot, DeepSpeed)"),
        description=_("Check a training job spec before submitting it: unknown instance types, memory that will "
                    "not fit, WORLD_SIZE/RANK misuse, spot without checkpoint and resume, Lingjun without VPC, "
                    "public resource group cap, region mismatch, custom images on Lingjun, batch arithmetic. "
                    "Exit code 1 when any error-level violation is found."))
    add_options(p, COMMAND_OPTIONS["check"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainfit.service import check_file

    res = check_file(args.file, region=args.region, gpu=args.gpu, instance_type=args.instance_type, nodes=args.nodes,
                     gpus_per_node=args.gpus_per_node, dataset=args.dataset, tokenizer=args.tokenizer)
    if args.json:
        print_json(res.to_dict())
        return 0 if res.ok else 1
    print(f"{res.path} ({res.kind}): " + (_("no problems found") if not res.violations else
                                          _("{findings} finding(s), {errors} error(s)").format(
                                              findings=len(res.violations), errors=res.errors)))
    for v in res.violations:
        severity = label(SEVERITY, v.severity)
        print(f"  {severity:<7} {v.rule}: {v.message}")
        print("          " + _("fix: {fix}").format(fix=v.fix))
    for n in res.notes:
        print("  " + _("note: {text}").format(text=n))
    return 0 if res.ok else 1
