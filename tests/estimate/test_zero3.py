"""DeepSpeed ZeRO-3 optimizer-step temporaries, single-rank gathering and the step's cached segments
(estimate/zero3.py, states.py, memory.py, fit.decide_fit)."""

from __future__ import annotations

import pytest

from trainfit.estimate.fit import decide_fit
from trainfit.estimate.memory import GIB, MemoryEstimate, estimate_memory
from trainfit.estimate.states import cached_states
from trainfit.estimate.zero3 import (DS_SUB_GROUP_SIZE, largest_sub_group_elems, step_segment_reserve_bytes,
                                     step_temp_bytes)
from trainfit.models import get_model
from trainfit.workload import Workload


def test_sub_groups_are_counted_in_partition_elements_and_close_at_the_size():
    m = get_model("Qwen3-32B")
    for gpus in (4, 8, 16):
        st = cached_states(m, Workload(gpus=gpus, strategy="zero3"))
        sg = st.step_block / 4
        if st.trainable_sharded <= DS_SUB_GROUP_SIZE:
            assert sg == pytest.approx(st.trainable_sharded)
        else:  # closes once it reaches 1e9: at least that, at most one more tensor's partition
            largest_part = max(t.numel for t in m.tensors()) / gpus
            assert DS_SUB_GROUP_SIZE <= sg <= DS_SUB_GROUP_SIZE + largest_part
    # fewer elements than one sub-group on the rank: the whole partition is one sub-group
    small = cached_states(get_model("Qwen3-0.6B"), Workload(gpus=2, strategy="zero3"))
    assert small.step_block == pytest.approx(4 * small.trainable_sharded)


def test_largest_sub_group_walk():
    m = get_model("Qwen3-0.6B")
    emb = next(t for t in m.tensors() if t.kind == "embedding")
    layer = m.layer_tensors(0)
    # every tensor 0.4e9 elements: a sub-group closes with the third tensor (1.2e9 >= 1e9), not before
    parts = {emb.name: (4e8, frozenset({0}))}
    parts.update({t.name: (4e8, frozenset(range(m.num_layers))) for t in layer})
    assert largest_sub_group_elems(m, parts) == pytest.approx(1.2e9)
    assert largest_sub_group_elems(m, {emb.name: (5e8, frozenset({0}))}) == pytest.approx(5e8)


def test_step_temporaries_flatten_cast_or_foreach():
    assert step_temp_bytes(1e9, "adamw-fused") == pytest.approx(6e9)  # bf16 flat + fp32 cast
    assert step_temp_bytes(1e9, "adamw-foreach") == pytest.approx(8e9)  # fp32 grad + sqrt(exp_avg_sq)
    m = get_model("Qwen3-8B")
    fused = cached_states(m, Workload(gpus=4, strategy="zero3"))
    foreach = cached_states(m, Workload(gpus=4, strategy="zero3", optimizer="adamw-foreach"))
    assert foreach.step_temp == pytest.approx(fused.step_temp * 8 / 6)
    assert cached_states(m, Workload(gpus=4, strategy="zero3", offload="optimizer")).step_temp == 0


def test_single_rank_zero3_gathers_nothing():
    m = get_model("Qwen3-8B")
    one = cached_states(m, Workload(gpus=1, strategy="zero3"))
    two = cached_states(m, Workload(gpus=2, strategy="zero3"))
    assert one.weights_gathered == 0
    assert two.weights_gathered >= 2 * m.vocab_size * m.hidden_size * 2  # embedding and LM head gathered
    assert any("one rank" in n for n in one.notes)


def test_step_segment_reserve_rule():
    g, d, s = 2.0, 4.0, 6.0
    # the step's fp32 gradient fits no cached block: the step takes new segments, the backward's stay cached
    assert step_segment_reserve_bytes(gathered=g, transient=d, step_temp=s, step_block=4.0,
                                      largest_block=1.0) == pytest.approx(g + d + s - max(g + d, s))
    # it fits in a cached logits block: only the all-gather stream's segments stay apart
    assert step_segment_reserve_bytes(gathered=g, transient=d, step_temp=s, step_block=4.0,
                                      largest_block=5.0) == pytest.approx(g + max(d, s) - max(g + d, s))
    assert step_segment_reserve_bytes(gathered=g, transient=9.0, step_temp=s, step_block=4.0, largest_block=5.0) == 0
    # without overlap_comm the gathered layers are compute-stream blocks too: nothing stays apart
    assert step_segment_reserve_bytes(gathered=g, transient=d, step_temp=s, step_block=4.0, largest_block=5.0,
                                      allgather_stream=False) == 0
    assert step_segment_reserve_bytes(gathered=g, transient=d, step_temp=0.0, step_block=0.0, largest_block=1.0) == 0


def test_estimate_counts_step_segments_only_when_they_cannot_reuse_backward_blocks():
    m = get_model("Qwen3-8B")
    wl = Workload(gpus=4, strategy="zero3", seq_len=8192, grad_ckpt=True, attention="flash", loss="fused")
    est = estimate_memory(m, wl)
    st = cached_states(m, wl)
    assert est.releasable_cache_gib > 0
    assert est.releasable_cache_gib <= st.step_temp / GIB + 1e-9
    assert est.reserved_gib - est.tensor_peak_gib > est.releasable_cache_gib
    # the standard loss keeps fp32 logits blocks (152k x 8192 x 4 B = 5 GB) larger than the step's fp32 gradient
    std = estimate_memory(m, wl.with_(loss="standard"))
    assert std.releasable_cache_gib < est.releasable_cache_gib
    # not for other strategies, nor LoRA (a tiny step)
    assert estimate_memory(m, wl.with_(strategy="zero2")).releasable_cache_gib == 0
    assert estimate_memory(m, wl.with_(strategy="fsdp")).releasable_cache_gib == 0
    assert estimate_memory(m, wl.with_(method="lora")).releasable_cache_gib < 0.05


def test_releasable_cache_alone_does_not_make_oom():
    m = get_model("Qwen3-8B")
    est = estimate_memory(m, Workload(gpus=4, strategy="zero3", seq_len=8192, attention="flash", loss="fused"))
    live = est.reserved_gib - est.releasable_cache_gib
    between = (live + est.reserved_gib) / 2
    assert decide_fit(est, usable_gib=between).gpu_verdict == "tight"
    assert decide_fit(est, usable_gib=live * 0.99).gpu_verdict == "oom"
    assert decide_fit(est, usable_gib=est.reserved_gib * 1.5).gpu_verdict == "fits"


def test_releasable_cache_round_trips_and_old_plans_read_back():
    est = estimate_memory(get_model("Qwen3-8B"), Workload(gpus=4, strategy="zero3", seq_len=8192, loss="fused"))
    back = MemoryEstimate.from_dict(est.to_exact_dict())
    assert back == est
    old = est.to_exact_dict()
    del old["releasable_cache_gib"]
    assert MemoryEstimate.from_dict(old).releasable_cache_gib == 0.0
    with pytest.raises(ValueError):
        MemoryEstimate.from_dict({**est.to_exact_dict(), "releasable_cache_gib": est.reserved_gib + 1})


def test_loss_block_sizes_decide_whether_the_step_reuses_them():
    from trainfit.estimate.loss_region import largest_loss_block_bytes_per_logit
    assert largest_loss_block_bytes_per_logit(Workload(loss="standard")) == 4.0  # the fp32 copy of the logits
    assert largest_loss_block_bytes_per_logit(Workload(loss="half")) == 2.0  # 16-bit logits, no autocast
    assert largest_loss_block_bytes_per_logit(Workload(loss="half", precision="amp-bf16")) == 4.0  # autocast: fp32
    assert largest_loss_block_bytes_per_logit(Workload(loss="fused")) == 0.0
    # a 16-bit loss leaves blocks half as large as the standard loss: at 8192 tokens (2.5 GB) below the step's fp32
    # gradient (4 GB), so the step needs new segments where the standard loss's 5 GB blocks would serve it
    m = get_model("Qwen3-8B")
    wl = Workload(gpus=4, strategy="zero3", seq_len=8192, attention="flash")
    assert estimate_memory(m, wl.with_(loss="half")).releasable_cache_gib > estimate_memory(m, wl).releasable_cache_gib


def test_reduce_transient_rule():
    from trainfit.estimate.zero3 import reduce_transient_bytes
    # fits the bucket: copied into the persistent flat buffer, nothing held outside it
    assert reduce_transient_bytes(1e6, 5e8, 8, 2.0) == 0
    # larger, divisible by the ranks: reduce-scattered in its own storage, the full gradient only
    assert reduce_transient_bytes(8e8, 5e8, 8, 2.0) == pytest.approx(1.6e9)
    # not divisible: plus reduce_scatter_coalesced's padded flat copy (ceil(n / ranks) x ranks)
    n = 8e8 + 3
    assert reduce_transient_bytes(n, 5e8, 7, 2.0) == pytest.approx(2 * n + 2 * (-(-int(n) // 7) * 7))


def test_zero3_embedding_and_head_gradients_above_the_bucket():
    m = get_model("Qwen3-8B")  # untied, V x h = 151936 x 4096
    vh = m.vocab_size * m.hidden_size
    small = cached_states(m, Workload(gpus=8, strategy="zero3", ds_bucket_elems=m.hidden_size ** 2))
    assert small.reduce_embedding == pytest.approx(2.0 * vh)  # divisible by 8: no flat copy
    assert small.reduce_head == pytest.approx(2.0 * vh)
    odd = cached_states(m, Workload(gpus=7, strategy="zero3", ds_bucket_elems=m.hidden_size ** 2))
    assert odd.reduce_embedding > 2 * 2.0 * vh
    big = cached_states(m, Workload(gpus=8, strategy="zero3", ds_bucket_elems=10 ** 9))
    assert big.reduce_embedding == 0 and big.reduce_head == 0
    lora = cached_states(m, Workload(gpus=8, strategy="zero3", method="lora", ds_bucket_elems=m.hidden_size ** 2))
    assert lora.reduce_embedding == 0 and lora.reduce_head == 0  # frozen embedding / head: no gradient
    # the backward carries it: a bucket one element short of V x h holds the gradients whole, one of V x h copies
    # them into the flat buffer (which is the same size either way); the peak rises by at most the held bytes, more
    # where the size does not divide by the ranks (7) and the reduce-scatter adds its flat copy
    rise = {}
    for gpus in (7, 8):
        wl = dict(gpus=gpus, strategy="zero3", seq_len=512, grad_ckpt=True, offload="optimizer")
        held = estimate_memory(m, Workload(**wl, ds_bucket_elems=vh - 1)).tensor_peak_gib
        copied = estimate_memory(m, Workload(**wl, ds_bucket_elems=vh)).tensor_peak_gib
        st = cached_states(m, Workload(**wl, ds_bucket_elems=vh - 1))
        rise[gpus] = held - copied
        assert 0 < rise[gpus] <= st.reduce_embedding / GIB + 1e-9
    assert rise[7] > rise[8]
