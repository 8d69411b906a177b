"""Every rejection's fix works (issue 25, item 6): over a grid of requests that get rejections (SFT and RL), apply
each rejection's machine-applicable fix (``fix_options``) and plan again; the same instance type must not be
rejected for the same reason. A memory rejection's settings (``tried``) must not fit by ``memory`` either: the
planner and the memory command apply the same rules to the same layout.

Fixes that are not a change of options (add a catalog row, ask for a quota) are listed in NOT_OPTIONS with why."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from trainfit.catalog.instances import get_instance
from trainfit.errors import RolloutMemoryError
from trainfit.options import plan_request_from_values
from trainfit.plan.rl import fit_rollout_tp
from trainfit.service import make_plan, memory_report, resolve_model, rl_memory_report
from trainfit.workload import Workload

#: Rejection codes whose fix is not an option change, and why.
NOT_OPTIONS = {
    "unknown-gpu": "add the GPU to the catalog overlay",
    "unknown-gpu-memory": "add the GPU's memory to the catalog overlay",
    "bad-catalog": "complete the catalog row",
    "host-ram": "when no GPU count or offload change fits (checked): an instance type with more RAM",
    "precision": "RL launches run bf16 only: another GPU",
}

SFT = [
    ("Qwen3-8B", {"method": "full"}),
    ("Qwen3-14B", {"method": "full"}),
    ("Qwen3-32B", {"method": "full", "provider": "alibaba"}),
    ("Qwen3-30B-A3B", {"method": "full", "provider": "tencent"}),
    ("Qwen3-235B-A22B", {"method": "full", "provider": "generic"}),
    ("Qwen3-235B-A22B", {"method": "lora", "provider": "generic"}),
    ("Qwen3-14B", {"method": "full", "gpus": 2, "strategy": "zero2", "provider": "generic"}),
    ("Qwen3-32B", {"method": "full", "gpus": 8, "strategy": "zero1", "grad_ckpt": False, "provider": "generic"}),
    ("Qwen3-8B", {"method": "lora", "attention": "flash3", "provider": "tencent"}),
    ("Qwen3-8B", {"method": "lora", "region": "cn-wulanchabu", "provider": "alibaba"}),
    ("Qwen3-8B", {"method": "full", "max_days": 0.5, "provider": "generic"}),
    ("Qwen3-8B", {"method": "full", "deadline": 2.0, "provider": "generic"}),
    ("Qwen3-8B", {"method": "lora", "budget": 5.0, "provider": "tencent", "allow_fp16": True}),
    ("Qwen3-8B", {"method": "lora", "gpus": 3, "provider": "generic"}),
    ("Qwen3-8B", {"method": "lora", "gpus": 2, "gpus_per_node": 2, "provider": "tencent"}),
    ("Qwen3-8B", {"method": "lora", "max_gpus": 2, "provider": "generic"}),
    ("Qwen3-30B-A3B", {"method": "full", "provider": "generic", "max_gpus": 512, "tokens": 2e10}),
    ("Qwen3-235B-A22B", {"method": "full", "tp": 4, "pp": 8, "ep": 8, "framework": "megatron", "provider": "generic",
                         "max_gpus": 4096}),
    ("Qwen3-235B-A22B", {"method": "full", "tp": 4, "pp": 8, "ep": 8, "framework": "megatron", "gpus": 256,
                         "max_gpus": 4096, "provider": "generic"}),
    ("Qwen3-8B", {"method": "full", "provider": "alibaba", "resource_class": "pai-public", "gpus": 4}),
    ("Qwen3-14B", {"method": "full", "offload": "all", "strategy": "zero3", "gpus": 8, "provider": "generic"}),
    ("Qwen3-32B", {"method": "full", "provider": "alibaba", "max_gpus": 8}),
    ("Qwen3-8B", {"method": "full", "provider": "generic", "spot": True, "interruption_rate": 5.0,
                  "gpus": 16}),
    ("Qwen3-8B", {"method": "full", "target": "llamafactory", "strategy": "fsdp", "provider": "generic"}),
]
RL = [
    ("Qwen3-8B", {"rl": "grpo", "steps": 100, "gpus": 1, "provider": "generic"}),
    ("Qwen3-14B", {"rl": "grpo", "steps": 100, "gpus": 2, "rl_framework": "ms-swift", "provider": "generic"}),
    ("Qwen3-32B", {"rl": "grpo", "steps": 50, "gpus": 8, "rl_framework": "verl", "num_generations": 4,
                   "provider": "generic"}),
    ("Qwen3-8B", {"rl": "grpo", "steps": 100, "rl_framework": "verl", "num_generations": 8, "response_len": 16384,
                  "provider": "tencent"}),
    ("Qwen3-14B", {"rl": "ppo", "steps": 50, "rl_framework": "verl", "provider": "alibaba"}),
    ("Qwen3-4B", {"rl": "grpo", "steps": 100, "spot": True, "interruption_rate": 3.0, "provider": "generic",
                  "max_gpus": 64, "gpus": 64}),
    ("Qwen3-32B", {"rl": "grpo", "steps": 50, "gpus": 2, "rl_framework": "ms-swift", "provider": "generic"}),
    ("Qwen3-14B", {"rl": "grpo", "steps": 50, "gpus": 4, "rl_framework": "verl", "num_generations": 8,
                   "provider": "generic"}),
    ("Qwen3-8B", {"rl": "grpo", "steps": 50, "rl_framework": "verl", "num_generations": 4, "response_len": 32768,
                  "rollout_util": 0.3, "provider": "generic"}),
    ("Qwen3-8B", {"rl": "dpo", "steps": 50, "rl_framework": "ms-swift", "provider": "alibaba", "gpus": 4}),
    ("Qwen3-30B-A3B", {"rl": "grpo", "steps": 50, "rl_framework": "verl", "num_generations": 4, "provider": "generic",
                       "budget": 1.0}),
    ("Qwen3-235B-A22B", {"rl": "grpo", "steps": 20, "gpus": 16, "max_gpus": 64, "provider": "generic"}),
    ("Qwen3-32B", {"rl": "grpo", "steps": 50, "gpus": 8, "rollout_tp": 1, "provider": "generic"}),
]
PER_CODE = 3
"""Rejections tested per (request, code): distinct instance types, the first in the planner's order."""


def _plan(model: str, values: dict[str, Any]) -> Any:
    v = {"tokens": 1e9, **values}
    if v.get("rl"):
        v.pop("tokens")
    return make_plan(plan_request_from_values(resolve_model(model), v))


def _apply(values: dict[str, Any], option: dict[str, Any]) -> dict[str, Any]:
    out = dict(values)
    for k, v in option.items():
        if v is None:
            out.pop(k, None)
        elif k == "ignore_rule":
            out[k] = tuple(out.get(k) or ()) + tuple(v)
        else:
            out[k] = v
    return out


def _outcome(res: Any, instance_type: str) -> tuple[bool, set[str]]:
    """(planned, rejection codes) of one instance type in a plan result."""
    planned = any(p.instance_type == instance_type for p in res.plans)
    return planned, {r.code for r in res.rejected if r.instance_type == instance_type}


def _memory_agrees(model: str, values: dict[str, Any], res: Any, rej: Any) -> None:
    """`memory` with a memory rejection's settings does not say it fits on that instance's GPU."""
    if rej.code != "memory" or not rej.tried:
        return
    inst = get_instance(rej.instance_type)
    wl = Workload(**{**{k: v for k, v in rej.tried.items() if k in Workload.__dataclass_fields__},
                     "lora_targets": tuple(rej.tried["lora_targets"])})
    margin = res.request.memory_margin
    if res.request.rl is not None:
        rl, _ = fit_rollout_tp(res.request.rl, wl.gpus_per_node)  # as the planner sized it
        try:
            rep = rl_memory_report(resolve_model(model), wl, rl, gpu=inst.gpu, margin=margin)
        except RolloutMemoryError:  # the engine holds no sequence: `memory --rl` does not say it fits either
            return
        assert rep.estimate.verdict != "fits", (model, values, rej)
    else:
        rep = memory_report(resolve_model(model), wl, gpu=inst.gpu, margin=margin)
        assert rep.answer is not None and rep.answer.decision.gpu_verdict != "fits", (model, values, rej)


def _cases() -> list[tuple[str, dict[str, Any], bool]]:
    return [(m, v, False) for m, v in SFT] + [(m, v, True) for m, v in RL]


def test_every_rejection_fix_works():
    tested = 0
    kinds: dict[str, int] = defaultdict(int)
    failures: list[str] = []
    for model, values, is_rl in _cases():
        res = _plan(model, values)
        seen: dict[str, int] = defaultdict(int)
        for rej in res.rejected:
            _memory_agrees(model, values, res, rej)
            assert rej.fix, rej
            if not rej.fix_options:
                assert rej.code in NOT_OPTIONS or (rej.code == "memory" and "nothing the search can change" in rej.fix), \
                    f"{rej.code} has no machine-applicable fix: {rej}"
                continue
            if seen[rej.code] >= PER_CODE:
                continue
            seen[rej.code] += 1
            tried = []
            for option in rej.fix_options:
                v2 = _apply(values, option)
                if rej.code != "no-bf16":  # pinning the instance would exempt it from no-bf16 by itself
                    v2["instance_type"] = rej.instance_type
                    for k in ("provider", "resource_class", "gpu"):
                        v2.pop(k, None)
                planned, codes = _outcome(_plan(model, v2), rej.instance_type)
                tried.append((option, planned, codes))
                if planned or (codes and rej.code not in codes):
                    break
            else:
                failures.append(f"{model} {values} {rej.instance_type} [{rej.code}] {rej.reason} -> {tried}")
            tested += 1
            kinds["rl" if is_rl else "sft"] += 1
    assert not failures, "\n".join(failures)
    assert tested >= 100 and kinds["rl"] >= 20, (tested, dict(kinds))


@pytest.mark.parametrize("gpus", [None, 256])
def test_megatron_layout_plans_where_memory_says_it_fits(gpus):
    """Issue 25/26: a TP4/PP8/EP8 layout of Qwen3-235B-A22B that `memory` says fits is planned (not 'no-config:
    raise --max-gpus')."""
    values = {"method": "full", "tp": 4, "pp": 8, "ep": 8, "framework": "megatron", "max_gpus": 4096,
              "gpu": "H100", **({"gpus": gpus} if gpus else {})}
    res = _plan("Qwen3-235B-A22B", values)
    assert res.plans and not any(r.code == "no-config" for r in res.rejected)
    p = res.plans[0]
    rep = memory_report(resolve_model("Qwen3-235B-A22B"), p.workload, gpu="H100")
    assert rep.answer.decision.gpu_verdict == "fits"


def test_layout_rejection_names_the_rule():
    """When every layout the search tries breaks a layout rule, the rejection says which (not 'raise --max-gpus')."""
    res = _plan("Qwen3-30B-A3B", {"method": "full", "tp": 4, "pp": 2, "ep": 16, "framework": "megatron",
                                  "max_gpus": 16, "gpu": "H100"})
    assert not res.plans
    codes = {r.code for r in res.rejected}
    assert "no-config" not in codes
    lay = [r for r in res.rejected if r.code == "layout"]
    assert lay and ("divide" in lay[0].reason or "divisible" in lay[0].reason)
