"""The gradient-reduction / state-sharding group is data x context parallel (issue 26): Megatron-Core's DDP and
distributed optimizer use the ``dp_cp`` group, torchtitan's FSDP2 the ``dp_shard_cp`` mesh, DeepSpeed-Ulysses
the data x sequence ranks. The speed model sizes data-parallel traffic and the optimizer step over that group,
as the memory model shards states over it (``comm.data_parallel_group``)."""

from __future__ import annotations

import pytest

from trainfit.estimate import comm, engine_terms, memory
from trainfit.estimate.speed import Hardware, estimate_speed
from trainfit.estimate.states import cached_states
from trainfit.models import get_model
from trainfit.workload import Workload

H100 = Hardware(name="H100", gpu_class="hopper", peak_tflops=989, peak_fp8_tflops=1979, mem_gbytes_per_s=3350,
                intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=400, pcie_gbytes_per_s=63)


@pytest.fixture(scope="module")
def q8():
    return get_model("Qwen3-8B")


def _dense_dp(model, wl):
    links = comm.links_for(wl, H100, [])
    terms = [t for t in comm.dp_terms(model, wl, "megatron", links, float(model.total_params))
             if t.name.endswith("-dense")]
    return terms[0] if terms else None


def test_group_is_data_times_context_and_ulysses():
    wl = Workload(seq_len=131072, gpus=256, gpus_per_node=8, tp=4, pp=8, cp=8, ep=8, strategy="zero1")
    assert wl.dp == 1  # one sample stream ...
    assert comm.data_parallel_group(wl) == 8  # ... but gradients are reduced over the 8 context ranks
    u = Workload(seq_len=65536, gpus=16, ulysses=4, strategy="zero3")
    assert (u.dp, comm.data_parallel_group(u)) == (4, 16)


def test_context_ranks_reduce_gradients_with_dp_one(q8):
    # DP 1, CP 8: Megatron still reduce-scatters the gradients and all-gathers the parameters over the 8 CP ranks
    wl = Workload(seq_len=65536, gpus=8, gpus_per_node=8, cp=8, strategy="zero1")
    term = _dense_dp(q8, wl)
    assert term is not None and term.seconds > 0
    # the same traffic as 8 plain data-parallel ranks (the volume per rank depends on the group size only)
    dp8 = _dense_dp(q8, Workload(seq_len=65536, gpus=8, gpus_per_node=8, strategy="zero1"))
    assert term.bytes_per_gpu == pytest.approx(dp8.bytes_per_gpu)
    assert term.seconds == pytest.approx(dp8.seconds)


def test_dp_traffic_group_includes_context_ranks(q8):
    # 16 GPUs over two nodes as DP 2 x CP 8: the ring spans all 16 ranks ((n-1)/n = 15/16 of the buffer per rank)
    wl = Workload(seq_len=32768, gpus=16, gpus_per_node=8, cp=8, strategy="zero1")
    plain = Workload(seq_len=32768, gpus=16, gpus_per_node=8, strategy="zero1")
    a, b = _dense_dp(q8, wl), _dense_dp(q8, plain)
    assert a.bytes_per_gpu == pytest.approx(b.bytes_per_gpu)
    assert a.link == b.link == "inter"


def test_optimizer_step_sharded_over_context_ranks(q8):
    # the distributed optimizer's shard is 1/(dp x cp) of the tp/pp-local parameters
    cp8 = Workload(seq_len=65536, gpus=8, gpus_per_node=8, cp=8, strategy="zero1")
    dp8 = Workload(seq_len=65536, gpus=8, gpus_per_node=8, strategy="zero1")
    _, s_cp = engine_terms.optimizer_seconds(q8, cp8, H100, None, [], "megatron")
    _, s_dp = engine_terms.optimizer_seconds(q8, dp8, H100, None, [], "megatron")
    assert s_cp == pytest.approx(s_dp)
    # and the speed estimate's fixed per-step cost follows (a DDP layout keeps the whole optimizer on each rank)
    _, s_ddp = engine_terms.optimizer_seconds(q8, cp8.with_(strategy="ddp"), H100, None, [], "megatron")
    assert s_ddp > 4 * s_cp
    est = estimate_speed(q8, cp8, H100, framework="megatron")
    assert any(t.name == "dp-zero1-dense" for t in est.comm)


def test_memory_and_speed_shard_over_the_same_group(q8):
    # the memory model's optimizer partition on a DP x CP layout equals the one on as many plain DP ranks
    cp = Workload(seq_len=32768, gpus=16, gpus_per_node=8, cp=4, strategy="zero1")
    dp = Workload(seq_len=32768, gpus=16, gpus_per_node=8, strategy="zero1")
    assert cached_states(q8, cp).optimizer == pytest.approx(cached_states(q8, dp).optimizer)
    # autocast's bf16 weight copies under FSDP (amp-bf16) are sharded over data x context ranks as well
    f_cp = cp.with_(strategy="fsdp", precision="amp-bf16")
    f_dp = dp.with_(strategy="fsdp", precision="amp-bf16")
    assert memory._autocast_weights(q8, f_cp) == pytest.approx(memory._autocast_weights(q8, f_dp))
