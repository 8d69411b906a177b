"""``trainfit memory``: per-GPU memory breakdown, and the fit verdict with --gpu / --gpu-mem / --instance-type."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import model_from_args, print_json
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.service import MemoryReport, RLMemoryReport
from trainfit.service_commands import memory_command


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "memory", help=_("per-GPU training memory, term by term; fit verdict with --gpu"),
        description=_("Per-GPU training memory of MODEL with the given settings: a breakdown by term, the "
                    "phase of the peak, host RAM; with --gpu, --gpu-mem or --instance-type also the verdict "
                    "(fits / tight / oom / unknown), the largest micro-batch and sequence, and changes that fit."))
    add_options(p, COMMAND_OPTIONS["memory"])
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> MemoryReport | RLMemoryReport:
    return memory_command(lambda: model_from_args(args), vars(args), gpu=args.gpu, gpu_mem_gib=args.gpu_mem,
                          host_ram_gib=args.host_ram, instance_type=args.instance_type)


def run(args: argparse.Namespace) -> int:
    """Exit status 1 when the verdict is ``oom`` (as ``plan`` when nothing fits and ``check`` on errors), with or
    without ``--json``; 0 otherwise."""
    rep = compute(args)
    out = rep if isinstance(rep, dict) else rep.to_dict()
    rc = 1 if out.get("verdict") == "oom" else 0
    if args.json:
        print_json(out)
        return rc
    if "rl" in out:
        from trainfit._cli.rl_options import print_rl_memory

        print_rl_memory(out)
        return rc
    from trainfit._cli.tables import print_memory

    if out.get("data"):
        print(f"{out['data']['summary']}\n{out['data']['sized_at']}")
    print_memory(out)
    return rc
