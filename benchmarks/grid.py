"""The configuration grid shared by benchmarks/memory_accuracy.py and the peer-tool runs.

Each entry: a model registry name and the Workload fields that differ from the defaults. Precision is
pure bf16 unless stated (what the HF Trainer does with a bf16 model); strategy ``fsdp`` with ``gpus``
N means FSDP2 ``fully_shard`` over N ranks (rank 0's view).
"""

from __future__ import annotations

GRID: list[dict] = []


def _add(model: str, **kw) -> None:
    GRID.append({"model": model, **kw})


# Dense full fine-tuning, sdpa, fused AdamW: sizes x seq x GC
for m in ("Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B"):
    for s in (512, 2048, 8192):
        for gc in (True, False):
            if m in ("Qwen3-4B", "Qwen3-8B") and s == 512:
                continue
            _add(m, method="full", seq_len=s, grad_ckpt=gc)
_add("Qwen3-14B", method="full", seq_len=4096, grad_ckpt=True)
_add("Qwen3-32B", method="full", seq_len=2048, grad_ckpt=True)
# micro-batch
_add("Qwen3-0.6B", method="full", seq_len=1024, micro_batch=4, grad_ckpt=False)
_add("Qwen3-1.7B", method="full", seq_len=2048, micro_batch=2, grad_ckpt=True)
_add("Qwen3-8B", method="full", seq_len=4096, micro_batch=2, grad_ckpt=True)
# optimizers and attention
_add("Qwen3-8B", method="full", seq_len=2048, grad_ckpt=True, optimizer="adamw-foreach")
_add("Qwen3-0.6B", method="full", seq_len=2048, grad_ckpt=False, optimizer="adamw-foreach")
_add("Qwen3-1.7B", method="full", seq_len=2048, grad_ckpt=True, optimizer="sgd")
_add("Qwen3-0.6B", method="full", seq_len=2048, grad_ckpt=False, attention="eager")
_add("Qwen3-1.7B", method="full", seq_len=1024, grad_ckpt=True, attention="eager")
# AMP
_add("Qwen3-0.6B", method="full", seq_len=2048, grad_ckpt=False, precision="amp-bf16")
_add("Qwen3-1.7B", method="full", seq_len=2048, grad_ckpt=True, precision="amp-bf16")
# LoRA / freeze
for m, s in (("Qwen3-0.6B", 2048), ("Qwen3-4B", 4096), ("Qwen3-8B", 4096), ("Qwen3-14B", 2048)):
    for gc in (True, False):
        _add(m, method="lora", lora_rank=16, seq_len=s, grad_ckpt=gc)
_add("Qwen3-8B", method="lora", lora_rank=64, seq_len=8192, grad_ckpt=True, micro_batch=2)
_add("Qwen3-32B", method="lora", lora_rank=16, seq_len=2048, grad_ckpt=True)
_add("Qwen3-8B", method="freeze", freeze_trainable_layers=4, seq_len=4096, grad_ckpt=True)
_add("Qwen3-4B", method="freeze", freeze_trainable_layers=2, seq_len=2048, grad_ckpt=False)
# MoE
_add("Qwen3-30B-A3B", method="full", seq_len=2048, grad_ckpt=True)
_add("Qwen3-30B-A3B", method="lora", lora_rank=16, seq_len=2048, grad_ckpt=True)
_add("Qwen3-30B-A3B", method="lora", lora_rank=16, seq_len=2048, grad_ckpt=False)
_add("Qwen3-30B-A3B", method="full", seq_len=4096, grad_ckpt=False)
# Qwen3-Next (Gated DeltaNet; transformers' torch fallback kernels)
_add("Qwen3-Next-80B-A3B", method="full", seq_len=2048, grad_ckpt=True)
_add("Qwen3-Next-80B-A3B", method="lora", lora_rank=16, seq_len=2048, grad_ckpt=False)
# FSDP2 over N ranks
for n, m, s in ((2, "Qwen3-1.7B", 2048), (4, "Qwen3-8B", 4096), (8, "Qwen3-8B", 2048), (8, "Qwen3-14B", 4096),
                (8, "Qwen3-32B", 2048), (8, "Qwen3-30B-A3B", 4096)):
    _add(m, method="full", seq_len=s, grad_ckpt=True, strategy="fsdp", gpus=n)
_add("Qwen3-8B", method="full", seq_len=2048, grad_ckpt=False, strategy="fsdp", gpus=4, micro_batch=2)


def config_id(entry: dict) -> str:
    """A short stable id: model + the non-default fields."""
    parts = [entry["model"].replace("Qwen3-", "")]
    for k, v in entry.items():
        if k == "model":
            continue
        parts.append(f"{k}={v}")
    return " ".join(parts)


if __name__ == "__main__":
    for e in GRID:
        print(config_id(e))
    print(len(GRID), "configurations")
