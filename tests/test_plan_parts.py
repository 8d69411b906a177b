"""The plan is composed of typed parts (issue 30): its JSON carries every scalar field of every part under its own
name, plan files are read part by part from the parts' fields, and every Plan is assembled by ``build_plan``."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path

from trainfit.models import get_model
from trainfit.plan.parts import Cost, Placement, Speed, scalar_fields
from trainfit.plan.types import Plan
from trainfit.service import plan_for
from trainfit.workload import Workload

SRC = Path(__file__).resolve().parents[1] / "src" / "trainfit"


def _plan() -> Plan:
    return plan_for(get_model("Qwen3-8B"), Workload(method="lora", gpus=8, gpus_per_node=8),
                    instance_type="ecs.gn8v-8x.48xlarge", tokens=1e8, spot=True)


def test_plan_json_carries_every_field_of_every_part():
    d = _plan().to_dict()
    for part in (Placement, Speed, Cost):
        for f in fields(part):
            assert f.name in d, (part.__name__, f.name)
    for f in fields(Plan):
        if f.name not in ("placement", "speed", "time_cost"):
            assert f.name in d, f.name


def test_scalar_fields_follow_the_annotations():
    kinds = {f.name: (f.kind, f.optional, f.required) for f in scalar_fields(Placement)}
    assert kinds["gpus_per_node"] == ("count", False, True) and kinds["instance_type"] == ("text", True, True)
    assert "gpu_spec" not in kinds and "instance" not in kinds  # records, checked by the catalog's schema
    assert {f.name: f.kind for f in scalar_fields(Cost)}["spot"] == "flag"
    assert "speed_interval" not in {f.name for f in scalar_fields(Speed)}


def test_plan_round_trips_through_its_parts():
    p = _plan()
    back = Plan.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p and back.placement == p.placement and back.time_cost == p.time_cost
    assert p.hours == p.time_cost.hours and p.gpu == p.placement.gpu and p.mfu == p.speed.mfu  # the flat views


def test_every_plan_is_built_by_build_plan():
    """``Plan(...)`` is called only by ``build_plan`` and ``Plan.from_dict`` (as ``cls(...)``)."""
    calls = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Plan":
                calls.append(str(path.relative_to(SRC)))
    assert calls == ["plan/types.py"], calls
