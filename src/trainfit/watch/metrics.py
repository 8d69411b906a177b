"""The per-step training metrics: one table shared by the JSONL writer, the Prometheus endpoint of
:class:`trainfit.integrations.hf.TrainfitCallback`, ``trainfit diagnose`` and the Grafana dashboard.

JSONL keys carry their unit in the name (``_seconds``, ``_gib``, ``_w``); Prometheus names follow the
Prometheus convention of base units (seconds, bytes, ratios), so ``*_gib`` values are exported in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """One per-step metric."""

    key: str
    """Key in the JSONL record."""
    prom_name: str
    """Prometheus gauge name (empty: not exported)."""
    help: str
    """What it measures, and how."""
    prom_scale: float = 1.0
    """Multiply the JSONL value by this for Prometheus (GiB -> bytes)."""

    def __post_init__(self) -> None:
        if not self.key or (self.prom_name and not self.prom_name.startswith("trainfit_")):
            raise ValueError(f"bad metric spec {self.key!r}/{self.prom_name!r}")


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(key="step", prom_name="trainfit_step", help="optimizer steps done (Trainer global_step)"),
    MetricSpec(key="step_seconds", prom_name="trainfit_step_seconds",
               help="wall time of the step: data_wait_seconds + compute_seconds (saving and logging excluded)"),
    MetricSpec(key="compute_seconds", prom_name="trainfit_compute_seconds",
               help="on_step_begin to on_step_end: forward, backward and optimizer of all micro-batches"),
    MetricSpec(key="data_wait_seconds", prom_name="trainfit_data_wait_seconds",
               help="end of the previous step's callbacks to on_step_begin: the Trainer fetches the step's "
                    "micro-batches from the DataLoader in this window"),
    MetricSpec(key="save_seconds", prom_name="trainfit_save_seconds",
               help="checkpoint save of this step (on_step_end/on_log to on_save); absent when no save"),
    MetricSpec(key="tokens", prom_name="trainfit_step_tokens", help="input tokens of the step, all ranks"),
    MetricSpec(key="tokens_per_s", prom_name="trainfit_tokens_per_second",
               help="tokens / step_seconds, all ranks"),
    MetricSpec(key="mfu", prom_name="trainfit_mfu_ratio",
               help="tokens_per_s * flops_per_token / (peak FLOP/s per GPU * world size)"),
    MetricSpec(key="loss", prom_name="trainfit_loss", help="training loss as the Trainer logs it"),
    MetricSpec(key="grad_norm", prom_name="trainfit_grad_norm", help="gradient norm before clipping"),
    MetricSpec(key="learning_rate", prom_name="trainfit_learning_rate", help="learning rate of the step"),
    MetricSpec(key="mem_allocated_gib", prom_name="trainfit_gpu_memory_allocated_bytes", prom_scale=GIB,
               help="peak torch.cuda memory allocated during the step"),
    MetricSpec(key="mem_reserved_gib", prom_name="trainfit_gpu_memory_reserved_bytes", prom_scale=GIB,
               help="peak torch.cuda memory reserved by the caching allocator during the step"),
    MetricSpec(key="gpu_mem_gib", prom_name="trainfit_gpu_memory_total_bytes", prom_scale=GIB,
               help="memory of the GPU (NVML, else torch.cuda device properties)"),
    MetricSpec(key="gpu_util", prom_name="trainfit_gpu_utilization_ratio",
               help="NVML utilization.gpu / 100 at the end of the step: fraction of time a kernel ran, not "
                    "how busy the SMs were"),
    MetricSpec(key="gpu_power_w", prom_name="trainfit_gpu_power_watts", help="NVML power draw"),
)

BY_KEY = {m.key: m for m in METRICS}

REQUIRED_KEYS = ("step", "step_seconds", "data_wait_seconds")
"""Keys every step record must carry for ``trainfit diagnose``."""
