"""Per-engine compute time: how long one optimizer step's kernels take on one GPU, by engine family.

The speed model (``estimate/speed.py``) adds communication, pipeline bubbles and CPU optimizer time to
what this module returns. Here the GPU work of one step is split by the kind of kernel that runs it:

* **GEMMs** (attention projections, dense MLP, shared experts, LM head, routed experts, LoRA adapters) at
  ``peak x gemm_efficiency[family] x gpu_class_factor x size(d)`` where ``size(d) = d / (d + gemm_half_dim)``
  and ``d`` is the smallest dimension of the GEMM (tokens per micro-batch, or tokens per expert; the
  weight's narrower side; the LoRA rank). This one law gives the known slow cases: small expert GEMMs of
  fine-grained MoE, the LoRA adapter matmuls, small hidden sizes. FP8 runs the GEMMs (only) on the FP8
  peak at ``fp8_gemm_efficiency``.
* **Attention core** (flash attention, causal FLOPs) at ``attention_relative`` of the GEMM efficiency;
  Gated DeltaNet at ``LINEAR_ATTENTION_RELATIVE`` (assumption).
* **Memory-bound element-wise kernels** (norms, residual adds, RoPE, SwiGLU, MoE permute/unpermute, casts):
  ``elementwise_bytes[family] x (h + I_act) x 2`` bytes per token and layer per pass over HBM bandwidth;
  ``I_act`` is the MLP width a token touches (``k x (I_expert + h)`` for routed experts, which also counts
  the permutation copies). ``torch.compile`` keeps ``compile_elementwise_factor`` of that traffic.
  Cross-entropy reads/writes fp32 logits (``CE_BYTES_PER_LOGIT`` per vocabulary entry and token).
* **Kernel launches**: eager PyTorch issues ``KERNELS_PER_LAYER[family]`` kernels per layer and pass, the
  Hugging Face MoE block another ``KERNELS_PER_EXPERT`` per routed expert it visits (the eager expert
  loop), at ``launch_seconds`` each on the CPU. The GPU time and the CPU launch time overlap: a
  micro-batch takes the longer of the two.
* **Optimizer step**: AdamW reads and writes ``OPTIMIZER_BYTES_PER_PARAM`` per local trainable parameter
  over HBM, not overlapped, plus gradient clipping's norm and scaling passes and Megatron-Core's
  gradient-buffer zeroing (``engine_terms.optimizer_seconds``): a fixed cost per step.

Engine families (``--framework``): ``hf-trainer`` and ``deepspeed`` run Hugging Face modeling code
(eager kernels, MoE expert loop); ``fsdp2`` is native PyTorch FSDP2 engines (torchtitan, NeMo AutoModel,
llm-foundry/Composer FSDP) with grouped-GEMM experts and fused dispatch; ``megatron`` is Megatron-Core
(Megatron-LM, NeMo, Megatron-Bridge, ms-swift Megatron) with TransformerEngine, grouped GEMM and FP8.

The fitted constants (:data:`DEFAULT_CONSTANTS`) come from ``benchmarks/speed_loso.py`` over the published
runs in ``benchmarks/data/throughput.yaml``; each one's value, what fixed it and its prior are in
:data:`CONSTANT_SOURCES` and appear in a speed estimate's ``assumptions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from trainfit.errors import WorkloadError
from trainfit.i18n import N_, _, translate
from trainfit.estimate.engine_assumptions import (
    KERNELS_PER_LAYER, KERNELS_PER_MOE_LAYER, KERNELS_PER_EXPERT, COMPILED_KERNEL_FACTOR,
    LINEAR_ATTENTION_RELATIVE, CE_BYTES_PER_LOGIT, HBM_EFFICIENCY,
    MEASURED_GEMM_SHARE, REFERENCE_RIDGE,
)
from trainfit.estimate.attention_time import attention_seconds, class_factor, flash_attention_flops
from trainfit.estimate import engine_terms as terms, engine_fit_data as data
from trainfit.estimate.flops import FlopsBreakdown
from trainfit.estimate.fsdp import fsdp2_copy_bytes
from trainfit.estimate.hardware import Hardware
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload, routing_imbalance

FAMILY_OF: dict[str, str] = {"hf-trainer": "hf", "deepspeed": "hf", "fsdp2": "native", "megatron": "megatron",
                             "automodel": "megatron"}
"""``--framework`` -> kernel family it runs. ``automodel`` (NVIDIA NeMo AutoModel) shards like ``fsdp2`` but
runs TransformerEngine linears/norms/attention, grouped-GEMM experts and DeepEP dispatch, i.e. the
Megatron-Core kernels (its performance summary lists "TE + DeepEP" for every MoE run)."""
FAMILIES: tuple[str, ...] = ("hf", "native", "megatron")

# ---------------------------------------------------------------------------------------------- fitted
@dataclass(frozen=True, kw_only=True)
class EngineConstants:
    """The global constants of the engine model. Defaults are the fitted values (see module docstring)."""

    gemm_eff_megatron: float = 0.72
    """Fraction of the 16-bit peak a large Megatron-Core/TransformerEngine GEMM sustains in training."""
    gemm_eff_native: float = 0.66
    """Same for native PyTorch engines (torch.mm/cuBLAS through FSDP2/Composer, grouped_mm experts)."""
    gemm_eff_hf: float = 0.62
    """Same for Hugging Face modeling code under the Trainer/DeepSpeed."""
    elem_bytes_megatron: float = 6.0
    """Element-wise HBM traffic per token, layer and pass in units of ``(h + I_act) x 2`` bytes."""
    elem_bytes_native: float = 10.0
    elem_bytes_hf: float = 14.0
    gemm_half_dim: float = 128.0
    """GEMM size at which efficiency is half its large-GEMM value: ``size(d) = d / (d + gemm_half_dim)``."""
    attention_relative_megatron: float = 1.0
    """Share of the published flash-attention kernel rate (``engine_assumptions.ATTENTION_PEAK_SHARE``, forward
    and backward, by GPU generation and sequence length) that the attention of a Megatron-Core/TransformerEngine
    layer reaches in training (layout copies, GQA expansion, the ``[s, b, h]`` transposes around the kernel).
    Prior 1: the kernel as benchmarked. Attention no longer scales with the GEMM efficiency (issue 26)."""
    attention_relative_native: float = 1.0
    """Same for PyTorch SDPA / flash-attn 2 / Triton flash attention (native engines and Hugging Face code)."""
    fa2_hopper_factor: float = 0.62
    """Attention kernels written for Ampere (FlashAttention-2, PyTorch SDPA's flash backend, Triton flash
    attention: ``mma.sync``, no ``wgmma``/TMA) on a Hopper GPU run at this share of the Hopper kernels' rate
    (FlashAttention-3, cuDNN fused attention, TransformerEngine's default there): ``--attention flash``. Prior:
    FlashAttention-2 against cuDNN on H100 at 16k tokens, head dim 128, in the FlashAttention-3 paper's figures:
    370/595 forward, 322/516 backward (https://arxiv.org/abs/2407.08608); 329 vs 631 TFLOP/s for SDPA's flash
    backend vs cuDNN at seq 4608 (https://github.com/pytorch/pytorch/issues/142132). Not applied on Ampere, where
    FA2 is native."""
    ridge_exponent: float = 0.12
    """Hopper and Ampere GPUs: the share of the 16-bit peak kernels reach, relative to H100 SXM, is
    ``(REFERENCE_RIDGE / ridge) ** ridge_exponent`` with ``ridge = peak FLOP/s / memory bytes/s`` (the roofline
    ridge point): the more bandwidth per FLOP, the less the bandwidth-bound parts of "compute" kernels (operand
    staging of small tiles, epilogues, softmax, fused norms) hold the tensor cores back. One law for A100 (ridge
    153), H200 (206), H20 (37). Prior from GEMM alone: A100 SXM reaches 86.9 % of its peak, H100 SXM 80.3 %
    (MAMF, https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md), 1.082 for a ridge
    ratio of 1.93: exponent 0.12. Attention kernels point the same way: 85-87 % of H20's peak for FA3/cuDNN
    (Dao-AILab/flash-attention#1310) against at most 75 % of H100's (FlashAttention-3 paper)."""
    fp8_eff_megatron: float = 0.55
    """Fraction of the FP8 peak a large FP8 GEMM sustains in training: TransformerEngine recipes."""
    fp8_eff_native: float = 0.5
    """Same for torchao float8 (torchtitan); also used for FP8 under Hugging Face code."""
    launch_seconds: float = 8e-6
    """CPU time per eager kernel launch (PyTorch dispatch + autograd bookkeeping)."""
    compile_elementwise_factor: float = 0.5
    """Share of element-wise traffic left after ``torch.compile`` fuses element-wise chains."""
    moe_elementwise_factor: float = 1.0
    """Multiplier on the routed-expert part of the element-wise traffic (``k x (I_expert + h)``): router
    softmax/top-k, permute and unpermute copies, probability scaling, padding of the grouped GEMM."""
    fp8_cast_bytes: float = 2.0
    """FP8 only: extra HBM traffic per token, layer and pass in units of ``(h + I_act) x 2`` bytes for
    quantising activations and gradients (amax, scale, cast) before each FP8 GEMM."""
    expert_sync_seconds: float = 3e-5
    """Hugging Face eager expert loop: host time per visited expert and pass that does not overlap the GPU
    (``torch.where``/``nonzero`` on the routing mask synchronises the host with the GPU once per expert)."""
    zero3_fetch_seconds: float = 5e-4
    """DeepSpeed ZeRO-3: exposed latency per fetch of a small module's parameters (pre-forward hook,
    all-gather launch and wait) that no compute hides: each expert's linears of the eager MoE loop. Prior from
    a 5.1B BERT on 8 A100 (64 layers, ~520 parameter-holding modules per forward): ZeRO-3's forward took 480 ms,
    270 ms after DeepSpeed#1188, against 60 ms under ZeRO-2 (https://github.com/deepspeedai/DeepSpeed/issues/1174,
    https://github.com/deepspeedai/DeepSpeed/pull/1188); less ~39 ms of all-gather bandwidth that leaves 0.73 and
    0.33 ms per fetch, geometric mean 0.49 ms."""
    grouped_gemm_half_tokens: float = 1000.0
    """TransformerEngine grouped GEMM (Megatron family): tokens per local expert at which an expert GEMM runs at
    half its large-GEMM rate, ``m / (m + this)``, on top of the weight-side size law. TE's multi-stream cuBLAS
    grouped GEMM ran (8 x 4096, 768, 2048) at 509/628 TFLOP/s and (16 x 2048, 768, 2048) at 399/554 (TE 2.2/2.7,
    H100; NVIDIA/TransformerEngine#2045): half-points of 1,559 and 632 tokens; prior their geometric mean."""
    triton_attention_factor: float = 0.55
    """Calibration rows only: the Triton FlashAttention kernel of 2023 (llm-foundry's ``attn_impl: triton``, a
    port of the FlashAttention Triton implementation) against FlashAttention-2 on the same GPU. Prior: the
    FlashAttention-2 paper measured FlashAttention-2 "1.3-2.5x faster than FlashAttention in Triton" on A100
    (https://arxiv.org/abs/2307.08691, section 4.1): 1/1.8, the geometric mean of the bounds. No --attention
    choice runs it; it keeps those rows from pulling ``attention_relative_native`` down."""
    zero3_host_seconds: float = 3.3e-4
    """DeepSpeed ZeRO-3: host time per prefetched module fetch (pre-forward/pre-backward hook, all-gather launch,
    release), spent while the GPU computes: it bounds the step only when the GPU work per module is shorter
    (small models, short sequences, LoRA's small adapter modules). Prior: the 5.1B BERT forward of DeepSpeed#1188
    (270 ms under ZeRO-3 with synchronous all-gathers, 60 ms under ZeRO-2, ~520 fetches, ~39 ms of all-gather
    bandwidth: 0.33 ms per fetch; https://github.com/deepspeedai/DeepSpeed/pull/1188), an upper bound for the
    host part."""
    zero3_host_param_seconds: float = 3e-5
    """DeepSpeed ZeRO-3: host time per weight a module fetch gathers beyond its first (MoE leaf blocks), 20-50 us
    measured by ``benchmarks/zero3_host_probe.py`` on a CPU, all-gather excluded: lower bound (docs/speed-model.md)."""
    zero_hook_seconds: float = 5e-5
    """DeepSpeed ZeRO 1-3: host time per trainable tensor and micro-batch of the hook copying its gradient into
    the reduce bucket (Python plus a few ~5-10 us tensor ops); noise for ~300 dense tensors, seconds for HF MoE's
    18,432 expert linears (Qwen3-30B-A3B). DeepSpeed#7886, TensorAuto/OpenTau#177 ("entirely host-side")."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or v <= 0:
                raise WorkloadError(_("engine constant {name} must be positive, got {value!r}").format(name=f.name,
                                                                                                      value=v))
        for f in ("gemm_eff_megatron", "gemm_eff_native", "gemm_eff_hf", "fp8_eff_megatron", "fp8_eff_native"):
            if getattr(self, f) > 1:
                raise WorkloadError(_("engine constant {name} is a fraction of peak and must be <= 1").format(name=f))

    def with_(self, **kw: float) -> "EngineConstants":
        return replace(self, **kw)

    def gemm_eff(self, family: str) -> float:
        return getattr(self, f"gemm_eff_{family}")

    def elem_bytes(self, family: str) -> float:
        return getattr(self, f"elem_bytes_{family}")

    def attention_relative(self, family: str) -> float:
        return self.attention_relative_megatron if family == "megatron" else self.attention_relative_native

    def fp8_eff(self, family: str) -> float:
        return self.fp8_eff_megatron if family == "megatron" else self.fp8_eff_native


PRIORS = EngineConstants()
"""The prior values (before fitting): the defaults above as written from first principles."""

FIXED_AT_PRIOR: dict[str, str] = {
    "ridge_exponent": N_("a law for every Hopper/Ampere GPU, its value from GEMM measurements (MAMF); no calibration "
                      "source moves by more than 1 % with it"),
    "compile_elementwise_factor": N_("torch.compile's fusion of element-wise chains; no calibration run moves with it"),
    "fp8_cast_bytes": N_("FP8 quantisation traffic per GEMM input; no calibration run moves with it"),
    "expert_sync_seconds": N_("the Hugging Face expert loop's host sync per expert; one calibration source informs it"),
    "zero3_fetch_seconds": N_("DeepSpeed ZeRO-3's exposed fetch latency, measured in DeepSpeed#1174/#1188; one calibration "
                           "source informs it"),
    "triton_attention_factor": N_("the 2023 Triton flash-attention kernel against FlashAttention-2, from the "
                               "FlashAttention-2 paper's 1.3-2.5x; every run of that kernel (llm-foundry's "
                               "attn_impl triton) gets it, and one calibration source ran it"),
    "zero3_host_seconds": N_("DeepSpeed ZeRO-3's host time per prefetched fetch (DeepSpeed#1188); no calibration run "
                          "moves with it"),
    "zero3_host_param_seconds": N_("DeepSpeed ZeRO-3's host time per extra parameter of a module fetch, measured "
                                "by benchmarks/zero3_host_probe.py; no calibration run gathers many-parameter modules"),
    "zero_hook_seconds": N_("DeepSpeed's gradient hook per tensor (DeepSpeed#7886); one calibration source informs it"),
    "elem_bytes_native": N_("native PyTorch engines' element-wise traffic, counted from their op sequence; one "
                         "calibration source (llm-foundry) informs it"),
    "gemm_half_dim": N_("the GEMM size law's half point (cuBLAS tile sizes); one calibration source informs it"),
    "fp8_eff_native": N_("torchao float8 GEMM efficiency; one calibration source (Trainy's torchtitan runs) informs it"),
}
"""Constants of :class:`EngineConstants` that the fit leaves at their documented prior (the value written from the
cited mechanism in the field's docstring), because at most one calibration source informs them: a fitted value there
would describe that source, not the engine (issue 26; docs/accuracy.md counts both kinds)."""

FIT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EngineConstants) if f.name not in FIXED_AT_PRIOR)
"""The constants ``benchmarks/speed_loso.py`` fits (each informed by at least two calibration sources)."""
ALL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EngineConstants))

DEFAULT_CONSTANTS = EngineConstants()
"""Replaced below by the fitted values from benchmarks/results/speed_loso.json (``all_sources`` fit)."""

CONSTANT_SOURCES: dict[str, str] = {}
"""One line per constant: value, prior and what fixed it (filled with the fitted values below)."""


# ---------------------------------------------------------------------------------------------- features
@dataclass(frozen=True, kw_only=True)
class EngineFeatures:
    """Everything about one step on one GPU that does not depend on the fitted constants."""

    family: str
    gpu_class: str
    gemm_share_measured: float = 0.0
    """Measured large-GEMM share of the peak where the ridge law misses it (``MEASURED_GEMM_SHARE``); 0: the law."""
    fp8: bool
    compiled: bool
    peak16_tflops: float
    peak_fp8_tflops: float | None
    mem_gbytes_per_s: float
    dense_gemm_flops: float
    """Per GPU per step: attention projections, dense MLP, shared experts, router, LM head."""
    expert_gemm_flops: float
    lora_flops: float
    attention_flops: float
    linear_attention_flops: float
    dense_dim: float
    expert_dim: float
    lora_dim: float
    expert_tokens: float = 0.0
    """TransformerEngine grouped GEMM: tokens per local expert and micro-batch (each expert GEMM's rows), else 0."""
    elementwise_units: float
    """Element-wise bytes per step for ``elem_bytes = 1`` (dense part: ``h`` + dense/shared MLP width)."""
    moe_elementwise_units: float = 0.0
    """Element-wise bytes per step of the routed-expert part (``k x (I_expert + h)``) for factor 1."""
    ce_bytes: float
    layer_kernel_units: float
    """Layer-passes per step (x kernels per layer)."""
    moe_kernel_units: float
    """MoE-layer passes per step (grouped MoE kernels)."""
    expert_kernel_units: float
    """Expert visits per step in the eager expert loop (0 for grouped engines)."""
    optimizer_seconds: float
    zero3_fetches: float = 0.0
    """Exposed-latency ZeRO-3 module fetches per step (expert linears of the eager loop), inter-node weighted."""
    eager_attention_flops: float = 0.0
    """``--attention eager``: score and value matmuls per step, full ``S x S`` (no causal skipping), timed as
    GEMMs of ``head_dim`` (the flash ``attention_flops`` are then 0)."""
    eager_score_bytes: float = 0.0
    """``--attention eager``: HBM bytes per step of the materialised score matrices."""
    head_dim: float = 128.0
    """The GEMM size law's dimension of eager attention's score and value matmuls."""
    stacked_expert_bytes: float = 0.0
    """HBM bytes per step of the eager loop's full-size expert gradients (stacked expert weights), else 0."""
    fsdp_copy_bytes: float = 0.0
    """HBM bytes per step of FSDP2's all-gather copy-out and reduce-scatter copy-in (``fsdp.fsdp2_copy_bytes``)."""
    fa2_on_hopper: bool = False
    """An Ampere-generation attention kernel on a Hopper GPU (``engine_terms.fa2_on_hopper``)."""
    zero3_module_fetches: float = 0.0
    """DeepSpeed ZeRO-3 module fetches per step run on the host alongside the GPU (``engine_terms``)."""
    zero3_extra_params: float = 0.0
    """Weights DeepSpeed ZeRO-3 gathers per step beyond each fetch's first (``engine_terms.zero3_extra_params``)."""
    zero_hook_calls: float = 0.0
    """DeepSpeed ZeRO gradient-hook calls per step: trainable parameter tensors x micro-batches."""
    lora_bytes: float = 0.0
    """HBM bytes per step of the LoRA adapters' element-wise work (``engine_terms.lora_elementwise_bytes``)."""
    triton_attention: bool = False
    """The run used the 2023 Triton FlashAttention kernel (calibration rows only, ``triton_attention_factor``)."""
    attention_forward_flops: float = 0.0
    """Flash-attention score/value FLOPs per step of the forward passes (recomputed forwards included), causal
    count, head-dimension padding applied (``engine_terms.flash_attention_flops``)."""
    attention_backward_flops: float = 0.0
    """The same for the backward passes in the executed count (``ATTENTION_BACKWARD_FLOP_FACTOR`` x forward)."""
    attention_seq: float = 0.0
    """Key/query length of one attention kernel call (``engine_terms.attention_call_seq``)."""
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True, kw_only=True)
class EngineTime:
    """Compute time of one optimizer step on one GPU (no communication, no bubble)."""

    seconds: float
    """max(GPU kernel time, CPU launch time) + optimizer step."""
    gemm_seconds: float
    attention_seconds: float
    elementwise_seconds: float
    launch_seconds: float
    expert_loop_seconds: float
    """Serial part of the eager expert loop: host syncs and launches per expert, and the expert GEMMs."""
    zero3_fetch_seconds: float
    zero_hook_seconds: float
    optimizer_seconds: float
    launch_bound: bool


def _size(d: float, half: float) -> float:
    return d / (d + half) if d > 0 else 0.0


def _pass_ratio(wl: Workload, flops: FlopsBreakdown, recompute_fraction: float) -> float:
    """Executed passes per forward (3 full, 4 with GC), plus selective recompute's share."""
    fwd = flops.forward_flops
    ratio = flops.hardware_flops / fwd if fwd else 0.0  # executed passes per forward (3 full, 4 with GC)
    if recompute_fraction and not wl.grad_ckpt and fwd:
        layer_fwd = sum(l.forward for l in flops.layers if l.has_backward)
        ratio += recompute_fraction * layer_fwd / fwd
    return ratio


def _gemm_dims(model: ModelShape, wl: Workload, family: str, mb_tokens: float,
               grouped: bool = True) -> tuple[float, float, float, float]:
    """(dense GEMM size, expert GEMM size, experts visited per MoE layer in a per-expert loop, tokens per
    expert of a TransformerEngine grouped GEMM or 0).

    Hugging Face code loops over every expert that got a token (no expert parallelism), except with transformers
    5's ``grouped_mm`` experts (``Workload.experts_impl``). Megatron-Core without
    ``--moe-grouped-gemm`` (``SequentialMLP``) loops over its local experts (``E / ep``), slicing each one's
    tokens by counts read back to the host; with grouped GEMM (and in native grouped_mm engines) there is no
    loop (``visited = 0``)."""
    h = model.hidden_size
    dense_dim = min(mb_tokens, h / wl.tp, max(1.0, (model.intermediate_size or h) / wl.tp))
    expert_dim = 0.0
    visited = 0.0
    if model.is_moe:
        E, k, Ie = model.num_experts, model.experts_per_token, model.moe_intermediate_size
        if family == "hf":
            tok_per_expert = mb_tokens * k / E  # no expert parallelism in HF code: every rank runs all experts
            if wl.experts_impl != "grouped_mm":  # transformers < 5 / eager: a Python loop over the experts hit
                visited = min(float(E), mb_tokens * k)
        else:
            tok_per_expert = mb_tokens / wl.tp * wl.ep * k / E  # each rank gets its experts' tokens from ep ranks
            if not grouped:
                visited = float(E) / wl.ep
        expert_dim = min(tok_per_expert, float(Ie), float(h))
        if family == "megatron" and grouped:  # the token count has its own law (grouped_gemm_half_tokens)
            return dense_dim, min(float(Ie), float(h)), visited, tok_per_expert
    return dense_dim, expert_dim, visited, 0.0


def features(model: ModelShape, wl: Workload, hw: Hardware, framework: str, *, flops: FlopsBreakdown,
             compiled: bool = False, trainable_params: float | None = None,
             recompute_fraction: float = 0.0, moe_grouped_gemm: bool = True,
             z3_leaf_moe: bool = True, triton_attention: bool = False) -> EngineFeatures:
    """Constant-independent quantities of one step (``flops`` is ``speed.flops_per_token``'s result).

    ``recompute_fraction``: share of the layers' forward re-run by selective activation checkpointing when
    ``grad_ckpt`` is off (torchtitan's per-op SAC re-runs every second matmul of a layer: ~0.36 of a Llama
    layer's forward FLOPs); 0 without it. ``moe_grouped_gemm``: Megatron-Core's ``--moe-grouped-gemm``
    (off: ``SequentialMLP``, a per-expert loop like Hugging Face's; ignored by Hugging Face code, which
    always loops). How Hugging Face code runs its experts comes from ``wl.experts_impl``: ``eager`` loops over
    one stacked ``[E, out, in]`` parameter per expert (``STACKED_EXPERT_GRAD_PASSES``), ``grouped_mm`` does not loop.
    ``z3_leaf_moe``: DeepSpeed ZeRO-3 gathers each MoE block as one leaf module (``engine_terms.kernel_units``).
    ``triton_attention``: the attention ran llm-foundry's 2023 Triton FlashAttention (``triton_attention_factor``).
    """
    family = FAMILY_OF.get(framework)
    if family is None:
        raise WorkloadError(_("unknown framework {framework!r}").format(framework=framework),
                            fix=_("use one of {values}").format(values=", ".join(FAMILY_OF)))
    notes: list[str] = []
    # tokens each GPU's FLOPs correspond to
    tokens_step_gpu = wl.micro_batch * wl.seq_len * wl.grad_accum * wl.dp / wl.gpus
    ratio = _pass_ratio(wl, flops, recompute_fraction)
    expert_fwd = terms.expert_forward_flops(model)
    dense_fwd = flops.forward_matmul_flops - expert_fwd + flops.forward_lm_head_flops
    per = tokens_step_gpu * ratio
    mb_tokens = wl.micro_batch * wl.seq_len / wl.seq_shards  # tokens of one micro-batch on one GPU (before TP)
    dense_dim, expert_dim, visited, expert_tokens = _gemm_dims(model, wl, family, mb_tokens, moe_grouped_gemm)
    # expert routing imbalance: the most-loaded expert-parallel rank runs ``imb`` x the mean routed tokens (its
    # grouped GEMMs and permute/unpermute traffic), and every rank waits for it at the combine all-to-all
    imb = routing_imbalance(wl, model)
    expert_tokens *= imb
    lora_dim = float(wl.lora_rank) if wl.method in ("lora", "qlora") else 0.0
    units, moe_units_b = terms.elementwise_units(model, wl, tokens_step_gpu, ratio)
    moe_units_b *= imb
    ce = tokens_step_gpu * model.vocab_size * CE_BYTES_PER_LOGIT  # vocab-parallel over TP
    layer_units, moe_units, expert_units, zero3_fetches = terms.kernel_units(model, wl, family, ratio, visited,
                                                                             z3_leaf_moe)
    bw, opt_s = terms.optimizer_seconds(model, wl, hw, trainable_params, notes, family)
    forwards = 1.0 + (1.0 if wl.grad_ckpt else recompute_fraction)  # selective recompute re-runs attention too
    eager_flops, eager_bytes = terms.eager_attention(model, wl, flops, tokens_step_gpu, forwards)
    return EngineFeatures(
        family=family, gpu_class=hw.gpu_class, gemm_share_measured=MEASURED_GEMM_SHARE.get(hw.name, 0.0),
        fp8=wl.precision == "fp8" and bool(hw.peak_fp8_tflops),
        compiled=compiled, peak16_tflops=hw.peak_tflops, peak_fp8_tflops=hw.peak_fp8_tflops,
        mem_gbytes_per_s=bw,
        dense_gemm_flops=dense_fwd * per, expert_gemm_flops=expert_fwd * per * imb,
        lora_flops=flops.forward_lora_flops * per,
        attention_flops=0.0 if eager_flops else (flops.forward_attention_flops * per * terms.attention_head_padding(
            model.head_dim, wl, hw, triton_attention)),
        eager_attention_flops=eager_flops, eager_score_bytes=eager_bytes, head_dim=float(model.head_dim),
        linear_attention_flops=flops.forward_linear_attention_flops * per,
        dense_dim=dense_dim, expert_dim=expert_dim, lora_dim=lora_dim, expert_tokens=expert_tokens,
        elementwise_units=units, moe_elementwise_units=moe_units_b, ce_bytes=ce,
        layer_kernel_units=layer_units, moe_kernel_units=moe_units,
        expert_kernel_units=expert_units, optimizer_seconds=opt_s, zero3_fetches=zero3_fetches,
        zero_hook_calls=terms.zero_hook_calls(model, wl, family), fa2_on_hopper=terms.fa2_on_hopper(wl, hw),
        zero3_module_fetches=terms.zero3_module_fetches(model, wl, family),
        zero3_extra_params=terms.zero3_extra_params(model, wl, family, z3_leaf_moe),
        lora_bytes=terms.lora_elementwise_bytes(model, wl, family, tokens_step_gpu, forwards),
        triton_attention=triton_attention,
        **flash_attention_flops(model, wl, hw, flops, tokens_step_gpu, recompute_fraction, triton_attention,
                                eager=bool(eager_flops)),
        fsdp_copy_bytes=fsdp2_copy_bytes(model, wl, framework,
                                         float(model.total_params if trainable_params is None else trainable_params)),
        stacked_expert_bytes=(terms.stacked_expert_bytes(model, wl, visited)
                              if family == "hf" and wl.experts_impl == "eager" else 0.0),
        notes=tuple(notes),
    )


def compute_time(f: EngineFeatures, c: EngineConstants) -> EngineTime:
    """Step compute time from features and constants (cheap: used inside the fit loop)."""
    ridge16 = f.peak16_tflops * 1e3 / f.mem_gbytes_per_s  # roofline ridge in FLOP per byte
    cls = class_factor(c, f.gpu_class, ridge16, f.gemm_share_measured)
    e16 = min(0.95, c.gemm_eff(f.family) * cls)
    r16 = f.peak16_tflops * 1e12 * e16
    if f.fp8 and f.peak_fp8_tflops:
        rmm = f.peak_fp8_tflops * 1e12 * min(0.95, c.fp8_eff(f.family) * cls)
    else:
        rmm = r16
    half16 = c.gemm_half_dim * ridge16 / REFERENCE_RIDGE
    half = half16 * (rmm / r16)
    grouped = _size(f.expert_tokens, c.grouped_gemm_half_tokens) if f.expert_tokens else 1.0
    expert = f.expert_gemm_flops / (rmm * _size(f.expert_dim, half) * grouped) if f.expert_gemm_flops else 0.0
    gemm = (f.dense_gemm_flops / (rmm * _size(f.dense_dim, half))
            + (f.lora_flops / (r16 * _size(f.lora_dim, half16)) if f.lora_flops else 0.0)
            + (f.eager_attention_flops / (r16 * _size(f.head_dim, half16)) if f.eager_attention_flops else 0.0))
    attn = (attention_seconds(f, c)
            + f.linear_attention_flops / (r16 * LINEAR_ATTENTION_RELATIVE))
    bw = f.mem_gbytes_per_s * 1e9 * HBM_EFFICIENCY
    elem_factor = c.elem_bytes(f.family) * (c.compile_elementwise_factor if f.compiled else 1.0)
    act_units = f.elementwise_units + f.moe_elementwise_units
    elem = (f.elementwise_units * elem_factor + f.moe_elementwise_units * elem_factor * c.moe_elementwise_factor
            + (act_units * c.fp8_cast_bytes if f.fp8 else 0.0) + f.ce_bytes + f.stacked_expert_bytes + f.fsdp_copy_bytes
            + f.eager_score_bytes + f.lora_bytes * (c.compile_elementwise_factor if f.compiled else 1.0)) / bw
    k_layer = KERNELS_PER_LAYER[f.family] * (COMPILED_KERNEL_FACTOR if f.compiled else 1.0)
    cpu = ((f.layer_kernel_units * k_layer + f.moe_kernel_units * KERNELS_PER_MOE_LAYER) * c.launch_seconds
           + f.zero3_module_fetches * c.zero3_host_seconds + f.zero3_extra_params * c.zero3_host_param_seconds)
    if f.expert_kernel_units:  # eager loop: each expert syncs the host, so its launches and GEMMs serialise
        loop = expert + f.expert_kernel_units * (KERNELS_PER_EXPERT * c.launch_seconds + c.expert_sync_seconds)
        gpu = gemm + attn + elem
    else:
        loop = 0.0
        gemm += expert
        gpu = gemm + attn + elem
    z3 = f.zero3_fetches * c.zero3_fetch_seconds
    hooks = f.zero_hook_calls * c.zero_hook_seconds
    return EngineTime(seconds=max(gpu, cpu) + loop + z3 + hooks + f.optimizer_seconds, gemm_seconds=gemm,
                      attention_seconds=attn, elementwise_seconds=elem, launch_seconds=cpu,
                      expert_loop_seconds=loop, zero3_fetch_seconds=z3, zero_hook_seconds=hooks,
                      optimizer_seconds=f.optimizer_seconds,
                      launch_bound=cpu > gpu)


def _load_fitted() -> None:
    """Set DEFAULT_CONSTANTS from the committed fit (data file next to this module)."""
    global DEFAULT_CONSTANTS

    DEFAULT_CONSTANTS = EngineConstants(**{k: v for k, v in data.FITTED.items() if k in FIT_FIELDS})
    for name, why in FIXED_AT_PRIOR.items():
        CONSTANT_SOURCES[name] = (f"{name} = {getattr(PRIORS, name):.4g}: documented prior, not fitted ({why}; "
                                  "see EngineConstants)")
    for name in FIT_FIELDS:
        if name not in data.FITTED:  # a constant added after the last fit: its prior until the next fit
            CONSTANT_SOURCES[name] = f"{name} = {getattr(PRIORS, name):.4g}: prior (assumption), not fitted yet"
            continue
        CONSTANT_SOURCES[name] = (
            f"{name} = {data.FITTED[name]:.4g} (prior {getattr(PRIORS, name):.4g}): fitted by "
            f"benchmarks/speed_loso.py on {data.N_ROWS} published runs from {data.N_SOURCES} sources "
            f"(benchmarks/data/throughput.yaml, {data.FIT_DATE})")


try:
    _load_fitted()
except ImportError:  # pragma: no cover - before the first fit
    for _n in ALL_FIELDS:
        CONSTANT_SOURCES[_n] = f"{_n} = {getattr(PRIORS, _n):.4g}: prior (assumption), not fitted yet"
