"""Traffic of one optimizer step that is not a collective between GPUs: CPU-offload PCIe transfers (with the CPU
optimizer step) and QLoRA's dequantize reads and writes in GPU memory. Formulas and overlap assumptions:
``estimate/speed.py``'s module docstring and ``docs/speed-model.md``."""

from __future__ import annotations

from trainfit.estimate.comm import QLORA_BYTES_PER_PARAM, CommTerm, Links, _base_bytes, data_parallel_group
from trainfit.estimate.hardware import Hardware
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload

OFFLOAD_OVERLAP = 0.5
"""Assumption: half the offload PCIe traffic overlaps backward (ZeRO-Offload streams gradients as buckets
fill; the parameter upload after the CPU step is exposed)."""

QLORA_DEQUANT_BYTES_PER_PARAM = QLORA_BYTES_PER_PARAM + 2.0
"""Dequantizing one 4-bit weight reads 0.516 bytes and writes a 2-byte bf16 copy (bitsandbytes
dequantizes the whole weight before the matmul)."""


def offload_term(model: ModelShape, wl: Workload, hw: Hardware, links: Links, trainable: float,
                 assumptions: list[str]) -> tuple[CommTerm | None, float]:
    """CPU offload: (PCIe traffic term or None, CPU optimizer seconds per step, not overlapped)."""
    if not (wl.offload != "none" and wl.strategy in ("zero1", "zero2", "zero3", "fsdp")):
        return None, 0.0
    m = wl.grad_accum
    mp = wl.tp * wl.pp
    dp = data_parallel_group(wl)
    shard = trainable / max(1, dp) / mp
    grad_trips = m if wl.strategy in ("zero2", "zero3", "fsdp") else 1
    vol = shard * 2.0 * grad_trips + shard * 2.0  # bf16 grads down, bf16 params up
    if wl.offload == "all":
        vol += m * 2 * (_base_bytes(model, wl) / max(1, dp) / mp)  # parameter shard fetched for fwd and bwd
    secs = vol / (hw.pcie_gbytes_per_s * 1e9 * links.link_eff)
    term = CommTerm(name=f"offload-{wl.offload}-pcie", seconds=secs, overlap=OFFLOAD_OVERLAP, link="pcie",
                    bytes_per_gpu=vol)
    node_params = shard * min(links.g_node, wl.gpus)
    cpu_s = node_params / hw.cpu_adam_params_per_s
    assumptions.append(_("CPU Adam at {rate:.3g} params/s per node, not overlapped").format(rate=hw.cpu_adam_params_per_s))
    return term, cpu_s


def dequant_seconds(model: ModelShape, wl: Workload, hw: Hardware, warnings: list[str],
                    assumptions: list[str]) -> float:
    """QLoRA dequantize traffic (memory-bound) per step: forward, backward (+ recompute) per micro-batch."""
    if wl.method != "qlora":
        return 0.0
    if not hw.mem_gbytes_per_s:
        warnings.append(_("GPU memory bandwidth unknown: QLoRA dequantize time not counted"))
        return 0.0
    mp = wl.tp * wl.pp
    q = sum(t.total for t in model.tensors() if t.kind == "linear") / mp
    assumptions.append(_("QLoRA dequantizes every 4-bit linear weight once per forward, backward and recompute"))
    return wl.grad_accum * (2 + (1 if wl.grad_ckpt else 0)) * q * QLORA_DEQUANT_BYTES_PER_PARAM / (
        hw.mem_gbytes_per_s * 1e9)
