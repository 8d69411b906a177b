"""Megatron-Core states and loss, pipeline stages, ZeRO-3 sub-groups, FSDP2 PEFT gradients, NCCL communicators
and the fit corpus' micro-batch sizing (estimate/runtime.py, states.py, memory.py, benchmarks/fit_corpus.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainfit.estimate.memory import DEFAULT_OVERHEAD, GIB, estimate_memory
from trainfit.estimate.runtime import megatron_core, nccl_communicators
from trainfit.estimate.states import DS_SUB_GROUP_SIZE, cached_states
from trainfit.models import get_model
from trainfit.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def test_megatron_core_holds_fp32_master_and_moments_also_without_the_distributed_optimizer():
    m = get_model("Qwen3-8B")
    ddp = cached_states(m, Workload(gpus=8, tp=2, strategy="ddp"))
    z1 = cached_states(m, Workload(gpus=8, tp=2, strategy="zero1"))
    # 12 B per local parameter (fp32 master + two fp32 moments), sharded over dp = 4 only by zero1
    assert ddp.optimizer == pytest.approx(12 * ddp.trainable_rank, rel=1e-6)
    assert z1.optimizer == pytest.approx(ddp.optimizer / 4, rel=1e-6)
    # no DeepSpeed reduce bucket, no fp32 copy of the gradient partition
    assert z1.grad_temp_bwd == 0 and z1.step_temp == 0
    assert ddp.grad_temp_bwd == 0  # Megatron's DDP reduces in its buffer: no torch DDP Reducer buckets
    deepspeed = cached_states(m, Workload(gpus=8, strategy="zero1"))
    assert not megatron_core(Workload(gpus=8, strategy="zero1"))
    assert deepspeed.step_temp == pytest.approx(4 * deepspeed.trainable_sharded)


def test_megatron_loss_is_six_bytes_per_logit():
    from trainfit.estimate.memory import _loss_region

    m = get_model("Qwen3-8B")
    T = 4096
    vt = m.vocab_size * T / 2  # logits per rank, vocab split over TP 2
    fwd, bwd, _ = _loss_region(m, Workload(gpus=2, tp=2, strategy="zero1"), T, True)
    assert (fwd, bwd) == (pytest.approx(6 * vt), pytest.approx(6 * vt))
    # the HF loss (no Megatron layout) keeps more: bf16 logits, fp32 copy, log-softmax and their gradients
    hf_fwd, hf_bwd, _ = _loss_region(m, Workload(gpus=2, strategy="zero1"), T, True)
    assert hf_fwd > 1.5 * 2 * fwd and hf_bwd > 1.5 * 2 * bwd  # twice the logits (no TP) and more bytes each


def test_pipeline_first_stage_holds_pp_microbatches_and_last_stage_the_loss():
    m = get_model("Qwen3-8B")
    wl = Workload(gpus=8, pp=4, strategy="zero1", seq_len=4096, grad_ckpt=False, grad_accum=8)
    est = estimate_memory(m, wl)
    assert any("last stage" in a for a in est.assumptions)
    # 1F1B: with grad_accum >= pp the first stage keeps pp = 4 micro-batches of activations, with one only one
    one_mb = estimate_memory(m, wl.with_(grad_accum=1))
    assert est.breakdown_gib["activations"] > 3 * one_mb.breakdown_gib["activations"]
    assert est.breakdown_gib["logits_loss"] == 0  # the peak is the first stage: no logits there


def test_zero3_step_converts_one_sub_group_at_a_time():
    m = get_model("Qwen3-32B")
    st = cached_states(m, Workload(gpus=8, strategy="zero3"))
    assert st.trainable_sharded > 2 * DS_SUB_GROUP_SIZE  # 4.1e9 partition elements: several sub-groups
    # one sub-group of at least 1e9 partition elements, flattened in bf16 and cast to fp32 (2 + 4 B), not the
    # whole partition (estimate/zero3.py)
    assert 6 * DS_SUB_GROUP_SIZE <= st.step_temp < 6 * st.trainable_sharded / 2
    z2 = cached_states(m, Workload(gpus=8, strategy="zero2"))
    assert z2.step_temp == pytest.approx(4 * z2.trainable_sharded)


def test_fsdp_peft_gradient_buffer_holds_trainable_params_only():
    m = get_model("Qwen3-8B")
    full = cached_states(m, Workload(gpus=2, strategy="fsdp"))
    lora = cached_states(m, Workload(gpus=2, strategy="fsdp", method="lora"))
    assert lora.grad_temp_bwd < 0.05 * full.grad_temp_bwd
    assert lora.grad_temp_bwd > 0


def test_megatron_cpu_offload_keeps_main_grads_on_the_gpu():
    m = get_model("Qwen3-8B")
    meg = cached_states(m, Workload(gpus=8, tp=8, strategy="zero1", offload="optimizer"))
    ds = cached_states(m, Workload(gpus=8, strategy="zero2", offload="optimizer"))
    assert meg.optimizer == 0 and ds.optimizer == 0
    assert meg.gradients > 0 and ds.gradients == 0


@pytest.mark.parametrize("kw,n", [
    ({"gpus": 1}, 0),
    ({"gpus": 8, "strategy": "zero3"}, 1),
    ({"gpus": 8, "strategy": "fsdp"}, 1),
    ({"gpus": 8, "tp": 2, "strategy": "zero1"}, 3),  # dp, tp, tp*pp
    ({"gpus": 8, "tp": 8, "strategy": "zero1"}, 2),  # tp, tp*pp (dp = 1)
    ({"gpus": 8, "pp": 2, "ep": 4, "strategy": "zero1"}, 4),  # dp, pp, tp*pp, ep (expert dp = 1)
    ({"gpus": 16, "ep": 8, "strategy": "zero1"}, 3),  # dp, ep, expert dp 2
])
def test_nccl_communicators_per_layout(kw, n):
    assert nccl_communicators(Workload(**kw)) == n


def test_reserved_carries_one_buffer_set_per_communicator():
    m = get_model("Qwen3-8B")
    wl = Workload(gpus=8, tp=2, strategy="zero1", seq_len=2048)
    est = estimate_memory(m, wl)
    ov = DEFAULT_OVERHEAD
    expected = (ov.cuda_context_gib + 3 * ov.nccl_gib + ov.allocator_slack_fraction * est.tensor_peak_gib)
    assert est.breakdown_gib["overhead"] == pytest.approx(expected)


def test_corpus_sizes_unpacked_micro_batches_from_data_statistics():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fit_corpus

    stats = {"a": {"mean": 100.0, "std": 50.0, "max": 600}, "b": {"mean": 300.0, "std": 0.0, "max": 300}}
    padded = {"data": {"a": 1}, "seq_len": 512, "micro_batch": 4}
    assert fit_corpus.tokens_per_micro_batch(padded, stats) == (4, 512)  # longest sample, capped at max_length
    free = {"data": {"a": 1, "b": 1}, "seq_len": 2048, "micro_batch": 16, "padding_free": True}
    mb, tokens = fit_corpus.tokens_per_micro_batch(free, stats)
    mean = 200.0
    var = 0.5 * (50 ** 2 + 100 ** 2) + 0.5 * 300 ** 2 - mean ** 2
    assert mb == 1 and tokens == pytest.approx(16 * mean + fit_corpus.PEAK_MICRO_BATCH_SIGMAS * (16 * var) ** 0.5,
                                               abs=1)
    assert fit_corpus.tokens_per_micro_batch({"seq_len": 2048, "micro_batch": 1}, stats) is None
