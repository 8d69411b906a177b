"""Issue 27: the findings of a hostile campaign, one test each (nothing lost, nothing redirected, every read
through the input gate, a check that cannot be walked around)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainfit.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def pai_plan_doc() -> dict:
    """A PAI plan (instance record without regions, plan region null) as `plan --json` writes it."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1B", "--provider", "alibaba",
                     "--json"]) == 0
    doc = json.loads(buf.getvalue())
    assert doc["plans"][0]["region"] is None
    return doc


def _tampered(tmp_path: Path, doc: dict, change) -> Path:
    d = json.loads(json.dumps(doc))
    change(d["plans"][0])
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(d))
    return p


# ------------------------------------------------------------------------------------- 1. redirected jobs

@pytest.mark.parametrize("regions", [["x.attacker.example/evil#"], ["cn-hangzhou.attacker.example"],
                                     ["cn-hangzhou\nrm -rf /"], [7]])
def test_plan_instance_regions_cannot_redirect_the_image(tmp_path, capsys, pai_plan_doc, regions):
    def change(p):
        p["region"] = None
        p["instance"]["regions"] = regions
    plan = _tampered(tmp_path, pai_plan_doc, change)
    rc, out, err = run(capsys, "render", "--plan", plan, "--out", tmp_path / "job")
    assert rc == 2, out + err
    assert "regions" in err and "Traceback" not in err
    assert not (tmp_path / "job").exists()


@pytest.mark.parametrize("change, word", [
    (lambda p: p.update(nodes=65536, gpus_per_node=65536), "65,536-GPU limit"),
    (lambda p: p.update(spot="false"), "spot must be true or false"),
    (lambda p: p.update(spot=1), "spot must be true or false"),
    (lambda p: p["model"].update(name="../../etc/x"), "model.name"),
    (lambda p: p["model"].update(name="/etc/passwd"), "model.name"),
    (lambda p: p["instance"].update(verified="yes"), "instance.verified"),
    (lambda p: p["instance"].update(gpu_count=10**6), "gpu_count"),
    (lambda p: p["instance"].update(instance_type="ecs.x;id"), "instance_type"),
    (lambda p: p["gpu_spec"].update(mem_gib=float(2**40)), "mem_gib"),
    (lambda p: p["gpu_spec"].update(name="A30 $(id)"), "name"),
    (lambda p: p.update(nodes="2"), "nodes must be an integer"),
])
def test_plan_file_fields_are_validated_like_user_input(tmp_path, capsys, pai_plan_doc, change, word):
    plan = _tampered(tmp_path, pai_plan_doc, change)
    rc, out, err = run(capsys, "render", "--plan", plan, "--out", tmp_path / "job")
    assert rc == 2, out + err
    assert word in err and "Traceback" not in err


def test_untampered_pai_plan_renders_the_official_image(tmp_path, capsys, pai_plan_doc):
    plan = _tampered(tmp_path, pai_plan_doc, lambda p: None)
    rc, out, err = run(capsys, "render", "--plan", plan, "--out", tmp_path / "job")
    assert rc == 0, err
    from trainfit.providers.alibaba.images import pai_image_region

    image = json.loads((tmp_path / "job" / "dlc_job.json").read_text())["JobSpecs"][0]["Image"]
    assert pai_image_region(image) == "cn-hangzhou"


@pytest.mark.parametrize("image, pai, imitates", [
    ("dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/pai-megatron-patch:25.04", True, False),
    ("dsw-registry.cn-wulanchabu.cr.aliyuncs.com/pai/pytorch-training:2.1", True, False),
    ("registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/tensorflow-training:1.15", True, False),
    ("registry.cn-beijing.aliyuncs.com/someone/img:1", False, False),
    ("registry.attacker.example/evil/img:1", False, False),
    ("registry.gitlab.com/group/img:1", False, False),
    ("dsw-registry-vpc.cn-hangzhou.attacker.example/pai/img:1", False, True),
    ("dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com.attacker.example/pai/x:1", False, True),
    ("dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com", False, False),
    ("pytorch/pytorch:2.5.1-cuda12.4", False, False),
])
def test_pai_image_is_decided_by_exact_host(image, pai, imitates):
    from trainfit.providers.alibaba.images import imitates_pai, is_pai_image

    assert is_pai_image(image) is pai
    assert imitates_pai(image) is imitates


def _lingjun_dlc(tmp_path: Path, capsys, image: str | None = None) -> Path:
    out = tmp_path / "lj"
    rc, _, err = run(capsys, "render", "Qwen3-8B", "--method", "lora", "--instance-type", "ml.gu7xf.c96m1600.8-gu108",
                     "--gpu", "H800", "--gpus", "8", "--gpus-per-node", "8", "--target", "dlc", "--out", out)
    if rc != 0:
        pytest.skip(f"no Lingjun render here: {err}")
    p = out / "dlc_job.json"
    if image:
        d = json.loads(p.read_text())
        for spec in d["JobSpecs"]:
            spec["Image"] = image
        p.write_text(json.dumps(d))
    return p


def test_check_reports_a_lookalike_pai_registry(tmp_path, capsys, pai_plan_doc):
    plan = _tampered(tmp_path, pai_plan_doc, lambda p: None)
    assert run(capsys, "render", "--plan", plan, "--out", tmp_path / "job", "--target", "dlc")[0] == 0
    p = tmp_path / "job" / "dlc_job.json"
    d = json.loads(p.read_text())
    d["JobSpecs"][0]["Image"] = "dsw-registry-vpc.cn-hangzhou.attacker.example/pai/pai-megatron-patch:25.04"
    p.write_text(json.dumps(d))
    rc, out, err = run(capsys, "check", p, "--json")
    found = json.loads(out)
    rules = {v["rule"]: v["severity"] for v in found["findings"]} if "findings" in found else \
        {v["rule"]: v["severity"] for v in found["violations"]}
    assert rules.get("image-registry") == "error"
    assert rc == 1


def test_check_custom_image_on_lingjun_is_not_silenced_by_a_registry_prefix(tmp_path, capsys):
    from trainfit.check.facts import read_facts
    from trainfit.check.rules import CheckOptions, job_context

    p = _lingjun_dlc(tmp_path, capsys, "registry.attacker.example/evil/img:1")
    assert job_context(read_facts(p), CheckOptions()).custom_image is True
    p = _lingjun_dlc(tmp_path, capsys)
    assert job_context(read_facts(p), CheckOptions()).custom_image is False
