"""The planner: what it returns fits, every rejection is explained, pins are honoured, costs add up."""

import json

import pytest

from trainfit.catalog import _store
from trainfit.catalog import set_overlay_path
from trainfit.catalog.gpus import get_gpu
from trainfit.cli import main
from trainfit.estimate.memory import estimate_memory
from trainfit.models import get_model
from trainfit.plan import PlanError, PlanRequest, plan
from trainfit.workload import Workload


def _req(name="Qwen3-8B", **kw):
    wl = kw.pop("workload", Workload(method="full"))
    return PlanRequest(model=get_model(name), workload=wl, tokens=kw.pop("tokens", 1e9), **kw)


@pytest.mark.parametrize("name,wl", [
    ("Qwen3-8B", Workload(method="full", seq_len=4096)),
    ("Qwen3-14B", Workload(method="full")),
    ("Qwen3-8B", Workload(method="lora")),
    ("Qwen3-30B-A3B", Workload(method="full")),
])
def test_every_plan_fits(name, wl):
    req = _req(name, workload=wl)
    res = plan(req)
    assert res.plans
    for p in res.plans:
        est = estimate_memory(req.model, p.workload)
        assert est.reserved_gib <= p.gpu_mem_gib * (1 - req.memory_margin) + 1e-9
        g = get_gpu(p.gpu)
        assert p.gpu_mem_gib == pytest.approx(g.mem_gib * (15 / 16 if (g.mem_type or '').startswith('GDDR') else 1))
        assert p.workload.gpus == p.nodes * p.gpus_per_node
        assert p.hours > 0 and p.gpu_hours == pytest.approx(p.hours * p.workload.gpus, rel=1e-6)


def test_rejections_carry_reasons():
    res = plan(_req("Qwen3-32B"))
    assert res.rejected
    for r in res.rejected:
        assert r.code and r.reason and r.fix


def test_memory_rejection_message():
    # claims.md C6: 14B full fine-tuning with ZeRO-2 on 2 x A100 80GB does not fit
    res = plan(_req("Qwen3-14B", gpu="A100-80GB", pins={"gpus": 2, "strategy": "zero2"}))
    mem = [r for r in res.rejected if r.code == "memory"]
    assert not res.plans and mem
    # the reason quotes the least memory the planner found (ZeRO-2, GC on, micro-batch 1) against 80 GiB less 5 %
    need = estimate_memory(get_model("Qwen3-14B"), Workload(method="full", gpus=2, strategy="zero2")).reserved_gib
    assert need > 150
    assert f"{need:.1f} GiB/GPU > 76.0 usable (80 GiB" in mem[0].reason


def test_pins_are_honoured():
    pins = {"gpus": 16, "gpus_per_node": 8, "strategy": "zero3", "micro_batch": 2}
    res = plan(_req("Qwen3-14B", gpu="H100", pins=pins))
    assert len(res.plans) >= 1
    for p in res.plans:
        w = p.workload
        assert (w.gpus, w.gpus_per_node, w.strategy, w.micro_batch) == (16, 8, "zero3", 2)


def test_objective_time_sorts_by_hours():
    res = plan(_req("Qwen3-8B", objective="time"))
    # plans whose fit is surely "fits" first (host RAM unknown: after), each group by hours
    hours = [(p.fit.verdict != "fits", p.hours) for p in res.plans]
    assert hours == sorted(hours)
    assert res.ranking.basis == "hours"


def test_public_resource_group_cap():
    res = plan(_req("Qwen3-14B", provider="alibaba", resource_class="pai-public", max_days=3650))
    assert res.plans
    for p in res.plans:
        assert p.workload.gpus <= 2
    pinned = plan(_req("Qwen3-8B", provider="alibaba", resource_class="pai-public", pins={"gpus": 4}))
    assert not pinned.plans
    assert any(r.code == "pai-public-quota" for r in pinned.rejected)
    lifted = plan(_req("Qwen3-8B", provider="alibaba", resource_class="pai-public", pins={"gpus": 4},
                       ignore_rules=frozenset({"pai-public-quota"})))
    assert all(r.code != "pai-public-quota" for r in lifted.rejected)


def test_budget_without_price_is_rejected():
    res = plan(_req("Qwen3-0.6B", provider="generic", budget=100.0))
    assert not res.plans
    assert {r.code for r in res.rejected} >= {"unknown-price"}


def test_overlay_price_gives_cost(tmp_path):
    ov = tmp_path / "catalog.yaml"
    ov.write_text(
        "instances:\n"
        "  - provider: generic\n    resource_class: generic\n    instance_type: generic-8xH100\n"
        "    price_per_hour: 200\n    currency: CNY\n    spot_discount: 0.3\n"
        "    source: test\n    as_of: 2026-12-01\n")
    set_overlay_path(ov)
    _store.reset_cache()
    res = plan(_req("Qwen3-8B", instance_type="generic-8xH100"))
    (p,) = res.plans
    assert p.currency == "CNY"
    assert p.cost == pytest.approx(p.hours * p.nodes * 200, rel=1e-6)
    spot = plan(_req("Qwen3-8B", instance_type="generic-8xH100", spot=True)).plans[0]
    assert spot.cost < p.cost  # 70% discount outweighs the expected re-work
    assert spot.on_demand_cost == pytest.approx(p.cost, rel=1e-6)


def test_pareto_is_nondominated():
    res = plan(_req("Qwen3-8B"))
    front = [res.plans[i] for i in res.pareto]
    assert front
    for p in front:
        for q in res.plans:
            assert not (q.hours < p.hours and q.gpu_hours < p.gpu_hours)


def test_bad_request():
    with pytest.raises(PlanError):
        _req(tokens=0)


def test_cli_plan_json(capsys):
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "200M", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"workload", "plans", "rejected"}
    p = out["plans"][0]
    for k in ("provider", "instance_type", "gpu", "gpus_per_node", "nodes", "settings", "per_gpu_gib", "tokens_per_s",
              "step_seconds", "mfu", "hours", "gpu_hours", "cost", "currency", "spot"):
        assert k in p
    assert out["workload"]["tokens"] == 200_000_000


def test_cli_plan_needs_tokens(capsys):
    assert main(["plan", "Qwen3-8B"]) == 2
    assert "--tokens" in capsys.readouterr().err


def test_practical_plans_only():
    """Issue 11: a real Alibaba instance that finishes within 14 days ranks first; slower ones are rejected
    with a reason; FSDP layouts are searched on their own merits (235B on 40 x A100 fits only with FSDP)."""
    res = plan(_req("Qwen3-14B", provider="alibaba", tokens=2e9))
    assert res.best is not None and res.best.provider == "alibaba" and res.best.hours <= 14 * 24
    assert all(p.hours <= 14 * 24 for p in res.plans)
    assert any(r.code == "too-slow" for r in res.rejected)
    big = plan(_req("Qwen3-235B-A22B", gpu="A100-80GB", tokens=1e9,
                    pins={"gpus": 40, "gpus_per_node": 8, "offload": "none"}))
    assert big.best is not None and big.best.workload.strategy == "fsdp"


def test_spot_costs_time_and_money(tmp_path, monkeypatch):
    """With a price overlay, --spot changes both hours and cost, and the plan carries the price's source."""
    ov = tmp_path / "catalog.yaml"
    ov.write_text(
        "instances:\n"
        "  - {provider: generic, resource_class: generic, instance_type: generic-8xH100, price_per_hour: 200.0,\n"
        "     currency: CNY, spot_discount: 0.3, source: 'https://example.com/price', as_of: '2026-12-01'}\n")
    monkeypatch.setenv("TRAINFIT_CATALOG_OVERLAY", str(ov))
    from trainfit.catalog._store import reset_cache

    reset_cache()
    try:
        kw = dict(instance_type="generic-8xH100", tokens=5e9)
        od = plan(_req("Qwen3-8B", **kw)).best
        sp = plan(_req("Qwen3-8B", spot=True, **kw)).best
    finally:
        monkeypatch.delenv("TRAINFIT_CATALOG_OVERLAY")
        reset_cache()
    assert od.cost is not None and sp.cost is not None and "https://example.com/price" in od.price_source
    assert sp.hours > od.hours and sp.cost < od.cost and sp.expected_interruptions > 0
    assert sp.checkpoint_interval_hours and sp.spot_price_fraction == 0.3


def test_max_days_reaches_the_planner(capsys):
    import json

    from trainfit.cli import main

    argv = ["plan", "Qwen3-32B", "--tokens", "1B", "--method", "full", "--gpu", "A100-80GB", "--gpus", "1", "--json"]
    assert main(argv) == 1  # nothing fits: exit 1, as without --json
    short = json.loads(capsys.readouterr().out)
    assert main(argv + ["--max-days", "3650"]) == 0
    long = json.loads(capsys.readouterr().out)
    assert not short["plans"] and long["plans"]
    assert main(argv[:-1]) == 1  # the table prints the same verdict with the same status


def test_spot_interruptions_count_nodes_not_gpus():
    p = plan(_req("Qwen3-8B", gpu="H100", pins={"gpus": 8}, spot=True, instance_type="generic-8xH100")).best
    assert p.nodes == 1 and p.expected_interruptions < 0.02 * p.hours * 1.01 + 1e-9
    assert abs(p.gpu_hours - p.hours * 8) < 1e-6


def test_resource_class_typo_is_an_error_with_a_suggestion(capsys):
    """A misspelt --resource-class used to filter out every instance type in silence ("no instance type fits")."""
    assert main(["plan", "Qwen3-8B", "--tokens", "1B", "--resource-class", "pai-lingun", "--json"]) == 2
    assert "did you mean pai-lingjun" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_pinned_tp_without_gpus_searches_the_gpu_count(capsys):
    """`plan --tp 4` pins TP and leaves the GPU count to the search; it was refused as '--gpus 1 is not divisible
    by tp*pp*cp = 4' although the user never gave --gpus."""
    assert main(["plan", "Qwen3-8B", "--tokens", "1B", "--gpu", "H800", "--tp", "4", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert plans and all(p["settings"]["tp"] == 4 and p["settings"]["gpus"] % 4 == 0 for p in plans)
    assert main(["plan", "Qwen3-8B", "--tokens", "1B", "--tp", "4", "--gpus", "6"]) == 2  # a pinned count still must divide


def test_no_bf16_warning_is_a_whole_sentence(capsys):
    """The V100/T4 warning ended in '..., its memory and speed' (a sentence cut off in the README too)."""
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--gpu", "V100-32GB", "--json"]) == 0
    warns = [w for p in json.loads(capsys.readouterr().out)["plans"] for w in p["warnings"] if "has no bf16" in w]
    assert warns and all(w.endswith("with the memory and speed of fp16") for w in warns)


def test_plan_never_ranks_a_gpu_that_cannot_run_the_kernel(capsys):
    """`plan --attention flash3` ranked V100 and T4 rows first (with a warning): every file rendered from them is a
    `check` error (kernel-support). They are rejections now, with the code, the reason and the fix."""
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "200M", "--attention", "flash3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    hopper = {"H100-SXM", "H800-SXM", "H200-SXM", "H20"}
    assert doc["plans"]
    for p in doc["plans"]:  # Hopper, or a part known only by its memory whose speed class is assumed from H20 (said)
        assert p["gpu"] in hopper or (get_gpu(p["gpu"]).speed_from == "H20"
                                      and any("assumed from H20" in w for w in p["warnings"])), p["gpu"]
    rej = {r["instance_type"]: r for r in doc["rejected"] if r["code"] == "kernel-support"}
    assert "generic-8xA100-80GB" in rej and "--attention sdpa" in rej["generic-8xA100-80GB"]["fix"]


def test_rl_target_without_rl_says_so_first(capsys):
    """`plan --target verl --steps 10` (no --rl) answered "how many tokens to train on?"."""
    assert main(["plan", "Qwen3-8B", "--steps", "10", "--target", "verl", "--gpu", "H100"]) == 2
    assert "pass --rl" in capsys.readouterr().err


def test_gpu_no_instance_has_is_one_error_naming_the_gpus(capsys):
    """`plan --provider alibaba --gpu A100` printed only 'no instance type fits these limits' (no rejection, no
    reason). Alibaba's gn7e now has the A100; the bundled Alibaba catalog has no H100."""
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "200M", "--provider", "alibaba",
                 "--gpu", "H100"]) == 2
    err = capsys.readouterr().err
    assert "has H100-SXM" in err and "A10, A100-40GB-SXM, A100-80GB-SXM, A30" in err


def test_a_region_nothing_names_gets_a_note_with_a_suggestion(capsys):
    """`--region cn-hangzou` (a typo) used to pass in silence; the plan now says no catalog row or platform rule
    names it and suggests the close ones. A region the rules name stays quiet."""
    argv = ["plan", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--provider", "alibaba", "--json"]
    main(argv + ["--region", "cn-hangzou"])
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert "cn-hangzou" in notes[0] and "did you mean cn-hangzhou" in notes[0]
    # (issue 25) the bundled catalog has no regional Alibaba price: the plan also says the region changes no price
    assert all("changes nothing" in n for n in notes[1:])
    main(argv + ["--region", "cn-wulanchabu"])
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert not any("appears in no catalog row" in n for n in notes)
    assert notes and all("changes nothing" in n and "no source gives a regional price" in n for n in notes)
    main(argv[:-1] + ["--region", "cn-hangzou", "--top", "1"])
    assert "note:" in capsys.readouterr().out


def test_moe_plans_compare_expert_parallel_sizes_by_speed():
    """The search kept the first layout that fit in a fixed strategy order, so a MoE model got FSDP on one node
    (or EP 16 across two, whose all-to-all crosses the network) although EP 8 inside each node is several times
    faster and cheaper; each expert-parallel size now keeps its own first fit and the speed model decides."""
    from trainfit.plan.search import PlanRequest

    m = get_model("Qwen3-30B-A3B")
    base = dict(model=m, workload=Workload(method="full", seq_len=4096), tokens=1_000_000_000, provider="alibaba",
                resource_class="pai-lingjun", gpu="H800", spot=True)
    best = plan(PlanRequest(**base)).best
    assert best is not None and best.workload.ep > 1
    # EP within a node beats EP across nodes on the same two nodes
    two = plan(PlanRequest(**base, pins={"gpus": 16})).best
    assert two.workload.ep == 8
    pinned = {ep: plan(PlanRequest(**base, pins={"gpus": 16, "ep": ep, "strategy": "zero1"})).best for ep in (8, 16)}
    assert pinned[8].tokens_per_s > pinned[16].tokens_per_s
    # and the unpinned pick is the best of the pinned ones by the objective (cost; GPU-hours without prices)
    assert two.gpu_hours <= min(p.gpu_hours for p in pinned.values()) + 1e-9
