"""RL per-phase memory: KV pool and sequence count verified by hand from the exact shapes."""

import json
import math

import pytest

from trainfit.catalog.gpus import get_gpu
from trainfit.cli import main
from trainfit.errors import RolloutMemoryError, WorkloadError
from trainfit.models import get_model
from trainfit.rl import RLConfig, estimate_rl_memory, kv_bytes_per_token, linear_state_bytes_per_seq
from trainfit.rl.memory import ENGINE_CUDA_GRAPH_GIB
from trainfit.workload import Workload

GIB = 2**30

# Qwen3-8B config.json (https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json)
H, I, L, NH, NKV, HD, V = 4096, 12288, 36, 32, 8, 128, 151936


def _qwen3_8b_params_by_hand() -> int:
    per_layer = (NH * HD * H + 2 * NKV * HD * H + H * NH * HD  # q, k, v, o
                 + 2 * HD  # q_norm, k_norm
                 + 3 * I * H  # gate, up, down
                 + 2 * H)  # two RMSNorms
    return 2 * V * H + L * per_layer + H  # untied embedding + LM head, final norm


def _run_json(capsys, *argv):
    rc = main(list(argv) + ["--json"])
    out = capsys.readouterr().out
    return rc, (json.loads(out) if out.strip() else None)


def test_memory_rl_grpo_qwen3_8b_h100_kv_pool_by_hand(capsys):
    rc, out = _run_json(capsys, "memory", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--gpu", "H100",
                        "--rollout-util", "0.5", "--prompt-len", "1024", "--response-len", "7168", "--host-ram", "256")
    assert rc == 0
    rl = out["rl"]
    mem_gib = get_gpu("H100").usable_mem_gib
    # per token: 36 layers x 8 KV heads x 128 head dim x 2 (K and V) x 2 bytes (bf16)
    per_token = L * NKV * HD * 2 * 2
    assert per_token == 147_456
    assert rl["kv_bytes_per_token"] == per_token
    seq_bytes = 8192 * per_token  # 8k tokens, a whole number of 16-token blocks
    weights = _qwen3_8b_params_by_hand() * 2
    # engine overhead: profiling pass of 8192 tokens (gate/up 2I + act I + 4 hidden buffers, bf16), fp32 sampler
    # logits of 256 sequences, CUDA graphs
    overhead = 8192 * (3 * I + 4 * H) * 2 + 256 * V * 4 + ENGINE_CUDA_GRAPH_GIB * GIB
    pool = 0.5 * mem_gib * GIB - weights - overhead
    assert rl["kv_pool_gib"] == pytest.approx(pool / GIB, abs=2e-3)
    assert rl["max_concurrent_seqs"] == math.floor(pool / seq_bytes)
    assert rl["kv_gib_per_seq"] == pytest.approx(seq_bytes / GIB, abs=1e-3)
    assert set(rl["phases_gib"]) == {"rollout", "train", "sync"}
    assert rl["binding_phase"] == max(rl["phases_gib"], key=rl["phases_gib"].get)
    assert out["verdict"] == rl["verdict"] == "fits" and out["fits"] is True
    assert rl["fit"]["binding_phase"] == rl["binding_phase"]
    # sleeping engine weights (vLLM sleep level 1 keeps them in host RAM) are part of the host RAM need
    assert rl["host_ram_gib"] >= weights / GIB


def test_rollout_phase_holds_engine_budget_plus_trainer_residual():
    m = get_model("Qwen3-8B")
    rl = RLConfig(rollout_util=0.5, prompt_len=1024, response_len=1024)
    est = estimate_rl_memory(m, Workload(method="lora"), rl, 80.0)
    # engine weights + overhead + KV pool = utilisation x GPU
    eng = est.engine_weights_gib + est.engine_overhead_gib + est.kv_pool_gib
    assert eng == pytest.approx(0.5 * 80.0, rel=1e-6)
    assert est.phases_gib["rollout"] == pytest.approx(eng + est.trainer_residual_gib, rel=1e-6)


def test_kv_pool_below_one_sequence_is_an_oom_verdict_with_reason_and_fix(capsys):
    m = get_model("Qwen3-8B")
    with pytest.raises(RolloutMemoryError) as e:  # the library's strict mode
        estimate_rl_memory(m, Workload(), RLConfig(rollout_util=0.5, prompt_len=1024, response_len=7168), 22.0)
    assert e.value.fix and "--rollout-util" in e.value.fix
    est = estimate_rl_memory(m, Workload(), RLConfig(rollout_util=0.5), 22.0, strict=False)
    assert est.max_concurrent_seqs == 0 and est.fits is False and est.verdict == "oom"
    assert est.kv_shortfall is not None and "KV pool" in est.kv_shortfall[0]
    # the commands: a non-fit like any other (verdict oom, the reason and its fix, exit 1), not an input error
    rc = main(["memory", "Qwen3-8B", "--rl", "grpo", "--gpu", "A10", "--response-len", "7168"])
    out, err = capsys.readouterr()
    assert rc == 1 and not err and "oom" in out and "KV pool" in out and "--rollout-tp" in out
    rc = main(["memory", "Qwen3-14B", "--rl", "grpo", "--gpu", "A10", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 1 and d["verdict"] == "oom" and d["rl"]["verdict"] == "oom"
    assert any("KV pool" in r and "--rollout-tp" in r for r in d["rl"]["fit"]["reasons"])
    assert "speed" not in d["rl"]  # an engine that holds no sequence has no step time


def test_qwen3_next_linear_attention_state_by_hand():
    m = get_model("Qwen3-Next-80B-A3B")
    # 12 full-attention layers x 2 KV heads x 256 head dim x 2 x 2 bytes per token
    assert kv_bytes_per_token(m) == 12 * 2 * 256 * 2 * 2
    # 36 Gated DeltaNet layers: conv state (2 x 16 x 128 + 32 x 128 channels) x (kernel 4 - 1)
    # + recurrent state 32 value heads x 128 x 128, bf16
    per_layer = (2 * 16 * 128 + 32 * 128) * 3 + 32 * 128 * 128
    assert linear_state_bytes_per_seq(m) == 36 * per_layer * 2
    # split over tp = 2: half the heads and channels per GPU
    assert linear_state_bytes_per_seq(m, 2) == 36 * ((2 * 16 * 128 + 32 * 128) // 2 * 3 + 16 * 128 * 128) * 2
    dense = get_model("Qwen3-8B")
    assert linear_state_bytes_per_seq(dense) == 0
    # KV heads replicate beyond their number: tp 16 on 8 KV heads keeps one head per GPU
    assert kv_bytes_per_token(dense, 16) == L * 1 * HD * 2 * 2


def test_sleep_offload_and_reference_move_the_phases():
    m = get_model("Qwen3-8B")
    wl = Workload(method="full", gpus=8, strategy="fsdp")
    base = RLConfig(rollout_util=0.4, prompt_len=1024, response_len=2048, num_generations=8)
    a = estimate_rl_memory(m, wl, base, 80.0)
    no_sleep = estimate_rl_memory(m, wl, base.with_(engine_sleep=False), 80.0)
    assert no_sleep.phases_gib["train"] - a.phases_gib["train"] == pytest.approx(
        0.4 * 80.0 - ENGINE_CUDA_GRAPH_GIB, rel=1e-6)
    off = estimate_rl_memory(m, wl, base.with_(trainer_offload=True), 80.0)
    assert off.phases_gib["rollout"] < a.phases_gib["rollout"]
    no_ref = estimate_rl_memory(m, wl, base.with_(ref=False), 80.0)
    assert a.ref_gib == pytest.approx(m.total_params * 2 / 8 / GIB, rel=1e-9)
    assert no_ref.phases_gib["train"] == pytest.approx(a.phases_gib["train"] - a.ref_gib, rel=1e-6)
    ppo = estimate_rl_memory(m, wl, base.with_(algo="ppo", num_generations=1), 80.0)
    assert ppo.critic_gib > 0 and ppo.phases_gib["train"] > a.phases_gib["train"]
    dpo = estimate_rl_memory(m, wl, base.with_(algo="dpo"), 80.0)
    assert dpo.kv_pool_gib is None and dpo.phases_gib["rollout"] == 0 and dpo.binding_phase == "train"


def test_framework_defaults_fill_unset_fields_and_user_wins():
    trl = RLConfig.for_framework("trl")
    assert (trl.rollout_util, trl.ref, trl.colocate, trl.num_generations) == (0.3, False, False, 8)
    swift = RLConfig.for_framework("ms-swift", rollout_util=0.5)
    assert swift.rollout_util == 0.5 and swift.engine_sleep is False and swift.rl_framework == "ms-swift"
    with pytest.raises(WorkloadError):
        RLConfig.for_framework("verl")  # rollout.n defaults to 1: no GRPO group
    assert RLConfig.for_framework("verl", num_generations=5).rollout_tp == 2
    for bad in (dict(rollout_util=1.5), dict(num_generations=1), dict(critic=True), dict(rollout_tp=0)):
        with pytest.raises(WorkloadError):
            RLConfig(**bad)
    from trainfit.rl.config import FRAMEWORK_DEFAULTS

    for fd in FRAMEWORK_DEFAULTS.values():
        assert fd.sources and all(s.startswith("https://") for s in fd.sources)


def test_memory_without_rl_is_unchanged(capsys):
    rc, out = _run_json(capsys, "memory", "Qwen3-8B", "--gpu", "H100")
    assert rc == 0 and "rl" not in out and out["max_micro_batch"] is not None


def test_rl_speed_and_hours(capsys):
    rc, out = _run_json(capsys, "memory", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--gpu", "H100",
                        "--rollout-util", "0.5", "--prompt-len", "1024", "--response-len", "3072", "--steps", "10")
    assert rc == 0
    s = out["rl"]["speed"]
    parts = s["rollout_seconds"] + s["update_seconds"] + s["logprob_seconds"] + s["critic_seconds"] + s["sync_seconds"]
    assert s["step_seconds"] == pytest.approx(parts, rel=1e-3)
    assert sum(s["split"].values()) == pytest.approx(1.0, abs=1e-2)
    assert out["rl"]["time"]["hours"] == pytest.approx(10 * s["step_seconds"] / 3600, rel=1e-3)
    # a larger pool decodes larger batches: more tokens/s
    rc, out2 = _run_json(capsys, "memory", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--gpu", "H100",
                         "--rollout-util", "0.7", "--prompt-len", "1024", "--response-len", "3072")
    assert out2["rl"]["speed"]["decode_batch"] > s["decode_batch"]
    assert out2["rl"]["speed"]["rollout_tokens_per_s"] > s["rollout_tokens_per_s"]


def test_rl_report_is_pure_and_json_ready():
    import json as _json

    from trainfit.rl import rl_report

    m = get_model("Qwen3-30B-A3B")
    rl = RLConfig.for_framework("verl", num_generations=8, prompt_len=2048, response_len=4096)
    rep = rl_report(m, Workload(method="full", gpus=8, strategy="fsdp"), rl, 80.0, gpu=get_gpu("H100"), steps=100)
    assert rep.config.max_num_seqs == 256  # verl's rollout.yaml passes 256 (since verl e9405d7)
    assert rep.workload.seq_len == 6144
    assert rep.train is rep.estimate.train and rep.speed is not None
    out = rep.to_dict()
    assert not {k for k in out if k.startswith("_")}
    _json.dumps(out)
    assert out["config"]["max_num_seqs"] == 256
    assert out["time"]["gpu_hours"] == pytest.approx(8 * out["time"]["hours"], abs=0.01)
