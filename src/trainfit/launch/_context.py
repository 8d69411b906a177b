"""What every render target reads: one frozen :class:`RenderContext` built from a model, a workload, an
optional instance type and an optional plan summary (memory, speed, cost).

Nothing here imports torch, transformers or pandas; the catalog is used when it is installed and answers,
and every field it would fill has a fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from trainfit.errors import RenderError, TrainfitError
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload

#: Where the checkpoint store (OSS, a PVC, a SkyPilot bucket) is mounted in every rendered job.
CKPT_MOUNT = "/mnt/checkpoints"
#: PAI's Qwen3 Megatron image (Pai-Megatron-Patch recipe; tag read in the DLC doc, see pai-facts 4).
PAI_IMAGE = "dsw-registry-vpc.{region}.cr.aliyuncs.com/pai/pai-megatron-patch:25.04"
#: Lingjun spec names: ml.gu7ef.8xlarge-gu100, ml.gu7xf..., ml.gu8xf..., ml.gu8tf.8.46xlarge.
_LINGJUN_RE = re.compile(r"^ml\.gu\d+[a-z]*f\.", re.IGNORECASE)
PLACEHOLDER = "REPLACE_ME"


def is_lingjun_type(instance_type: str | None) -> bool:
    """True for Lingjun spec names (``ml.gu7xf.8xlarge-gu108``...), by the catalog when it knows the name."""
    if not instance_type:
        return False
    inst = lookup_instance(instance_type)
    if inst is not None:
        return getattr(inst, "resource_class", "") == "pai-lingjun"
    return bool(_LINGJUN_RE.match(instance_type.strip()))


def lookup_instance(instance_type: str | None) -> Any | None:
    """The catalog's :class:`Instance` for ``instance_type``, or None (unknown name, or no catalog)."""
    if not instance_type:
        return None
    try:
        from trainfit.catalog.instances import list_instances
    except ImportError:
        return None
    try:
        rows = [r for r in list_instances() if r.instance_type.lower() == instance_type.strip().lower()]
    except TrainfitError:
        return None
    return rows[0] if rows else None


def gpu_memory_gib(gpu: str | None) -> tuple[str | None, float | None]:
    """(canonical name, nominal GiB) of a GPU name from the catalog; (name, None) when unknown."""
    if not gpu:
        return None, None
    try:
        from trainfit.catalog.gpus import get_gpu

        g = get_gpu(gpu)
        return g.name, g.usable_mem_gib
    except (ImportError, TrainfitError):
        return gpu, None


def model_repo_id(model: ModelShape) -> str:
    """Hugging Face / ModelScope id of a registry model (``Qwen/Qwen3-8B``)."""
    name = model.name
    return name if "/" in name else f"Qwen/{name}"


def slug(text: str, limit: int = 40) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (s[:limit].rstrip("-")) or "job"


@dataclass(frozen=True, kw_only=True)
class RenderContext:
    """Everything a target needs. Build it with :func:`trainfit.launch.build_context`."""

    model: ModelShape
    model_id: str
    workload: Workload
    instance_type: str | None = None
    gpu: str | None = None
    gpu_mem_gib: float | None = None
    gpus_per_instance: int | None = None
    lingjun: bool = False
    spot: bool = False
    spot_discount_limit: float | None = None
    region: str = "cn-hangzhou"
    workspace_id: str | None = None
    resource_id: str | None = None
    image: str = ""
    custom_image: bool = False
    dataset: str = "AI-ModelScope/alpaca-gpt4-data-en"
    job_name: str = "trainfit-job"
    checkpoint_uri: str = ""
    vpc: dict[str, str] | None = None
    learning_rate: float | None = None
    epochs: int = 1
    save_steps: int = 200
    summary: dict[str, Any] = field(default_factory=dict)
    """Plan it came from: ``memory`` {reserved_gib, tensor_peak_gib, peak_phase, gpu_mem_gib, fits},
    ``speed`` {tokens_per_s, step_seconds, mfu} or None, ``cost`` {hours, gpu_hours, cost, currency} or None,
    ``source`` (a line saying where the numbers came from)."""

    @property
    def ckpt_dir(self) -> str:
        return f"{CKPT_MOUNT}/{self.job_name}"

    @property
    def nodes(self) -> int:
        return self.workload.nodes

    @property
    def gpus_per_node(self) -> int:
        return min(self.workload.gpus, self.workload.gpus_per_node)

    @property
    def megatron(self) -> bool:
        return self.workload.uses_megatron

    @property
    def lr(self) -> float:
        if self.learning_rate is not None:
            return self.learning_rate
        return 1e-5 if self.workload.method in ("full", "freeze") else 1e-4

    def header_lines(self) -> list[str]:
        """The plan this file came from, one fact a line (no comment markers)."""
        wl = self.workload
        s = self.summary
        lines = [
            f"rendered by trainfit from: {s.get('source', 'trainfit memory estimate')}",
            f"model {self.model_id}; method {wl.method}; seq_len {wl.seq_len}; micro_batch {wl.micro_batch}; "
            f"grad_accum {wl.grad_accum}; global_batch {wl.global_batch}; gpus {wl.gpus} "
            f"({self.nodes} node(s) x {self.gpus_per_node}); strategy {wl.strategy}; offload {wl.offload}; "
            f"precision {wl.precision}; tp {wl.tp} pp {wl.pp} ep {wl.ep} cp {wl.cp}",
            f"instance {self.instance_type or 'not set'}; gpu {self.gpu or 'not set'}; "
            f"{'spot' if self.spot else 'on-demand'}; region {self.region}",
        ]
        mem = s.get("memory") or {}
        if mem:
            fit = mem.get("fits")
            lines.append(
                f"memory: {_num(mem.get('reserved_gib'))} GiB per GPU reserved (tensor peak "
                f"{_num(mem.get('tensor_peak_gib'))} GiB, {mem.get('peak_phase', '?')})"
                + (f" of {_num(mem.get('gpu_mem_gib'))} GiB: {'fits' if fit else 'DOES NOT FIT'}"
                   if mem.get("gpu_mem_gib") else ""))
        speed = s.get("speed")
        lines.append("speed: " + (f"{_num(speed.get('tokens_per_s'), 0)} tokens/s, "
                                  f"{_num(speed.get('step_seconds'))} s/step, MFU {_num(speed.get('mfu'))}"
                                  if speed else "not estimated (no trainfit plan given)"))
        cost = s.get("cost")
        if cost and cost.get("cost") is not None:
            text = (f"{_num(cost.get('cost'))} {cost.get('currency') or ''} for {_num(cost.get('hours'))} h "
                    f"({_num(cost.get('gpu_hours'))} GPU-hours)")
        elif cost:
            text = (f"no price in the catalog; {_num(cost.get('hours'))} h "
                    f"({_num(cost.get('gpu_hours'))} GPU-hours)")
        else:
            text = "not estimated (no trainfit plan given)"
        lines.append("cost: " + text)
        return lines


def _num(v: Any, nd: int = 2) -> str:
    if v is None:
        return "?"
    if isinstance(v, (int, float)):
        return f"{v:,.{nd}f}" if nd else f"{v:,.0f}"
    return str(v)
