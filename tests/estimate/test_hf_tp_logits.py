"""Tensor parallelism without Megatron-Core and without sequence parallelism (Hugging Face / accelerate's ``tp_plan``):
the LM head is ``colwise_rep``, its output gathered on every TP rank, so each rank holds all logits and the whole
loss; Megatron-Core's vocab-parallel cross entropy, and TP with sequence parallelism (torchtitan's loss-parallel
plan), split them over ``tp``. Issue 26: HF TP runs without SP OOMed where trainfit predicted about half the card."""

import pytest

from trainfit.estimate.loss_region import _loss_region, logits_divisor
from trainfit.estimate.memory import GIB, estimate_memory
from trainfit.models import get_model
from trainfit.workload import Workload

M = get_model("Qwen3-8B")
V, T = M.vocab_size, 8192
HF_TP = Workload(method="full", gpus=8, tp=2, strategy="fsdp", seq_len=T, sequence_parallel=False)


def test_who_splits_the_logits():
    assert logits_divisor(HF_TP) == 1.0
    assert logits_divisor(HF_TP.with_(sequence_parallel=True)) == 2.0
    assert logits_divisor(HF_TP.with_(strategy="zero1")) == 2.0  # Megatron-Core: vocab-parallel, SP or not
    assert logits_divisor(HF_TP.with_(tp=1, gpus=8)) == 1.0


def test_hf_tp_without_sp_holds_all_logits_on_each_rank():
    fwd, bwd, _ = _loss_region(M, HF_TP, T, head_trains=True)
    assert (fwd, bwd) == (10 * V * T, 12 * V * T)
    fwd_sp, bwd_sp, _ = _loss_region(M, HF_TP.with_(sequence_parallel=True), T, head_trains=True)
    assert (fwd_sp, bwd_sp) == (10 * V * T / 2, 12 * V * T / 2)
    est = estimate_memory(M, HF_TP)
    sp = estimate_memory(M, HF_TP.with_(sequence_parallel=True))
    assert est.breakdown_gib["logits_loss"] * GIB == pytest.approx(12 * V * T)
    assert est.tensor_peak_gib - sp.tensor_peak_gib >= 6 * V * T / GIB - 0.01
    # Megatron-Core without SP keeps its vocab-parallel 6 B per logit over tp
    meg_fwd, _, _ = _loss_region(M, HF_TP.with_(strategy="zero1"), T, head_trains=True)
    assert meg_fwd == 6 * V * T / 2
