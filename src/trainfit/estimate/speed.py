"""Speed model: FLOPs per token from exact shapes, an efficiency table, and exposed communication.

Pure functions over :class:`ModelShape`, :class:`Workload` and a small :class:`Hardware` record (no I/O).
Formulas, conventions and sources: ``docs/speed-model.md``. In short:

* **FLOPs** (per token, ``S`` = ``seq_len``): forward matmuls ``2 x`` active matmul parameters of the
  decoder layers (routed experts: top-k of E) plus the LM head ``2*V*h`` (the embedding lookup is free);
  full-attention core ``2*S*nh*hd`` per layer (``QK^T`` and ``AV``, ``4*S*nh*hd``, halved for the causal
  mask: NVIDIA Megatron-Bridge / NeMo AutoModel convention ``6*N + 6*L*nh*hd*S`` for fwd+bwd); Gated
  DeltaNet layers a chunked linear-attention term independent of ``S``. Backward ``2x`` forward for
  trained weights; frozen matmuls only need input gradients (``1x``); layers below the trainable ones
  (``freeze``) need no backward; gradient checkpointing re-runs one forward of every layer that has a
  backward.
* **Time** per optimizer step = ``compute / (1 - bubble) + exposed communication + CPU optimizer``,
  ``compute`` from the engine model (``estimate/engines.py``: GEMMs, attention, element-wise traffic,
  kernel launches, MoE expert loop, optimizer step per engine family).
* **Communication**: ring collectives ``bytes * (n-1)/n / (link * link_efficiency)`` per pass; DP/ZeRO/
  FSDP volume per strategy, TP all-reduce per layer, EP all-to-all per MoE layer, CP KV exchange,
  pipeline point-to-point, CPU-offload PCIe traffic. A documented fraction of DP/CP/EP/offload traffic hides
  behind compute (never more than the compute time); TP and PP traffic is exposed, EP half-hidden.
"""

from __future__ import annotations

from functools import lru_cache

from dataclasses import dataclass
from typing import Any, Literal

from trainfit.errors import CatalogError, WorkloadError
from trainfit.estimate.efficiency import FRAMEWORKS, GPU_CLASSES
from trainfit.estimate.params import (count_params, freeze_trainable_layer_ids, lora_adapter_shapes, lora_rank_of,
                                      lora_targeted)
from trainfit.models.shapes import ModelShape, ParamTensor
from trainfit.workload import Workload

GpuClass = Literal["hopper", "ampere", "ada", "volta", "turing"]

# ---------------------------------------------------------------------------------------------- constants
GDN_CHUNK_SIZE = 64
"""Chunk length of the chunked Gated DeltaNet kernel (flash-linear-attention ``chunk_gated_delta_rule``
uses 64, which transformers' Qwen3-Next calls). Only enters the small intra-chunk term."""

LINK_EFFICIENCY_DEFAULT = 0.8
"""Assumption: NCCL ring collectives reach ~80% of the link's unidirectional bandwidth (bus bandwidth
vs line rate); applies to NVLink, PCIe and RDMA alike. Settable per :class:`Hardware`."""

TCP_FALLBACK_GBYTES_PER_S = 25 / 8
"""Assumption used when a multi-node job has no inter-node bandwidth: one 25 Gbit/s VPC NIC per node."""
RDMA_FALLBACK_GBIT_PER_S = 400
"""Assumption for nodes the catalog marks RDMA without a bandwidth: one 400 Gbit/s RoCE/InfiniBand port per
node, the low end of GPU RDMA nodes (8 x 200-400 Gbit/s is common on H800/H100 nodes)."""

CPU_ADAM_PARAMS_PER_S_DEFAULT = 2.0e9
"""Assumption: DeepSpeedCPUAdam updates ~2e9 parameters/s per node. It is memory-bound at ~34 bytes of
DRAM traffic per parameter (fp32 param, grad, m, v read; param, m, v written; bf16 copy written), so
2e9/s needs ~68 GB/s, a third to a half of a two-socket server's STREAM bandwidth. DeepSpeed states only
the relative speed-up ("5X-7X faster than the standard PyTorch implementation", ZeRO-Offload tutorial)."""

OVERLAP: dict[str, float] = {
    "ddp": 0.7,
    "zero1": 0.5,
    "zero2": 0.7,
    "zero3": 0.8,
    "fsdp": 0.8,
}
"""Assumption: fraction of data-parallel traffic that runs concurrently with compute. DDP buckets its
all-reduce during backward (the last bucket is exposed); ZeRO-1 all-gathers updated parameters after the
optimizer step (not overlapped); ZeRO-2 reduce-scatters during backward (``overlap_comm``); ZeRO-3/FSDP
prefetch the next layer's all-gather. Hidden traffic never exceeds the step's compute time."""

EP_OVERLAP = 0.5
"""Assumption: half the expert-parallel all-to-all runs under compute (Megatron-Core overlaps the
dispatch/combine of one micro-batch with another's compute, ``overlap_moe_expert_parallel_comm``; without
it nothing hides). Without this, the Qwen3 MoE calibration cases are predicted 10-30% slower."""

CP_OVERLAP = 0.8
"""Assumption: ring attention overlaps the KV exchange with the attention of the current block."""

OFFLOAD_OVERLAP = 0.5
"""Assumption: half the offload PCIe traffic overlaps backward (ZeRO-Offload streams gradients as buckets
fill; the parameter upload after the CPU step is exposed)."""

QLORA_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
"""NF4 with double quantization: 4 bits + 0.127 bits of quantization constants per parameter (QLoRA,
Dettmers et al. 2023, section 3 'Double Quantization') = 0.516 bytes."""

QLORA_DEQUANT_BYTES_PER_PARAM = QLORA_BYTES_PER_PARAM + 2.0
"""Dequantizing one 4-bit weight reads 0.516 bytes and writes a 2-byte bf16 copy (bitsandbytes
dequantizes the whole weight before the matmul)."""

PCIE_GBYTES_PER_S = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
"""PCIe x16 bandwidth per direction, GB/s (PCI-SIG: 8/16/32/64 GT/s per lane, 128b/130b encoding;
gen 6 uses FLIT mode, ~121 GB/s)."""


# ---------------------------------------------------------------------------------------------- hardware
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
    cpu_adam_params_per_s: float = CPU_ADAM_PARAMS_PER_S_DEFAULT
    notes: tuple[str, ...] = ()
    """Assumptions made while building this record from the catalog (reported as speed warnings)."""
    """CPU Adam throughput per node (parameters updated per second), for optimizer offload."""

    def __post_init__(self) -> None:
        if self.gpu_class not in GPU_CLASSES:
            raise CatalogError(f"hardware {self.name}: gpu_class must be one of {', '.join(GPU_CLASSES)}; "
                               f"got {self.gpu_class!r}")
        for f in ("peak_tflops", "intra_node_gbytes_per_s", "pcie_gbytes_per_s", "cpu_adam_params_per_s"):
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or v <= 0:
                raise CatalogError(f"hardware {self.name}: {f} must be positive, got {v!r}")
        for f in ("peak_fp8_tflops", "mem_gbytes_per_s", "inter_node_gbytes_per_s"):
            v = getattr(self, f)
            if v is not None and (not isinstance(v, (int, float)) or v <= 0):
                raise CatalogError(f"hardware {self.name}: {f} must be positive or None, got {v!r}")
        if not 0 < self.link_efficiency <= 1:
            raise CatalogError(f"hardware {self.name}: link_efficiency must be in (0, 1]")
        if not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 1:
            raise CatalogError(f"hardware {self.name}: gpus_per_node must be a positive integer")


_CLASS_BY_NAME = (
    ("hopper", ("H100", "H800", "H200", "H20", "GH200")),
    ("ampere", ("A100", "A800", "A10", "A30", "A40", "A6000", "3090")),
    ("ada", ("L40", "L20", "L4", "4090", "6000 ADA")),
    ("volta", ("V100",)),
    ("turing", ("T4", "2080")),
)

_ARCH_ALIASES = {"hopper": "hopper", "ampere": "ampere", "ada": "ada", "ada lovelace": "ada",
                 "ada-lovelace": "ada", "lovelace": "ada", "volta": "volta", "turing": "turing",
                 "pascal": "turing"}
"""Catalog ``arch`` -> efficiency class. Pascal (P100, no tensor cores) is given Turing's factor
(assumption: the lowest class)."""


def gpu_class_from_name(name: str) -> GpuClass | None:
    """Best-effort GPU class from a GPU model name (``H100-SXM-80GB`` -> hopper); None if unknown."""
    up = name.upper()
    for cls, keys in _CLASS_BY_NAME:
        if any(k in up for k in keys):
            return cls  # type: ignore[return-value]
    return None


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _num(obj: Any, *names: str) -> float | None:
    for n in names:
        v = _get(obj, n)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return float(v)
    return None


def _str(obj: Any, *names: str) -> str | None:
    for n in names:
        v = _get(obj, n)
        if isinstance(v, str) and v:
            return v
    return None


def hardware_from_catalog(gpu: Any, instance: Any = None, **overrides: Any) -> Hardware:
    """Build :class:`Hardware` from a catalog GPU record (and optionally the instance it sits in).

    Reads fields defensively (attribute or dict key; first present name wins) so a renamed catalog field
    degrades to a default instead of an error. Units as the catalog documents them: ``mem_bandwidth_gbps``
    GB/s; ``nvlink_gbps`` GB/s *bidirectional* per GPU (halved here: collectives use one direction);
    ``inter_node_gbit_per_s`` Gbit/s per node (divided by 8). Without NVLink (``intra_node_link`` pcie
    or no NVLink figure) GPUs of a node talk over PCIe at the ``pcie_gen`` x16 rate. ``overrides``
    replace any :class:`Hardware` field.
    """
    name = _str(gpu, "name", "model") or "gpu"
    arch = _str(gpu, "gpu_class", "arch", "architecture", "generation")
    gpu_class = _ARCH_ALIASES.get(arch.lower()) if arch else None
    gpu_class = gpu_class or gpu_class_from_name(name)
    bf16 = _num(gpu, "bf16_dense_tflops", "bf16_tflops")
    fp16 = _num(gpu, "fp16_dense_tflops", "fp16_tflops")
    fp8 = _num(gpu, "fp8_dense_tflops", "fp8_tflops")
    mem = _num(gpu, "mem_bandwidth_gbps", "mem_gbytes_per_s")
    nvlink = _num(gpu, "nvlink_gbps")
    pcie_gen = _num(gpu, "pcie_gen")
    pcie = PCIE_GBYTES_PER_S.get(int(pcie_gen), PCIE_GBYTES_PER_S[4]) if pcie_gen else PCIE_GBYTES_PER_S[4]
    gpus_per_node = 8 if instance is None else 1
    inter = None
    link = None
    hw_notes: list[str] = []
    if instance is not None:
        n = _num(instance, "gpu_count", "gpus", "gpus_per_node")
        gpus_per_node = int(n) if n else 8
        gbit = _num(instance, "inter_node_gbit_per_s", "inter_node_gbps")
        inter = gbit / 8 if gbit else None
        kind = (_str(instance, "inter_node") or "").lower()
        if inter is None and "rdma" in kind:
            inter = RDMA_FALLBACK_GBIT_PER_S / 8
            hw_notes.append(f"RDMA bandwidth of {name} nodes unknown: assumed {RDMA_FALLBACK_GBIT_PER_S} Gbit/s per node")
        link = _str(instance, "intra_node_link")
    use_nvlink = nvlink is not None and (link is None or link.lower() in ("nvlink", "nvswitch"))
    kw: dict[str, Any] = dict(
        name=name, gpu_class=gpu_class, peak_tflops=bf16 or fp16, peak_fp8_tflops=fp8,
        supports_bf16=bf16 is not None, mem_gbytes_per_s=mem,
        intra_node_gbytes_per_s=nvlink / 2 if use_nvlink else pcie,
        inter_node_gbytes_per_s=inter, pcie_gbytes_per_s=pcie, gpus_per_node=gpus_per_node,
        notes=tuple(hw_notes),
    )
    kw.update(overrides)
    if not kw["peak_tflops"]:
        raise CatalogError(f"GPU {name}: the catalog has no bf16/fp16 dense TFLOP/s",
                           fix="add bf16_dense_tflops to its row in ~/.config/trainfit/catalog.yaml "
                               "or pass peak_tflops=...")
    if kw["gpu_class"] is None:
        raise CatalogError(f"GPU {name}: unknown architecture {arch!r}",
                           fix="pass gpu_class= one of " + ", ".join(GPU_CLASSES))
    return Hardware(**kw)


# ---------------------------------------------------------------------------------------------- FLOPs
@dataclass(frozen=True, kw_only=True)
class LayerFlops:
    """Forward FLOPs per token of one decoder layer."""

    index: int
    matmul: float
    """``2 x`` active matmul parameters (attention projections, MLP or top-k experts, router)."""
    attention: float
    """Full-attention core (causal): ``2*S*nh*hd``."""
    linear_attention: float
    """Gated DeltaNet core + depthwise conv (linear-attention layers)."""
    lora: float
    """LoRA adapters on this layer (0 unless lora/qlora)."""
    has_backward: bool

    @property
    def forward(self) -> float:
        return self.matmul + self.attention + self.linear_attention + self.lora


@dataclass(frozen=True, kw_only=True)
class FlopsBreakdown:
    """FLOPs per trained token (one token of one sequence of length ``seq_len``)."""

    seq_len: int
    method: str
    forward_matmul_flops: float
    """Decoder-layer matmuls, active parameters only."""
    forward_lm_head_flops: float
    forward_attention_flops: float
    """Full-attention score/value matmuls, causal (halved)."""
    forward_linear_attention_flops: float
    forward_lora_flops: float
    forward_flops: float
    backward_flops: float
    recompute_flops: float
    """Extra forward of gradient checkpointing (0 without it)."""
    model_flops: float
    """forward + backward: the numerator of MFU."""
    hardware_flops: float
    """model + recompute: what the GPUs execute."""
    layers: tuple[LayerFlops, ...] = ()


def _active_matmul_params(model: ModelShape, t: ParamTensor) -> float:
    if t.kind == "expert":
        return t.numel / t.experts * model.experts_per_token
    if t.kind in ("linear", "router"):
        return float(t.numel)
    return 0.0


def _lora_forward(model: ModelShape, t: ParamTensor, wl: Workload) -> float:
    """Forward FLOPs per token of the adapter on ``t``: ``2*r*(in+out)`` per adapted matrix (per active expert)."""
    in_f, out_f = lora_adapter_shapes(t, wl.lora_rank)
    per = 2.0 * lora_rank_of(t, wl.lora_rank) * (in_f + out_f)
    return per * model.experts_per_token if t.kind == "expert" else per


def full_attention_flops(model: ModelShape, seq_len: int) -> float:
    """Forward FLOPs per token of one causal full-attention layer: ``2*S*nh*hd``.

    ``QK^T`` costs ``2*hd`` per (query, key) pair and head, ``AV`` another ``2*hd``: ``4*S*nh*hd`` per query
    token over all ``S`` keys; the causal mask leaves ``S/2`` keys on average -> ``2*S*nh*hd``.
    """
    return 2.0 * seq_len * model.num_heads * model.head_dim


def linear_attention_flops(model: ModelShape, chunk: int = GDN_CHUNK_SIZE) -> float:
    """Forward FLOPs per token of one Gated DeltaNet layer (approximation, independent of ``S``).

    Per value head (``dk``, ``dv``; keys are shared by ``nv/nk`` value heads), chunked delta rule with
    chunk ``C``: state terms ``W*S``, ``Q*S``, ``K^T*U`` cost ``2*dk*dv`` each (``6*dk*dv``); intra-chunk
    ``(beta K) K^T``, ``T (beta K)``, ``Q K^T`` cost ``2*C*dk`` each and ``T (beta V)``, ``(QK^T) U``
    ``2*C*dv`` each (``C*(6*dk + 4*dv)``); the ``C x C`` triangular solve is neglected. Plus the
    depthwise causal conv ``2*K*(2*nk*dk + nv*dv)``.
    """
    dk, dv = model.linear_key_head_dim, model.linear_value_head_dim
    nk, nv = model.linear_num_key_heads, model.linear_num_value_heads
    per_head = 6.0 * dk * dv + chunk * (6.0 * dk + 4.0 * dv)
    conv = 2.0 * model.linear_conv_kernel_dim * (2 * nk * dk + nv * dv)
    return nv * per_head + conv


def flops_per_token(model: ModelShape, workload: Workload) -> FlopsBreakdown:
    """Training FLOPs per token (cached: the distribution fields do not change FLOPs per token)."""
    key = workload.with_(gpus=1, gpus_per_node=1, strategy="ddp", offload="none", micro_batch=1, grad_accum=1,
                  tp=1, pp=1, ep=1, cp=1)
    return _flops_cached(model, key)


@lru_cache(maxsize=2048)
def _flops_cached(model: ModelShape, workload: Workload) -> FlopsBreakdown:
    return _flops_per_token(model, workload)


def _flops_per_token(model: ModelShape, workload: Workload) -> FlopsBreakdown:
    """Training FLOPs per token for ``workload.method`` (see the module docstring for the rules)."""
    S = workload.seq_len
    method = workload.method
    lora = method in ("lora", "qlora")
    if method == "freeze":
        bwd_ids = set(freeze_trainable_layer_ids(model, workload))
    else:
        bwd_ids = set(range(model.num_layers))
    attn = full_attention_flops(model, S)
    lin_attn = linear_attention_flops(model) if model.n_linear_attention_layers else 0.0

    layers: list[LayerFlops] = []
    fwd = bwd = rec = 0.0
    for i in range(model.num_layers):
        ts = model.layer_tensors(i)
        mm = sum(2.0 * _active_matmul_params(model, t) for t in ts)
        lo = sum(_lora_forward(model, t, workload) for t in ts if lora and lora_targeted(t, workload.lora_targets))
        full = model.layer_type(i) == "full_attention"
        lf = LayerFlops(index=i, matmul=mm, attention=attn if full else 0.0,
                        linear_attention=0.0 if full else lin_attn, lora=lo, has_backward=i in bwd_ids)
        layers.append(lf)
        fwd += lf.forward
        if not lf.has_backward:
            continue
        if lora:
            # frozen base matmuls: input gradients only (1x); attention core and adapters: 2x
            bwd += lf.matmul + 2.0 * (lf.attention + lf.linear_attention + lf.lora)
        else:
            bwd += 2.0 * lf.forward
        if workload.grad_ckpt:
            rec += lf.forward

    head = 2.0 * model.vocab_size * model.hidden_size
    fwd += head
    # LM head: trained only by full fine-tuning; otherwise its input gradient is still needed.
    bwd += 2.0 * head if method == "full" else head
    model_flops = fwd + bwd
    return FlopsBreakdown(
        seq_len=S, method=method,
        forward_matmul_flops=sum(l.matmul for l in layers),
        forward_lm_head_flops=head,
        forward_attention_flops=sum(l.attention for l in layers),
        forward_linear_attention_flops=sum(l.linear_attention for l in layers),
        forward_lora_flops=sum(l.lora for l in layers),
        forward_flops=fwd, backward_flops=bwd, recompute_flops=rec,
        model_flops=model_flops, hardware_flops=model_flops + rec, layers=tuple(layers),
    )


# ---------------------------------------------------------------------------------------------- comm
def ring_seconds(bytes_: float, n: int, gbytes_per_s: float, efficiency: float) -> float:
    """One ring all-gather or reduce-scatter of a ``bytes_`` buffer over ``n`` ranks:
    each rank sends ``bytes_ * (n-1)/n`` (an all-reduce is two of these)."""
    if n <= 1 or bytes_ <= 0:
        return 0.0
    return bytes_ * (n - 1) / n / (gbytes_per_s * 1e9 * efficiency)


def pipeline_bubble_fraction(pp: int, micro_batches: int) -> float:
    """Idle fraction of a 1F1B / GPipe schedule: ``(pp-1) / (m + pp - 1)`` (Narayanan et al. 2021, eq. 1:
    bubble time / ideal time = ``(p-1)/m``, so bubble / total = ``(p-1)/(m+p-1)``)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / (micro_batches + pp - 1)


@dataclass(frozen=True, kw_only=True)
class CommTerm:
    """One communication term per optimizer step, per GPU."""

    name: str
    seconds: float
    overlap: float
    """Fraction that may hide behind compute (0 = always exposed)."""
    link: str
    """``intra`` (NVLink/PCIe in a node), ``inter`` (network), ``pcie`` (host) or ``cpu``."""
    bytes_per_gpu: float


@dataclass(frozen=True, kw_only=True)
class SpeedEstimate:
    """Predicted training speed of one workload on one hardware."""

    tokens_per_s: float
    """All GPUs together."""
    tokens_per_s_per_gpu: float
    tokens_per_step: int
    step_seconds: float
    mfu: float
    """Model FLOPs (no recompute) / (GPUs * peak) - against the peak of the precision in use."""
    hfu: float
    """Executed FLOPs (with recompute) / (GPUs * peak)."""
    efficiency: float
    """Compute efficiency used (HFU while computing), from the table or the caller."""
    peak_tflops: float
    compute_seconds: float
    """GPU compute per step without bubbles or communication."""
    bubble_fraction: float
    bubble_seconds: float
    comm_seconds_total: float
    comm_seconds_exposed: float
    cpu_seconds: float
    """CPU optimizer step (offload), not overlapped."""
    dequant_seconds: float
    """QLoRA 4-bit dequantize memory traffic per step (inside the pipelined compute)."""
    gpus: int
    model_flops_per_token: float
    hardware_flops_per_token: float
    framework: str
    comm: tuple[CommTerm, ...]
    flops: FlopsBreakdown
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    efficiency_sources: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TrainingTime:
    """Wall-clock and GPU time to train on a number of tokens."""

    tokens: float
    steps: float
    hours: float
    gpu_hours: float


def default_framework(workload: Workload) -> str:
    """Framework profile implied by the workload: Megatron for tp/pp/ep/cp > 1, DeepSpeed for ZeRO,
    else the HF Trainer (DDP, or FSDP through accelerate)."""
    if workload.uses_megatron:
        return "megatron"
    if workload.strategy.startswith("zero"):
        return "deepspeed"
    return "hf-trainer"


def _param_split(model: ModelShape) -> tuple[float, float]:
    """(non-expert params, routed-expert params) of the whole model."""
    expert = float(sum(t.total for t in model.tensors() if t.kind == "expert"))
    return model.total_params - expert, expert


def _base_bytes(model: ModelShape, wl: Workload) -> float:
    """Bytes of the (whole) model's weights as data parallelism gathers them."""
    per = 4.0 if wl.precision == "amp-bf16" else 2.0
    if wl.method == "qlora":
        q = sum(t.total for t in model.tensors() if t.kind == "linear")
        return q * QLORA_BYTES_PER_PARAM + (model.total_params - q) * per
    return model.total_params * per


def estimate_speed(model: ModelShape, workload: Workload, hardware: Hardware, *, framework: str | None = None,
                   efficiency: float | None = None, virtual_pp: int = 1, compiled: bool = False,
                   recompute_fraction: float = 0.0, constants: Any = None,
                   use_calibration: bool = True) -> SpeedEstimate:
    """Tokens/s, step time and MFU of ``workload`` on ``hardware`` (see ``docs/speed-model.md``).

    ``framework`` picks the engine family (hf-trainer, deepspeed, fsdp2, megatron; default from the
    workload) whose kernels ``estimate/engines.py`` times. ``efficiency`` replaces the engine model by a
    fixed executed-FLOPs utilisation (0-1). ``virtual_pp``: interleaved pipeline stages per GPU (Megatron
    VP); ``compiled``: torch.compile; ``recompute_fraction``: selective recompute share of the forward (see
    ``engines.features``); ``constants``: :class:`engines.EngineConstants` (default: fitted);
    ``use_calibration``: apply a measured calibration of this GPU and engine family from the user's overlay
    (``trainfit calibrate``; ignored when ``constants`` are given).
    """
    wl, hw = workload, hardware
    fw = framework or default_framework(wl)
    if fw not in FRAMEWORKS and fw != "automodel":
        raise WorkloadError(f"unknown framework {fw!r}", fix="use one of " + ", ".join(FRAMEWORKS + ("automodel",)))
    warnings: list[str] = []
    assumptions: list[str] = []

    fl = flops_per_token(model, wl)
    gpus = wl.gpus
    g_node = wl.gpus_per_node
    nodes = wl.nodes
    if g_node > hw.gpus_per_node:
        warnings.append(f"workload uses {g_node} GPUs per node but {hw.name} nodes hold {hw.gpus_per_node}")
    tokens_per_step = wl.micro_batch * wl.seq_len * wl.grad_accum * wl.dp

    # ---- peak and efficiency
    precision = wl.precision
    peak = hw.peak_tflops
    if precision == "fp8":
        if hw.peak_fp8_tflops:
            peak = hw.peak_fp8_tflops
        else:
            warnings.append(f"{hw.name} has no FP8 tensor cores; FP8 is estimated at the 16-bit peak")
            precision = "bf16"
    if precision in ("bf16", "amp-bf16") and not hw.supports_bf16:
        warnings.append(f"{hw.name} has no bf16 tensor cores: bf16 matmuls fall back to slow paths; use fp16. "
                        f"Estimated at the fp16 peak, which is optimistic")
    eff_sources: tuple[str, ...] = ()
    flops_per_gpu_step = fl.hardware_flops * tokens_per_step / gpus
    if efficiency is None:  # engine model: kernels of this engine family (estimate/engines.py)
        from trainfit.estimate import engines

        ec = constants or engines.DEFAULT_CONSTANTS
        feat = engines.features(model, wl.with_(precision=precision), hw, fw, flops=fl, compiled=compiled,
                                trainable_params=float(count_params(model, wl).trainable),
                                recompute_fraction=recompute_fraction)
        et = engines.compute_time(feat, ec)
        compute_s = et.seconds
        if use_calibration and constants is None:
            from trainfit.estimate.calibration import calibration_for

            cal = calibration_for(hw.name, feat.family)
            if cal is not None:
                compute_s /= cal.factor
                assumptions.append(cal.line())
        eff = flops_per_gpu_step / (peak * 1e12 * compute_s)
        assumptions += engines.describe(ec, feat.family)
        eff_sources = tuple(engines.CONSTANT_SOURCES.values())
        warnings.extend(feat.notes)
        if et.launch_bound:
            warnings.append(f"kernel-launch bound: the CPU issues kernels for {et.launch_seconds:.3g} s per step, "
                            f"longer than the GPU needs ({et.gemm_seconds + et.attention_seconds + et.elementwise_seconds:.3g} s)")
    else:
        if not 0 < efficiency <= 1:
            raise WorkloadError(f"efficiency must be in (0, 1], got {efficiency}")
        eff = efficiency
        assumptions.append(f"compute efficiency {eff:.3f} given by the caller")
        compute_s = flops_per_gpu_step / (peak * 1e12 * eff)

    # ---- topology
    link_eff = hw.link_efficiency
    inter = hw.inter_node_gbytes_per_s
    if nodes > 1:
        warnings.extend(hw.notes)
    if nodes > 1 and inter is None:
        inter = TCP_FALLBACK_GBYTES_PER_S
        warnings.append("multi-node job without an inter-node bandwidth: assumed one 25 Gbit/s NIC per node")
    intra = hw.intra_node_gbytes_per_s

    def ring_link(group: int, stride: int) -> tuple[float, str]:
        """Bandwidth of a ring of ``group`` ranks spaced ``stride`` apart (Megatron order: tp, cp, dp, pp)."""
        if nodes > 1 and group * stride > g_node:
            return min(intra, inter or intra), "inter"
        return intra, "intra"

    terms: list[CommTerm] = []
    m = wl.grad_accum
    mp = wl.tp * wl.pp
    dense_p, expert_p = _param_split(model)
    base_bytes = _base_bytes(model, wl)
    train_param_bytes = 4.0 if wl.precision == "amp-bf16" else 2.0  # trained weights are never 4-bit
    # gradients travel in the weight dtype, except fp32 master weights (amp-bf16) and torchtitan-style FSDP2,
    # whose config default ``mixed_precision_reduce = "float32"`` reduce-scatters in fp32
    grad_bytes = 4.0 if (wl.precision == "amp-bf16" or fw in ("fsdp2", "automodel")) else 2.0
    trainable = float(count_params(model, wl).trainable)

    # ---- data parallel (ZeRO / FSDP / DDP); experts replicate over dp/ep
    dp = wl.dp
    for label, frac, group in (("dense", dense_p / model.total_params, dp),
                               ("expert", expert_p / model.total_params, max(1, dp // wl.ep))):
        if frac <= 0 or group <= 1:
            continue
        shard_div = mp * (wl.ep if label == "expert" else 1)
        pbytes = base_bytes * frac / shard_div
        gbytes = trainable * frac * grad_bytes / shard_div
        bw, where = ring_link(group, wl.tp * wl.cp * (wl.ep if label == "expert" else 1))
        s = wl.strategy
        if s in ("ddp", "zero1"):
            vol = 2 * gbytes  # all-reduce (ddp) = reduce-scatter + all-gather (zero1), once per step
            if s == "zero1":
                vol = gbytes + trainable * frac * train_param_bytes / shard_div
        elif s == "zero2":
            vol = m * gbytes + trainable * frac * train_param_bytes / shard_div
        else:  # zero3 / fsdp: per micro-batch all-gather fwd + bwd, reduce-scatter grads
            bwd_frac = 1.0
            if wl.method == "freeze":
                bwd_frac = trainable / model.total_params
            vol = m * (pbytes * (1 + bwd_frac) + gbytes)
        secs = ring_seconds(vol, group, bw, link_eff)
        terms.append(CommTerm(name=f"dp-{s}-{label}", seconds=secs, overlap=OVERLAP[s], link=where,
                              bytes_per_gpu=vol * (group - 1) / group))

    act_bytes = 2.0  # bf16 activations
    tokens_mb = wl.micro_batch * wl.seq_len / wl.cp
    layers_per_stage = model.num_layers / wl.pp

    # ---- tensor parallel: 2 all-reduces per layer forward, 2 backward, 2 more with recompute
    if wl.tp > 1:
        buf = tokens_mb * model.hidden_size * act_bytes
        n_ar = layers_per_stage * (4 + (2 if wl.grad_ckpt else 0))
        bw, where = ring_link(wl.tp, 1)
        secs = m * n_ar * 2 * ring_seconds(buf, wl.tp, bw, link_eff)
        terms.append(CommTerm(name="tp-allreduce", seconds=secs, overlap=0.0, link=where,
                              bytes_per_gpu=m * n_ar * 2 * buf * (wl.tp - 1) / wl.tp))

    # ---- expert parallel: dispatch + combine per MoE layer forward and backward (+ recompute)
    if wl.ep > 1 and model.is_moe:
        moe_layers = model.n_moe_layers / wl.pp
        send = tokens_mb / wl.tp * model.experts_per_token * model.hidden_size * act_bytes
        n_a2a = moe_layers * (4 + (2 if wl.grad_ckpt else 0))
        g_in = min(wl.ep, max(1, g_node // wl.tp))  # EP ranks are spaced tp apart (Megatron order tp, ep)
        t_intra = send * (g_in - 1) / wl.ep / (intra * 1e9 * link_eff)
        t_inter = 0.0
        where = "intra"
        if nodes > 1 and wl.ep * wl.tp > g_node:
            # every GPU of the node sends its off-node share through the node's NICs
            t_inter = g_node * send * (wl.ep - g_in) / wl.ep / ((inter or intra) * 1e9 * link_eff)
            where = "inter"
        secs = m * n_a2a * max(t_intra, t_inter)
        terms.append(CommTerm(name="ep-alltoall", seconds=secs, overlap=EP_OVERLAP, link=where,
                              bytes_per_gpu=m * n_a2a * send * (wl.ep - 1) / wl.ep))

    # ---- context parallel: ring exchange of K,V per full-attention layer (fwd), K,V + dK,dV (bwd)
    if wl.cp > 1:
        kv = 2 * tokens_mb * model.num_kv_heads * model.head_dim * act_bytes / wl.tp
        n_full = model.n_full_attention_layers / wl.pp
        per_layer = kv * (wl.cp - 1) * (3 + (1 if wl.grad_ckpt else 0))
        bw, where = ring_link(wl.cp, wl.tp)
        secs = m * n_full * per_layer / (bw * 1e9 * link_eff)
        terms.append(CommTerm(name="cp-kv", seconds=secs, overlap=CP_OVERLAP, link=where,
                              bytes_per_gpu=m * n_full * per_layer))

    # ---- pipeline point-to-point: activations forward, their gradients backward, per micro-batch
    if wl.pp > 1:
        buf = tokens_mb * model.hidden_size * act_bytes / (wl.tp if wl.sequence_parallel else 1)
        stage_gpus = gpus // wl.pp
        where = "inter" if nodes > 1 and stage_gpus >= g_node else "intra"
        bw = min(intra, inter or intra) if where == "inter" else intra
        secs = m * 2 * buf / (bw * 1e9 * link_eff)
        terms.append(CommTerm(name="pp-p2p", seconds=secs, overlap=0.0, link=where, bytes_per_gpu=m * 2 * buf))

    # ---- CPU offload
    cpu_s = 0.0
    if wl.offload != "none" and wl.strategy in ("zero1", "zero2", "zero3", "fsdp"):
        shard = trainable / max(1, dp) / mp
        grad_trips = m if wl.strategy in ("zero2", "zero3", "fsdp") else 1
        vol = shard * 2.0 * grad_trips + shard * 2.0  # bf16 grads down, bf16 params up
        if wl.offload == "all":
            vol += m * 2 * (base_bytes / max(1, dp) / mp)  # parameter shard fetched for fwd and bwd
        secs = vol / (hw.pcie_gbytes_per_s * 1e9 * link_eff)
        terms.append(CommTerm(name=f"offload-{wl.offload}-pcie", seconds=secs, overlap=OFFLOAD_OVERLAP,
                              link="pcie", bytes_per_gpu=vol))
        node_params = shard * min(g_node, gpus)
        cpu_s = node_params / hw.cpu_adam_params_per_s
        assumptions.append(f"CPU Adam at {hw.cpu_adam_params_per_s:.3g} params/s per node, not overlapped")

    # ---- QLoRA dequantize traffic (memory-bound), per micro-batch: forward, backward (+ recompute)
    dequant_s = 0.0
    if wl.method == "qlora":
        if hw.mem_gbytes_per_s:
            q = sum(t.total for t in model.tensors() if t.kind == "linear") / mp
            dequant_s = m * (2 + (1 if wl.grad_ckpt else 0)) * q * QLORA_DEQUANT_BYTES_PER_PARAM / (
                hw.mem_gbytes_per_s * 1e9)
            assumptions.append("QLoRA dequantizes every 4-bit linear weight once per forward, backward and recompute")
        else:
            warnings.append("GPU memory bandwidth unknown: QLoRA dequantize time not counted")

    # ---- combine
    if virtual_pp < 1:
        raise WorkloadError(f"virtual_pp must be >= 1, got {virtual_pp}")
    bubble = pipeline_bubble_fraction(wl.pp, m * virtual_pp)  # interleaving divides the bubble by vp
    pipe_s = (compute_s + dequant_s) / (1 - bubble)
    bubble_s = pipe_s - compute_s - dequant_s
    comm_total = sum(t.seconds for t in terms)
    hideable = sum(t.seconds * t.overlap for t in terms)
    hidden = min(hideable, compute_s)
    exposed = comm_total - hidden
    step_s = pipe_s + exposed + cpu_s

    tps = tokens_per_step / step_s
    tps_gpu = tps / gpus
    mfu = fl.model_flops * tps_gpu / (peak * 1e12)
    hfu = fl.hardware_flops * tps_gpu / (peak * 1e12)

    assumptions += [
        "attention FLOPs causal (2*S*nh*hd per layer forward), NVIDIA's 6*N + 6*L*nh*hd*S convention",
        "every sequence is seq_len tokens long (packed or padded), no document masking",
        f"ring collectives at {link_eff:.0%} of link bandwidth; DP overlap {OVERLAP[wl.strategy]:.0%} "
        f"({wl.strategy}), hidden traffic <= compute time",
        f"TP and PP traffic not overlapped, EP all-to-all {EP_OVERLAP:.0%}",
    ]
    if model.n_linear_attention_layers:
        assumptions.append(f"Gated DeltaNet layers: chunked linear-attention FLOPs (chunk {GDN_CHUNK_SIZE}), "
                           "triangular solve neglected")
    return SpeedEstimate(
        tokens_per_s=tps, tokens_per_s_per_gpu=tps_gpu, tokens_per_step=tokens_per_step, step_seconds=step_s,
        mfu=mfu, hfu=hfu, efficiency=eff, peak_tflops=peak, compute_seconds=compute_s,
        bubble_fraction=bubble, bubble_seconds=bubble_s, comm_seconds_total=comm_total,
        comm_seconds_exposed=exposed, cpu_seconds=cpu_s, dequant_seconds=dequant_s, gpus=gpus,
        model_flops_per_token=fl.model_flops, hardware_flops_per_token=fl.hardware_flops, framework=fw,
        comm=tuple(terms), flops=fl, assumptions=tuple(assumptions), warnings=tuple(warnings),
        efficiency_sources=eff_sources,
    )


def training_time(speed: SpeedEstimate, tokens: float) -> TrainingTime:
    """Hours (wall clock) and GPU-hours to process ``tokens`` training tokens at ``speed``."""
    if tokens < 0:
        raise WorkloadError(f"tokens must be >= 0, got {tokens}")
    seconds = tokens / speed.tokens_per_s
    return TrainingTime(tokens=tokens, steps=tokens / speed.tokens_per_step, hours=seconds / 3600,
                        gpu_hours=seconds / 3600 * speed.gpus)
