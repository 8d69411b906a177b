"""RL end to end: options table -> service -> plan --rl -> plan JSON -> render (verl / ms-swift) -> read back.

The issue's done-when cases: Qwen3-8B LoRA on one GPU and Qwen3-30B-A3B full on 8 GPUs.
"""

from __future__ import annotations

import argparse
import json
import shlex

import pytest

from trainfit.catalog import _store
from trainfit.catalog import set_overlay_path
from trainfit.cli import main
from trainfit.errors import InputError, RenderError
from trainfit.estimate.fit import decide_fit
from trainfit.launch import RL_TARGETS, TARGETS, build_context, render
from trainfit.models import get_model
from trainfit._cli.arguments import add_options
from trainfit.options import RL_OPTIONS, parse_options, rl_config_from_values
from trainfit.plan.types import Plan, plans_from_document
from trainfit.rl import RLConfig
from trainfit.rl.launch import parse_rl_launch
from trainfit.rl.lint import lint_rl_launch
from trainfit.workload import Workload

#: (model, CLI arguments, framework, rendered file) of the issue's two done-when cases, per framework.
CASES = {
    "8b-lora-1gpu-verl": ("Qwen3-8B", ["--method", "lora", "--gpus", "1", "--gpu", "H100", "--rl-framework", "verl",
                                       "--num-generations", "8", "--prompt-len", "1024", "--response-len", "2048",
                                       "--rollout-batch", "16"], "verl", "verl_rl.sh"),
    "8b-lora-1gpu-swift": ("Qwen3-8B", ["--method", "lora", "--gpus", "1", "--gpu", "H100", "--rl-framework",
                                        "ms-swift", "--prompt-len", "1024", "--response-len", "2048",
                                        "--rollout-util", "0.4", "--rollout-batch", "16"], "ms-swift", "swift_rlhf.sh"),
    "30b-full-8gpu-verl": ("Qwen3-30B-A3B", ["--method", "full", "--gpus", "8", "--gpu", "H100", "--rl-framework",
                                             "verl", "--num-generations", "8", "--prompt-len", "1024",
                                             "--response-len", "2048", "--rollout-batch", "32"], "verl", "verl_rl.sh"),
    "30b-full-8gpu-swift": ("Qwen3-30B-A3B", ["--method", "full", "--gpus", "8", "--gpu", "H100", "--rl-framework",
                                              "ms-swift", "--rollout-tp", "2", "--rollout-util", "0.5",
                                              "--engine-sleep", "--prompt-len", "1024", "--response-len", "2048",
                                              "--rollout-batch", "32"], "ms-swift", "swift_rlhf.sh"),
}
STEPS = 100


def _plan_json(tmp_path, capsys, model, args, steps=STEPS):
    rc = main(["plan", model, "--rl", "grpo", "--steps", str(steps), *args, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0, doc["rejected"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return path, doc


# ------------------------------------------------------------------------------------------------ options
def test_rl_options_are_one_table_for_argparse_and_the_web():
    names = {o.name for o in RL_OPTIONS}
    assert {"rl", "rollout_engine", "rollout_tp", "rollout_util", "prompt_len", "response_len", "num_generations",
            "rollout_batch", "colocate", "ref", "critic", "rl_framework", "steps"} <= names
    p = argparse.ArgumentParser()
    add_options(p, RL_OPTIONS)
    args = p.parse_args(["--rl", "grpo", "--no-ref", "--colocate", "--prompt-len", "2k", "--rollout-util", "0.6"])
    assert args.ref is False and args.colocate is True and args.prompt_len == 2048 and args.critic is None
    with pytest.raises(SystemExit):
        p.parse_args(["--rollout-util", "1.5"])
    web = parse_options({"rl": "grpo", "ref": False, "colocate": "true", "prompt_len": "2k", "rollout_util": 0.6},
                        RL_OPTIONS, defaults=False)
    assert rl_config_from_values(web) == rl_config_from_values(vars(args))
    with pytest.raises(InputError):
        parse_options({"rollout_util": 1.5}, RL_OPTIONS)
    with pytest.raises(InputError):
        parse_options({"rollout_utl": 0.5}, RL_OPTIONS)


def test_rl_config_from_values_fills_framework_defaults_under_user_values():
    assert rl_config_from_values({"prompt_len": 512}) is None
    rl = rl_config_from_values({"rl": "grpo", "rl_framework": "verl", "num_generations": 4, "rollout_util": None})
    assert rl.rollout_util == 0.5 and rl.num_generations == 4 and rl.rl_framework == "verl"  # verl rollout.yaml
    rl = rl_config_from_values({"rl": "grpo", "rl_framework": "ms-swift", "rollout_util": 0.3, "ref": False})
    assert rl.rollout_util == 0.3 and rl.ref is False and rl.num_generations == 8


def test_memory_cli_web_and_service_are_one_path(capsys):
    from trainfit.service import rl_memory_report
    from trainfit.service_commands import memory_from_options

    argv = ["Qwen3-8B", "--rl", "grpo", "--gpu", "H100", "--rollout-util", "0.5", "--prompt-len", "1024",
            "--response-len", "7168", "--method", "lora", "--steps", "10"]
    assert main(["memory", *argv, "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    rl = RLConfig(rollout_util=0.5, prompt_len=1024, response_len=7168)
    svc = rl_memory_report(get_model("Qwen3-8B"), Workload(method="lora", seq_len=8192), rl, gpu="H100",
                           steps=10).to_dict()
    web = memory_from_options({"model": "Qwen3-8B", "rl": "grpo", "gpu": "H100", "rollout_util": 0.5,
                               "prompt_len": 1024, "response_len": 7168, "method": "lora", "steps": 10}).to_dict()
    for out in (svc, web):
        assert out["rl"]["phases_gib"] == cli["rl"]["phases_gib"]
        assert out["rl"]["max_concurrent_seqs"] == cli["rl"]["max_concurrent_seqs"]
        assert out["verdict"] == cli["verdict"] and out["rl"]["time"] == cli["rl"]["time"]
    assert cli["rl"]["time"]["steps"] == 10


def test_memory_rl_takes_gpu_and_host_ram_from_an_instance_type(capsys):
    rc = main(["memory", "Qwen3-8B", "--rl", "grpo", "--instance-type", "generic-8xH100", "--gpus", "8", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"] == "H100-SXM" and out["rl"]["gpu_mem_gib"] == pytest.approx(80, abs=1)
    assert out["rl"]["speed"]["node"] == "generic-8xH100"  # the step time is timed on that node
    assert rc == (1 if out["verdict"] == "oom" else 0)


def test_memory_rl_without_a_gpu_is_one_clear_error(capsys):
    assert main(["memory", "Qwen3-8B", "--rl", "grpo"]) != 0
    assert "--gpu" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ plan
@pytest.mark.parametrize("case", list(CASES))
def test_plan_rl_evaluates_every_phase_through_the_one_fit_decision(tmp_path, capsys, case):
    model, args, fw, _ = CASES[case]
    _, doc = _plan_json(tmp_path, capsys, model, args)
    assert doc["workload"]["rl"]["algo"] == "grpo" and doc["workload"]["steps"] == STEPS
    for d in doc["plans"]:
        p = Plan.from_dict(d)
        rl = p.rl.to_dict()
        assert rl["rl_framework"] == fw and rl["steps"] == STEPS
        assert set(rl["phases_gib"]) == {"rollout", "train", "sync"}
        assert rl["binding_phase"] == max(rl["phases_gib"], key=rl["phases_gib"].get)
        # the plan's memory is what the one fit decision judged: the binding phase's peak
        assert p.memory.reserved_gib == pytest.approx(rl["phases_gib"][rl["binding_phase"]])
        assert sum(p.memory.breakdown_gib.values()) == pytest.approx(p.memory.reserved_gib, rel=1e-9)
        again = decide_fit(p.memory, usable_gib=p.gpu_mem_gib, gpus_per_node=p.gpus_per_node,
                           host_ram_gib=getattr(p.instance, "ram_gib", None))
        assert again == p.fit and p.fit.verdict in ("fits", "unknown")
        assert rl["max_concurrent_seqs"] >= 1 and rl["kv_pool_gib"] > 0
        # hours = RL step time x steps; GPU-hours = hours x the GPUs of the whole instances billed
        assert p.hours == pytest.approx(p.step_seconds * STEPS / 3600, rel=1e-9)
        per = p.instance.gpu_count
        billed = -(-p.workload.gpus // per) * per
        assert p.gpu_hours == pytest.approx(p.hours * billed, rel=1e-9)
        assert p.step_seconds == pytest.approx(rl["speed"]["step_seconds"], rel=1e-3)
        assert p.workload.seq_len == rl["prompt_len"] + rl["response_len"]
        assert (p.workload.tp, p.workload.pp, p.workload.ep, p.workload.cp) == (1, 1, 1, 1)
        allowed = {"verl": {"fsdp"}, "ms-swift": {"ddp", "zero2", "zero3"}}[fw]
        assert p.workload.strategy in allowed


def test_plan_rl_hours_scale_with_steps(tmp_path, capsys):
    model, args, _, _ = CASES["8b-lora-1gpu-verl"]
    _, a = _plan_json(tmp_path, capsys, model, args, steps=100)
    _, b = _plan_json(tmp_path, capsys, model, args, steps=300)
    assert b["plans"][0]["hours"] == pytest.approx(3 * a["plans"][0]["hours"], rel=1e-9)


def test_plan_rl_cost_is_price_times_instance_hours(tmp_path, capsys):
    ov = tmp_path / "catalog.yaml"
    ov.write_text("instances:\n  - provider: generic\n    resource_class: generic\n    instance_type: generic-8xH100\n"
                  "    price_per_hour: 200\n    currency: CNY\n    source: test\n    as_of: 2026-12-01\n")
    set_overlay_path(ov)
    _store.reset_cache()
    model, args, _, _ = CASES["30b-full-8gpu-verl"]
    _, doc = _plan_json(tmp_path, capsys, model, args + ["--instance-type", "generic-8xH100"])
    (p,) = doc["plans"]
    assert p["currency"] == "CNY" and p["cost"] == pytest.approx(200 * p["nodes"] * p["hours"], rel=1e-6)


def test_plan_rl_lowers_a_rollout_tp_that_does_not_fit_the_node(tmp_path, capsys):
    model, args, _, _ = CASES["8b-lora-1gpu-verl"]
    _, doc = _plan_json(tmp_path, capsys, model, args + ["--rollout-tp", "2"])  # set by the user: lowered, said
    p = doc["plans"][0]
    assert p["rl"]["rollout_tp"] == 1 and any("rollout tp 2" in w for w in p["warnings"])
    _, doc = _plan_json(tmp_path, capsys, model, args)  # verl's default 2 is not the user's: searched, no warning
    p = doc["plans"][0]
    assert p["rl"]["rollout_tp"] == 1 and not any("rollout tp 2" in w for w in p["warnings"])


@pytest.mark.parametrize("extra,needle", [
    ([], "--steps"),
    (["--steps", "10", "--seq-len", "4096"], "--prompt-len"),
    (["--steps", "10", "--tokens", "1B"], "--steps"),
    (["--steps", "10", "--no-colocate"], "colocate"),
    (["--steps", "10", "--tp", "2"], "--tp"),
    (["--steps", "10", "--strategy", "zero3", "--rl-framework", "verl", "--num-generations", "4"], "zero3"),
])
def test_plan_rl_requests_it_cannot_lay_out_are_clear_errors(capsys, extra, needle):
    assert main(["plan", "Qwen3-8B", "--rl", "grpo", "--gpu", "H100", *extra]) != 0
    assert needle in capsys.readouterr().err


def test_plan_rl_rejection_explains_memory_with_rl_fixes(capsys):
    # Qwen3-30B-A3B full on one 24 GiB GPU cannot fit any phase
    rc = main(["plan", "Qwen3-30B-A3B", "--rl", "grpo", "--steps", "10", "--method", "full", "--gpu", "A10",
               "--gpus", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and not doc["plans"]  # nothing fits: exit 1, with or without --json
    mem = [r for r in doc["rejected"] if r["code"] == "memory"]
    # the engine's 30B weights alone exceed one A10 and a 1-GPU node cannot split them: the fix says so instead of
    # naming knobs that do not help (fixes that are offered are checked with the RL memory model)
    assert mem and all(r["fix_options"] or "nothing the search can change fits" in r["fix"] for r in mem)
    assert any(not r["fix_options"] and "a GPU with more memory" in r["fix"] for r in mem)


# ------------------------------------------------------------------------------------------------ plan JSON
@pytest.mark.parametrize("case", ["8b-lora-1gpu-verl", "30b-full-8gpu-swift"])
def test_rl_plan_json_round_trips_losslessly(tmp_path, capsys, case):
    model, args, _, _ = CASES[case]
    _, doc = _plan_json(tmp_path, capsys, model, args)
    for d in doc["plans"]:
        p = Plan.from_dict(json.loads(json.dumps(d)))
        assert p.to_dict() == d
        assert p.rl.to_dict() == d["rl"] and p.rl_config() == RLConfig(**{k: d["rl"][k] for k in RLConfig.__dataclass_fields__})
        assert Plan.from_dict(p.to_dict()) == p


def test_rl_plan_with_a_broken_rl_part_is_a_plan_file_error(tmp_path, capsys):
    from trainfit.errors import PlanFileError

    model, args, _, _ = CASES["8b-lora-1gpu-verl"]
    _, doc = _plan_json(tmp_path, capsys, model, args)
    d = doc["plans"][0]
    for bad in ({**d["rl"], "rollout_util": 7}, {"phases_gib": {}}, "grpo"):
        with pytest.raises(PlanFileError):
            Plan.from_dict({**d, "rl": bad})


def test_sft_plan_json_has_no_rl_part(tmp_path, capsys):
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--gpu", "H100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert all(d["rl"] is None for d in doc["plans"]) and "rl" not in doc["workload"]
    assert plans_from_document(doc)[0].rl_config() is None


# ------------------------------------------------------------------------------------------------ render
def _facts(text: str) -> dict:
    line = next(ln for ln in text.splitlines() if ln.startswith("# trainfit-plan "))
    return json.loads(line[len("# trainfit-plan "):])


@pytest.mark.parametrize("case", list(CASES))
def test_plan_json_render_and_read_back_give_the_same_rl_config_and_workload(tmp_path, capsys, case):
    """plan -> JSON -> render -> parse_rl_launch -> the planned RLConfig and Workload (one decision path)."""
    model, args, fw, fname = CASES[case]
    path, doc = _plan_json(tmp_path, capsys, model, args)
    out = tmp_path / "job"
    assert main(["render", "--plan", str(path), "--out", str(out)]) == 0
    capsys.readouterr()
    assert {p.name for p in out.iterdir()} == {fname, "README.md"}  # only the RL target of the plan's framework
    text = (out / fname).read_text()
    plan = Plan.from_dict(doc["plans"][0])
    parsed = parse_rl_launch(text)
    assert parsed.framework == fw and parsed.model == f"Qwen/{model}"
    assert parsed.rl == plan.rl_config()
    wl = plan.workload
    assert parsed.workload_obj() == wl.with_(gpus_per_node=min(wl.gpus, wl.gpus_per_node))
    # the header carries the plan, the machine-readable facts line included
    facts = _facts(text)
    assert facts["model"] == model and facts["reserved_gib"] == plan.memory.reserved_gib
    assert facts["rl"]["phases_gib"] == plan.rl.phases_gib and facts["rl"]["steps"] == STEPS
    assert "# rl: grpo" in text and "# memory:" in text
    # the RL lint rules find no error in what the planner called a fit
    findings, _ = lint_rl_launch(text, plan.gpu_mem_gib)
    assert not [f for f in findings if f.severity == "error"], findings


def test_every_written_value_is_one_shell_word(tmp_path, capsys):
    model, args, _, _ = CASES["8b-lora-1gpu-swift"]
    path, doc = _plan_json(tmp_path, capsys, model, args + ["--lora-targets", "q_proj,v_proj"])
    out = tmp_path / "job"
    assert main(["render", "--plan", str(path), "--out", str(out), "--job-name", "a-b",
                 "--dataset", "my-org/data.v2"]) == 0
    text = (out / "swift_rlhf.sh").read_text()
    words = shlex.split(text.split("\nswift rlhf", 1)[1].replace("\\\n", " "), comments=True)
    assert words[words.index("--target_modules") + 1: words.index("--target_modules") + 3] == ["q_proj", "v_proj"]
    assert words[words.index("--dataset") + 1] == "my-org/data.v2"
    assert parse_rl_launch(text).workload["lora_targets"] == ("q_proj", "v_proj")


def test_verl_steps_and_swift_optimizer_steps_follow_the_plan(tmp_path, capsys):
    model, args, _, _ = CASES["8b-lora-1gpu-verl"]
    path, _ = _plan_json(tmp_path, capsys, model, args)
    assert main(["render", "--plan", str(path), "--out", str(tmp_path / "v")]) == 0
    capsys.readouterr()
    assert f"trainer.total_training_steps={STEPS}" in (tmp_path / "v" / "verl_rl.sh").read_text()
    model, args, _, _ = CASES["30b-full-8gpu-swift"]
    path, doc = _plan_json(tmp_path, capsys, model, args)
    assert main(["render", "--plan", str(path), "--out", str(tmp_path / "s")]) == 0
    s = doc["plans"][0]["settings"]
    per_generation = -(-32 * 8 // (s["micro_batch"] * s["gpus"] * s["grad_accum"]))
    words = shlex.split((tmp_path / "s" / "swift_rlhf.sh").read_text(), comments=True)
    assert words[words.index("--max_steps") + 1] == str(STEPS * per_generation)


def test_sft_targets_skip_rl_plans_and_rl_targets_refuse_sft_plans(tmp_path, capsys):
    model, args, _, _ = CASES["30b-full-8gpu-verl"]
    _, doc = _plan_json(tmp_path, capsys, model, args)
    ctx = build_context(Plan.from_dict(doc["plans"][0]))
    res = render(ctx, "all")
    assert set(res.files) == {"verl_rl.sh"} and set(res.skipped) == {"swift_grpo"}
    for t in set(TARGETS) - set(RL_TARGETS):
        with pytest.raises(RenderError) as e:
            render(ctx, t)
        assert "RL" in e.value.message and "verl" in (e.value.fix or "")
    from tests.launch.conftest import make_ctx

    sft = make_ctx("lora1")
    assert not set(render(sft, "all").files) & {"verl_rl.sh", "swift_rlhf.sh"}
    for t in RL_TARGETS:
        with pytest.raises(RenderError) as e:
            render(sft, t)
        assert "--rl" in e.value.message


def test_render_rl_without_a_plan_file(tmp_path, capsys):
    out = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "--rl", "grpo", "--rl-framework",
                 "ms-swift", "--rollout-util", "0.4", "--steps", "50", "--out", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["written"] == ["swift_rlhf.sh", "README.md"]
    text = (out / "swift_rlhf.sh").read_text()
    assert parse_rl_launch(text).rl == RLConfig.for_framework("ms-swift", rollout_util=0.4)
    assert "trainfit render (no plan file)" in text and _facts(text)["rl"]["steps"] == 50


SWIFT_ARGS = __import__("pathlib").Path(__file__).parents[1] / "launch" / "data" / "ms_swift_args.json"


@pytest.mark.parametrize("method,algo,extra", [("lora", "grpo", []), ("qlora", "grpo", ["--loss", "fused"]),
                                               ("full", "grpo", ["--gpus", "8"]), ("lora", "dpo", []),
                                               ("full", "ppo", ["--gpus", "8", "--num-generations", "1"])])
def test_swift_rlhf_arguments_exist_in_ms_swift(tmp_path, capsys, method, algo, extra):
    """Every ``--flag`` of swift_rlhf.sh is a field of ms-swift 4.6.0's RLHFArguments (read from the wheel by
    tests/launch/data/extract_arg_names.py; ms-swift cannot be imported next to this project's pins)."""
    known = set(json.loads(SWIFT_ARGS.read_text())["commands"]["rlhf"]["fields"])
    out = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", method, "--gpu", "H200", "--rl", algo, "--rl-framework",
                 "ms-swift", "--rollout-util", "0.4", "--steps", "5", "--out", str(out), *extra]) in (0, 1)  # 1: oom
    text = (out / "swift_rlhf.sh").read_text()
    words = shlex.split(text.split("\nswift rlhf", 1)[1].replace("\\\n", " "), comments=True)
    flags = [w[2:] for w in words if w.startswith("--")]
    assert "rlhf_type" in flags and "tuner_type" in flags
    assert not set(flags) - known, set(flags) - known
    parsed = parse_rl_launch(text)
    assert parsed.rl.algo == algo and parsed.workload["method"] == method


VERL_KEYS = __import__("pathlib").Path(__file__).parent / "data" / "verl_ppo_trainer_keys.json"


@pytest.mark.parametrize("method,algo,extra", [("lora", "grpo", ["--lora-targets", "q_proj,v_proj"]),
                                               ("full", "grpo", ["--gpus", "8", "--trainer-offload"]),
                                               ("full", "ppo", ["--gpus", "8"])])
def test_verl_keys_exist_in_verls_config(tmp_path, capsys, method, algo, extra):
    """Every ``key=value`` of verl_rl.sh is a key of verl's flattened ppo_trainer config (tests/rl/data, read
    from verl's _generated_ppo_trainer.yaml), and the batch settings pass verl's own validation rules:
    train_batch_size >= ppo_mini_batch_size and a log-prob micro-batch for the rollout and reference."""
    known = set(json.loads(VERL_KEYS.read_text())["keys"])
    out = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", method, "--strategy", "fsdp", "--gpu", "H200", "--rl", algo,
                 "--rl-framework", "verl", "--num-generations", "4" if algo == "grpo" else "1", "--steps", "5",
                 "--rollout-tp", "1", "--out", str(out), *extra]) == 0
    text = (out / "verl_rl.sh").read_text()
    words = shlex.split(text.split("verl.trainer.main_ppo", 1)[1].replace("\\\n", " "), comments=True)
    kv = dict(w.split("=", 1) for w in words)
    assert not set(kv) - known, set(kv) - known
    assert int(kv["data.train_batch_size"]) >= int(kv["actor_rollout_ref.actor.ppo_mini_batch_size"])
    for k in ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
              "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"):
        assert int(kv[k]) >= 1
    if algo == "ppo":
        assert int(kv["critic.ppo_micro_batch_size_per_gpu"]) >= 1
    parsed = parse_rl_launch(text)
    assert parsed.rl.algo == algo and parsed.workload["method"] == method


@pytest.mark.parametrize("case", ["8b-lora-1gpu-verl", "30b-full-8gpu-swift"])
def test_size_rl_launch_gives_the_planned_verdict_and_phases(tmp_path, capsys, case):
    """What ``check`` does with a rendered RL file: read it back and size it with the same model; the verdict and
    the per-phase memory are the plan's (one decision path)."""
    from trainfit.rl.lint import size_rl_launch

    model, args, _, fname = CASES[case]
    path, doc = _plan_json(tmp_path, capsys, model, args)
    assert main(["render", "--plan", str(path), "--out", str(tmp_path / "job")]) == 0
    text = (tmp_path / "job" / fname).read_text()
    facts = _facts(text)
    parsed, est = size_rl_launch(text, facts["rl"]["gpu_mem_gib"], model=facts["model"])
    plan = Plan.from_dict(doc["plans"][0])
    assert est.phases_gib == pytest.approx(plan.rl.phases_gib, rel=1e-9)
    assert est.peak_gib == pytest.approx(facts["reserved_gib"], rel=1e-9)
    assert est.verdict == plan.fit.verdict and est.max_concurrent_seqs == plan.rl.max_concurrent_seqs
    # a utilisation the trainer's residual cannot leave room for is found as an error
    hot = text.replace("gpu_memory_utilization=0.5", "gpu_memory_utilization=0.95").replace(
        "--vllm_gpu_memory_utilization 0.5", "--vllm_gpu_memory_utilization 0.95")
    findings, _ = lint_rl_launch(hot, facts["rl"]["gpu_mem_gib"], model=facts["model"])
    assert "rl-util-too-high" in {f.rule for f in findings if f.severity == "error"}


def test_plan_rl_table_names_the_algorithm_and_the_binding_phase(capsys):
    model, args, _, _ = CASES["30b-full-8gpu-verl"]
    assert main(["plan", model, "--rl", "grpo", "--steps", str(STEPS), *args]) == 0
    out = capsys.readouterr().out
    assert "grpo (verl)" in out and f"{STEPS} steps" in out
    assert "rollout-bound" in out or "train-bound" in out or "sync-bound" in out


def test_check_reads_an_rl_launch_back_and_sizes_it_per_phase(tmp_path, capsys):
    """`check` on a rendered verl launch agrees with the plan; with the utilisation raised by hand it finds the OOM;
    on a smaller GPU it finds the phase that does not fit."""
    import json as _json

    from trainfit.check import check_file
    from trainfit.cli import main

    assert main(["plan", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--rl-framework", "verl",
                 "--num-generations", "8", "--steps", "50", "--gpu", "H100", "--json"]) == 0
    plan = tmp_path / "rl.json"
    plan.write_text(capsys.readouterr().out)
    assert main(["render", "--plan", str(plan), "--out", str(tmp_path / "job")]) == 0
    capsys.readouterr()
    script = tmp_path / "job" / "verl_rl.sh"
    assert _json.loads(plan.read_text())["plans"][0]["verdict"] in ("fits", "unknown")
    assert not [v for v in check_file(script).violations if v.severity == "error"]
    import re

    hot = tmp_path / "hot.sh"
    hot.write_text(re.sub(r"gpu_memory_utilization=[0-9.]+", "gpu_memory_utilization=0.97", script.read_text()))
    rules = {v.rule for v in check_file(hot).violations if v.severity == "error"}
    assert "rl-util-too-high" in rules
    small = {v.rule for v in check_file(script, gpu="A10").violations if v.severity == "error"}
    assert small & {"rl-phase-oom", "rl-kv-pool", "rl-util-too-high"}
