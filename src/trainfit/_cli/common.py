"""Options shared by ``memory``, ``trace`` and ``plan``: the model and the training request."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from trainfit.models import ModelShape, get_model, load_config_path
from trainfit.workload import (ATTENTIONS, LOSSES, METHODS, OFFLOADS, OPTIMIZERS, PRECISIONS, STRATEGIES,
                               Workload)
from trainfit.errors import WorkloadError


def parse_count(text: str) -> int:
    """'2B' -> 2_000_000_000, '500M', '8k', '1e9', '4096' (decimal SI suffixes)."""
    t = text.strip().replace("_", "").replace(",", "")
    mult = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
    try:
        if t and t[-1].lower() in mult:
            return int(float(t[:-1]) * mult[t[-1].lower()])
        return int(float(t))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (use e.g. 4096, 8k, 500M, 2B)") from None


def parse_seq(text: str) -> int:
    """Sequence lengths: '4096', '4k' = 4096, '32K' = 32768 (binary k, as context lengths are quoted)."""
    t = text.strip().lower()
    try:
        if t.endswith("k"):
            return int(float(t[:-1]) * 1024)
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a sequence length: {text!r} (use e.g. 4096 or 4k)") from None


def add_model_argument(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("model", nargs="?", metavar="MODEL",
                   help="registry name (Qwen3-8B, qwen/qwen3-30b-a3b...); see `trainfit models`")
    p.add_argument("--config", metavar="PATH", help="a config.json or model folder instead of a registry name")


def add_workload_options(p: argparse.ArgumentParser) -> None:
    d = Workload()
    g = p.add_argument_group("training request")
    g.add_argument("--method", default=d.method, choices=METHODS, help="full | lora | qlora | freeze (default: full)")
    g.add_argument("--lora-rank", type=int, default=d.lora_rank, help=f"LoRA rank (default {d.lora_rank})")
    g.add_argument("--lora-alpha", type=int, default=d.lora_alpha, help=f"LoRA alpha (default {d.lora_alpha})")
    g.add_argument("--lora-targets", default=",".join(d.lora_targets),
                   help="comma-separated module names or all-linear (default)")
    g.add_argument("--freeze-layers", type=int, default=d.freeze_trainable_layers, dest="freeze_trainable_layers",
                   help="for --method freeze: how many last layers train (default 2)")
    g.add_argument("--seq-len", type=parse_seq, default=d.seq_len, help=f"tokens per sample (default {d.seq_len})")
    g.add_argument("--micro-batch", type=int, default=d.micro_batch, help="samples per GPU per step (default 1)")
    g.add_argument("--grad-accum", type=int, default=d.grad_accum, help="gradient accumulation steps (default 1)")
    g.add_argument("--grad-ckpt", dest="grad_ckpt", action="store_true", default=True,
                   help="gradient checkpointing on (default)")
    g.add_argument("--no-grad-ckpt", dest="grad_ckpt", action="store_false", help="gradient checkpointing off")
    g.add_argument("--attention", default=d.attention, choices=ATTENTIONS, help="sdpa | flash | eager (default sdpa)")
    g.add_argument("--loss", default=d.loss, choices=LOSSES, help="standard (fp32 logits) | fused (Liger-style)")
    g.add_argument("--precision", default=d.precision, choices=PRECISIONS,
                   help="bf16 (pure) | amp-bf16 | fp16 | fp8 (default bf16)")
    g.add_argument("--optimizer", default=d.optimizer, choices=OPTIMIZERS, help="default adamw-fused")
    g = p.add_argument_group("distribution")
    g.add_argument("--gpus", type=int, default=d.gpus, help="GPUs in the job, all nodes (default 1)")
    g.add_argument("--gpus-per-node", type=int, default=None, help="GPUs per node (default: min(gpus, 8))")
    g.add_argument("--strategy", default=d.strategy, choices=STRATEGIES,
                   help="ddp | zero1 | zero2 | zero3 | fsdp (default ddp)")
    g.add_argument("--offload", default=d.offload, choices=OFFLOADS, help="none | optimizer | all")
    for dim, what in (("tp", "tensor"), ("pp", "pipeline"), ("ep", "expert"), ("cp", "context")):
        g.add_argument(f"--{dim}", type=int, default=1, help=f"{what} parallel size (default 1)")
    g.add_argument("--no-sequence-parallel", dest="sequence_parallel", action="store_false", default=True,
                   help="turn off Megatron sequence parallelism (on by default with --tp > 1)")


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def model_from_args(args: argparse.Namespace) -> ModelShape:
    if getattr(args, "config", None):
        return load_config_path(args.config)
    if not getattr(args, "model", None):
        raise WorkloadError("no model given", fix="name one (e.g. Qwen3-8B) or pass --config PATH")
    return get_model(args.model)


def workload_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The Workload fields the user gave (``None`` where an option has no value, e.g. plan's unpinned ones)."""
    return dict(
        method=args.method, lora_rank=args.lora_rank, lora_alpha=args.lora_alpha,
        lora_targets=tuple(t.strip() for t in args.lora_targets.split(",") if t.strip()),
        freeze_trainable_layers=args.freeze_trainable_layers, seq_len=args.seq_len,
        micro_batch=args.micro_batch, grad_accum=args.grad_accum, grad_ckpt=args.grad_ckpt,
        attention=args.attention, loss=args.loss, precision=args.precision, optimizer=args.optimizer,
        gpus=args.gpus, gpus_per_node=args.gpus_per_node, strategy=args.strategy, offload=args.offload,
        tp=args.tp, pp=args.pp, ep=args.ep, cp=args.cp, sequence_parallel=args.sequence_parallel,
    )


def workload_from_args(args: argparse.Namespace, **overrides: Any) -> Workload:
    kw = workload_kwargs(args)
    if kw["gpus_per_node"] is None:
        kw["gpus_per_node"] = min(args.gpus, 8)
    kw.update(overrides)
    return Workload(**kw)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
