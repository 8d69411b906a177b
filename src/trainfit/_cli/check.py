"""``trainfit check FILE``: every problem of a job spec at once; exit 1 when any is an error."""

from __future__ import annotations

import argparse

from trainfit._cli.common import add_json_option, int_arg, print_json
from trainfit._cli.labels import SEVERITY, label
from trainfit.i18n import _
from trainfit.options import CHECK_DATA_OPTIONS, add_options
from trainfit.service import check_file


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help=_("lint a job spec (DLC JSON, pai dlc command, launch script, PyTorchJob, SkyPilot, DeepSpeed)"),
        description=_("Check a training job spec before submitting it: unknown instance types, memory that will "
                    "not fit, WORLD_SIZE/RANK misuse, spot without checkpoint and resume, Lingjun without VPC, "
                    "public resource group cap, region mismatch, custom images on Lingjun, batch arithmetic. "
                    "Exit code 1 when any error-level violation is found."))
    p.add_argument("file", metavar="FILE", help=_("the job file"))
    p.add_argument("--region", help=_("the region you will submit to (checked against the spec)"))
    p.add_argument("--gpu", help=_("GPU model, when the spec does not say (for the memory check)"))
    p.add_argument("--instance-type", help=_("instance type, when the spec does not say"))
    p.add_argument("--nodes", type=int_arg("--nodes", 1, 65_536), help=_("nodes the job runs on, when the spec does not say"))
    p.add_argument("--gpus-per-node", type=int_arg("--gpus-per-node", 1, 64),
                   help=_("GPUs per node, when the spec does not say"))
    add_options(p, CHECK_DATA_OPTIONS)
    add_json_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
