"""Compute-efficiency table for the speed model (data, no logic beyond a lookup).

The speed model divides the FLOPs a GPU actually executes (model FLOPs plus recompute) by
``peak x efficiency``. ``efficiency`` is therefore a *hardware-FLOPs utilisation* (HFU) on the executed
FLOPs; without recompute it equals MFU. Measured MFU numbers from the sources below were converted to
this convention (causal attention FLOPs, NVIDIA's ``6*N_active + 6*L*nh*hd*S`` accounting, recompute
added back) in ``docs/speed-model.md``; the arithmetic is repeated in each ``source`` string.

The value used for one estimate is a product of four factors::

    efficiency = BASE[framework][model_type] * GPU_CLASS[gpu_class] * METHOD[framework][method]
                 * PRECISION[framework][precision]        (PRECISION_MOE for MoE)
                 [* moe_width_factor(h, I_expert)]        (MoE only)       capped at EFFICIENCY_CAP

Every entry carries a source, or says ``assumption`` and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Framework = Literal["hf-trainer", "deepspeed", "fsdp2", "megatron"]
GpuClass = Literal["hopper", "ampere", "ada", "volta", "turing"]
ModelType = Literal["dense", "moe"]

FRAMEWORKS: tuple[str, ...] = ("hf-trainer", "deepspeed", "fsdp2", "megatron")
GPU_CLASSES: tuple[str, ...] = ("hopper", "ampere", "ada", "volta", "turing")
MODEL_TYPES: tuple[str, ...] = ("dense", "moe")


@dataclass(frozen=True, kw_only=True)
class Factor:
    """One table entry: a value and where it comes from."""

    value: float
    source: str
    assumption: bool = False
    """True when the value is not measured by a cited source (reasoning given in ``source``)."""


# torchtitan, benchmarks/llama3_h100_202412_torchtitan.md, Table 1: Llama 3.1 8B, 8x H100 (96 GB HBM2e,
# 500 W), FSDP, eager, local batch 2, selective op AC; seq 8192 (llama3_8b.toml). 5,762 TPS/GPU x
# 51.47 GFLOP/token (causal) = 296.6 TFLOP/s -> MFU 0.300 of 989; op-SAC recomputes every 2nd mm per layer
# (wk, wo, w3 = 5.10 GFLOP/token) -> executed 56.57 GFLOP/token -> HFU 0.330.
_TT = ("torchtitan llama3_h100_202412 Table 1 (Llama 3.1 8B, 8xH100 500 W, FSDP eager, op-SAC): 5,762 TPS/GPU "
       "-> MFU 0.300 (causal), HFU 0.330 with the recomputed mm")

BASE: dict[str, dict[str, Factor]] = {
    "fsdp2": {
        "dense": Factor(value=0.33, source=_TT),
        "moe": Factor(value=0.10, assumption=True, source=(
            "assumption: torchtitan publishes no H100 MoE table; set below the Megatron MoE value (0.12, "
            "Megatron-Bridge Qwen3-30B-A3B) because grouped-GEMM + all-to-all are less tuned")),
    },
    "hf-trainer": {
        "dense": Factor(value=0.26, assumption=True, source=(
            "assumption: 0.8 x torchtitan eager (0.33); HF modeling code is eager PyTorch like torchtitan, "
            "plus padding/masking, unpacked batches, and logging/dataloader overhead")),
        "moe": Factor(value=0.06, assumption=True, source=(
            "assumption: half the Megatron MoE value (0.12); HF experts run without expert parallelism and "
            "with per-expert or grouped matmuls of a few hundred tokens each")),
    },
    "deepspeed": {
        "dense": Factor(value=0.26, assumption=True, source=(
            "assumption: same kernels as hf-trainer (HF model under the DeepSpeed engine); the engine's "
            "communication is modelled separately")),
        "moe": Factor(value=0.06, assumption=True, source="assumption: as hf-trainer MoE"),
    },
    "megatron": {
        "dense": Factor(value=0.50, assumption=True, source=(
            "assumption bounded by data: Megatron-Bridge 25.11 DGX-H100 LLAMA3_8B FP8-CS 744 model TFLOP/s "
            "(causal) / 1.28 (torchtitan FP8 speed-up) = 581 -> 0.59 of 989 is an upper bound; Llama 3 405B "
            "BF16 pretraining 38-43% MFU and Megatron-Core 'up to 47% MFU' on H100 at scale; 0.50 chosen")),
        "moe": Factor(value=0.12, source=(
            "Megatron-Bridge 25.11 DGX-H100 Qwen3_30B_a3B (16 GPUs, FP8-CS, PP2 EP8): 121 model TFLOP/s = "
            "0.122 of the BF16 peak 989, used for BF16 (FP8 is not slower); GPT-OSS-120B BF16 on H100 "
            "reaches 153-163 TFLOP/s (0.155-0.165), Qwen3-235B-A22B FP8 233 (0.236)")),
    },
}

GPU_CLASS: dict[str, Factor] = {
    "hopper": Factor(value=1.0, source="reference class (the BASE values are H100 measurements)"),
    "ampere": Factor(value=1.36, source=(
        "llm-foundry scripts/train/benchmarking/README.md, MPT-7B seq 4096, 8 GPUs, FSDP, AC on: HFU 73.12% "
        "on A100-80GB vs 53.90% on H100-80GB, same software -> 1.36")),
    "ada": Factor(value=0.9, assumption=True, source=(
        "assumption: L40S/L20/4090 have ~1.4x less memory bandwidth per FLOP than H100 and no NVLink")),
    "volta": Factor(value=0.8, assumption=True, source=(
        "assumption: no FlashAttention-2 and no bf16 tensor cores on V100; Megatron v1.0 sustained 48% of "
        "peak on V100 (nv-adlr MegatronLM v1.0 post), i.e. a tuned stack is close to Hopper's ratio")),
    "turing": Factor(value=0.6, assumption=True, source=(
        "assumption: T4 is power-capped at 70 W and rarely sustains its 65 TFLOP/s fp16 peak")),
}

METHOD: dict[str, dict[str, Factor]] = {
    "megatron": {
        "full": Factor(value=1.0, source="reference"),
        "lora": Factor(value=1.0, source=(
            "NeMo 24.07 performance_summary.md, LLAMA2-7B on 8x H100 FP8: SFT 17,120 tok/s, LoRA 25,206 tok/s; "
            "with this model's FLOPs per token (42.86 vs 30.13 GFLOP) the achieved FLOP/s differ by 3.5% -> 1.0")),
        "qlora": Factor(value=0.9, assumption=True, source=(
            "assumption: 4-bit weights add dequantize kernels (their memory traffic is modelled separately)")),
        "freeze": Factor(value=1.0, assumption=True, source="assumption: same kernels as full fine-tuning"),
    },
    "_default": {
        "full": Factor(value=1.0, source="reference"),
        "lora": Factor(value=0.85, assumption=True, source=(
            "assumption: PEFT runs each adapter as two extra small matmuls plus dropout, unfused")),
        "qlora": Factor(value=0.77, assumption=True, source=(
            "assumption: 0.85 (PEFT LoRA) x 0.9 for the bitsandbytes 4-bit matmul path; dequantize memory "
            "traffic is modelled separately when the GPU memory bandwidth is known")),
        "freeze": Factor(value=1.0, assumption=True, source="assumption: same kernels as full fine-tuning"),
    },
}

PRECISION: dict[str, dict[str, Factor]] = {
    "megatron": {
        "fp8": Factor(value=0.75, source=(
            "Megatron-Bridge 25.11 DGX-H100 LLAMA3_8B FP8-CS 744 TFLOP/s = 0.376 of the FP8 peak 1979; "
            "0.376 / 0.50 (BF16 base) = 0.75, applied to the FP8 peak")),
    },
    "_default": {
        "fp8": Factor(value=0.64, source=(
            "torchtitan llama3_h100_202412 Table 1: FSDP+compile 6,667 -> +Float8 8,532 TPS/GPU (x1.28) while "
            "the peak doubles: 1.28 / 2 = 0.64, applied to the FP8 peak")),
    },
}
"""Only ``fp8`` differs from 1.0; bf16, amp-bf16 and fp16 run on the 16-bit tensor-core peak."""

PRECISION_MOE: dict[str, dict[str, Factor]] = {
    "megatron": {
        "fp8": Factor(value=0.5, source=(
            "Megatron-Bridge 25.11 DGX-H100 Qwen3_30B_a3B FP8-CS 121 TFLOP/s = 0.061 of the FP8 peak 1979; "
            "0.061 / 0.12 (MoE base) = 0.51: FP8 barely speeds up the small expert GEMMs")),
    },
    "_default": {
        "fp8": Factor(value=0.5, assumption=True, source="assumption: as Megatron MoE (0.5)"),
    },
}
"""MoE models replace :data:`PRECISION` with these factors."""

MOE_REFERENCE_EXPERT_WIDTH = 768
"""The MoE BASE values are Qwen3-30B-A3B measurements: hidden 2048, expert width 768."""

MOE_WIDTH_FACTOR_RANGE = (0.5, 2.5)


def moe_width_factor(hidden_size: int, expert_intermediate_size: int) -> Factor:
    """Expert-GEMM size correction for MoE efficiency: ``min(h, I_e) / 768``, clipped to [0.5, 2.5].

    Empirical: on the same H100 stack (Megatron-Bridge 25.11, FP8) Qwen3-235B-A22B (h 4096, I_e 1536)
    reaches 233 model TFLOP/s and Qwen3-30B-A3B (h 2048, I_e 768) 121: x1.93 for 2x the narrower GEMM
    dimension. DeepSeek-V3 (I_e 2048) reaches 338 TFLOP/s on H100 (25.09), x2.8, consistent with the trend
    but a different attention. The clip bounds are an assumption (no data below 768 or above 2048).
    """
    w = min(hidden_size, expert_intermediate_size) / MOE_REFERENCE_EXPERT_WIDTH
    lo, hi = MOE_WIDTH_FACTOR_RANGE
    v = min(hi, max(lo, w))
    return Factor(value=v, assumption=v != w or not 1.0 <= w <= 2.0, source=(
        f"MoE expert-GEMM width min(h, I_e)/768 = {w:.2f} (clipped to [{lo}, {hi}]): fitted on Megatron-Bridge "
        "25.11 H100 Qwen3-30B-A3B 121 and Qwen3-235B-A22B 233 TFLOP/s" + (
            "; outside the fitted 1-2 range: assumption (linear trend)" if not 1.0 <= w <= 2.0 else "")))


EFFICIENCY_CAP = 0.75
"""Assumption: no training run in the sources above exceeds 0.75 executed-FLOPs utilisation (the highest
is llm-foundry's A100 HFU 0.79 for a 13B model at seq 1024); the product of factors is capped here."""


@dataclass(frozen=True, kw_only=True)
class Efficiency:
    """The efficiency one estimate uses and how it was composed."""

    value: float
    base: float
    gpu_class_factor: float
    method_factor: float
    precision_factor: float
    moe_width_factor: float = 1.0
    sources: tuple[str, ...]
    assumption: bool
    """True if any factor is an assumption."""


def lookup_efficiency(*, framework: str, model_type: str, gpu_class: str, method: str,
                      precision: str, moe_width: Factor | None = None) -> Efficiency:
    """Compose the efficiency for one configuration (raises ``KeyError`` on an unknown key).

    ``moe_width`` (from :func:`moe_width_factor`) multiplies MoE entries; ignored for dense models.
    """
    if framework not in BASE:
        raise KeyError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    if gpu_class not in GPU_CLASS:
        raise KeyError(f"unknown gpu class {gpu_class!r}; known: {', '.join(GPU_CLASSES)}")
    base = BASE[framework][model_type]
    cls = GPU_CLASS[gpu_class]
    meth = METHOD.get(framework, METHOD["_default"])[method]
    prec_src = PRECISION_MOE if model_type == "moe" else PRECISION
    prec_table = prec_src.get(framework, prec_src["_default"])
    prec = prec_table.get(precision, Factor(value=1.0, source="16-bit tensor-core peak"))
    parts: tuple[Factor, ...] = (base, cls, meth, prec)
    if model_type == "moe" and moe_width is not None:
        parts = parts + (moe_width,)
    value = 1.0
    for p in parts:
        value *= p.value
    value = min(EFFICIENCY_CAP, value)
    return Efficiency(
        value=value, base=base.value, gpu_class_factor=cls.value, method_factor=meth.value,
        precision_factor=prec.value, moe_width_factor=moe_width.value if len(parts) == 5 and moe_width else 1.0,
        sources=tuple(p.source for p in parts),
        assumption=any(p.assumption for p in parts),
    )


def table_rows() -> list[dict[str, object]]:
    """Every (framework, model type, GPU class, method) combination for bf16, for docs and the CLI."""
    rows: list[dict[str, object]] = []
    for fw in FRAMEWORKS:
        for mt in MODEL_TYPES:
            for gc in GPU_CLASSES:
                for meth in ("full", "lora", "qlora", "freeze"):
                    e = lookup_efficiency(framework=fw, model_type=mt, gpu_class=gc, method=meth, precision="bf16")
                    rows.append({"framework": fw, "model_type": mt, "gpu_class": gc, "method": meth,
                                 "efficiency": round(e.value, 4), "assumption": e.assumption})
    return rows
