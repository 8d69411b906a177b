"""The :class:`Hardware` record the speed model reads: plain numbers about one GPU and its node.

The estimate package knows no catalog field names; ``trainfit.catalog.hardware.hardware_for`` builds this record
from the typed catalog records (:class:`~trainfit.catalog.GPU`, :class:`~trainfit.catalog.Instance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainfit.errors import CatalogError
from trainfit.i18n import _

GpuClass = Literal["hopper", "ampere", "ada", "volta", "turing"]
GPU_CLASSES: tuple[str, ...] = ("hopper", "ampere", "ada", "volta", "turing")

LINK_EFFICIENCY_DEFAULT = 0.8
"""Assumption: NCCL ring collectives reach ~80% of the link's unidirectional bandwidth (bus bandwidth
vs line rate); applies to NVLink, PCIe and RDMA alike. Settable per :class:`Hardware`."""

CPU_ADAM_PARAMS_PER_S_DEFAULT = 2.0e9
"""Assumption: DeepSpeedCPUAdam updates ~2e9 parameters/s per node. It is memory-bound at ~34 bytes of
DRAM traffic per parameter (fp32 param, grad, m, v read; param, m, v written; bf16 copy written), so
2e9/s needs ~68 GB/s, a third to a half of a two-socket server's STREAM bandwidth. DeepSpeed states only
the relative speed-up ("5X-7X faster than the standard PyTorch implementation", ZeRO-Offload tutorial)."""

PCIE_GBYTES_PER_S = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
"""PCIe x16 bandwidth per direction, GB/s (PCI-SIG: 8/16/32/64 GT/s per lane, 128b/130b encoding;
gen 6 uses FLIT mode, ~121 GB/s)."""


@dataclass(frozen=True, kw_only=True)
class Hardware:
    """What the speed model needs to know about a GPU and its node (plain numbers, bytes not bits)."""

    name: str = "custom"
    gpu_class: GpuClass
    """hopper | ampere | ada | volta | turing (selects the efficiency factor)."""
    peak_tflops: float
    """Dense 16-bit (bf16/fp16) tensor-core peak, TFLOP/s, no sparsity."""
    peak_fp8_tflops: float | None = None
    """Dense FP8 tensor-core peak, TFLOP/s (None: no FP8 tensor cores)."""
    supports_bf16: bool = True
    """False for Volta/Turing (no bf16 tensor cores)."""
    mem_gbytes_per_s: float | None = None
    """HBM/GDDR bandwidth, GB/s (only the QLoRA dequantize term uses it)."""
    intra_node_gbytes_per_s: float
    """Per-GPU unidirectional bandwidth to the other GPUs of the node (NVLink, or PCIe when no NVLink)."""
    inter_node_gbytes_per_s: float | None = None
    """Per-node unidirectional network bandwidth, all NICs together (8 x 400 Gbit/s = 400 GB/s)."""
    pcie_gbytes_per_s: float = PCIE_GBYTES_PER_S[4]
    """Host-to-GPU bandwidth per GPU, one direction (CPU offload)."""
    gpus_per_node: int = 8
    """GPUs one node of this hardware holds."""
    link_efficiency: float = LINK_EFFICIENCY_DEFAULT
    """Fraction of a link's bandwidth ring collectives reach."""
    cpu_adam_params_per_s: float = CPU_ADAM_PARAMS_PER_S_DEFAULT
    """CPU Adam throughput per node (parameters updated per second), for optimizer offload."""
    notes: tuple[str, ...] = ()
    """Assumptions made while building this record from the catalog (reported as speed warnings)."""

    def __post_init__(self) -> None:
        if self.gpu_class not in GPU_CLASSES:
            raise CatalogError(_("hardware {name}: gpu_class must be one of {allowed}; got {value!r}").format(
                name=self.name, allowed=", ".join(GPU_CLASSES), value=self.gpu_class))
        for f in ("peak_tflops", "intra_node_gbytes_per_s", "pcie_gbytes_per_s", "cpu_adam_params_per_s"):
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or v <= 0:
                raise CatalogError(_("hardware {name}: {field} must be positive, got {value!r}").format(
                    name=self.name, field=f, value=v))
        for f in ("peak_fp8_tflops", "mem_gbytes_per_s", "inter_node_gbytes_per_s"):
            v = getattr(self, f)
            if v is not None and (not isinstance(v, (int, float)) or v <= 0):
                raise CatalogError(_("hardware {name}: {field} must be positive or None, got {value!r}").format(
                    name=self.name, field=f, value=v))
        if not 0 < self.link_efficiency <= 1:
            raise CatalogError(_("hardware {name}: link_efficiency must be in (0, 1]").format(name=self.name))
        if not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 1:
            raise CatalogError(_("hardware {name}: gpus_per_node must be a positive integer").format(name=self.name))


def kernel_gaps(attention: str, gpu_class: str | None, gpu_name: str) -> list[str]:
    """Why the workload's kernels cannot run on this GPU (empty when they can): the one gate that speed
    estimates (as a warning) and ``trainfit check`` (as an error) both report. FlashAttention-3 is built for
    Hopper (sm90) only (https://github.com/Dao-AILab/flash-attention#flashattention-3-beta-release);
    FlashAttention-2 for Ampere, Ada and Hopper, not Turing (T4) or Volta (V100)
    (https://github.com/Dao-AILab/flash-attention#installation-and-features)."""
    pre_ampere = gpu_class in ("volta", "turing")
    if attention == "flash3" and gpu_class not in ("hopper", None):
        alt = "sdpa" if pre_ampere else _("flash (FlashAttention-2) or sdpa")
        return [_("FlashAttention-3 (--attention flash3) runs on Hopper GPUs (H100/H800/H200/H20) only, not on "
                  "{gpu}: use --attention {alt}").format(gpu=gpu_name, alt=alt)]
    if attention == "flash" and pre_ampere:
        return [_("FlashAttention-2 (--attention flash) runs on Ampere, Ada and Hopper GPUs only, not on {gpu}: "
                  "use --attention sdpa").format(gpu=gpu_name)]
    return []
