"""``render --target monitoring``: a Prometheus scrape config for the metrics ``trainfit watch --hf-callback``
exports (port 9400 + local rank on every node) and a Grafana dashboard of them (step time, tokens/s, MFU, data
wait, loss, grad norm, memory, GPU utilisation). Not part of ``--target all``: ask for it by name."""

from __future__ import annotations

from trainfit.i18n import _
from trainfit.launch._context import RenderContext
from trainfit.launch._common import sft_only
from trainfit.watch.monitoring import monitoring_files
from trainfit.providers.registry import rents_whole_nodes

FILES = ("prometheus-scrape.yaml", "grafana-dashboard.json")
IN_ALL = False


def applies(ctx: RenderContext) -> str | None:
    why = sft_only(ctx)
    if why:
        return why
    if ctx.megatron:
        return _("Megatron runs have no HF Trainer callback to export metrics (docs/watch.md)")
    return None


def render(ctx: RenderContext) -> dict[str, str]:
    k8s = None if rents_whole_nodes(ctx.plan.placement.provider) else "default"  # a shared cluster: Kubernetes
    return monitoring_files(job=ctx.job_name, port=9400, gpus_per_node=ctx.gpus_per_node, kubernetes_namespace=k8s)
