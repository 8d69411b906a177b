"""What PyTorch DDP's constructor copies: two CPU processes (gloo), a 256 MiB module of 64 frozen Linear layers and
one trainable one (the LoRA case), and a dispatch-mode log of the tensors DDP creates while it is built.

    python benchmarks/ddp_broadcast_probe.py

Prints the bytes of ``aten.cat`` outputs (``broadcast_coalesced`` flattening the 250 MiB buckets it broadcasts
from rank 0): about the whole module, frozen parameters included. On a GPU with PyTorch < 2.8 those flat copies
are pinned by NCCL's ``recordStream`` until the broadcast has run, which is what
``trainfit.estimate.runtime.ddp_broadcast_staging_bytes`` counts; this probe shows the copies, not the GPU timing.
Run on 2026-12-03 with torch 2.13.0+cpu: module 256 MiB, 252 MiB flattened (the last bucket holds one tensor,
which is broadcast without a copy).
"""

from __future__ import annotations

import os
from collections import Counter

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode


class _Log(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.numel() * out.element_size() > (1 << 20):
            self.bytes[str(func)] += out.numel() * out.element_size()
        return out


def _rank(rank: int, world: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("PROBE_PORT", "29533"))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, bias=False) for _ in range(64)])
    for p in m.parameters():
        p.requires_grad_(False)
    m[0].weight.requires_grad_(True)
    module_mib = sum(p.numel() * p.element_size() for p in m.parameters()) / 2**20
    log = _Log()
    with log:
        torch.nn.parallel.DistributedDataParallel(m)
    if rank == 0:
        print(f"torch {torch.__version__}: module {module_mib:.0f} MiB, 4 MiB trainable; flattened for the "
              f"construction broadcast (aten.cat): {log.bytes['aten.cat.default'] / 2**20:.0f} MiB")
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.multiprocessing.spawn(_rank, args=(2,), nprocs=2)
