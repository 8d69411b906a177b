"""Each target checked by its own tool's parser where it can be imported, else by the published schema.

- DeepSpeed: ``deepspeed.runtime.config.DeepSpeedConfig`` (real class; skipped without deepspeed).
- SkyPilot: ``sky.Task.from_yaml`` when skypilot is importable; always the schemas SkyPilot 0.14.1 validates
  with (data/skypilot_0.14.1_schemas.json), through jsonschema.
- PyTorchJob: the Kubeflow v1 CRD's openAPIV3Schema (data/pytorchjob_v1_crd_schema.json) with the strict
  Kubernetes PodSpec from kubernetes-validate when installed.
- DLC, ms-swift, LLaMA-Factory: see test_render.py (SDK model round trip; parser field lists).
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from tests.launch.conftest import SCENARIOS

DATA = Path(__file__).parent / "data"


class _DP:
    """What DeepSpeedConfig asks of an ``mpu``: the data-parallel world size."""

    def __init__(self, dp: int) -> None:
        self.dp = dp

    def get_data_parallel_world_size(self) -> int:
        return self.dp

    def get_model_parallel_world_size(self) -> int:
        return 1


@pytest.fixture
def ds_config_class(monkeypatch):
    """DeepSpeed's config class; without torch.distributed initialised it would take world size 1, so the
    rank lookup is stubbed and the data-parallel size comes from the ``mpu`` argument as in training."""
    pytest.importorskip("deepspeed")
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    from deepspeed.runtime import config as ds_config

    monkeypatch.setattr(ds_config.dist, "get_rank", lambda *a, **k: 0)
    return ds_config.DeepSpeedConfig


@pytest.mark.parametrize("name", ["zero3", "qlora"])
def test_deepspeed_accepts_the_config(rendered, name, ds_config_class):
    DeepSpeedConfig = ds_config_class
    _, res = rendered[name]
    cfg = json.loads(res.files["ds_config.json"])
    wl = res.context.workload
    c = DeepSpeedConfig(cfg, mpu=_DP(wl.dp))
    assert c.train_batch_size == wl.global_batch
    assert c.zero_optimization_stage == int(wl.strategy[-1])
    assert "_trainfit" in cfg  # the header key is accepted at the top level


def test_deepspeed_rejects_a_broken_config(rendered, ds_config_class):
    DeepSpeedConfig = ds_config_class
    _, res = rendered["zero3"]
    cfg = json.loads(res.files["ds_config.json"])
    bad = copy.deepcopy(cfg)
    bad["zero_optimization"]["stage3_typo"] = 1
    with pytest.raises(Exception):
        DeepSpeedConfig(bad, mpu=_DP(res.context.workload.dp))
    with pytest.raises(AssertionError):  # batch arithmetic off by one data-parallel rank
        DeepSpeedConfig(cfg, mpu=_DP(res.context.workload.dp + 1))


def _sky_validate(task: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schemas = json.loads((DATA / "skypilot_0.14.1_schemas.json").read_text())
    jsonschema.validate(task, schemas["task"])
    jsonschema.validate(task["resources"], schemas["resources"])
    for mount in task.get("file_mounts", {}).values():
        if isinstance(mount, dict):
            jsonschema.validate(mount, schemas["storage"])


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_skypilot_task_matches_skypilots_schema(rendered, name):
    _sky_validate(yaml.safe_load(rendered[name][1].files["skypilot.yaml"]))


def test_skypilot_schema_check_can_fail(rendered):
    jsonschema = pytest.importorskip("jsonschema")
    task = yaml.safe_load(rendered["zero3"][1].files["skypilot.yaml"])
    task["num_nodez"] = 2
    with pytest.raises(jsonschema.ValidationError):
        _sky_validate(task)
    task = yaml.safe_load(rendered["zero3"][1].files["skypilot.yaml"])
    task["resources"]["use_spot"] = "yes"
    with pytest.raises(jsonschema.ValidationError):
        _sky_validate(task)


@pytest.mark.parametrize("name", ["lora1", "zero3"])
def test_skypilot_task_loads_in_skypilot(rendered, name):
    sky = pytest.importorskip("sky")
    d, _ = rendered[name]
    task = sky.Task.from_yaml(str(d / "skypilot.yaml"))
    wl = SCENARIOS[name]["wl"]
    assert task.num_nodes == max(1, wl["gpus"] // wl["gpus_per_node"])


@functools.lru_cache(maxsize=1)
def _pytorchjob_schema_cached() -> str:
    return json.dumps(_load_pytorchjob_schema())


def _pytorchjob_schema() -> dict:
    return json.loads(_pytorchjob_schema_cached())


def _load_pytorchjob_schema() -> dict:
    schema = json.loads((DATA / "pytorchjob_v1_crd_schema.json").read_text())
    try:
        import kubernetes_validate
    except ImportError:
        return schema
    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    versions = sorted((p for p in base.glob("v1.*-local-strict") if (p / "_definitions.json").is_file()),
                      key=lambda p: tuple(int(x) for x in p.name[1:].split("-")[0].split(".")))
    if not versions:
        return schema
    text = (versions[-1] / "_definitions.json").read_text()
    defs = json.loads(text.replace('"/api/_definitions.json#/$defs/', '"#/$defs/'))
    all_defs = dict(defs.get("$defs") or defs.get("definitions") or {})
    keep: dict = {}
    todo = ["io.k8s.api.core.v1.PodSpec"]
    while todo:  # only the definitions PodSpec reaches
        name = todo.pop()
        if name in keep or name not in all_defs:
            continue
        keep[name] = all_defs[name]
        todo += [r.split("/")[-1] for r in re.findall(r'"#/\$defs/([^"]+)"', json.dumps(all_defs[name]))]
    keep["PodSpec"] = {"$ref": "#/$defs/io.k8s.api.core.v1.PodSpec"}
    schema["$defs"] = keep
    return schema


@functools.lru_cache(maxsize=1)
def _pytorchjob_validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = _pytorchjob_schema()
    return jsonschema.validators.validator_for(schema)(schema)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_pytorchjob_matches_the_kubeflow_crd(rendered, name):
    jsonschema = pytest.importorskip("jsonschema")
    doc = yaml.safe_load(rendered[name][1].files["pytorchjob.yaml"])
    _pytorchjob_validator().validate(doc)
    assert jsonschema is not None


def test_pytorchjob_schema_check_can_fail(rendered):
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("kubernetes_validate")
    validator = _pytorchjob_validator()
    doc = yaml.safe_load(rendered["zero3"][1].files["pytorchjob.yaml"])
    bad = copy.deepcopy(doc)
    bad["spec"]["pytorchReplicaSpecs"]["Worker"]["replica"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)
    bad = copy.deepcopy(doc)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["imag"] = "x"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)
