"""verl / ms-swift writers and readers round-trip; lint rules catch the known OOM patterns."""

import pytest

from trainfit.models import get_model
from trainfit.rl import RLConfig
from trainfit.rl.launch import parse_rl_launch, parse_swift, parse_verl, write_swift, write_verl
from trainfit.rl.lint import lint_rl, lint_rl_launch
from trainfit.workload import Workload

VERL_CASES = [
    (RLConfig(rollout_util=0.6, rollout_tp=2, prompt_len=1024, response_len=2048, num_generations=5,
              rollout_batch=32, ref_offload=True),
     Workload(method="lora", lora_rank=32, lora_alpha=64, gpus=8, strategy="fsdp", micro_batch=4)),
    (RLConfig(algo="ppo", num_generations=1, rollout_util=0.5, prompt_len=512, response_len=512, ref=False,
              engine_sleep=False, rollout_engine="sglang"),
     Workload(method="full", gpus=16, gpus_per_node=8, strategy="fsdp", loss="fused", grad_ckpt=False)),
    (RLConfig(rollout_util=0.4, prompt_len=2048, response_len=8192, trainer_offload=True),
     Workload(method="full", gpus=1, strategy="fsdp")),
]
SWIFT_CASES = [
    (RLConfig(rollout_util=0.4, rollout_tp=2, prompt_len=8192, response_len=8192, num_generations=16,
              engine_sleep=True, trainer_offload=True, rollout_batch=8),
     Workload(method="lora", gpus=8, strategy="zero3", grad_accum=4)),
    (RLConfig(rollout_util=0.3, prompt_len=1024, response_len=1024, ref=False, engine_sleep=False),
     Workload(method="full", gpus=8, strategy="zero3", offload="all", loss="fused")),
    (RLConfig(colocate=False, prompt_len=512, response_len=1024, rollout_util=0.9, engine_sleep=False),
     Workload(method="qlora", gpus=2, strategy="zero2", micro_batch=2)),
    (RLConfig(algo="dpo", num_generations=1, prompt_len=1024, response_len=1024, colocate=False, engine_sleep=False,
              rollout_util=0.9),
     Workload(method="lora", gpus=1)),
]


def _same(parsed, rl, wl, fw):
    assert parsed.rl == rl.with_(rl_framework=fw)
    # a command states the GPUs per node it uses (the CLI sets gpus_per_node = min(gpus, 8) the same way)
    assert parsed.workload_obj() == wl.with_(seq_len=rl.seq_len, gpus_per_node=min(wl.gpus, wl.gpus_per_node))


@pytest.mark.parametrize("rl,wl", VERL_CASES)
def test_verl_round_trip(rl, wl):
    text = write_verl("Qwen3-8B", rl, wl)
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=" in text and "data.max_response_length=" in text
    p = parse_verl(text)
    assert p.model == "Qwen/Qwen3-8B" and p.framework == "verl"
    _same(p, rl, wl, "verl")
    assert parse_rl_launch(text).rl == p.rl


@pytest.mark.parametrize("rl,wl", SWIFT_CASES)
def test_swift_round_trip(rl, wl):
    text = write_swift("Qwen3-30B-A3B", rl, wl)
    assert "swift rlhf" in text and f"--rlhf_type {rl.algo}" in text
    p = parse_swift(text)
    assert p.model == "Qwen/Qwen3-30B-A3B"
    _same(p, rl, wl, "ms-swift")


def test_verl_reader_takes_verl_defaults_for_missing_keys():
    p = parse_verl("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=5 "
                   "actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.n_gpus_per_node=8")
    assert p.rl.rollout_util == 0.5 and p.rl.rollout_tp == 2 and p.rl.prompt_len == 512


def _rules(findings):
    return {f.rule for f in findings}


def test_lint_known_oom_patterns():
    m = get_model("Qwen3-8B")
    wl = Workload(method="lora")
    ok = RLConfig(rollout_util=0.5, prompt_len=1024, response_len=2048)
    assert not [f for f in lint_rl(m, wl, ok, 80.0) if f.severity == "error"]
    high = lint_rl(m, wl, ok.with_(rollout_util=0.95, engine_sleep=False), 80.0)
    assert {"rl-util-too-high", "rl-colocate-no-sleep", "rl-phase-oom"} <= _rules(high)
    long = lint_rl(m, wl, ok.with_(response_len=8192), 80.0)
    assert "rl-unfused-logits" in _rules(long)
    assert "rl-unfused-logits" not in _rules(lint_rl(m, wl.with_(loss="fused"), ok.with_(response_len=8192), 80.0))
    tiny = lint_rl(m, Workload(), ok.with_(rollout_util=0.5), 22.0)
    assert "rl-kv-pool" in _rules(tiny)


def test_end_to_end_qwen3_8b_lora_one_gpu_and_30b_a3b_full_eight_gpus():
    # render -> check for the two configurations of the issue: the written commands read back and lint clean
    rl8 = RLConfig(rollout_util=0.5, prompt_len=1024, response_len=3072, num_generations=8)
    wl8 = Workload(method="lora", gpus=1, strategy="fsdp")
    findings, parsed = lint_rl_launch(write_verl("Qwen3-8B", rl8, wl8), 80.0)
    assert parsed.rl.rollout_util == 0.5 and not [f for f in findings if f.severity == "error"]
    rl30 = RLConfig(rollout_util=0.4, rollout_tp=2, prompt_len=2048, response_len=4096, num_generations=8,
                    engine_sleep=True)
    wl30 = Workload(method="full", gpus=8, strategy="zero3", offload="all", loss="fused")
    findings, parsed = lint_rl_launch(write_swift("Qwen3-30B-A3B", rl30, wl30), 79.2)
    assert parsed.workload["strategy"] == "zero3" and not [f for f in findings if f.severity == "error"]
    # the same job with ms-swift's defaults (utilisation 0.9, no sleep, no offload) is caught
    bad = write_swift("Qwen3-30B-A3B", rl30.with_(rollout_util=0.9, engine_sleep=False), wl30.with_(offload="none"))
    findings, _ = lint_rl_launch(bad, 79.2)
    assert [f for f in findings if f.severity == "error"]


def test_check_reports_the_rl_verdict_the_render_warned_about(tmp_path, capsys):
    """An RL plan whose verdict is `unknown` (host RAM unknown on a generic GPU): `render` prints "the plan's verdict
    is unknown"; `check` on the rendered launch said "no problems found" (only phase OOMs were reported)."""
    from trainfit.check import check_file
    from trainfit.cli import main

    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpus", "8", "--gpu", "H100", "--rl", "grpo",
                 "--out", str(tmp_path)]) == 0
    assert "the plan's verdict is unknown" in capsys.readouterr().out
    mem = [v for v in check_file(tmp_path / "swift_rlhf.sh").violations if v.rule == "memory-fit"]
    assert len(mem) == 1 and mem[0].severity == "info" and "host RAM" in mem[0].message


def test_residual_over_the_gpu_is_not_a_negative_free_memory(capsys):
    """'only -42.8 GiB are free beside the trainer's residual' when the residual alone exceeds the GPU."""
    from trainfit.cli import main

    main(["memory", "Qwen3-8B", "--rl", "grpo", "--rl-framework", "verl", "--strategy", "zero3",
          "--num-generations", "8", "--gpu", "H100"])
    out = capsys.readouterr().out
    assert "only -" not in out and "alone" in out
