"""The analytic model against the fake-tensor traces of the real code published in
../shared/reference/trace-findings.md (transformers 5.24, torch 2.13, peft 0.21; pure bf16, fused AdamW
unless stated; tensor peak in GiB, rounded to 0.01 there)."""

import pytest

from trainfit.estimate.memory import estimate_memory
from trainfit.models import get_model
from trainfit.workload import Workload

POINTS = [
    ("Qwen3-0.6B", dict(seq_len=2048, grad_ckpt=False), 10.66),
    ("Qwen3-0.6B", dict(seq_len=2048), 6.93),
    ("Qwen3-0.6B", dict(seq_len=4096, grad_ckpt=False), 17.99),
    ("Qwen3-0.6B", dict(seq_len=4096), 10.54),
    ("Qwen3-8B", dict(seq_len=2048, grad_ckpt=False), 64.10),
    ("Qwen3-8B", dict(seq_len=2048, grad_ckpt=False, optimizer="adamw-foreach"), 76.28),
    ("Qwen3-8B", dict(seq_len=2048), 61.04),
    ("Qwen3-8B", dict(seq_len=2048, optimizer="adamw-foreach"), 76.28),
    ("Qwen3-8B", dict(seq_len=4096, grad_ckpt=False), 82.42),
    ("Qwen3-8B", dict(seq_len=4096), 61.06),
    ("Qwen3-8B", dict(seq_len=4096, optimizer="adamw-foreach"), 76.28),
    ("Qwen3-8B", dict(method="lora", lora_rank=8, seq_len=2048, grad_ckpt=False), 39.26),
    ("Qwen3-8B", dict(method="lora", lora_rank=8, seq_len=2048), 19.57),
    ("Qwen3-8B", dict(method="lora", lora_rank=8, seq_len=4096, grad_ckpt=False), 63.03),
    ("Qwen3-8B", dict(method="lora", lora_rank=8, seq_len=4096), 23.65),
    ("Qwen3-8B", dict(method="lora", lora_rank=64, seq_len=2048, grad_ckpt=False), 41.08),
    ("Qwen3-8B", dict(method="lora", lora_rank=64, seq_len=2048), 21.28),
    ("Qwen3-8B", dict(method="lora", lora_rank=64, seq_len=4096, grad_ckpt=False), 64.95),
    ("Qwen3-8B", dict(method="lora", lora_rank=64, seq_len=4096), 25.35),
    ("Qwen3-30B-A3B", dict(seq_len=2048, grad_ckpt=False), 227.49),
    ("Qwen3-30B-A3B", dict(seq_len=2048), 227.49),
    ("Qwen3-30B-A3B", dict(seq_len=4096, grad_ckpt=False), 227.53),
    ("Qwen3-30B-A3B", dict(seq_len=4096), 227.55),
    ("Qwen3-8B", dict(seq_len=4096, grad_ckpt=False, precision="amp-bf16"), 147.95),
    ("Qwen3-8B", dict(seq_len=4096, precision="amp-bf16"), 122.11),
    ("Qwen3-8B", dict(seq_len=4096, micro_batch=2), 62.18),
]


@pytest.mark.parametrize("name,kw,traced", POINTS, ids=[f"{n} {k}" for n, k, _ in POINTS])
def test_trace_reference(name, kw, traced):
    est = estimate_memory(get_model(name), Workload(**kw))
    assert est.tensor_peak_gib == pytest.approx(traced, rel=0.005)
