"""Monitoring generators: the scrape config targets every process of every node, the dashboard only asks for
metrics the callback serves."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from trainfit.errors import WatchError
from trainfit.watch.metrics import METRICS
from trainfit.watch.monitoring import grafana_dashboard, monitoring_files, prometheus_scrape_config


def test_static_targets_cover_every_local_rank_of_every_host():
    text = prometheus_scrape_config(job="sft", port=9500, gpus_per_node=4, hosts=["node-0", "node-1"])[
        "prometheus-scrape.yaml"]
    jobs = yaml.safe_load(text)["scrape_configs"]
    assert len(jobs) == 1
    targets = jobs[0]["static_configs"][0]["targets"]
    assert sorted(targets) == sorted(f"{h}:{9500 + r}" for h in ("node-0", "node-1") for r in range(4))
    assert jobs[0]["static_configs"][0]["labels"] == {"training_job": "sft"}


def test_kubernetes_discovery_one_job_per_local_rank():
    jobs = yaml.safe_load(prometheus_scrape_config(job="qwen3.sft", gpus_per_node=2, kubernetes_namespace="ml")[
        "prometheus-scrape.yaml"])["scrape_configs"]
    assert [j["job_name"] for j in jobs] == ["trainfit-qwen3.sft-local-rank-0", "trainfit-qwen3.sft-local-rank-1"]
    for rank, j in enumerate(jobs):
        keep = j["relabel_configs"][0]
        assert keep["action"] == "keep" and re.fullmatch(keep["regex"], "qwen3.sft")
        assert not re.fullmatch(keep["regex"], "qwen3xsft")  # the dot is literal
        assert j["relabel_configs"][1]["replacement"] == f"$1:{9400 + rank}"


def test_dashboard_uses_only_served_metrics():
    dash = json.loads(grafana_dashboard(job="sft")["grafana-dashboard.json"])
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"trainfit_[a-z_]+", e)}
    served = {m.prom_name for m in METRICS if m.prom_name}
    assert used and used <= served, used - served
    assert {"trainfit_data_wait_seconds", "trainfit_tokens_per_second", "trainfit_loss"} <= used
    assert all('training_job="sft"' in e for e in exprs)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))


def test_monitoring_files_and_bad_input():
    assert set(monitoring_files(job="sft")) == {"prometheus-scrape.yaml", "grafana-dashboard.json"}
    with pytest.raises(WatchError):
        prometheus_scrape_config(job="bad name")
    with pytest.raises(WatchError):
        prometheus_scrape_config(job="sft", port=65535, gpus_per_node=8)
