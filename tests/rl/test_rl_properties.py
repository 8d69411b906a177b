"""Properties of the RL memory model that must hold for any setting (hypothesis)."""

from hypothesis import given, settings, strategies as st

from trainfit.models import get_model
from trainfit.rl import RLConfig, estimate_rl_memory
from trainfit.rl.launch import parse_swift, parse_verl, write_swift, write_verl
from trainfit.workload import Workload

M8 = get_model("Qwen3-8B")
M30 = get_model("Qwen3-30B-A3B")

utils = st.floats(min_value=0.3, max_value=0.9)
lens = st.sampled_from([256, 512, 1024, 2048, 4096])


@settings(max_examples=30, deadline=None)
@given(u=utils, du=st.floats(min_value=0.01, max_value=0.09), p=lens, r=lens, tp=st.sampled_from([1, 2, 4]))
def test_pool_grows_with_utilisation_and_sequences_fit_the_pool(u, du, p, r, tp):
    wl = Workload(method="lora", gpus=4, strategy="fsdp")
    a = estimate_rl_memory(M30, wl, RLConfig(rollout_util=u, rollout_tp=tp, prompt_len=p, response_len=r), 80.0,
                           strict=False)
    b = estimate_rl_memory(M30, wl, RLConfig(rollout_util=u + du, rollout_tp=tp, prompt_len=p, response_len=r), 80.0,
                           strict=False)
    assert b.kv_pool_gib >= a.kv_pool_gib and b.max_concurrent_seqs >= a.max_concurrent_seqs
    assert a.max_concurrent_seqs * a.kv_gib_per_seq <= a.kv_pool_gib + 1e-9
    assert (a.max_concurrent_seqs + 1) * a.kv_gib_per_seq > a.kv_pool_gib
    assert a.binding_phase == max(a.phases_gib, key=a.phases_gib.get)


@settings(max_examples=30, deadline=None)
@given(u=utils, p=lens, r=lens, g=st.integers(2, 32), b=st.integers(1, 512), sleep=st.booleans(),
       off=st.booleans(), ref=st.booleans(), roff=st.booleans(), tp=st.sampled_from([1, 2, 4, 8]),
       method=st.sampled_from(["full", "lora"]), mb=st.integers(1, 8))
def test_writers_and_readers_round_trip(u, p, r, g, b, sleep, off, ref, roff, tp, method, mb):
    rl = RLConfig(rollout_util=round(u, 3), prompt_len=p, response_len=r, num_generations=g, rollout_batch=b,
                  engine_sleep=sleep, trainer_offload=off, ref=ref, ref_offload=roff, rollout_tp=tp)
    wl = Workload(method=method, gpus=8, strategy="fsdp", micro_batch=mb, seq_len=p + r)
    assert parse_verl(write_verl("Qwen3-8B", rl, wl)).rl == rl.with_(rl_framework="verl")
    rl_s = rl.with_(ref_offload=False)  # ms-swift has no separate reference offload switch
    wl_s = wl.with_(strategy="zero3")
    back = parse_swift(write_swift("Qwen3-8B", rl_s, wl_s))
    assert back.rl == rl_s.with_(rl_framework="ms-swift") and back.workload_obj() == wl_s
