"""estimate/hardware.kernel_gaps: which attention kernels a GPU class cannot run."""

from __future__ import annotations

import pytest

from trainfit.estimate.hardware import kernel_gaps


@pytest.mark.parametrize("attention, gpu_class, gap", [
    ("flash3", "hopper", False), ("flash3", "ampere", True), ("flash3", "volta", True), ("flash3", None, False),
    ("flash", "ampere", False), ("flash", "ada", False), ("flash", "hopper", False),
    # FlashAttention-2 has no Turing (T4) or Volta (V100) kernels: it was planned and rendered there in silence
    ("flash", "turing", True), ("flash", "volta", True),
    ("sdpa", "volta", False), ("eager", "turing", False),
])
def test_kernel_gaps(attention, gpu_class, gap):
    assert bool(kernel_gaps(attention, gpu_class, "GPU")) == gap


def test_flash3_off_ampere_does_not_suggest_flash2():
    assert "flash (FlashAttention-2)" not in kernel_gaps("flash3", "volta", "V100-32GB")[0]
    assert "flash (FlashAttention-2)" in kernel_gaps("flash3", "ampere", "A100")[0]


def test_check_rejects_flash2_on_a_t4(tmp_path):
    from trainfit.check import check_file

    f = tmp_path / "train.sh"
    f.write_text("#!/bin/bash\nswift sft --model Qwen/Qwen3-0.6B --tuner_type lora --attn_impl flash_attn\n")
    assert [v.severity for v in check_file(f, gpu="T4").violations if v.rule == "kernel-support"] == ["error"]
    assert not [v for v in check_file(f, gpu="A10").violations if v.rule == "kernel-support"]
