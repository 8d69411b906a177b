"""Platform rules: the YAML validates, and the evaluator fires exactly where the sources say."""

from __future__ import annotations

import datetime as dt
from importlib import resources

import pytest
import yaml

from trainfit.catalog import get_instance
from trainfit.rules import (JobContext, evaluate, evaluate_command, evaluate_instance, get_rule, load_rules,
                                rules_for_claim)
from trainfit.rules import SEVERITIES, parse_rules


def _ids(violations, severity=None):
    return {v.rule for v in violations if severity is None or v.severity == severity}


def test_rules_file_validates_and_every_rule_has_source_and_date():
    from trainfit.rules import PROVIDERS

    rules, raw_count = [], 0
    for prov in PROVIDERS:
        raw = yaml.safe_load(resources.files(f"trainfit.providers.{prov}").joinpath("rules.yaml").read_text("utf-8"))
        r, problems = parse_rules(raw)
        assert problems == []
        rules += r
        raw_count += len(raw["rules"])
    assert len(rules) == raw_count >= 15
    assert len({r.id for r in rules}) == len(rules)
    for r in rules:
        assert r.source and r.why and r.fix and r.severity in SEVERITIES
        assert dt.date.fromisoformat(r.as_of) <= dt.date.today()
        if r.kind == "fact":
            assert r.claims and r.verdict


def test_parse_rules_lists_every_problem():
    data = {"rules": [
        {"id": "a", "title": "t", "applies_to": ["pai-*"], "check": {"kind": "nope"}, "severity": "fatal",
         "why": "w", "fix": "f", "source": "s", "verified": True, "as_of": "2026-01-01"},
        {"id": "a", "title": "t", "applies_to": ["*"], "check": {"kind": "max_gpus_per_job", "limit": 2},
         "severity": "error", "why": "w", "fix": "f", "source": "s", "verified": "sure", "as_of": "yesterday"},
        {"id": "c", "title": "t", "applies_to": ["*"], "check": {"kind": "fact"}, "severity": "info",
         "why": "w", "fix": "f", "verified": True, "as_of": "2026-01-01"},
    ]}
    _, problems = parse_rules(data)
    text = "\n".join(problems)
    for needle in ["unknown check kind 'nope'", "severity 'fatal'", "duplicate id", "needs parameter 'max'",
                   "unknown parameter 'limit'", "verified must be yes or no", "not a YYYY-MM-DD date",
                   "source is required"]:
        assert needle in text, needle


def test_claim_verdicts_from_pai_facts():
    assert [r.verdict for r in rules_for_claim("C22")] == ["false"]  # torchrun works on DLC
    assert [r.verdict for r in rules_for_claim("c21")] == ["false"]  # custom images allowed
    assert rules_for_claim("C17")[0].verdict == "false"
    assert rules_for_claim("C20")[0].verdict == "true"
    assert rules_for_claim("C99") == []


def test_lingjun_needs_vpc():
    inst = get_instance("ml.gu8xf.8xlarge-gu108")
    assert "lingjun-needs-vpc" in _ids(evaluate_instance(inst, vpc=False), "error")
    assert "lingjun-needs-vpc" in _ids(evaluate_instance(inst), "info")  # unknown -> reminder only
    assert "lingjun-needs-vpc" not in _ids(evaluate_instance(inst, vpc=True))
    # does not apply to a generic cluster
    assert "lingjun-needs-vpc" not in _ids(evaluate_instance("generic-8xH100", vpc=False))


def test_public_resource_caps():
    assert "pai-public-quota" in _ids(evaluate_instance("ecs.gn6i-c24g1.12xlarge", nodes=2))
    assert "pai-public-quota" not in _ids(evaluate_instance("ecs.gn6i-c24g1.12xlarge", nodes=1))
    assert "pai-public-quota" not in _ids(evaluate_instance("ecs.gn7i-c8g1.2xlarge", nodes=1))
    assert "pai-public-vcpu-quota" in _ids(evaluate_instance("ecs.gn7i-c16g1.4xlarge"))
    v = [x for x in evaluate_instance("ecs.gn6i-c24g1.12xlarge", nodes=2) if x.rule == "pai-public-quota"][0]
    assert "4 GPUs" in v.message and v.fix and v.source


def test_spot_regions_and_frameworks():
    lj = get_instance("ml.gu8xf.8xlarge-gu108")
    ok = evaluate_instance(lj, spot=True, region="cn-wulanchabu", vpc=True, job_type="PyTorchJob", checkpointing=True)
    assert _ids(ok) == set()
    bad = evaluate_instance(lj, spot=True, region="cn-hangzhou", vpc=True, job_type="TFJob")
    assert {"lingjun-spot-regions", "lingjun-spot-frameworks"} <= _ids(bad)
    assert "lingjun-spot-regions" not in _ids(evaluate_instance(lj, spot=False, region="cn-hangzhou", vpc=True))
    assert "lingjun-regions" in _ids(evaluate_instance(lj, region="us-west-1", vpc=True))
    pub = evaluate_instance("ecs.gn7i-c8g1.2xlarge", spot=True, region="ap-southeast-1", job_type="MPIJob",
                            checkpointing=False)
    assert {"general-spot-regions", "general-spot-frameworks", "spot-needs-checkpoints"} <= _ids(pub)
    assert [v.severity for v in pub] == sorted((v.severity for v in pub), key=SEVERITIES.index)


def test_multinode_network():
    assert "multinode-without-rdma" not in _ids(evaluate_instance("generic-8xH100", nodes=4))
    assert "multinode-without-rdma" in _ids(evaluate_instance("generic-8xL20", nodes=2), "warning")
    # the ECS doc states a VPC (TCP) network for gn7i: a warning; an undocumented network gives an info note
    assert "multinode-without-rdma" in _ids(evaluate_instance("ecs.gn7i-c8g1.2xlarge", nodes=2), "warning")
    assert "multinode-without-rdma" in _ids(evaluate_instance("TI.GN10.20XLARGE320.POST", nodes=2), "info")
    assert "multinode-without-rdma" not in _ids(evaluate_instance("generic-8xL20", nodes=1))


def test_regions_must_match():
    v = evaluate_instance("ecs.gn7i-c8g1.2xlarge", region="cn-hangzhou", workspace_region="cn-beijing")
    assert "region-must-match" in _ids(v, "error")
    v = evaluate_instance("ecs.gn7i-c8g1.2xlarge", region="cn-hangzhou", workspace_region="cn-hangzhou",
                          storage_region="cn-hangzhou")
    assert "region-must-match" not in _ids(v)


def test_cpfs_and_custom_image():
    assert "cpfs-needs-vpc" in _ids(evaluate_instance("ml.gu7ef.8xlarge-gu100", storage="cpfs", vpc=False))
    assert "lingjun-custom-image-rdma" in _ids(evaluate_instance("ml.gu7ef.8xlarge-gu100", custom_image=True, vpc=True))
    assert "lingjun-custom-image-rdma" not in _ids(evaluate_instance("ecs.gn7i-c8g1.2xlarge", custom_image=True))


def test_pcie_tensor_parallel():
    assert "pcie-tensor-parallel" in _ids(evaluate_instance("generic-8xL20", tp=2))
    assert "pcie-tensor-parallel" not in _ids(evaluate_instance("generic-8xH100", tp=8))


@pytest.mark.parametrize("cmd,bad", [
    ("torchrun --nproc_per_node=$WORLD_SIZE train.py", True),
    ('torchrun --nproc-per-node "${WORLD_SIZE}" train.py', True),
    ("torchrun --nnodes=$NPROC_PER_NODE --nproc_per_node=8 train.py", True),
    ("torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK --nproc_per_node=$NPROC_PER_NODE "
     "--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py", False),
])
def test_dlc_launch_command(cmd, bad):
    v = evaluate_command(cmd)
    assert bool(v) is bad
    if bad:
        assert v[0].severity == "error" and "--nnodes=$WORLD_SIZE" in v[0].fix
    # the same command on a generic cluster is not checked against DLC's env-var semantics
    assert evaluate_command(cmd, platform="generic") == []


def test_facts_never_fire_and_get_rule():
    ctx = JobContext(platform="pai-dlc", resource_class="pai-lingjun", vpc=True, nodes=1)
    assert not {r.id for r in load_rules() if r.kind == "fact"} & _ids(evaluate(ctx))
    assert get_rule("torchrun-allowed-on-dlc").verified
    with pytest.raises(Exception) as ei:
        get_rule("torchrun-allowed")
    assert "torchrun-allowed-on-dlc" in ei.value.fix
