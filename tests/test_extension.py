"""Extending trainfit from outside ``src/`` (issue 30): a render target registered here, with no file of the package
touched, is planned for, rendered and checked by the same service functions the CLI and the web page call."""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

import pytest

from trainfit.check import check_file
from trainfit.launch import RenderOptions
from trainfit.targets import (JobReader, TargetSpec, plan_targets, register_target, render_targets,
                                     target_framework, unregister_target)
from trainfit.models import get_model
from trainfit.options import workload_from_values
from trainfit.service import plan_for, render_plan, write_rendered

FILE = "fake_job.json"


def _applies(ctx) -> str | None:
    return "fake runs one node only" if ctx.nodes > 1 else None


def _render(ctx) -> dict[str, str]:
    doc = {"header": ctx.header_lines(), "model": ctx.model_id, "nodes": ctx.nodes,
           "gpus_per_node": ctx.gpus_per_node, "gpu": ctx.plan.gpu, "micro_batch": ctx.workload.micro_batch,
           "checkpoints": ctx.checkpoint_uri, "region": ctx.region}
    return {FILE: json.dumps({"fake_job": doc}, indent=1) + "\n"}


WRITER = types.SimpleNamespace(FILES=(FILE,), applies=_applies, render=_render)


def _read(path: str, text: str, facts) -> None:
    doc = json.loads(text)["fake_job"]
    facts.nodes, facts.gpus_per_node, facts.gpu = doc["nodes"], doc["gpus_per_node"], doc["gpu"]
    facts.settings["micro_batch"] = doc["micro_batch"]
    facts.mounts.append(doc["checkpoints"])


SPEC = TargetSpec(name="fakeq", writer=WRITER, runs="a fake launcher (the HF Trainer)", frameworks=("hf-trainer",),
                  engine=lambda wl: "hf-trainer",
                  layout_reason=lambda wl: "fakeq writes data parallel only" if wl.tp * wl.pp * wl.ep > 1 else None,
                  reader=JobReader(kind="fake-json", matches=lambda path, text: '"fake_job"' in text[:200], read=_read))


@pytest.fixture
def fake_target():
    register_target(SPEC)
    yield SPEC
    unregister_target(SPEC.name)


def test_a_registered_target_is_planned_rendered_and_checked(fake_target, tmp_path):
    assert "fakeq" in plan_targets() and "fakeq" in render_targets()
    wl = workload_from_values({"method": "lora", "seq_len": 2048, "gpus": 8})
    assert target_framework("fakeq", wl) == "hf-trainer"
    plan = plan_for(get_model("Qwen3-8B"), wl, instance_type="generic-8xH100", tokens=1e8, target="fakeq")
    assert plan.target == "fakeq" and plan.framework == "hf-trainer"
    res = render_plan(plan, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "fakeq")
    assert list(res.files) == [FILE]
    write_rendered(res, tmp_path)
    r = check_file(tmp_path / FILE)
    assert r.kind == "fake-json" and r.ok, [v.message for v in r.violations]
    # the file's plan header is read back like a built-in target's
    doc = json.loads((tmp_path / FILE).read_text())["fake_job"]
    assert any(line.startswith("trainfit-plan {") for line in doc["header"])


def test_all_renders_a_registered_target_and_skips_it_with_its_reason(fake_target):
    wl = workload_from_values({"method": "lora", "seq_len": 2048, "gpus": 16})
    plan = plan_for(get_model("Qwen3-8B"), wl, instance_type="generic-8xH100", tokens=1e8)
    res = render_plan(plan, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "all")
    assert res.skipped.get("fakeq") == "fake runs one node only"


def test_the_planner_searches_only_the_layouts_a_registered_target_writes(fake_target):
    from trainfit.targets import layout_reason, search_reason

    wl = workload_from_values({"gpus": 8, "tp": 2})
    assert layout_reason("fakeq", wl) == "fakeq writes data parallel only"
    assert search_reason("fakeq", None, wl) == "fakeq writes data parallel only"


def test_unregistered_targets_are_gone_and_names_are_checked():
    assert "fakeq" not in plan_targets()
    with pytest.raises(ValueError):
        register_target(TargetSpec(name="swift", writer=WRITER))  # taken
    with pytest.raises(ValueError):
        TargetSpec(name="Bad Name", writer=WRITER)
    with pytest.raises(ValueError):
        TargetSpec(name="rlish", writer=WRITER, kind="rl")  # an RL target names its --rl-framework


def test_the_cli_plans_renders_and_checks_through_a_registered_target(fake_target, tmp_path, capsys):
    from trainfit.cli import main

    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1e8", "--target", "fakeq",
                 "--instance-type", "generic-8xH100", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["plans"][0]["target"] == "fakeq"
    (tmp_path / "plan.json").write_text(out)
    assert main(["render", "--plan", str(tmp_path / "plan.json"), "--pick", "1", "--out", str(tmp_path / "job")]) == 0
    capsys.readouterr()
    assert (tmp_path / "job" / FILE).is_file()
    assert main(["check", str(tmp_path / "job" / FILE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "fake-json"
    # the web page's option table offers it
    from trainfit.service_web import option_specs

    target = next(o for o in option_specs()["plan"] if o["name"] == "target")
    assert "fakeq" in target["choices"]


# ------------------------------------------------------------------------------------------ a provider from outside
from trainfit.providers.registry import platform_of, provider_names, unregister_provider  # noqa: E402

#: The whole provider, as a plug-in ships one: a package whose import registers its ProviderSpec (rules.yaml, a
#: refresh, regions), its catalog rows (catalog.yaml) and a price list its refresh reads (docs/architecture.md).
FAKE_PROVIDER = Path(__file__).parent / "data" / "fake_provider"


@pytest.fixture
def fake_provider(monkeypatch):
    from trainfit.catalog import reset_cache, set_overlay_path

    monkeypatch.syspath_prepend(str(FAKE_PROVIDER.parent))
    module = importlib.import_module("fake_provider")
    set_overlay_path(module.CATALOG)
    reset_cache()
    yield module
    set_overlay_path(None)
    reset_cache()
    unregister_provider("fakecloud")
    for name in [m for m in sys.modules if m == "fake_provider" or m.startswith("fake_provider.")]:
        del sys.modules[name]


def test_a_registered_provider_is_planned_priced_rendered_and_checked(fake_provider, fake_target, tmp_path, capsys):
    from trainfit.cli import main

    assert "fakecloud" in provider_names()
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1e9", "--provider", "fakecloud",
                 "--target", "fakeq", "--json"]) == 0
    out = capsys.readouterr().out
    best = json.loads(out)["plans"][0]
    assert best["instance_type"] == "fake-8xh100" and best["provider"] == "fakecloud"
    assert best["currency"] == "CNY" and best["price_per_hour"] == 100.0 and best["cost"] > 0
    (tmp_path / "plan.json").write_text(out)
    assert main(["render", "--plan", str(tmp_path / "plan.json"), "--pick", "1", "--out", str(tmp_path / "job")]) == 0
    capsys.readouterr()
    # no region in the plan or the instance row: the provider's default region for the class
    assert json.loads((tmp_path / "job" / FILE).read_text())["fake_job"]["region"] == "fk-north-1"
    assert main(["check", str(tmp_path / "job" / FILE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "fake-json"
    # its rules.yaml is one of the platform rules, on its platform, and blocks a plan over its cap
    from trainfit.rules import evaluate_instance, load_rules

    assert "fakecloud-gpu-cap" in {r.id for r in load_rules()}
    assert {v.rule for v in evaluate_instance("fake-8xh100", nodes=2, resource_class="fake-gpu")} >= {"fakecloud-gpu-cap"}
    assert platform_of("fake-gpu") == "fakecloud"
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1e9", "--provider", "fakecloud", "--gpus", "16",
                 "--json"]) != 0
    assert "fakecloud-gpu-cap" in capsys.readouterr().out  # the rejected table names the rule


def test_a_registered_provider_refreshes_its_prices_through_the_cli(fake_provider, capsys):
    from trainfit.cli import main

    # before a refresh, no regional price: --region says how to get one, --region says how to get one, the provider's way
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1e9", "--provider", "fakecloud", "--region",
                 "fk-south-1", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("--provider fakecloud --public-prices --url FILE" in n for n in notes), notes
    price_list = FAKE_PROVIDER / "price_list.json"
    assert main(["catalog", "refresh", "--provider", "fakecloud", "--public-prices", "--url", str(price_list),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["provider"] == "fakecloud" and out["prices"] == 2 and out["regions"] == ["fk-north-1", "fk-south-1"]
    assert out["version"] == "2026-12" and out["found_via"] == "--url"
    # the refreshed regional prices price its plans
    for region, price in (("fk-south-1", 88.0), ("fk-north-1", 96.0)):
        assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1e9", "--provider", "fakecloud",
                     "--region", region, "--json"]) == 0
        best = json.loads(capsys.readouterr().out)["plans"][0]
        assert best["instance_type"] == "fake-8xh100" and best["price_per_hour"] == price, best
    # what its refresh source does not do, it says
    assert main(["catalog", "refresh", "--provider", "fakecloud"]) != 0
    assert "add --public-prices" in capsys.readouterr().err
    # the CLI offers it: refresh's choices, plan --help's list of providers
    assert main(["catalog", "refresh", "--help"]) == 0
    assert "{pai,ecs,tencent,alibaba,fakecloud}" in capsys.readouterr().out
    assert main(["plan", "--help"]) == 0
    assert "alibaba | tencent | generic | fakecloud (default: all)" in " ".join(capsys.readouterr().out.split())


def test_what_a_provider_says_about_itself_is_used_where_it_matters():
    from trainfit.plan.rank import PRICE_HOWTO_DEFAULT
    from trainfit.providers.registry import provider_spec, rents_whole_nodes

    # clouds rent a node whole, a cluster of your own shares it (plan limits, render's node check, monitoring)
    assert rents_whole_nodes("alibaba") and rents_whole_nodes("tencent") and rents_whole_nodes("no-such-cloud")
    assert not rents_whole_nodes("generic") and not rents_whole_nodes("private")
    # spot notices come from the clouds' metadata services (`trainfit watch`'s notice sources, which also know
    # clouds trainfit does not plan for)
    from trainfit.providers.registry import default_region, provider_specs, refresh_sources
    from trainfit.watch.notice import PROVIDERS as NOTICE_SOURCES

    assert provider_spec("alibaba").spot_notice == "alibaba" and provider_spec("generic").spot_notice is None
    assert all(s.spot_notice in NOTICE_SOURCES for s in provider_specs() if s.spot_notice)
    # how to price an instance type: the provider's own way, else the overlay
    assert "public-prices" in provider_spec("alibaba").price_howto
    assert provider_spec("private").price_howto == PRICE_HOWTO_DEFAULT
    # where live specs and prices come from (`catalog refresh --provider`), a class's platform, a render's region
    assert [r.name for r in refresh_sources()] == ["pai", "ecs", "tencent", "alibaba"]
    assert platform_of("pai-lingjun") == "pai-dlc" and platform_of("ecs") == "ecs" and platform_of(None) == "generic"
    assert default_region("pai-lingjun") == "cn-wulanchabu" and default_region("tencent-tione") == "cn-hangzhou"


def test_a_platform_target_plans_only_its_providers_instance_types(fake_provider):
    from trainfit.cli import main
    from trainfit.targets import target_spec

    assert target_spec("dlc").provider == "alibaba"
    spec = TargetSpec(name="fakeplat", writer=WRITER, runs="a fake platform job", frameworks=("hf-trainer",),
                      engine=lambda wl: "hf-trainer", provider="fakecloud")
    register_target(spec)
    try:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1e9", "--target", "fakeplat",
                         "--top", "20", "--json"]) == 0
        plans = json.loads(out.getvalue())["plans"]
        assert plans and {p["provider"] for p in plans} == {"fakecloud"}
    finally:
        unregister_target("fakeplat")
