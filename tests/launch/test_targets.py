"""`--target` and `--framework` agree across plan, render and the web API (issue 12, "the default follows the
render target"): the target -> engine table matches what each writer launches, an explicit --framework wins, a
framework a target cannot run is a clear error, a plan rendered to a target of another engine says so, and plan
files written before the field existed read back."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from trainfit.errors import PlanError, PlanFileError
from trainfit.launch import TARGETS, build_context, render
from trainfit.targets import (engine_mismatch, layout_reason, plan_targets, target_framework, target_spec,
                              target_specs)
from trainfit.models import get_model
from trainfit.plan import PlanRequest, plan
from trainfit.plan.types import Plan
from trainfit.service import plan_for
from trainfit.workload import Workload

MOE = "Qwen3-30B-A3B"
LAYOUTS = {
    "megatron": dict(gpus=16, gpus_per_node=8, tp=2, ep=4, strategy="zero1"),
    "zero3": dict(gpus=8, gpus_per_node=8, strategy="zero3"),
    "zero2": dict(gpus=8, gpus_per_node=8, strategy="zero2"),
    "ddp": dict(gpus=8, gpus_per_node=8, strategy="ddp"),
    "fsdp": dict(gpus=8, gpus_per_node=8, strategy="fsdp"),
}
#: What each layout's launch line must contain when a target runs that engine (read from the writers' output).
ENGINE_MARK = {"megatron": "megatron sft", "deepspeed": "deepspeed", "hf-trainer": None}


def _plan(layout: str, *, target: str | None = None, framework: str | None = None):
    wl = Workload(method="full", seq_len=4096, **LAYOUTS[layout])
    return plan_for(get_model(MOE), wl, gpu="H800", instance_type="ml.gu7xf.8xlarge-gu108", tokens=1e9,
                    target=target, framework=framework)


def _launch_text(files: dict[str, str]) -> str:
    return "\n".join(t for n, t in files.items() if n.endswith((".sh", ".yaml", ".json")))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("target", tuple(s.name for s in target_specs("sft") if s.megatron_layouts_only)
                         + ("llamafactory", "deepspeed"))
def test_mapping_matches_what_the_writer_launches(target, layout):
    """target_framework(target, layout) is the engine the rendered file runs: `megatron sft` for megatron, a
    DeepSpeed config for deepspeed, neither for hf-trainer; a layout the writer refuses is refused by the table."""
    p = _plan(layout)
    ctx = build_context(p)
    why = layout_reason(target, p.workload)
    if why:
        with pytest.raises(Exception, match="does not apply"):
            render(ctx, target)
        return
    files = render(ctx, target).files
    text = _launch_text(files)
    fw = target_framework(target, p.workload)
    assert fw in target_spec(target).frameworks
    if fw == "megatron":
        assert "megatron sft" in text or "_megatron.sft" in text
    elif fw == "deepspeed":
        assert "zero_optimization" in text or "ds_config" in text or "--deepspeed" in text
        assert "megatron sft" not in text and "_megatron.sft" not in text
    else:
        assert "zero_optimization" not in text and "megatron sft" not in text and "_megatron.sft" not in text


def test_default_framework_follows_the_target_and_explicit_wins():
    p = _plan("megatron", target="swift")
    assert (p.target, p.framework) == ("swift", "megatron")
    p = _plan("zero3", target="llamafactory")
    assert (p.target, p.framework) == ("llamafactory", "deepspeed")
    explicit = _plan("megatron", target="swift", framework="hf-trainer")
    assert explicit.framework == "hf-trainer"  # --framework always wins
    assert explicit.tokens_per_s != _plan("megatron", target="swift").tokens_per_s


@pytest.mark.parametrize("target,framework", [("llamafactory", "megatron"), ("deepspeed", "megatron"),
                                              ("swift", "fsdp2"), ("llamafactory", "automodel")])
def test_framework_the_target_cannot_run_is_an_error_with_a_fix(target, framework):
    with pytest.raises(PlanError) as e:
        PlanRequest(model=get_model("Qwen3-8B"), workload=Workload(), tokens=1e9, target=target, framework=framework)
    assert f"cannot run --framework {framework}" in e.value.message and e.value.fix
    rc, out = _cli(["plan", "Qwen3-8B", "--tokens", "1B", "--target", target, "--framework", framework])
    assert rc != 0 and f"cannot run --framework {framework}" in out


def test_megatron_on_a_dense_model_needs_a_megatron_layout():
    with pytest.raises(PlanError, match="tp/pp/ep/cp > 1"):
        PlanRequest(model=get_model("Qwen3-8B"), workload=Workload(), tokens=1e9, target="swift", framework="megatron")
    PlanRequest(model=get_model("Qwen3-8B"), workload=Workload(), tokens=1e9, target="swift", framework="megatron",
                pins={"tp": 2})  # pinned: allowed


def test_plan_searches_only_what_the_target_writes():
    res = plan(PlanRequest(model=get_model("Qwen3-8B"), workload=Workload(method="full"), tokens=1e9,
                           target="llamafactory", pins={"gpus": 8}))
    assert res.plans
    for p in res.plans:
        assert p.target == "llamafactory"
        assert layout_reason("llamafactory", p.workload) is None
        assert p.framework == target_framework("llamafactory", p.workload)
        got = render(build_context(p))  # no target: the plan's
        assert "llamafactory.yaml" in got.files and "swift_sft.sh" not in got.files
        assert not [w for w in got.warnings if not w.startswith("pure bf16")]  # numerics, not the engine


def test_explicit_framework_with_a_target_keeps_layouts_that_run_it():
    res = plan(PlanRequest(model=get_model(MOE), workload=Workload(method="full"), tokens=1e9, target="swift",
                           framework="megatron", pins={"gpus": 8}, gpu="H800"))
    assert res.plans
    assert all(p.workload.uses_megatron and p.framework == "megatron" for p in res.plans)
    dlc = plan(PlanRequest(model=get_model("Qwen3-8B"), workload=Workload(method="lora"), tokens=1e8, target="dlc"))
    assert dlc.plans and all(p.provider == "alibaba" for p in dlc.plans)


def test_render_to_a_target_of_another_engine_warns_with_the_fix(tmp_path):
    p = _plan("ddp", framework="fsdp2")  # planned for native FSDP2; ms-swift runs the HF trainer
    res = render(build_context(p), "swift")
    engine = [w for w in res.warnings if "per-expert" not in w and not w.startswith("pure bf16")]  # a MoE plan also gets the experts warning
    assert len(engine) == 1
    w = engine[0]
    assert "swift runs hf-trainer" in w and "assume fsdp2" in w and "re-plan with --target swift" in w
    assert engine_mismatch("hf-trainer", None, ["swift"], p.workload) == ()
    assert engine_mismatch("deepspeed", None, ["llamafactory"], _plan("zero2").workload) == ()
    many = [w for w in render(build_context(p), "all").warnings if "per-expert" not in w and not w.startswith("pure bf16")]  # one per engine
    assert len(many) == 1 and many[0].startswith("swift, llamafactory, torchrun, dlc, pytorchjob, skypilot run "
                                                  "hf-trainer but")
    # the CLI prints it, and the README carries it
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(p.to_dict()))
    rc, out = _cli(["render", "--plan", str(path), "--target", "swift", "--out", str(tmp_path / "job")])
    assert rc == (1 if p.fit.verdict == "oom" else 0) and "warning: swift runs hf-trainer" in out  # exit table
    assert "## Warnings" in (tmp_path / "job" / "README.md").read_text()


def test_render_without_target_writes_the_plans_target(tmp_path):
    p = _plan("zero3", target="llamafactory")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(p.to_dict()))
    rc, _ = _cli(["render", "--plan", str(path), "--out", str(tmp_path / "job")])
    assert rc == 0
    names = sorted(x.name for x in (tmp_path / "job").iterdir())
    assert names == ["README.md", "ds_config.json", "llamafactory.yaml"]


def test_old_plan_files_read_back_without_target():
    d = _plan("zero3", target="llamafactory").to_dict()
    for k in ("target", "calibration"):
        del d[k]
    p = Plan.from_dict(d)
    assert p.target is None and p.calibration is None
    assert set(render(build_context(p)).files) >= {"swift_sft.sh", "llamafactory.yaml", "ds_config.json"}
    d["target"] = "rm -rf /"
    with pytest.raises(PlanFileError, match="not a launcher"):
        Plan.from_dict(d)


def test_rl_target_sets_the_rl_framework():
    from trainfit.options import plan_request_from_values

    vals = {"rl": "grpo", "steps": 10, "target": "verl", "gpus": 8, "num_generations": 8}
    req = plan_request_from_values(get_model("Qwen3-8B"), vals)
    assert req.rl.rl_framework == "verl" and req.target == "verl"
    with pytest.raises(PlanError, match="runs verl"):
        plan_request_from_values(get_model("Qwen3-8B"), {**vals, "rl_framework": "ms-swift"})
    with pytest.raises(PlanError, match="RL launch"):
        plan_request_from_values(get_model("Qwen3-8B"), {"tokens": 1e9, "target": "verl"})


def test_every_plan_target_is_a_render_target():
    assert set(plan_targets()) <= set(TARGETS) and "monitoring" not in plan_targets()


def _cli(argv):
    from trainfit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue() + err.getvalue()


def test_web_api_takes_target_from_the_option_table():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from trainfit.web.app import create_app

    with TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        specs = c.get("/api/options").json()
        t = next(o for o in specs["plan"] if o["name"] == "target")
        assert t["flag"] == "--target" and t["choices"] == list(plan_targets())
        body = {"model": "Qwen3-0.6B", "tokens": "100M", "max_gpus": 8, "target": "llamafactory"}
        r = c.post("/api/plan", json=body)
        assert r.status_code == 200, r.text
        plans = r.json()["plans"]
        assert plans and {p["target"] for p in plans} == {"llamafactory"}
        _, cli = _cli(["plan", "Qwen3-0.6B", "--tokens", "100M", "--max-gpus", "8", "--target", "llamafactory",
                       "--json"])
        assert json.loads(cli) == r.json()
        r = c.post("/api/plan", json={**body, "framework": "megatron"})
        assert r.status_code == 422 and "cannot run --framework megatron" in r.json()["error"]["message"]
        r = c.post("/api/plan", json={**body, "target": "monitoring"})
        assert r.status_code == 422
        zipped = c.post("/api/render", json={"plan": plans[0]})
        assert zipped.status_code == 200
        import zipfile

        names = [n.split("/")[-1] for n in zipfile.ZipFile(io.BytesIO(zipped.content)).namelist()]
        assert "llamafactory.yaml" in names and "swift_sft.sh" not in names
