"""Issue 9's property: over a grid of more than 200 plans (every registry model x full/LoRA x GPUs, node counts and
strategies, MoE with expert parallelism, multi-node), `render --target all` -> `check` on every file agrees with
the plan: the memory check reads back from each file equals the plan's to 0.01 GiB, the verdict is the same, and
no file of a plan that fits has an error-level finding.

Issue 25 ("the job trains what the plan assumed"): the grid's plans carry the planner's global batch (gradient
accumulation from `plan/batch.py`), and every ms-swift and LLaMA-Factory file packs, reads back to the plan's
workload (global batch included) and trains the plan's step budget, ceil(tokens / (global batch x seq_len))."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from trainfit.check import check_file
from trainfit.errors import TrainfitError
from trainfit.launch import RenderOptions
from trainfit.models import get_model, model_names
from trainfit.plan.batch import default_global_batch
from trainfit.service import plan_for, render_plan, write_rendered
from trainfit.workload import Workload

#: (instance type, GPU to state when the catalog does not name it)
WHERE = [("ecs.gn7i-c8g1.2xlarge", None), ("ecs.gn8is-8x.32xlarge", None), ("ml.gu7xf.c96m1600.8-gu108", "H800"),
         ("generic-8xH100", None), ("generic-8xA100-80GB", None), ("generic-1xA100-80GB", None)]
LAYOUTS = [("ddp", "none"), ("zero1", "none"), ("zero2", "none"), ("zero3", "none"), ("fsdp", "none"),
           ("zero2", "optimizer"), ("zero3", "all"), ("fsdp", "all")]
VPC = {"VpcId": "vpc-t", "SwitchId": "vsw-t", "SecurityGroupId": "sg-t"}
TOKENS = 1e8


def _grid(n: int = 230, seed: int = 7) -> list[tuple]:
    combos = []
    for model, method, (it, gpu), (strategy, offload), nodes in itertools.product(
            model_names(), ("full", "lora"), WHERE, LAYOUTS, (1, 2)):
        combos.append((model, method, it, gpu, strategy, offload, nodes, 1))
    for model in ("Qwen3-30B-A3B", "Qwen3-235B-A22B", "Qwen3-Next-80B-A3B"):  # MoE with expert parallelism
        for (it, gpu), nodes, strategy in itertools.product(WHERE[1:5], (1, 2), ("ddp", "zero1")):
            combos.append((model, "full", it, gpu, strategy, "none", nodes, 8))
    rnd = random.Random(seed)
    rnd.shuffle(combos)
    return combos[:n]


def _plans(limit: int = 230):
    out = []
    for model, method, it, gpu, strategy, offload, nodes, ep in _grid(limit * 3):
        m = get_model(model)
        from trainfit.catalog.instances import get_instance

        gpn = get_instance(it).gpu_count
        dp = gpn * nodes  # tp = pp = cp = 1 on this grid
        ga = max(1, math.ceil(default_global_batch(method, 2048, TOKENS) / dp))  # what the planner aims at
        try:
            wl = Workload(method=method, strategy=strategy, offload=offload, gpus=gpn * nodes, gpus_per_node=gpn,
                          ep=ep, seq_len=2048, micro_batch=1, grad_accum=ga)
            p = plan_for(m, wl, instance_type=it, gpu=gpu, tokens=TOKENS)
        except TrainfitError:
            continue
        out.append(p)
        if len(out) >= limit:
            break
    return out


PLANS = _plans()


def test_grid_is_big_enough():
    assert len(PLANS) >= 200
    assert {p.workload.strategy for p in PLANS} >= {"ddp", "zero1", "zero2", "zero3", "fsdp"}
    assert any(p.workload.ep > 1 for p in PLANS) and any(p.nodes > 1 for p in PLANS)
    assert {p.fit.verdict for p in PLANS} >= {"fits", "oom"}


@pytest.mark.slow
def test_render_then_check_agrees_with_the_plan(tmp_path):
    checked = 0
    for i, p in enumerate(PLANS):
        res = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/", vpc=VPC), "all")
        d = tmp_path / str(i)
        write_rendered(res, d)
        for name in res.files:
            r = check_file(d / name)
            mem = [v for v in r.violations if v.rule == "memory-fit"]
            differ = [v for v in r.violations if v.rule in ("settings-differ-from-plan", "step-budget")]
            assert not differ, (name, p.settings(), differ[0].message)
            if p.fit.verdict == "oom":
                assert any(v.severity == "error" for v in mem), (name, p.settings())
            elif p.fit.verdict == "tight":
                assert mem and mem[0].severity == "warning", (name, p.settings())
            else:
                errors = [v for v in r.violations if v.severity == "error"]
                assert not errors, (name, p.instance_type, p.settings(), [e.to_dict() for e in errors])
            checked += 1
    assert checked >= 1000


def test_readback_equals_the_plan_to_a_hundredth_of_a_gib(tmp_path):
    """The memory check reads back from each rendered file (not from its header) equals the plan's."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    engines: set[str] = set()
    for i, p in enumerate(PLANS[:60]):
        res = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/", vpc=VPC), "all")
        d = tmp_path / str(i)
        write_rendered(res, d)
        for name in res.files:
            if name == "README.md":
                continue
            f = read_facts(d / name)
            rb = read_workload(f, CheckOptions())
            assert rb is not None and not hasattr(rb, "rule"), (name, rb)
            assert abs(rb.estimate.reserved_gib - p.memory.reserved_gib) <= 0.01, (name, p.settings())
            assert rb.decision.verdict == p.fit.verdict, (name, p.settings())
            assert rb.workload == p.workload, (name, rb.workload, p.workload)
            if f.engine in ("swift", "megatron", "llamafactory"):  # the launchers that train: packed, same budget
                assert rb.workload.packing and rb.workload.global_batch == p.workload.global_batch > 1, name
                want = math.ceil(TOKENS / (p.workload.global_batch * p.workload.seq_len))
                assert rb.max_steps == want == res.context.max_steps, (name, rb.max_steps, want)
                assert rb.tokens_trained >= TOKENS > rb.tokens_trained - p.workload.global_batch * p.workload.seq_len
                engines.add(f.engine)
    assert engines == {"swift", "megatron", "llamafactory"}


def test_targets_table_agrees_with_the_writers_and_the_plans_engine():
    """Over the same plans (issue 12, "the default follows the render target"): the planner's `--target` filter
    (`targets.layout_reason`) refuses exactly the layouts each writer's `applies` refuses, and every target
    that applies runs the engine the plan's speed assumed, so `render --target all` of a default plan warns of no
    engine mismatch."""
    from trainfit.launch import _module, build_context
    from trainfit.targets import layout_reason, plan_targets, rl_target_frameworks, same_engine, target_framework

    sft = [t for t in plan_targets() if t not in rl_target_frameworks()]
    applied = 0
    for p in PLANS:
        ctx = build_context(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/", vpc=VPC))
        for t in sft:
            writer_says = _module(t).applies(ctx)
            if t == "dlc" and p.provider != "alibaba":
                continue  # the planner keeps --target dlc on Alibaba instance types (search._instances)
            assert (layout_reason(t, p.workload) is None) == (writer_says is None), (t, p.settings(), writer_says)
            if writer_says is None:
                applied += 1
                assert same_engine(target_framework(t, p.workload), p.framework), (t, p.settings(), p.framework)
        warned = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/", vpc=VPC), "all").warnings
        # the experts warning is about transformers 5; the pure-bf16 one about numerics (issue 25), not the engine
        assert not [w for w in warned if "per-expert" not in w and not w.startswith("pure bf16")]
    assert applied >= 500


PLANNED = [("Qwen3-8B", "full", 2e9, {}), ("Qwen3-8B", "lora", 1e8, {}), ("Qwen3-14B", "full", 2e9, {"provider": "alibaba"}),
           ("Qwen3-4B", "qlora", 2e7, {}), ("Qwen3-30B-A3B", "full", 1e9, {"seq_len": 4096}),
           ("Qwen3-1.7B", "lora", 5e8, {"target": "llamafactory"})]


@pytest.mark.parametrize("model,method,tokens,extra", PLANNED)
def test_the_planners_batch_is_in_range_and_the_rendered_jobs_train_it(tmp_path, model, method, tokens, extra):
    """`plan` chooses tokens per optimizer step inside the method's range (or says why a row is below it), and the
    rendered ms-swift / LLaMA-Factory files of its top rows pack, read back to its workload and train its budget."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions
    from trainfit.plan.batch import MIN_OPTIMIZER_STEPS, TOKENS_PER_STEP
    from trainfit.plan.search import PlanRequest, plan

    seq = extra.get("seq_len", 2048)
    req = PlanRequest(model=get_model(model), workload=Workload(method=method, seq_len=seq), tokens=tokens,
                      provider=extra.get("provider"), target=extra.get("target"))
    res = plan(req)
    assert res.plans
    lo, target, hi = TOKENS_PER_STEP[method]
    for i, p in enumerate(res.plans[:4]):
        wl = p.workload
        per_step = wl.global_batch * wl.seq_len
        below = [w for w in p.warnings if "below the planned" in w]
        floor = wl.dp * wl.micro_batch * wl.seq_len  # accumulation 1: the smallest batch of the layout
        assert below or lo <= per_step <= max(hi, floor), (p.instance_type, p.settings())
        if not below and wl.grad_accum > 1:  # accumulation reaches the target (the budget's 200 steps included)
            aim = max(lo, min(target, tokens / MIN_OPTIMIZER_STEPS))  # and stops within one micro-step of it
            assert aim - seq <= per_step < aim + wl.micro_batch * wl.dp * wl.seq_len, (p.instance_type, p.settings())
        out = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/", vpc=VPC), "swift,llamafactory"
                          if wl.strategy != "fsdp" and not wl.uses_megatron else "swift")
        d = tmp_path / str(i)
        write_rendered(out, d)
        for name in out.files:
            f = read_facts(d / name)
            if f.engine not in ("swift", "megatron", "llamafactory"):
                continue
            rb = read_workload(f, CheckOptions())
            assert rb.workload == wl and rb.workload.packing, (name, rb.workload, wl)
            assert rb.max_steps == math.ceil(tokens / per_step), name
            assert not [v for v in check_file(d / name).violations if v.rule == "step-budget"], name


def test_check_says_when_a_file_does_not_pack_or_trains_another_budget(tmp_path):
    """Edited files: without --packing the workload reads back unpacked and check says what max_steps then trains;
    a changed max_steps is a step-budget finding naming the planned steps."""
    p = plan_for(get_model("Qwen3-8B"), Workload(method="lora", gpus=8, grad_accum=8), instance_type="generic-8xH100",
                 tokens=1e8)
    res = render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "swift")
    write_rendered(res, tmp_path)
    script = tmp_path / "swift_sft.sh"
    text = script.read_text()
    assert "--packing 'true'" in text or "--packing true" in text
    steps = res.context.max_steps
    assert steps == math.ceil(1e8 / (64 * 2048))
    script.write_text(text.replace("--packing true", "").replace("--packing 'true'", "")
                      .replace(f"--max_steps {steps}", f"--max_steps {steps * 2}")
                      .replace(f"--max_steps '{steps}'", f"--max_steps '{steps * 2}'"))
    found = [v for v in check_file(script).violations if v.rule == "step-budget"]
    assert len(found) == 2, [v.message for v in found]
    assert any(f"set max_steps {steps}" in (v.fix or "") for v in found)
    assert any("no packing" in v.message for v in found)
