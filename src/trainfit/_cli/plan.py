"""``trainfit plan``: rank instance types and settings by cost or time, explain every rejection."""

from __future__ import annotations

import argparse

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, model_from_args,
                                  parse_count, print_json, workload_kwargs)
from trainfit.workload import LAYOUT_FIELDS as PINNABLE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan", help="which instance, how many nodes, which settings: ranked by cost or time",
        description="Search the catalog's instance types x node counts x strategies (ZeRO/FSDP/offload/EP) x "
                    "checkpointing x micro-batch; keep what fits GPU memory and host RAM; rank by cost or time; "
                    "explain each rejected instance type. Options you set among --gpus --gpus-per-node "
                    "--strategy --offload --micro-batch --grad-ckpt --grad-accum --tp --pp --ep --cp are pinned; "
                    "the rest is searched.")
    add_model_argument(p)
    add_workload_options(p)
    p.set_defaults(**{k: None for k in PINNABLE})
    g = p.add_argument_group("job")
    g.add_argument("--tokens", type=parse_count, help="training tokens in total (2B, 500M...)")
    g.add_argument("--dataset-tokens", type=parse_count, help="tokens in the dataset (with --epochs)")
    g.add_argument("--epochs", type=float, default=1.0, help="epochs over --dataset-tokens (default 1)")
    g.add_argument("--global-batch", type=int, help="samples per optimizer step (default: no constraint)")
    g = p.add_argument_group("search")
    g.add_argument("--objective", choices=("cost", "time"), default="cost", help="rank by cost (default) or time")
    g.add_argument("--budget", type=float, help="maximum cost (in the instance's currency)")
    g.add_argument("--deadline", type=float, metavar="HOURS", help="maximum wall-clock hours")
    g.add_argument("--provider", help="alibaba | tencent | generic (default: all)")
    g.add_argument("--resource-class", help="pai-public | pai-lingjun | tencent-tione | generic ...")
    g.add_argument("--region", help="e.g. cn-hangzhou, cn-wulanchabu")
    g.add_argument("--spot", action="store_true", help="spot / preemptible instances (竞价实例)")
    g.add_argument("--interruption-rate", type=float, metavar="PER_NODE_HOUR",
                   help="spot interruptions per node-hour (default: see docs/cost-model.md)")
    g.add_argument("--checkpoint-interval", type=float, metavar="HOURS", help="hours between checkpoints (spot)")
    g.add_argument("--max-gpus", type=int, default=64, help="largest job to consider (default 64)")
    g.add_argument("--framework", choices=("hf-trainer", "deepspeed", "fsdp2", "automodel", "megatron"),
                   help="engine whose kernels the speed model times: hf-trainer/deepspeed (HF code, eager MoE "
                        "expert loop), fsdp2 (torchtitan-style native PyTorch, grouped-GEMM experts), automodel "
                        "(NeMo AutoModel: FSDP2 + TransformerEngine + DeepEP), megatron (Megatron-Core: TE, "
                        "grouped GEMM, FP8) (default: what the strategy implies)")
    g.add_argument("--gpu", metavar="NAME", help="only instance types with this GPU")
    g.add_argument("--instance-type", help="only this instance type")
    g.add_argument("--ignore-rule", action="append", default=[], metavar="RULE_ID",
                   help="do not enforce a platform rule (e.g. pai-public-quota when your quota was raised)")
    g.add_argument("--top", type=int, default=10, help="plans to show (default 10)")
    add_json_option(p)
    p.set_defaults(func=run)


def build_request(args: argparse.Namespace):
    from trainfit.errors import WorkloadError
    from trainfit.plan import PlanRequest
    from trainfit.workload import Workload

    model = model_from_args(args)
    kw = workload_kwargs(args)
    pins = {k: kw[k] for k in PINNABLE if kw[k] is not None}
    base = {k: v for k, v in kw.items() if k not in PINNABLE}
    # validate the pinned fields together with the rest once, for a clear error
    Workload(**base, **{k: v for k, v in pins.items()})
    if args.tokens is None:
        if args.dataset_tokens is None:
            raise WorkloadError("how many tokens to train on?", fix="pass --tokens 2B or --dataset-tokens 500M --epochs 3")
        tokens = args.dataset_tokens * args.epochs
    else:
        tokens = args.tokens
    return PlanRequest(
        model=model, workload=Workload(**base), tokens=tokens, pins=pins, global_batch=args.global_batch,
        objective=args.objective, budget=args.budget, deadline_hours=args.deadline, provider=args.provider,
        region=args.region, resource_class=args.resource_class, gpu=args.gpu, instance_type=args.instance_type,
        spot=args.spot, max_gpus=args.max_gpus, framework=args.framework,
        ignore_rules=frozenset(args.ignore_rule), interruption_rate_per_node_hour=args.interruption_rate,
        checkpoint_interval_hours=args.checkpoint_interval)


def run(args: argparse.Namespace) -> int:
    from trainfit.plan import plan

    result = plan(build_request(args))
    out = result.to_dict()
    if args.json:
        print_json(out)
        return 0
    from trainfit.render.tables import print_plan

    print_plan(out, top=args.top)
    return 0 if result.plans else 1
