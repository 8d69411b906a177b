"""``trainfit memory``: per-GPU memory breakdown, and the fit verdict with --gpu / --gpu-mem / --instance-type."""

from __future__ import annotations

import argparse

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, float_arg, ident_arg,
                                  model_from_args, print_json, workload_from_args)
from trainfit.i18n import _
from trainfit._cli.rl_options import add_rl_options, print_rl_memory
from trainfit._cli.tables import print_memory
from trainfit.dataset.budget import budget_from_values
from trainfit.errors import WorkloadError
from trainfit.options import DATA_OPTIONS, add_options, rl_config_from_values, rl_workload_from_values
from trainfit.service import memory_report, rl_memory_report


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "memory", help=_("per-GPU training memory, term by term; fit verdict with --gpu"),
        description=_("Per-GPU training memory of MODEL with the given settings: a breakdown by term, the "
                    "phase of the peak, host RAM; with --gpu, --gpu-mem or --instance-type also the verdict "
                    "(fits / tight / oom / unknown), the largest micro-batch and sequence, and changes that fit."))
    add_model_argument(p)
    add_workload_options(p, unset_defaults=True)  # None = not given: the Workload's default, or --rl-framework's
    g = p.add_argument_group(_("GPU"))
    g.add_argument("--gpu", metavar="NAME", type=ident_arg("--gpu", "gpu"),
                   help=_("GPU from the catalog (A10, L20, A100-80GB, H800, H20...)"))
    g.add_argument("--gpu-mem", type=float_arg("--gpu-mem", 0, 4096, lo_open=True), metavar="GIB",
                   help=_("usable GPU memory in GiB instead of --gpu"))
    g.add_argument("--instance-type", type=ident_arg("--instance-type", "instance_type"), metavar="TYPE",
                   help=_("instance type from the catalog: its GPU and host RAM"))
    g.add_argument("--host-ram", type=float_arg("--host-ram", 0, 1e6, lo_open=True), metavar="GIB",
                   help=_("host RAM per node (for the verdict on offload)"))
    add_rl_options(p)
    add_options(p, DATA_OPTIONS)  # --dataset: size memory at the data's longest row
    add_json_option(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace):
    rl = rl_config_from_values(vars(args))
    if rl is not None and args.dataset:
        raise WorkloadError(_("--dataset sizes supervised fine-tuning rows; RL sequences are --prompt-len + "
                              "--response-len"), fix=_("drop --dataset, or drop --rl"))
    if rl is not None:  # RL sizing (issue 13): memory per phase
        return rl_memory_report(model_from_args(args), rl_workload_from_values(vars(args), rl), rl,
                                gpu=args.gpu, gpu_mem_gib=args.gpu_mem, host_ram_gib=args.host_ram,
                                instance_type=args.instance_type, steps=args.steps)
    data = budget_from_values(vars(args))
    return memory_report(model_from_args(args), workload_from_args(args), gpu=args.gpu, gpu_mem_gib=args.gpu_mem,
                         host_ram_gib=args.host_ram, instance_type=args.instance_type, data=data)


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
        print_rl_memory(out)
        return rc
    if out.get("data"):
        print(f"{out['data']['summary']}\n{out['data']['sized_at']}")
    print_memory(out)
    return rc
