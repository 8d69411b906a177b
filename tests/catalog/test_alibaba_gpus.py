"""Alibaba GPUs for real (issue 25, item 1): the GPU of every Alibaba family DescribeInstanceTypes names, a GPU known
only by its memory sized by that memory with its speed assumed from a named class (and said so), Lingjun specs a
public source sizes, ``plan --gpu-mem``, and ``--gpu CODE`` that selects rows of that code without relabelling
another."""

from __future__ import annotations

import json
import re

import pytest

from trainfit.catalog import _store, list_instances
from trainfit.catalog.gpus import get_gpu
from trainfit.cli import main
from trainfit.errors import CatalogError

SC_DUMPS = "https://github.com/SpareCores/sc-data-dumps/"


@pytest.fixture(autouse=True)
def _fresh_catalog(monkeypatch, tmp_path):
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", "none")
    monkeypatch.setenv("TRAINFIT_CACHE_DIR", str(tmp_path / "cache"))
    _store.reset_cache()
    yield
    _store.reset_cache()


def _alibaba(prefixes: tuple[str, ...]):
    return [i for i in list_instances(provider="alibaba") if i.instance_type.startswith(prefixes)]


@pytest.mark.parametrize("prefixes,gpu", [
    (("ecs.gn7e-", "ecs.ebmgn7e.", "ecs.ebmgn7ex."), "A100-80GB-SXM"),
    (("ecs.ebmgn7vx.",), "A800-80GB-SXM"),
    (("ecs.gn7-", "ecs.ebmgn7."), "A100-40GB-SXM"),
    (("ecs.gn8v", "ecs.ebmgn8v."), "ALI-GPU-H-96GB"),
    (("ecs.gn8e",), "ALI-GPU-H-e-141GB"),
])
def test_families_have_the_gpu_describe_instance_types_names(prefixes, gpu):
    rows = _alibaba(prefixes)
    assert rows
    for r in rows:
        assert r.gpu == gpu and r.gpu_count, r.instance_type
        assert SC_DUMPS in r.source and r.as_of, r.instance_type
        # the per-GPU memory the dump states (MiB, quoted in the notes) is the memory of the GPU the row names
        mib = re.search(r"(\d{5,6}) MiB per GPU|(\d) x (\d{5,6}) MiB", r.notes or "")
        assert mib, r.instance_type
        per_gpu_mib = int(mib.group(1) or mib.group(3))
        assert get_gpu(r.gpu).mem_gib * 1024 == per_gpu_mib, r.instance_type


def test_a_gpu_known_by_memory_only_takes_speed_from_a_named_class_and_says_so():
    import csv
    import io
    from importlib import resources

    g, h20 = get_gpu("ALI-GPU-H-96GB"), get_gpu("H20")
    assert get_gpu("GPU H") is g  # the name DescribeInstanceTypes gives
    assert g.mem_gib == 96 and g.speed_from == "H20"
    assert g.bf16_dense_tflops == h20.bf16_dense_tflops and g.arch == h20.arch
    assert "bf16_dense_tflops" in g.assumed and "mem_gib" not in g.assumed
    assert g.mem_bandwidth_gbps == 4000 and "mem_bandwidth_gbps" not in g.assumed  # its own (ECS doc)
    # the bundled data itself invents nothing: the assumed figures are empty in gpus.csv
    text = resources.files("trainfit.catalog").joinpath("data/gpus.csv").read_text(encoding="utf-8")
    raw = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    for name in ("ALI-GPU-H-96GB", "GU8T"):
        assert raw[name]["bf16_dense_tflops"] == "" and raw[name]["arch"] == "" and raw[name]["speed_from"] == "H20"


@pytest.mark.parametrize("speed_from", ["H2O", "GU8T", "ALI-GPU-H-96GB"])
def test_speed_from_must_name_another_gpu_with_its_own_figures(tmp_path, monkeypatch, speed_from):
    ov = tmp_path / "catalog.yaml"
    ov.write_text("gpus:\n  - name: ALI-GPU-H-96GB\n    speed_from: " + speed_from
                  + "\n    source: https://example.com/x\n    as_of: 2026-12-06\n", encoding="utf-8")
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", str(ov))
    _store.reset_cache()
    with pytest.raises(CatalogError) as e:
        get_gpu("A10")
    assert "speed_from" in e.value.message


def _plan_json(capsys, *argv: str) -> dict:
    rc = main(["plan", *argv, "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def test_lingjun_plans_on_a_sourced_spec_without_gpu(capsys):
    doc = _plan_json(capsys, "Qwen3-30B-A3B", "--method", "full", "--tokens", "1B", "--resource-class", "pai-lingjun")
    assert doc["plans"]
    p = doc["plans"][0]
    assert p["instance_type"] == "ml.gu8tf.8.46xlarge" and p["gpu"] == "GU8T"
    assert p["gpu_spec"]["mem_gib"] == 96 and p["gpus_per_node"] == 8
    assert any("assumed from H20" in w for w in p["warnings"])
    codes = {r["instance_type"]: r["code"] for r in doc["rejected"]}
    assert codes["ml.gu7xf.c96m1600.8-gu108"] == "unknown-gpu-memory"


def test_gpu_code_selects_its_rows_and_never_relabels_another(capsys):
    """`--gpu GU108` used to plan the GU100 row as GU108."""
    doc = _plan_json(capsys, "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--resource-class", "pai-lingjun",
                     "--gpu", "GU108", "--gpu-mem", "80")
    assert doc["plans"]
    for p in doc["plans"]:
        assert p["instance_type"].endswith("gu108") and p["gpu"] == "GU108"
    assert not [r for r in doc["rejected"] if "gu100" in r["instance_type"]]


def test_gpu_mem_sizes_a_code_and_says_the_memory_is_the_users(capsys):
    rc = main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--resource-class", "pai-lingjun",
               "--gpu", "GU108", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 or not doc["plans"]
    rej = [r for r in doc["rejected"] if r["code"] == "unknown-gpu-memory"]
    assert rej and all("--gpu-mem" in r["fix"] for r in rej)
    doc = _plan_json(capsys, "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--resource-class", "pai-lingjun",
                     "--gpu", "GU108", "--gpu-mem", "64")
    p = doc["plans"][0]
    assert p["gpu_mem_gib"] == 64 and p["gpu_spec"]["mem_from_user"] is True
    assert any("from --gpu-mem" in w and "assumed from H20" in w for w in p["warnings"])
    # the plan file reads back with the user's memory (render sizes nothing again)
    from trainfit.plan.types import Plan

    assert Plan.from_dict(p).gpu_spec.mem_gib == 64


def test_gpu_mem_never_overrides_a_known_memory(capsys):
    doc = _plan_json(capsys, "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--provider", "alibaba",
                     "--gpu", "A100-80GB", "--gpu-mem", "10")
    assert doc["plans"] and {p["gpu_mem_gib"] for p in doc["plans"]} == {80}
    assert not any("--gpu-mem" in w for p in doc["plans"] for w in p["warnings"])


def test_alibaba_a100_plans_and_h_class_rows_are_candidates(capsys):
    doc = _plan_json(capsys, "Qwen3-14B", "--method", "full", "--tokens", "2B", "--provider", "alibaba",
                     "--gpu", "A100-80GB")
    assert doc["plans"] and {p["gpu"] for p in doc["plans"]} == {"A100-80GB-SXM"}
    gn7e = {i.instance_type for i in _alibaba(("ecs.gn7e-", "ecs.ebmgn7e.", "ecs.ebmgn7ex."))}
    assert {p["instance_type"] for p in doc["plans"]} <= gn7e
    doc = _plan_json(capsys, "Qwen3-14B", "--method", "full", "--tokens", "2B", "--provider", "alibaba")
    gpus = {p["gpu"] for p in doc["plans"]}
    assert {"A100-80GB-SXM", "ALI-GPU-H-96GB"} <= gpus


def test_a_named_model_of_the_same_memory_stands_for_a_part_known_by_memory(capsys):
    doc = _plan_json(capsys, "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--provider", "alibaba",
                     "--gpu", "H20")
    assert doc["plans"] and {p["gpu"] for p in doc["plans"]} == {"H20"}
    assert all(any("planned as H20 because you passed --gpu H20" in w for w in p["warnings"]) for p in doc["plans"])
    # without a provider, --gpu H20 asks for H20s anywhere: it says nothing about Alibaba's unnamed 96 GB part
    doc = _plan_json(capsys, "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--gpu", "H20", "--max-gpus", "8")
    assert doc["plans"] and not [p for p in doc["plans"] if p["provider"] == "alibaba"]
    # an 80 GB model is not the 96 GB part: no relabelling, one error naming the GPUs Alibaba has
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--provider", "alibaba",
                 "--gpu", "H800"]) == 2
    assert "ALI-GPU-H-96GB" in capsys.readouterr().err


def test_memory_on_an_alibaba_a100_instance_gives_a_verdict(capsys):
    assert main(["memory", "Qwen3-14B", "--method", "lora", "--instance-type", "ecs.gn7e-c16g1.32xlarge",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"] == "A100-80GB-SXM" and out["verdict"] == "fits" and out["gpu_mem_gib"] == 80
    main(["memory", "Qwen3-14B", "--method", "lora", "--instance-type", "ecs.gn8v-8x.48xlarge", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["gpu_mem_gib"] == 96 and any("assumed from H20" in w for w in out["warnings"])


def test_memory_gpu_on_instance_rules():
    from trainfit.catalog.instances import get_instance, gpu_on_instance
    from trainfit.errors import InputError

    gu100 = get_instance("ml.gu7ef.c96m1600.8-gu100")
    assert gpu_on_instance(gu100, "H800") == "H800"  # a model for an undocumented code: the user's word
    with pytest.raises(InputError):
        gpu_on_instance(gu100, "GU108")  # a code is never another code
    gn8v = get_instance("ecs.gn8v-8x.48xlarge")
    assert gpu_on_instance(gn8v, "H20") == "H20"
    with pytest.raises(InputError):
        gpu_on_instance(gn8v, "H800")  # 80 GB is not the 96 GB part
    with pytest.raises(InputError):
        gpu_on_instance(get_instance("ecs.gn7e-c16g1.32xlarge"), "H100")


def test_gpu_mem_is_one_option_for_cli_and_web():
    from trainfit.options import PLAN_OPTIONS

    opt = next(o for o in PLAN_OPTIONS if o.name == "gpu_mem")
    assert opt.parse("gpu_mem", "96") == 96
    with pytest.raises(Exception):
        opt.parse("gpu_mem", "0")


def test_check_reads_the_plans_gpu_mem_back(capsys, tmp_path):
    """A job rendered from a `--gpu-mem` plan is checked with that memory (the header carries it), not reported as
    'memory not in the catalog'; an edit that no longer fits is an oom that says the memory was the user's."""
    doc = _plan_json(capsys, "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--resource-class", "pai-lingjun",
                     "--gpu", "GU108", "--gpu-mem", "96")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["render", "--plan", str(plan_file), "--pick", "1", "--target", "swift",
                 "--out", str(tmp_path / "job")]) == 0
    capsys.readouterr()
    script = tmp_path / "job" / "swift_sft.sh"
    main(["check", str(script), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert not [v for v in res["violations"] if v["rule"] == "memory-fit"]
    text = script.read_text(encoding="utf-8")
    assert '"gpu_mem_gib_user":96' in text
    script.write_text(text.replace('"gpu_mem_gib_user":96', '"gpu_mem_gib_user":8'), encoding="utf-8")
    main(["check", str(script), "--json"])
    res = json.loads(capsys.readouterr().out)
    oom = [v for v in res["violations"] if v["rule"] == "memory-fit"]
    assert oom and oom[0]["severity"] == "error" and "--gpu-mem" in oom[0]["message"]


def test_web_plan_takes_gpu_mem_like_the_cli():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from trainfit.web.app import create_app

    body = {"model": "Qwen3-8B", "method": "lora", "tokens": "100M", "resource_class": "pai-lingjun", "gpu": "GU108",
            "gpu_mem": 64}
    with TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        r = c.post("/api/plan", json=body)
    assert r.status_code == 200, r.text
    plans = r.json()["plans"]
    assert plans and {p["gpu_mem_gib"] for p in plans} == {64} and {p["gpu"] for p in plans} == {"GU108"}


def test_catalog_show_marks_assumed_figures(capsys):
    assert main(["catalog", "show", "gpus"]) == 0
    out = capsys.readouterr().out
    assert "148*" in out and "ALI-GPU-H-96GB from H20" in out
    row = next(line for line in out.splitlines() if "GU8T" in line and "│" in line)
    cells = [c.strip() for c in row.split("│")]
    assert cells[2] == "96" and "148*" in cells  # the memory is the source's, the TFLOP/s assumed


def test_memory_and_render_size_a_code_with_gpu_mem_as_plan_does(capsys):
    """`memory --instance-type <GU108 spec> --gpu-mem 96` answered 'pass --gpu-mem GIB'; render without a plan file
    (service.plan_for) sizes and times the code the same way as plan."""
    assert main(["memory", "Qwen3-8B", "--method", "lora", "--instance-type", "ml.gu7xf.c96m1600.8-gu108",
                 "--gpu-mem", "96", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"] == "GU108" and out["gpu_mem_gib"] == 96 and out["verdict"] == "fits"
    assert any("from --gpu-mem" in w for w in out["warnings"])
    from trainfit.models import get_model
    from trainfit.service import plan_for
    from trainfit.workload import Workload

    p = plan_for(get_model("Qwen3-8B"), Workload(method="lora", gpus=8, gpus_per_node=8),
                 instance_type="ml.gu7xf.c96m1600.8-gu108", gpu_mem_gib=96, tokens=1e8)
    assert p.gpu == "GU108" and p.gpu_spec.mem_from_user and p.tokens_per_s
    assert p.gpu_spec.bf16_dense_tflops == get_gpu("H20").bf16_dense_tflops
    assert any("assumed from H20" in w for w in p.warnings)
