"""`trainfit check`: each fixture's mistake is found (all at once), rendered files pass, bad input is one error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.launch.conftest import SCENARIOS
from trainfit.check import CheckInputError, check_file
from trainfit.cli import main

FX = Path(__file__).parent.parent / "fixtures" / "check"

EXPECTED = {
    "dlc_unknown_instance.json": {"unknown-instance-type"},
    "dlc_memory_wont_fit.json": {"memory-fit"},
    "launch_world_size.sh": {"dlc-world-size-is-nodes", "dlc-node-rank-not-rank-env"},
    "dlc_spot_no_checkpoint.json": {"spot-needs-checkpoints"},
    "skypilot_spot_no_checkpoint.yaml": {"spot-needs-checkpoints"},
    "pai_submit_spot.sh": {"spot-needs-checkpoints", "launcher", "dlc-node-rank-not-rank-env"},
    "dlc_lingjun_no_vpc.json": {"lingjun-needs-vpc"},
    "dlc_public_cap.json": {"pai-public-quota"},
    "dlc_region_mismatch.json": {"region-must-match"},
    "dlc_lingjun_custom_image.json": {"lingjun-custom-image-rdma"},
    "ds_global_batch.json": {"global-batch"},
    "pytorchjob_nnodes.yaml": {"launcher"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_mistakes_are_found(name):
    res = check_file(FX / name)
    rules = {v.rule for v in res.violations}
    assert EXPECTED[name] <= rules, (name, [v.to_dict() for v in res.violations])
    for v in res.violations:
        assert v.severity in ("error", "warning", "info") and v.message and v.fix


def test_unknown_instance_suggests_the_real_name():
    v = next(v for v in check_file(FX / "dlc_unknown_instance.json").violations if v.rule == "unknown-instance-type")
    assert "ml.gu8xf.8xlarge-gu108" in v.message


def test_memory_rule_names_the_numbers():
    v = next(v for v in check_file(FX / "dlc_memory_wont_fit.json").violations if v.rule == "memory-fit")
    assert v.severity == "error" and "A10" in v.message and "GiB" in v.message


def test_region_option_is_compared():
    res = check_file(FX / "dlc_memory_wont_fit.json", region="cn-shanghai")
    assert "region-must-match" in {v.rule for v in res.violations}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_rendered_files_pass(rendered, name):
    d, res = rendered[name]
    for fname in res.files:
        r = check_file(d / fname)
        errors = [v.to_dict() for v in r.violations if v.severity == "error"]
        assert not errors, (name, fname, errors)


def test_cli_json_shape_and_exit_codes(capsys):
    assert main(["check", str(FX / "launch_world_size.sh"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {"rule", "severity", "message", "fix"} <= set(out["violations"][0]) <= {"rule", "severity", "message", "fix", "source"}
    assert out["violations"][0]["source"]  # platform rules say where they come from
    assert main(["check", str(FX / "dlc_lingjun_custom_image.json")]) == 0  # warnings only
    capsys.readouterr()


@pytest.mark.parametrize("content,suffix,needle", [
    ('{"JobSpecs": [}', ".json", "malformed JSON"),
    ("kind: PyTorchJob\nspec: [unclosed\n", ".yaml", "malformed YAML"),
    ('{"foo": 1}', ".json", "unknown kind"),
    ("- a\n- b\n", ".yaml", "no mapping"),
    ('{"DisplayName": "x", "JobType": "PyTorchJob", "UserCommand": "true", "JobSpecs": [{"PodCount": "two"}]}',
     ".json", "must be an integer"),
    ('{"train_batch_size": "16"}', ".json", "must be an integer"),
    ("!!python/object/apply:os.system ['true']\n", ".yaml", "malformed YAML"),
    ("", ".sh", "no commands"),
])
def test_bad_input_is_one_clear_error(tmp_path, capsys, content, suffix, needle):
    p = tmp_path / f"job{suffix}"
    p.write_text(content)
    with pytest.raises(CheckInputError) as e:
        check_file(p)
    assert needle in e.value.message
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_huge_and_binary_files(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"{" + b" " * (3 * 2**20) + b"}")
    with pytest.raises(CheckInputError, match="limit"):
        check_file(big)
    binf = tmp_path / "x.sh"
    binf.write_bytes(b"\x00\x01\x02")
    with pytest.raises(CheckInputError, match="binary"):
        check_file(binf)
    with pytest.raises(CheckInputError, match="cannot read"):
        check_file(tmp_path / "missing.json")


def test_two_node_script_with_local_master_and_certain_oom():
    """Issue 9: a 2 x 8 GPU launch script saying --nnodes=1 --master_addr=localhost, batch 8 x 8192 tokens of
    Qwen3-14B with ZeRO-2: every mistake is found at once."""
    res = check_file(FX / "launch_two_nodes_local.sh", nodes=2, gpus_per_node=8, gpu="H800")
    by_rule = {}
    for v in res.violations:
        by_rule.setdefault(v.rule, []).append(v)
    launcher = " ".join(v.message for v in by_rule.get("launcher", []))
    assert "--nnodes=1 but the job has 2 nodes" in launcher and "localhost" in launcher
    mem = by_rule["memory-fit"][0]
    assert mem.severity == "error" and "Qwen3-14B full" in mem.message and "zero2" in mem.message
    assert "8192" in mem.message and "H800" in mem.message


def test_flash_attention_3_on_a_non_hopper_gpu_is_an_error(rendered, tmp_path):
    """The one kernel gate (estimate.hardware.kernel_gaps): a script asking for FlashAttention-3 on an A10 is an
    error in check, and the same settings' speed estimate carries the same sentence as a warning."""
    from trainfit.estimate.hardware import kernel_gaps
    from trainfit.estimate.speed import estimate_speed
    from trainfit.models import get_model
    from trainfit.catalog.hardware import hardware_for
    from trainfit.catalog.gpus import get_gpu
    from trainfit.workload import Workload

    d, res = rendered["lora1"]
    text = res.files["swift_sft.sh"]
    assert "--attn_impl sdpa" in text
    f = tmp_path / "swift_sft.sh"
    f.write_text(text.replace("--attn_impl sdpa", "--attn_impl flash_attention_3"))
    v = [v for v in check_file(f).violations if v.rule == "kernel-support"]
    assert len(v) == 1 and v[0].severity == "error" and "A10" in v[0].message
    assert not [v for v in check_file(d / "swift_sft.sh").violations if v.rule == "kernel-support"]
    hw = hardware_for(get_gpu("A10"))
    s = estimate_speed(get_model("Qwen3-8B"), Workload(method="lora", attention="flash3"), hw)
    assert kernel_gaps("flash3", hw.gpu_class, hw.name)[0] in s.warnings
    assert not kernel_gaps("flash3", "hopper", "H800") and not kernel_gaps("flash", "ampere", "A10")


def test_a_file_without_a_gpu_says_the_fit_was_not_checked(tmp_path, capsys):
    """Qwen3-8B full at micro-batch 8 x 8192 needs ~190 GiB per GPU; a script that names no GPU used to print
    "no problems found", which reads as "it fits". Now an info finding with the need and how to check it."""
    f = tmp_path / "train.sh"
    f.write_text("#!/bin/bash\nNPROC_PER_NODE=8 swift sft --model Qwen/Qwen3-8B --tuner_type full "
                 "--per_device_train_batch_size 8 --max_length 8192\n")
    res = check_file(f)
    mem = [v for v in res.violations if v.rule == "memory-fit"]
    assert res.ok and len(mem) == 1 and mem[0].severity == "info"
    assert "not checked" in mem[0].message and "--gpu" in mem[0].fix
    assert main(["check", str(f), "--gpu", "H800"]) == 1  # with a GPU the same file is an OOM error


def test_unknown_instance_type_option_is_an_error(tmp_path, capsys):
    f = tmp_path / "train.sh"
    f.write_text("#!/bin/bash\nswift sft --model Qwen/Qwen3-8B --tuner_type lora\n")
    assert main(["check", str(f), "--instance-type", "ecs.gn7i-c8g1.2xlarg"]) == 2
    assert "did you mean ecs.gn7i-c8g1.2xlarge" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["root:x:0:0:root:/root:/bin/bash\n", "# Job files\n\n- `swift_sft.sh`\n", "PK\n"])
def test_a_file_without_a_training_command_is_not_passed_as_checked(text, tmp_path):
    """`check /etc/passwd` or a zip read as a shell script printed "no problems found"."""
    f = tmp_path / "notes.txt"
    f.write_text(text)
    res = check_file(f)
    assert [v.rule for v in res.violations] == ["no-training-command"] and res.ok


def test_rendered_scripts_have_a_training_command(rendered):
    for name in SCENARIOS:
        d, _ = rendered[name]
        for f in d.glob("*.sh"):
            assert "no-training-command" not in {v.rule for v in check_file(f).violations}, f


@pytest.mark.parametrize("framework", ["verl", "ms-swift"])
def test_rendered_rl_launches_have_a_training_command(framework, tmp_path):
    """verl's `python -m verl.trainer.main_ppo` and `swift rlhf` are training commands too."""
    layout = ["--strategy", "fsdp"] if framework == "verl" else []
    # ms-swift's DDP layout does not fit here (93 GiB/GPU): render still writes the files and exits 1 (README,
    # exit status); what is checked is the launch command in them
    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpus", "8", "--gpu", "H100", "--rl", "grpo",
                 "--rl-framework", framework, "--num-generations", "8", *layout, "--out", str(tmp_path)]) in (0, 1)
    scripts = list(tmp_path.glob("*_rl*.sh")) + list(tmp_path.glob("swift_rlhf.sh"))
    assert scripts
    for f in scripts:
        assert "no-training-command" not in {v.rule for v in check_file(f).violations}, f


def test_plan_json_and_job_file_mixed_up_say_which_is_which(tmp_path, capsys):
    """`check plan.json` said 'JSON of unknown kind'; `render --plan dlc_job.json` said 'has schema None ...
    regenerate it with this version', as if it were an old plan."""
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "10M", "--gpu", "H800", "--json"]) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    assert main(["check", str(plan)]) == 2
    err = capsys.readouterr().err
    assert "is a trainfit plan" in err and "trainfit render --plan" in err
    assert main(["render", "--plan", str(FX / "ds_global_batch.json"), "--out", str(tmp_path / "j")]) == 2
    err = capsys.readouterr().err
    assert "is not a trainfit plan" in err and "trainfit check" in err


@pytest.mark.parametrize("ds, strategy, offload", [
    ("examples/deepspeed/ds_z3_config.json", "zero3", "none"),
    ("examples/deepspeed/ds_z3_offload_config.json", "zero3", "all"),
    ("examples/deepspeed/ds_z2_offload_config.json", "zero2", "optimizer"),
    ("examples/deepspeed/ds_z0_config.json", "ddp", "none"),
    ("/cluster/cfg/my_ds.json", "ddp", "none"),
])
def test_a_deepspeed_config_not_beside_the_file_is_read_from_its_name(ds, strategy, offload, tmp_path):
    """LLaMA-Factory YAMLs name the configs shipped in its repo (examples/deepspeed/ds_z3_config.json), which are
    not beside the YAML: check sized them as plain DDP (66 GiB instead of 25 for Qwen3-8B LoRA on 4 GPUs) without
    saying so."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    f = tmp_path / "lf.yaml"
    f.write_text(f"model_name_or_path: Qwen/Qwen3-8B\nstage: sft\nfinetuning_type: lora\ndeepspeed: {ds}\n"
                 "per_device_train_batch_size: 2\ncutoff_len: 4096\nbf16: true\n")
    rb = read_workload(read_facts(f), CheckOptions(gpu="A10", gpus_per_node=4))
    assert (rb.workload.strategy, rb.workload.offload) == (strategy, offload)
    assert any(ds in a for a in rb.assumed)


def test_monitoring_configs_are_named_as_such(tmp_path, rendered):
    """render --target monitoring writes a Prometheus scrape config and a Grafana dashboard; `check` on them said
    'YAML/JSON of unknown kind'."""
    from trainfit.launch import render

    res = render(rendered["lora1"][1].context, "monitoring")
    for name, text in res.files.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(CheckInputError, match="monitoring config"):
            check_file(tmp_path / name)


def test_render_for_a_gpu_without_instance_is_not_checked_as_pai_public(tmp_path):
    """`render Qwen3-8B --gpus 8 --gpu H800` (a generic plan: no instance type) gave a pai-public-quota warning in
    `check` (the script reads PAI-DLC's variables, and no instance said otherwise) although plan and render treat
    it as a generic cluster; the header's resource class now decides."""
    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpus", "8", "--gpu", "H800", "--target", "swift",
                 "--out", str(tmp_path)]) == 0
    assert "pai-public-quota" not in {v.rule for v in check_file(tmp_path / "swift_sft.sh").violations}


def test_lora_dropout_is_written_as_sized_and_read_back_when_it_is_not(tmp_path):
    """trainfit sizes LoRA without dropout (PEFT's default); ms-swift defaults to 0.05. Rendered jobs state 0, and
    a job file that trains with dropout says the dropout's copy and mask are not counted."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions
    from trainfit.launch._common import swift_args
    from tests.launch.conftest import make_ctx

    lf = tmp_path / "lf.yaml"
    base = ("model_name_or_path: Qwen/Qwen3-8B\nstage: sft\nfinetuning_type: lora\nper_device_train_batch_size: 1\n"
            "cutoff_len: 2048\nbf16: true\n")
    lf.write_text(base + "lora_dropout: 0.1\n")
    rb = read_workload(read_facts(lf), CheckOptions(gpu="A100-80GB"))
    assert any("lora_dropout 0.1" in a and "not counted" in a for a in rb.assumed)
    lf.write_text(base + "lora_dropout: 0\n")
    assert not any("lora_dropout" in a for a in read_workload(read_facts(lf), CheckOptions(gpu="A100-80GB")).assumed)
    sh = tmp_path / "train.sh"
    sh.write_text("swift sft --model Qwen/Qwen3-8B --train_type lora --max_length 2048 --torch_dtype bfloat16\n")
    rb = read_workload(read_facts(sh), CheckOptions(gpu="A100-80GB"))
    assert any("lora_dropout 0.05 (ms-swift's default 0.05)" in a for a in rb.assumed)
    ctx = make_ctx("lora1")
    assert ("lora_dropout", "0") in swift_args(ctx)


def test_unicode_digits_in_numeric_settings_are_not_a_traceback(tmp_path, capsys):
    """Found by benchmarks/fuzz.py: '²'.isdigit() is True but int('²') raises, so `check` died on a YAML whose
    lora_rank was a superscript two. Numeric settings are read only when they are decimal digits."""
    f = tmp_path / "train.yaml"
    f.write_text("model_name_or_path: Qwen/Qwen3-8B\nstage: sft\nfinetuning_type: lora\nlora_rank: \u00b2\n"
                 "cutoff_len: 2048\nbf16: true\n")
    rc = main(["check", str(f), "--json"])
    assert rc in (0, 1, 2) and "Traceback" not in capsys.readouterr().err


def test_an_unset_optimizer_is_read_as_the_trainer_default_and_says_so(tmp_path):
    """A job file without `optim` trains with transformers' default, which changed with torch 2.8 (adamw_torch ->
    adamw_torch_fused); check sizes the fused one and says it assumed it, and reads a stated one as written."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    f = tmp_path / "lf.yaml"
    base = ("model_name_or_path: Qwen/Qwen3-8B\nstage: sft\nfinetuning_type: full\nper_device_train_batch_size: 1\n"
            "cutoff_len: 2048\nbf16: true\n")
    f.write_text(base)
    rb = read_workload(read_facts(f), CheckOptions(gpu="A100-80GB"))
    assert rb.workload.optimizer == "adamw-fused" and any(a.startswith("optim not set") for a in rb.assumed)
    f.write_text(base + "optim: adamw_torch\n")
    rb = read_workload(read_facts(f), CheckOptions(gpu="A100-80GB"))
    assert rb.workload.optimizer == "adamw-foreach" and not any(a.startswith("optim") for a in rb.assumed)
    f.write_text(base + "optim: lion_8bit\n")
    assert any("optim lion_8bit" in a for a in read_workload(read_facts(f), CheckOptions(gpu="A100-80GB")).assumed)
