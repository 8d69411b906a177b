"""Issue 26, item 4: one rule for how GPUs form tensor/pipeline/context/expert-parallel groups
(`workload.layout_error`), the same in memory, plan, render and check, and a rejection that names its true cause.

Megatron-Core re-splits one pipeline stage's tp x cp x dp ranks into ep x edp expert ranks (expert tensor
parallelism 1), so expert parallelism over data x context (x tensor) ranks is valid where `ep` does not divide dp."""

from __future__ import annotations

import itertools

import pytest

from trainfit.check import check_file
from trainfit.errors import WorkloadError
from trainfit.estimate.memory import estimate_memory
from trainfit.launch import RenderOptions
from trainfit.models import get_model
from trainfit.plan import PlanRequest, plan
from trainfit.service import plan_for, render_plan, write_rendered
from trainfit.workload import Workload, layout_error

MOE = get_model("Qwen3-30B-A3B")


def _megatron_groups_ok(gpus, tp, pp, cp, ep):
    """Megatron-Core's own conditions written out from initialize_model_parallel: world % (tp*pp*cp) and
    world % (etp*ep*pp) with etp = 1."""
    return gpus % (tp * pp * cp) == 0 and gpus % (ep * pp) == 0


@pytest.mark.parametrize("gpus,tp,pp,cp,ep", [
    (g, tp, pp, cp, ep) for g, tp, pp, cp, ep in itertools.product((8, 16, 32), (1, 2, 4), (1, 2), (1, 2, 4), (2, 4, 8, 16))
])
def test_the_group_rule_is_megatrons(gpus, tp, pp, cp, ep):
    wl_kw = dict(gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, seq_len=8192, strategy="zero1")
    ok = _megatron_groups_ok(gpus, tp, pp, cp, ep)
    if ok:
        Workload(**wl_kw)  # valid: constructs
    else:
        with pytest.raises(WorkloadError):
            Workload(**wl_kw)


def test_ep_over_data_and_context_ranks_is_valid_where_dp_alone_is_too_small():
    wl = Workload(method="full", gpus=16, tp=2, cp=4, ep=8, seq_len=32768, strategy="zero1")
    assert wl.dp == 2 and wl.dp % wl.ep  # the old rule ("ep must divide the data-parallel size") refused it
    est = estimate_memory(MOE, wl)
    # Megatron's distributed optimizer shards dense states over dp x cp (and tp splits them), expert states over the
    # expert data-parallel group gpus / (pp x ep) (and ep splits them): either way 1 / (gpus / pp) of the states
    # per GPU, whatever tp, cp and ep, up to the few replicated norm weights
    for other in (dict(tp=1, cp=1, ep=8), dict(tp=1, cp=1, ep=16), dict(tp=2, cp=4, ep=16), dict(tp=4, cp=2, ep=4)):
        o = estimate_memory(MOE, wl.with_(**other)).breakdown_gib["optimizer"]
        assert o == pytest.approx(est.breakdown_gib["optimizer"], rel=0.005), other
    # and that is the whole model's Adam states (fp32 master + 2 moments = 12 B/param) over 16 GPUs
    assert est.breakdown_gib["optimizer"] == pytest.approx(MOE.total_params * 12 / 16 / 2**30, rel=0.01)


def test_rejections_name_their_cause():
    e = layout_error(Workload(gpus=16, pp=2, ep=1).with_(ep=1), MOE)
    assert e is None
    with pytest.raises(WorkloadError, match="pipeline stage"):
        Workload(gpus=16, pp=2, ep=16)
    with pytest.raises(WorkloadError, match="128 experts"):
        estimate_memory(MOE, Workload(gpus=48, ep=6, strategy="zero1"))
    with pytest.raises(WorkloadError, match="key/value heads"):
        estimate_memory(MOE, Workload(gpus=8, tp=8, strategy="zero1"))
    with pytest.raises(WorkloadError, match="more pipeline stages"):
        estimate_memory(get_model("Qwen3-0.6B"), Workload(gpus=32, pp=32))
    err = layout_error(Workload(gpus=16, pp=2, ep=1), MOE)
    assert err is None


def test_plan_rejects_a_pinned_layout_with_its_cause_not_no_config():
    wl = Workload(method="full", seq_len=4096)
    res = plan(PlanRequest(model=MOE, workload=wl, tokens=1e9, gpu="H800", pins={"ep": 6}))
    assert not res.plans
    assert {r.code for r in res.rejected} == {"layout"}
    assert all("128 experts" in r.reason for r in res.rejected)


def test_plan_render_check_agree_on_ep_over_data_x_context(tmp_path):
    """Done-when of issue 26: a Megatron layout with EP over data x context ranks plans, renders and checks."""
    wl = Workload(method="full", seq_len=32768)
    res = plan(PlanRequest(model=MOE, workload=wl, tokens=1e9, gpu="H800",
                           pins={"gpus": 16, "tp": 2, "cp": 4, "ep": 8}))
    assert res.plans, [r.reason for r in res.rejected]
    p = res.plans[0]
    assert (p.workload.tp, p.workload.cp, p.workload.ep, p.workload.dp) == (2, 4, 8, 2)
    out = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "swift")
    write_rendered(out, tmp_path)
    text = (tmp_path / "swift_sft.sh").read_text()
    assert "--expert_model_parallel_size 8" in text and "--context_parallel_size 4" in text
    assert "--expert_tensor_parallel_size 1" in text
    r = check_file(tmp_path / "swift_sft.sh")
    assert not [v for v in r.violations if v.severity == "error"], [v.message for v in r.violations]
    assert not [v for v in r.violations if "could not be modelled" in v.message or v.rule == "parallel-layout"]


def test_render_without_a_plan_file_uses_the_same_rule():
    wl = Workload(method="full", gpus=16, tp=2, cp=4, ep=8, seq_len=32768, strategy="zero1")
    p = plan_for(MOE, wl, instance_type="generic-8xH100", tokens=1e8)
    assert p.workload.ep == 8
    with pytest.raises(WorkloadError, match="128 experts"):
        plan_for(MOE, Workload(method="full", gpus=48, ep=6, strategy="zero1"), instance_type="generic-8xH100")


@pytest.mark.parametrize("etp,startable", [(1, True), (2, True), (4, False)])
def test_check_applies_the_rule_with_the_files_expert_tensor_parallel_size(tmp_path, etp, startable):
    """A job file that sets expert_tensor_parallel_size > 1 splits experts over etp x ep ranks of a stage: check says
    when Megatron-Core cannot form those groups, instead of sizing the file as expert TP 1."""
    wl = Workload(method="full", gpus=16, tp=2, cp=4, ep=8, seq_len=32768, strategy="zero1")
    p = plan_for(MOE, wl, instance_type="generic-8xH100", tokens=1e8)
    write_rendered(render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "swift"), tmp_path)
    f = tmp_path / "swift_sft.sh"
    f.write_text(f.read_text().replace("--expert_tensor_parallel_size 1", f"--expert_tensor_parallel_size {etp}"))
    r = check_file(f)
    cannot = [v for v in r.violations if v.rule == "parallel-layout" or "could not be modelled" in v.message]
    if startable:
        assert not cannot, [v.message for v in cannot]
    else:  # Megatron-Core refuses it at start: an error (submit stops on it) that names the cause
        assert cannot and "expert tensor parallelism 4" in cannot[0].message
        assert cannot[0].rule == "parallel-layout" and cannot[0].severity == "error" and not r.ok
