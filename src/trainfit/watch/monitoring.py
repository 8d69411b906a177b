"""Monitoring files for a run that uses TrainfitCallback: a Prometheus scrape config and a Grafana
dashboard. Pure functions returning ``{filename: text}``; ``render --target monitoring`` writes them.

Every training process serves its gauges on ``port + local_rank`` (TrainfitCallback(prometheus_port=port)),
so a node with G GPUs has G targets. Metric names come from :data:`trainfit.watch.metrics.METRICS`.
"""

from __future__ import annotations

import json
import re

import yaml

from trainfit.errors import WatchError
from trainfit.i18n import _, ngettext
from trainfit.watch.metrics import BY_KEY

DEFAULT_PORT = 9400
_NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$")


def _check(job: str, port: int, gpus_per_node: int, scrape_interval_s: int) -> None:
    if not _NAME_RE.match(job):
        raise WatchError(_("job name {job!r} must be 1-63 letters, digits, '.', '_' or '-'").format(job=job))
    if not 1 <= port <= 65535 - gpus_per_node:
        raise WatchError(ngettext("port {port} out of range for {n} GPU per node",
                                  "port {port} out of range for {n} GPUs per node", gpus_per_node).format(
            port=port, n=gpus_per_node))
    if gpus_per_node < 1 or scrape_interval_s < 1:
        raise WatchError(_("gpus_per_node and scrape_interval_s must be >= 1"))


def prometheus_scrape_config(*, job: str, port: int = DEFAULT_PORT, gpus_per_node: int = 1,
                             hosts: list[str] | None = None, kubernetes_namespace: str | None = None,
                             scrape_interval_s: int = 15) -> dict[str, str]:
    """``{"prometheus-scrape.yaml": text}``: a ``scrape_configs`` list to merge into prometheus.yml.

    With ``kubernetes_namespace``: one scrape job per local rank over the pods of PyTorchJob ``job``
    (Kubernetes pod discovery, label ``training.kubeflow.org/job-name``), the address rewritten to
    ``pod IP:port+rank``. Otherwise static targets ``host:port+rank`` for each of ``hosts`` (default
    localhost).
    """
    _check(job, port, gpus_per_node, scrape_interval_s)
    jobs = []
    if kubernetes_namespace:
        for rank in range(gpus_per_node):
            jobs.append({
                "job_name": f"trainfit-{job}-local-rank-{rank}",
                "scrape_interval": f"{scrape_interval_s}s",
                "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [kubernetes_namespace]}}],
                "relabel_configs": [
                    {"source_labels": ["__meta_kubernetes_pod_label_training_kubeflow_org_job_name"],
                     "regex": job.replace(".", r"\."), "action": "keep"},
                    {"source_labels": ["__meta_kubernetes_pod_ip"], "target_label": "__address__",
                     "replacement": f"$1:{port + rank}"},
                    {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                    {"target_label": "training_job", "replacement": job},
                ],
            })
    else:
        targets = [f"{h}:{port + r}" for h in (hosts or ["localhost"]) for r in range(gpus_per_node)]
        jobs.append({"job_name": f"trainfit-{job}", "scrape_interval": f"{scrape_interval_s}s",
                     "static_configs": [{"targets": targets, "labels": {"training_job": job}}]})
    head = (f"# Prometheus scrape config for training job {job}: merge into prometheus.yml.\n"
            f"# TrainfitCallback(prometheus_port={port}) serves each process on port {port} + local rank.\n")
    return {"prometheus-scrape.yaml": head + yaml.safe_dump({"scrape_configs": jobs}, sort_keys=False)}


def _panel(pid: int, title: str, exprs: list[tuple[str, str]], unit: str, x: int, y: int,
           description: str = "") -> dict:
    return {
        "id": pid, "type": "timeseries", "title": title, "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        "targets": [{"refId": chr(ord("A") + i), "expr": e, "legendFormat": leg,
                     "datasource": {"type": "prometheus", "uid": "${datasource}"}} for i, (e, leg) in enumerate(exprs)],
    }


def grafana_dashboard(*, job: str, title: str | None = None) -> dict[str, str]:
    """``{"grafana-dashboard.json": text}``: throughput, step time vs data wait, MFU, loss, gradient norm,
    learning rate, GPU memory, utilisation and power for training job ``job`` (import it in Grafana)."""
    _check(job, DEFAULT_PORT, 1, 1)
    sel = f'training_job="{job}"'

    def m(key: str) -> str:
        return BY_KEY[key].prom_name

    rows = [
        ("Tokens per second (all ranks)", [(f"max({m('tokens_per_s')}{{{sel}}})", "tokens/s")], "short",
         "tokens / step time, from rank 0"),
        ("Step time and data wait", [(f"max by (rank) ({m('step_seconds')}{{{sel}}})", "step {{rank}}"),
                                     (f"max by (rank) ({m('data_wait_seconds')}{{{sel}}})", "data wait {{rank}}")],
         "s", "data wait >= 10 % of step time: the input pipeline is the bottleneck"),
        ("Data wait fraction", [(f"max by (rank) ({m('data_wait_seconds')}{{{sel}}} / {m('step_seconds')}{{{sel}}})",
                                 "rank {{rank}}")], "percentunit", "warn at 0.10, critical at 0.20"),
        ("MFU", [(f"max({m('mfu')}{{{sel}}})", "MFU")], "percentunit",
         "model FLOP utilisation (needs flops_per_token and peak_tflops_per_gpu)"),
        ("Loss", [(f"max({m('loss')}{{{sel}}})", "loss")], "short", ""),
        ("Gradient norm", [(f"max({m('grad_norm')}{{{sel}}})", "grad norm")], "short", "before clipping"),
        ("Learning rate", [(f"max({m('learning_rate')}{{{sel}}})", "lr")], "short", ""),
        ("GPU memory", [(f"max by (rank) ({m('mem_reserved_gib')}{{{sel}}})", "reserved {{rank}}"),
                        (f"max by (rank) ({m('mem_allocated_gib')}{{{sel}}})", "allocated {{rank}}"),
                        (f"max by (rank) ({m('gpu_mem_gib')}{{{sel}}})", "total {{rank}}")], "bytes",
         "peak per step; reserved near total risks out-of-memory"),
        ("GPU utilisation", [(f"max by (rank) ({m('gpu_util')}{{{sel}}})", "rank {{rank}}")], "percentunit",
         "NVML: time a kernel ran, not how busy the SMs were"),
        ("GPU power", [(f"max by (rank) ({m('gpu_power_w')}{{{sel}}})", "rank {{rank}}")], "watt", ""),
        ("Checkpoint save time", [(f"max({m('save_seconds')}{{{sel}}})", "save")], "s", ""),
        ("Step", [(f"max({m('step')}{{{sel}}})", "step")], "short", "optimizer steps done"),
    ]
    panels = [_panel(i + 1, t, e, u, 12 * (i % 2), 8 * (i // 2), d) for i, (t, e, u, d) in enumerate(rows)]
    dash = {
        "title": title or f"trainfit: {job}",
        "uid": ("trainfit-" + re.sub(r"[^a-zA-Z0-9-]", "-", job))[:40],
        "tags": ["trainfit", "training"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                 "query": "prometheus", "current": {}, "hide": 0}]},
        "panels": panels,
    }
    return {"grafana-dashboard.json": json.dumps(dash, indent=2) + "\n"}


def monitoring_files(*, job: str, port: int = DEFAULT_PORT, gpus_per_node: int = 1, hosts: list[str] | None = None,
                     kubernetes_namespace: str | None = None, scrape_interval_s: int = 15) -> dict[str, str]:
    """Both files, for ``render --target monitoring``."""
    out = prometheus_scrape_config(job=job, port=port, gpus_per_node=gpus_per_node, hosts=hosts,
                                   kubernetes_namespace=kubernetes_namespace, scrape_interval_s=scrape_interval_s)
    out.update(grafana_dashboard(job=job))
    return out
