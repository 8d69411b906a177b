"""DeepSpeed ZeRO-1/2 communication buffers: the bucket size and overlap_comm are Workload fields that the
ds_config writer writes, check reads back, and the memory model counts (estimate/states.py ds_comm_buffer_bytes)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trainfit.errors import WorkloadError
from trainfit.estimate.memory import GIB, estimate_memory
from trainfit.estimate.states import cached_states
from trainfit.launch.deepspeed import ds_config, strategy_from_config
from trainfit.models import from_hf_config
from trainfit.options import parse_options, workload_from_values
from trainfit.workload import Workload

M = from_hf_config({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 8,
                    "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}, name="ds-small")


def _wl(**kw) -> Workload:
    base = dict(method="full", gpus=8, strategy="zero2", seq_len=512, grad_ckpt=True)
    base.update(kw)
    return Workload(**base)


@pytest.mark.parametrize("bucket,overlap", [(200_000_000, True), (10_000_000, False), (500_000_000, True)])
def test_writer_and_reader_round_trip(bucket, overlap):
    wl = _wl(ds_bucket_elems=bucket, ds_overlap_comm=overlap)
    cfg = ds_config(SimpleNamespace(workload=wl), with_header=False)
    zero = cfg["zero_optimization"]
    assert zero["reduce_bucket_size"] == bucket and zero["allgather_bucket_size"] == bucket
    assert zero["overlap_comm"] is overlap
    back = strategy_from_config(cfg)
    assert back["ds_bucket_elems"] == bucket and back["ds_overlap_comm"] is overlap


def test_reader_takes_json_floats_and_leaves_auto_alone():
    got = strategy_from_config({"zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8, "overlap_comm": False}})
    assert got["ds_bucket_elems"] == 500_000_000 and got["ds_overlap_comm"] is False
    got = strategy_from_config({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}})
    assert "ds_bucket_elems" not in got and got["ds_overlap_comm"] is True  # DeepSpeed's stage-3 default
    # keys left out take DeepSpeed's defaults, not trainfit's writer defaults
    got = strategy_from_config({"zero_optimization": {"stage": 2}})
    assert got["ds_bucket_elems"] == 500_000_000 and got["ds_overlap_comm"] is False
    # "auto" as the Hugging Face integration fills it: hidden_size ** 2
    got = strategy_from_config({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}, hidden_size=3584)
    assert got["ds_bucket_elems"] == 3584 * 3584


def test_overlap_comm_footprint_is_the_documented_multiple():
    # full training: the rank has more trainable elements than a bucket, so the buckets are full:
    # overlap_comm keeps 4.5 x (reduce + allgather bucket) x 2 bytes, without it one 2-byte bucket
    bucket = 20_000_000
    on = cached_states(M, _wl(ds_bucket_elems=bucket, ds_overlap_comm=True))
    off = cached_states(M, _wl(ds_bucket_elems=bucket, ds_overlap_comm=False))
    assert on.grad_temp_bwd == pytest.approx(4.5 * 2 * bucket * 2)
    assert off.grad_temp_bwd == pytest.approx(bucket * 2)
    e_on = estimate_memory(M, _wl(ds_bucket_elems=bucket, ds_overlap_comm=True))
    e_off = estimate_memory(M, _wl(ds_bucket_elems=bucket, ds_overlap_comm=False))
    # backward: the larger buffers replace the single bucket (the phase maximum may move to another moment)
    d_bwd = e_on.phases_gib["backward"] - e_off.phases_gib["backward"]
    assert 0 < d_bwd <= 18 * bucket / GIB + 1e-9
    # the optimizer step keeps the overlap_comm buffers (allocator cache), not the single bucket
    assert e_on.phases_gib["optimizer"] - e_off.phases_gib["optimizer"] == pytest.approx(18 * bucket / GIB)


def test_buckets_never_exceed_the_trainable_gradients():
    lora = cached_states(M, _wl(method="lora", ds_bucket_elems=500_000_000, ds_overlap_comm=True))
    assert 0 < lora.trainable_rank < 500_000_000
    assert lora.grad_temp_bwd == pytest.approx(18 * lora.trainable_rank)


def test_zero3_and_ddp_do_not_take_the_zero2_buffers():
    z3 = cached_states(M, _wl(strategy="zero3", ds_bucket_elems=20_000_000))
    assert z3.grad_temp_bwd == pytest.approx(20_000_000 * 2)
    a = estimate_memory(M, _wl(strategy="ddp", ds_overlap_comm=True))
    b = estimate_memory(M, _wl(strategy="ddp", ds_overlap_comm=False))
    assert a.reserved_gib == b.reserved_gib


def test_fields_are_validated_and_parsed_as_options():
    with pytest.raises(WorkloadError):
        _wl(ds_bucket_elems=0)
    with pytest.raises(WorkloadError):
        _wl(ds_bucket_elems=10**12)
    vals = parse_options({"strategy": "zero2", "gpus": 2, "ds_bucket_elems": "200000000", "ds_overlap_comm": "false"})
    wl = workload_from_values(vals)
    assert wl.ds_bucket_elems == 200_000_000 and wl.ds_overlap_comm is False
    assert parse_options({"ds_bucket_elems": "5e8"})["ds_bucket_elems"] == 500_000_000


def test_zero3_gradient_partitions_live_from_the_start_of_the_step():
    # DeepSpeed ZeRO-3 allocates the flat buffer of the rank's gradient partitions (and the reduce bucket) once:
    # the forward pass carries them with or without gradient accumulation
    one = estimate_memory(M, _wl(strategy="zero3", grad_accum=1))
    two = estimate_memory(M, _wl(strategy="zero3", grad_accum=2))
    st = cached_states(M, _wl(strategy="zero3"))
    assert st.gradients > 0
    assert one.phases_gib["forward"] == pytest.approx(two.phases_gib["forward"])
    z2a = estimate_memory(M, _wl(strategy="zero2", grad_accum=1, ds_overlap_comm=False))
    z2b = estimate_memory(M, _wl(strategy="zero2", grad_accum=2, ds_overlap_comm=False))
    assert z2b.phases_gib["forward"] > z2a.phases_gib["forward"]  # ZeRO-2 grads appear in backward


def test_ms_swift_zero2_preset_carries_its_buckets():
    from trainfit.launch._common import swift_workload

    kw, _ = swift_workload({"deepspeed": "zero2"}, num_layers=8, gpus=2)
    assert kw["strategy"] == "zero2" and kw["ds_bucket_elems"] == 200_000_000 and kw["ds_overlap_comm"] is True
    kw, _ = swift_workload({"deepspeed": "zero3"}, num_layers=8, gpus=2)
    assert kw["strategy"] == "zero3" and "ds_bucket_elems" not in kw
