"""``trainfit memory``: per-GPU memory breakdown, and fit answers with --gpu / --gpu-mem."""

from __future__ import annotations

import argparse

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, model_from_args,
                                  print_json, workload_from_args)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "memory", help="per-GPU training memory, term by term; fit answers with --gpu",
        description="Per-GPU training memory of MODEL with the given settings: a breakdown by term, the "
                    "phase of the peak, host RAM; with --gpu or --gpu-mem also whether it fits, the "
                    "largest micro-batch and sequence, and changes that would make it fit.")
    add_model_argument(p)
    add_workload_options(p)
    g = p.add_argument_group("GPU")
    g.add_argument("--gpu", metavar="NAME", help="GPU from the catalog (A10, L20, A100-80GB, H800, H20...)")
    g.add_argument("--gpu-mem", type=float, metavar="GIB", help="GPU memory in GiB instead of --gpu")
    from trainfit._cli.rl_options import add_rl_options

    add_rl_options(p)
    add_json_option(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> dict:
    if getattr(args, "rl", None):
        from trainfit._cli.rl_options import compute_rl_memory

        return compute_rl_memory(args)
    from trainfit.estimate.fit import fit_answer
    from trainfit.estimate.memory import estimate_memory

    model = model_from_args(args)
    wl = workload_from_args(args)
    est = estimate_memory(model, wl)
    gpu_name, mem = None, None
    if args.gpu:
        from trainfit.catalog.gpus import get_gpu

        gpu = get_gpu(args.gpu)
        if gpu.mem_gib is None:
            from trainfit.errors import UnknownGPUError

            raise UnknownGPUError(f"the catalog does not know the memory of {gpu.name}", fix="pass --gpu-mem GIB")
        gpu_name, mem = gpu.name, round(gpu.usable_mem_gib, 3)
    if args.gpu_mem is not None:
        mem = args.gpu_mem
    out = est.to_dict()
    out["workload"] = wl.to_dict()
    out.update({"gpu": gpu_name, "gpu_mem_gib": mem, "fits": None, "headroom_gib": None, "max_micro_batch": None,
                "max_seq_len": None, "suggestions": []})
    if mem is not None:
        fa = fit_answer(model, wl, float(mem), estimate=est)
        out.update({"fits": fa.fits, "headroom_gib": round(fa.headroom_gib, 2),
                    "max_micro_batch": fa.max_micro_batch, "max_seq_len": fa.max_seq_len,
                    "suggestions": [s.to_dict() for s in fa.suggestions]})
    return out


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
        return 0
    if "rl" in out:
        from trainfit._cli.rl_options import print_rl_memory

        print_rl_memory(out)
        return 0
    from trainfit.render.tables import print_memory

    print_memory(out)
    return 0
