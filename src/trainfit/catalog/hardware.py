"""Typed catalog adapter: the speed model's :class:`~trainfit.estimate.hardware.Hardware` record from the catalog's
:class:`~trainfit.catalog.GPU` and :class:`~trainfit.catalog.Instance` rows. The only place that maps catalog
field names (and their units) onto the speed model, so ``trainfit.estimate`` knows no catalog field."""

from __future__ import annotations

from trainfit.catalog.gpus import GPU
from trainfit.catalog.instances import Instance
from trainfit.errors import CatalogError
from trainfit.estimate.hardware import GPU_CLASSES, PCIE_GBYTES_PER_S, GpuClass, Hardware
from trainfit.i18n import _

#: A value of a :class:`~trainfit.estimate.hardware.Hardware` field.
HardwareValue = str | float | int | bool | tuple[str, ...] | None

RDMA_FALLBACK_GBIT_PER_S = 400
"""Assumption for nodes the catalog marks RDMA without a bandwidth: one 400 Gbit/s RoCE/InfiniBand port per
node, the low end of GPU RDMA nodes (8 x 200-400 Gbit/s is common on H800/H100 nodes)."""

_CLASS_BY_NAME: tuple[tuple[GpuClass, tuple[str, ...]], ...] = (
    ("hopper", ("H100", "H800", "H200", "H20", "GH200")),
    ("ampere", ("A100", "A800", "A10", "A30", "A40", "A6000", "3090")),
    ("ada", ("L40", "L20", "L4", "4090", "6000 ADA")),
    ("volta", ("V100",)),
    ("turing", ("T4", "2080")),
)

ARCH_ALIASES: dict[str, GpuClass] = {
    "hopper": "hopper", "ampere": "ampere", "ada": "ada", "ada lovelace": "ada", "ada-lovelace": "ada",
    "lovelace": "ada", "volta": "volta", "turing": "turing", "pascal": "turing"}
"""Catalog ``arch`` -> efficiency class. Pascal (P100, no tensor cores) is given Turing's factor
(assumption: the lowest class)."""


def gpu_class_from_name(name: str) -> GpuClass | None:
    """Best-effort GPU class from a GPU model name (``H100-SXM-80GB`` -> hopper); None if unknown."""
    up = name.upper()
    for cls, keys in _CLASS_BY_NAME:
        if any(k in up for k in keys):
            return cls
    return None


def gpu_class_of(gpu: GPU) -> GpuClass | None:
    """Efficiency class of a catalog GPU: its ``arch``, else its name; None if neither says."""
    arch = gpu.arch or None
    return (ARCH_ALIASES.get(arch.lower()) if arch else None) or gpu_class_from_name(gpu.name or "")


def _pos(v: float | int | None) -> float | None:
    """A positive catalog number as float; None for unknown, zero or negative."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return float(v)
    return None


def _node_links(gpu_name: str, instance: Instance) -> tuple[int, float | None, str | None, list[str]]:
    """(GPUs per node, inter-node GB/s per node or None, intra-node link kind or None, notes) of a node."""
    n = _pos(instance.gpu_count)
    gbit = _pos(instance.inter_node_gbit_per_s)
    inter = gbit / 8 if gbit else None
    notes: list[str] = []
    if inter is None and "rdma" in (instance.inter_node or "").lower():
        inter = RDMA_FALLBACK_GBIT_PER_S / 8
        notes.append(_("RDMA bandwidth of {gpu} nodes unknown: assumed {gbit} Gbit/s per node").format(
            gpu=gpu_name, gbit=RDMA_FALLBACK_GBIT_PER_S))
    return (int(n) if n else 8), inter, (instance.intra_node_link or None), notes


def hardware_for(gpu: GPU, instance: Instance | None = None, **overrides: HardwareValue) -> Hardware:
    """:class:`Hardware` of catalog ``gpu`` (optionally in the node ``instance``).

    Units as the catalog documents them: ``mem_bandwidth_gbps`` GB/s; ``nvlink_gbps`` GB/s *bidirectional*
    per GPU (halved here: collectives use one direction); ``inter_node_gbit_per_s`` Gbit/s per node (divided
    by 8). Without NVLink (``intra_node_link`` pcie or no NVLink figure) GPUs of a node talk over PCIe at the
    ``pcie_gen`` x16 rate. Without an instance a node holds 8 GPUs. ``overrides`` replace any
    :class:`Hardware` field.
    """
    name = gpu.name or "gpu"
    gpu_class = gpu_class_of(gpu)
    bf16 = _pos(gpu.bf16_dense_tflops)
    nvlink = _pos(gpu.nvlink_gbps)
    pcie_gen = _pos(gpu.pcie_gen)
    pcie = PCIE_GBYTES_PER_S.get(int(pcie_gen), PCIE_GBYTES_PER_S[4]) if pcie_gen else PCIE_GBYTES_PER_S[4]
    gpus_per_node, inter, link, notes = 8, None, None, []
    if instance is not None:
        gpus_per_node, inter, link, notes = _node_links(name, instance)
    use_nvlink = nvlink is not None and (link is None or link.lower() in ("nvlink", "nvswitch"))
    kw: dict[str, HardwareValue] = dict(
        name=name, gpu_class=gpu_class, peak_tflops=bf16 or _pos(gpu.fp16_dense_tflops),
        peak_fp8_tflops=_pos(gpu.fp8_dense_tflops), supports_bf16=bf16 is not None,
        mem_gbytes_per_s=_pos(gpu.mem_bandwidth_gbps),
        intra_node_gbytes_per_s=nvlink / 2 if use_nvlink else pcie,
        inter_node_gbytes_per_s=inter, pcie_gbytes_per_s=pcie, gpus_per_node=gpus_per_node, notes=tuple(notes),
    )
    kw.update(overrides)
    if not kw["peak_tflops"]:
        raise CatalogError(_("GPU {name}: the catalog has no bf16/fp16 dense TFLOP/s").format(name=name),
                           fix=_("add bf16_dense_tflops to its row in ~/.config/trainfit/catalog.yaml "
                                 "or pass peak_tflops=..."))
    if kw["gpu_class"] is None:
        raise CatalogError(_("GPU {name}: unknown architecture {arch!r}").format(name=name, arch=gpu.arch or None),
                           fix=_("pass gpu_class= one of {choices}").format(choices=", ".join(GPU_CLASSES)))
    return Hardware(**kw)


def precision_on(gpu: GPU, precision: str, verb: str = "sized") -> tuple[str | None, str]:
    """The precision a GPU runs a bf16 request in: bf16 on a GPU without bf16 tensor cores (V100, T4) runs as fp16
    mixed precision (fp32 master weights), with its memory and speed. ``("fp16", note)`` then, else ``(None, "")``.
    The one rule ``plan`` and ``memory`` both apply."""
    if precision in ("bf16", "amp-bf16") and gpu.bf16_dense_tflops is None and gpu.fp16_dense_tflops:
        msg = (_("{gpu} has no bf16: planned with fp16 mixed precision (fp32 master weights, loss scaling), with the "
                 "memory and speed of fp16") if verb == "planned" else
               _("{gpu} has no bf16: sized with fp16 mixed precision (fp32 master weights, loss scaling), with the "
                 "memory and speed of fp16"))
        return "fp16", msg.format(gpu=gpu.name)
    return None, ""
