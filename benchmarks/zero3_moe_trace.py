"""Does DeepSpeed ZeRO-3 keep its parameter trace in a Hugging Face-style MoE loop? A CPU check, no GPU needed.

    pip install deepspeed                                   # any version with ZeRO-3 on the CPU accelerator
    python benchmarks/zero3_moe_trace.py 4096               # one rank: every expert gets tokens
    python benchmarks/zero3_moe_trace.py 3                  # one rank: experts without tokens are skipped
    python benchmarks/zero3_moe_trace.py 3 --leaf           # the MoE block as a ZeRO-3 leaf module
    torchrun --nproc_per_node 2 benchmarks/zero3_moe_trace.py 3 --ranks-differ   # two ranks, different data

The model is two layers of a linear "attention" and an MoE block written like transformers' Qwen3MoeSparseMoeBlock
of 4.53-4.57 (an ``nn.ModuleList`` of gate/up/down experts; the loop runs only the experts that got a token,
``expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()``), each layer under activation
checkpointing (``--reentrant``: torch's reentrant variant).
After each optimizer step it prints the state of DeepSpeed's PartitionedParameterCoordinator: ``complete`` (the
recorded module trace holds; prefetch is on), ``record`` or ``invalid`` (a step fetched a module other than the
trace expected: ``trace_prologue`` invalidated it, the rest of the step fetched on demand, and the next step
records again).

What it showed with DeepSpeed 0.19.8 and torch 2.13 (CPU, 2026-12-06), the same trace logic as in
deepspeed/runtime/zero/partitioned_param_coordinator.py of v0.16.9 (read; invalidation added in DeepSpeed#1916):
  * 4,096 tokens, top-2 of 16 experts: every expert gets tokens; the trace is complete from step 1 on, with and
    without a leaf module, reentrant checkpointing or not;
  * 3 tokens: the set of hit experts changes from step to step; the trace alternates record / invalid and is
    never complete; with the MoE block as a leaf module it is complete from step 1 on;
  * two ranks with different data at 3 tokens: the job aborts in the first step (the ranks run different
    collectives; reset_step also asserts the same module order on every rank, assert_ints_same_as_other_ranks);
    with the same data on both ranks it runs, invalidating as on one rank.
So a multi-GPU ZeRO-3 run without leaf modules that completes ran the same experts on every rank, in practice all
of them, and kept its trace: the invalidated-trace slowdown needs a changing expert set, which data parallelism
does not survive.
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tokens", type=int, help="tokens per micro-batch")
    ap.add_argument("--leaf", action="store_true", help="make the MoE block a ZeRO-3 leaf module")
    ap.add_argument("--reentrant", action="store_true", help="torch's reentrant activation checkpointing")
    ap.add_argument("--ranks-differ", action="store_true", help="each rank draws its own data")
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29533"), ("RANK", "0"), ("WORLD_SIZE", "1"),
                 ("LOCAL_RANK", "0")):
        os.environ.setdefault(k, v)

    import deepspeed
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    hidden, inter, experts, top_k = 64, 32, 16, 2

    class Expert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_proj = nn.Linear(hidden, inter, bias=False)
            self.up_proj = nn.Linear(hidden, inter, bias=False)
            self.down_proj = nn.Linear(inter, hidden, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class SparseMoe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate = nn.Linear(hidden, experts, bias=False)
            self.experts = nn.ModuleList(Expert() for _ in range(experts))

        def forward(self, x):
            weights, chosen = torch.topk(F.softmax(self.gate(x), dim=-1), top_k, dim=-1)
            out = torch.zeros_like(x)
            mask = F.one_hot(chosen, experts).permute(2, 1, 0)
            for e in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero():
                slot, rows = torch.where(mask[e].squeeze(0))
                out.index_add_(0, rows, self.experts[e](x[rows]) * weights[rows, slot, None])
            return out

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.Linear(hidden, hidden, bias=False)
            self.moe = SparseMoe()

        def forward(self, x):
            x = x + self.attn(x)
            return x + self.moe(x)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(Layer() for _ in range(2))

        def forward(self, x):
            for layer in self.layers:
                x = checkpoint(layer, x, use_reentrant=args.reentrant)
            return x.pow(2).mean()

    torch.manual_seed(0)
    net = Net()
    if args.leaf:
        deepspeed.utils.set_z3_leaf_modules(net, [SparseMoe])
    cfg = {"train_micro_batch_size_per_gpu": 1,
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0},
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
    engine, *_ = deepspeed.initialize(model=net, model_parameters=net.parameters(), config=cfg)
    coordinator = engine.optimizer.parameter_offload.get_param_coordinator()
    rank = int(os.environ["RANK"])
    for step in range(args.steps):
        gen = torch.Generator().manual_seed(step + (1000 * rank if args.ranks_differ else 0))
        x = torch.randn(args.tokens, hidden, generator=gen, requires_grad=args.reentrant)
        loss = engine(x)
        engine.backward(loss)
        engine.step()
        state = ("complete" if coordinator.is_complete_trace() else
                 "record" if coordinator.is_record_trace() else "invalid")
        print(f"rank {rank} step {step}: trace {state}", flush=True)


if __name__ == "__main__":
    main()
