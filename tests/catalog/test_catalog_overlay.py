"""User overlay: merge by key, validation listing every problem, safe YAML, CLI validate/show."""

from __future__ import annotations

import json
import textwrap

import pytest

from trainfit.catalog import _store, get_gpu, get_instance, list_instances
from trainfit.catalog import set_overlay_path
from trainfit.catalog.overlay import validate_overlay
from trainfit.cli import main
from trainfit.errors import CatalogError

GOOD = textwrap.dedent("""
    gpus:
      - name: MyCo-A100
        aliases: [myco-a100, lab-a100]
        vendor: nvidia
        form_factor: sxm4
        mem_gb_marketed: 80
        mem_gib: 80
        mem_type: HBM2e
        mem_bandwidth_gbps: 2039
        bf16_dense_tflops: 312
        verified: no
        source: our inventory
        as_of: 2026-11-30
      - name: GU30            # fill a field the bundled row leaves empty
        mem_bandwidth_gbps: 600
        source: our benchmark notes
        as_of: 2026-11-30
    instances:
      - provider: alibaba
        resource_class: pai-public
        instance_type: ecs.gn7i-c8g1.2xlarge
        price_per_hour: 12.5
        currency: CNY
        regions: [cn-hangzhou]
        source: our Alibaba bill, November 2026
        as_of: 2026-11-30
      - provider: private
        resource_class: private
        instance_type: lab-8xmyco
        gpu: myco-a100
        gpu_count: 8
        intra_node_link: nvlink
        inter_node: rdma
        inter_node_gbit_per_s: 800
        price_per_hour: 100
        currency: USD
        verified: yes
        source: lab wiki
        as_of: 2026-11-30
""")


def _write(tmp_path, text, name="catalog.yaml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_overlay_from_env_merges_by_key(tmp_path, monkeypatch):
    p = _write(tmp_path, GOOD)
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", str(p))
    inst = get_instance("ecs.gn7i-c8g1.2xlarge")
    # overlay fields replaced ...
    assert inst.price_per_hour == 12.5 and inst.currency == "CNY" and inst.regions == ("cn-hangzhou",)
    # ... bundled fields kept
    assert inst.gpu == "A10" and inst.gpu_count == 1 and inst.vcpu == 8
    assert inst.origin.startswith("overlay:") and "our Alibaba bill" in inst.source
    assert "pai-python-sdk" in inst.source  # earlier source kept
    lab = get_instance("lab-8xmyco")
    assert lab.gpu == "MyCo-A100" and lab.gpu_spec.mem_gib == 80  # alias resolved to the canonical name
    assert get_gpu("lab a100").name == "MyCo-A100"
    gu30 = get_gpu("GU30")
    assert gu30.mem_bandwidth_gbps == 600 and gu30.mem_gib == 24  # merged, not replaced
    assert len(list_instances(provider="private")) == 1


def test_overlay_default_location_and_explicit_path(tmp_path, isolated_catalog):
    assert get_instance("ecs.gn7i-c8g1.2xlarge").price_per_hour is None
    cfg = tmp_path / "config" / "trainfit"
    cfg.mkdir(parents=True)
    (cfg / "catalog.yaml").write_text(GOOD, encoding="utf-8")
    assert get_instance("ecs.gn7i-c8g1.2xlarge").price_per_hour == 12.5  # picked up without a reset
    other = _write(tmp_path, GOOD.replace("12.5", "9.75"), "other.yaml")
    set_overlay_path(other)
    assert get_instance("ecs.gn7i-c8g1.2xlarge").price_per_hour == 9.75


def test_overlay_can_be_switched_off(tmp_path, monkeypatch):
    cfg = tmp_path / "config" / "trainfit"
    cfg.mkdir(parents=True)
    (cfg / "catalog.yaml").write_text(GOOD, encoding="utf-8")
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", "none")
    assert get_instance("ecs.gn7i-c8g1.2xlarge").price_per_hour is None


def test_missing_explicit_overlay_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", str(tmp_path / "nope.yaml"))
    with pytest.raises(CatalogError) as ei:
        get_gpu("A100")
    assert "does not exist" in ei.value.message


BAD = textwrap.dedent("""
    gpus:
      - name: Weird
        mem_gib: lots
        verified: maybe
        source: x
        as_of: 2026-13-01
      - name: Clash
        aliases: [A100]
        verified: no
        source: x
        as_of: 2026-11-30
    instances:
      - provider: alibaba
        resource_class: pai-public
        instance_type: ecs.gn7i-c8g1.2xlarge
        price_per_hour: 3
      - provider: private
        resource_class: private
        instance_type: box
        gpu: H1000
        gpu_count: -2
        price_per_hour: 5
        currency: BTC
        colour: blue
        verified: yes
        source: me
        as_of: 2026-11-30
    extras: 1
""")


def test_validate_lists_every_problem(tmp_path):
    problems = validate_overlay(_write(tmp_path, BAD))
    text = "\n".join(problems)
    for needle in ["mem_gib='lots'", "verified='maybe'", "as_of=", "source is required", "as_of is required",
                   "gpu_count=-2 is below", "currency='BTC'", "unknown column 'colour'", "unknown top-level key 'extras'"]:
        assert needle in text, needle
    assert len(problems) >= 9


def test_cross_row_problems(tmp_path):
    text = textwrap.dedent("""
        gpus:
          - {name: Clash, aliases: [A100], verified: no, source: x, as_of: 2026-11-30}
        instances:
          - {provider: private, resource_class: private, instance_type: box, gpu: H1000, gpu_count: 1,
             price_per_hour: 5, verified: yes, source: me, as_of: 2026-11-30}
    """)
    problems = "\n".join(validate_overlay(_write(tmp_path, text)))
    assert "'A100' of 'Clash' is already used by 'A100-80GB-SXM'" in problems
    assert "gpu 'H1000' is not in the GPU catalog" in problems and "did you mean" in problems
    assert "price_per_hour and currency must be given together" in problems


def test_invalid_overlay_raises_with_all_problems(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", str(_write(tmp_path, BAD)))
    with pytest.raises(CatalogError) as ei:
        get_gpu("A100")
    assert ei.value.message.count("\n") >= 9 and "trainfit catalog validate" in ei.value.fix


def test_yaml_is_loaded_safely(tmp_path):
    marker = tmp_path / "pwned"
    text = f"gpus: !!python/object/apply:os.system ['touch {marker}']\n"
    problems = validate_overlay(_write(tmp_path, text))
    assert problems and "not valid YAML" in problems[0]
    assert not marker.exists()


def test_empty_overlay_is_fine(tmp_path):
    assert validate_overlay(_write(tmp_path, "")) == []


def test_cli_validate(tmp_path, capsys):
    assert main(["catalog", "validate", str(_write(tmp_path, GOOD))]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["catalog", "validate", str(_write(tmp_path, BAD, "bad.yaml"))]) == 1
    err = capsys.readouterr().err
    assert "problem(s)" in err and "currency='BTC'" in err and "unknown column 'colour'" in err
    assert main(["catalog", "validate", str(tmp_path / "missing.yaml"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and "no such file" in out["problems"][0]


def test_cli_show_uses_overlay(tmp_path, capsys):
    p = _write(tmp_path, GOOD)
    assert main(["catalog", "--catalog", str(p), "show", "instances", "--provider", "private", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["instance_type"] for r in rows] == ["lab-8xmyco"] and rows[0]["price_per_hour"] == 100
    assert main(["catalog", "show", "gpus", "--json"]) == 0
    gpus = json.loads(capsys.readouterr().out)
    assert any(g["name"] == "MyCo-A100" for g in gpus)


def test_cli_show_bad_overlay_is_a_clean_error(tmp_path, capsys):
    p = _write(tmp_path, BAD)
    assert main(["catalog", "--catalog", str(p), "show", "gpus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: catalog overlay") and "Traceback" not in err
