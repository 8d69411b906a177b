"""Fixed assumptions of the engine model (``estimate/engines.py``): kernel counts, traffic per element and
the few efficiencies no published run in ``benchmarks/data/throughput.yaml`` constrains. Each one says why it
has its value; the fitted constants live in ``engines.EngineConstants``."""

from __future__ import annotations

KERNELS_PER_LAYER: dict[str, float] = {"hf": 40.0, "native": 30.0, "megatron": 16.0}
"""Assumption: kernels launched per decoder layer and forward pass (backward counts as two passes).
Counted from the op sequence of a Llama/Qwen decoder layer: eager HF issues ~40 (2 RMSNorm of ~6 ops each,
4 projections, RoPE ~10 ops, SDPA, SwiGLU 3 ops, 2 residual adds, casts), native PyTorch engines fuse
RMSNorm/RoPE partly (~30), Megatron-Core with TransformerEngine fuses norm+GEMM, RoPE, bias-SwiGLU (~16)."""

KERNELS_PER_MOE_LAYER: float = 20.0
"""Assumption: extra kernels of a grouped-GEMM MoE layer (router GEMM, softmax/top-k, permute, grouped
GEMMs, unpermute, dispatch/combine)."""

KERNELS_PER_LORA_LINEAR: float = 5.0
"""Assumption: extra kernels per LoRA-adapted linear and pass under PEFT (dropout, A matmul, B matmul,
scaling, add); QLoRA adds ``KERNELS_PER_QLORA_LINEAR`` (bitsandbytes dequantize). Megatron's adapters are
separate modules too (ms-swift's ``LoraParallelLinear`` runs ``lora_A``, ``lora_B``, the scaling and the add after
the base linear), charged per fused Megatron linear (``linear_qkv``, ``linear_proj``, ``linear_fc1``,
``linear_fc2``: ``comm.megatron_lora_linears``)."""
KERNELS_PER_QLORA_LINEAR: float = 1.0

LORA_FORWARD_BYTES_PER_INPUT: float = 12.0
LORA_FORWARD_BYTES_PER_OUTPUT: float = 12.0
LORA_BACKWARD_BYTES_PER_INPUT: float = 18.0
LORA_BACKWARD_BYTES_PER_OUTPUT: float = 4.0
"""Assumption: HBM bytes per token and adapted linear, per element of its input (``in_features``) and output
(``out_features``), of PEFT's LoRA ``Linear.forward`` outside its two rank-r matmuls, counted op by op for
current PEFT (adapters kept fp32 by ``autocast_adapter_dtype=True``) under bf16 autocast
(https://github.com/huggingface/peft/blob/main/src/peft/tuners/lora/layer.py): forward, the input cast to the
adapter's fp32 (read 2 B, write 4 B) and autocast's cast back to bf16 for ``lora_A`` (read 4, write 2) = 12 B per
input element; ``lora_B``'s output (write 2), ``* scaling`` (read 2, write 2) and ``result + ...`` (read 2 + 2,
write 2) = 12 B per output element. Backward: the two casts' gradients (6 + 6 B) and the accumulation of the
adapter path's input gradient into the base path's (read 2 + 2, write 2) = 18 B per input element; the
scaling's gradient (read 2, write 2) = 4 B per output element. A re-run forward (activation checkpointing)
repeats the forward bytes. ``lora_dropout`` > 0 would add a copy and a mask per input element and is not
counted (PEFT's default is 0). Small models feel it most: for Qwen-1.8B (hidden 2048) it is about 1.6 x the
rest of the layer's element-wise traffic."""

KERNELS_PER_EXPERT: float = 10.0
"""Assumption: kernels per visited expert in the Hugging Face eager expert loop (``where``/index of the
routed tokens, gather, gate/up/down matmuls, SiLU, mul, routing-weight mul, ``index_add_``)."""

COMPILED_KERNEL_FACTOR: float = 0.4
"""Assumption: ``torch.compile`` (torchtitan/NeMo AutoModel ``compile``) fuses element-wise chains, leaving
~40% of the eager kernel launches."""

LINEAR_ATTENTION_RELATIVE: float = 0.25
"""Assumption: chunked Gated DeltaNet kernels (flash-linear-attention, Triton) reach a quarter of the GEMM
efficiency on their operation count (small per-head matmuls and a triangular solve per chunk)."""

CE_BYTES_PER_LOGIT: float = 12.0
"""Cross-entropy traffic per logit and token: the fp32 logits are written by the LM head GEMM's epilogue,
read by softmax, the gradient written and read back: ~3 fp32 passes = 12 bytes."""

OPTIMIZER_BYTES_PER_PARAM: float = 30.0
"""AdamW step per trainable parameter: read fp32 weight, fp32 grad, two fp32 moments (16 B), write weight
and moments (12 B), write the bf16 compute copy (2 B). Memory-bound; fused/foreach kernels stream it once."""

GRAD_NORM_BYTES_PER_PARAM: float = 4.0
"""Gradient clipping's norm (every engine clips by default: Megatron-LM ``--clip-grad 1.0``, the HF Trainer's
``max_grad_norm=1.0``, torchtitan's ``max_norm 1.0``): one read of each local fp32 gradient (the optimizer's
shard under ZeRO/FSDP/the distributed optimizer) per optimizer step, memory-bound, before the AdamW step.
Megatron-Core ``get_grad_norm_fp32`` (``multi_tensor_l2norm``,
https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/optimizer/clip_grads.py); PyTorch
``clip_grad_norm_`` (``torch._foreach_norm``, https://github.com/pytorch/pytorch/blob/main/torch/nn/utils/clip_grad.py)."""

CLIP_SCALE_BYTES_PER_PARAM: dict[str, float] = {"hf": 8.0, "native": 8.0, "megatron": 0.0}
"""Gradient clipping's scaling pass per local gradient (read 4 B, write 4 B) and optimizer step. PyTorch's
``clip_grad_norm_`` (HF Trainer/accelerate, FSDP2 engines) multiplies every gradient by the clamped coefficient
unconditionally (``torch._foreach_mul_(grads, clip_coef_clamped)``, torch/nn/utils/clip_grad.py); Megatron-Core
scales only when the norm exceeds the threshold (``if clip_coeff < 1.0``, megatron/core/optimizer/clip_grads.py),
which a converged run rarely does: not charged there."""

GRAD_BUFFER_ZERO_BYTES_PER_PARAM: dict[str, float] = {"hf": 0.0, "native": 0.0, "megatron": 4.0}
"""Zeroing the gradient buffer once per optimizer step (write 4 B per local parameter, the whole tp/pp-local
model, not the optimizer's shard): Megatron-Core keeps gradients in a persistent fp32 ``main_grad`` buffer that
``DistributedDataParallel.zero_grad_buffer()`` clears at the start of every iteration
(https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/distributed/distributed_data_parallel.py). PyTorch
engines free their gradients instead (``zero_grad(set_to_none=True)``, the default since torch 2.0): no traffic."""

HBM_EFFICIENCY: float = 0.8
"""Assumption: streaming kernels reach ~80% of the datasheet HBM/GDDR bandwidth."""

MEM_BANDWIDTH_FALLBACK_GBYTES_PER_S: float = 2000.0
"""Assumption used when the catalog has no memory bandwidth for the GPU (A100-class HBM2e)."""

ZERO3_PERSISTENCE_PER_HIDDEN: int = 10
"""DeepSpeed ZeRO-3 keeps parameters under ``stage3_param_persistence_threshold`` elements resident instead of
fetching them; the Hugging Face integration fills its ``auto`` with ``10 x hidden_size``
(transformers/integrations/deepspeed.py), which ms-swift's and LLaMA-Factory's ZeRO-3 configs use."""

ZERO3_INTER_NODE_FACTOR: float = 2.0
"""Assumption: a ZeRO-3 fetch whose all-gather crosses nodes costs twice the intra-node latency
(network round trip ~10-20 us vs NVLink ~5 us, plus the ring's longer critical path)."""

REFERENCE_RIDGE: float = 989e12 / 3.35e12
"""Roofline ridge point of H100 SXM (dense bf16 FLOP/s per HBM byte/s, ~295): the GPU the efficiency
constants are expressed for (``EngineConstants.ridge_exponent`` scales other Hopper/Ampere GPUs from it)."""

RIDGE_LAW_CLASSES: tuple[str, ...] = ("hopper", "ampere", "ada")
"""GPU generations whose share of the 16-bit peak follows the roofline-ridge law
(``EngineConstants.ridge_exponent``). Ada joined on 2026-12-06, replacing an assumed flat 0.85 x H100's share,
on public ``torch.mm`` measurements of large square GEMMs (best size of 1024-10240, one table, its H100 80GB HBM3
rows at 79-80 % and A100 SXM at 85 % of peak, as stas00's MAMF table): L40S BF16 269 TFLOP/s of 362 (74 %; the
law says 77 %, the old factor 68 %), RTX 4090 160-173 of 165 (97-105 %; law 86 %), RTX 4090D about 100 % of its
peak (https://github.com/zzc0721/torch-performance-test-data/blob/main/database.md); L20 114 of 119.5 (95 %; law
88 %; https://github.com/zzc0721/torch-performance-test-data/issues/107). The law is closer than the flat
factor for every Ada card measured except the 72 W L4 (:data:`MEASURED_GEMM_SHARE`); for the half-rate parts
(4090, L20, and by the same per-SM rate the L40) it still under-states by 7-14 %. No Ada *training* run is in
the calibration set: Ada requests are flagged outside the calibration domain (``uncertainty``)."""

GPU_CLASS_FACTOR_FIXED: dict[str, float] = {"volta": 0.8, "turing": 0.6}
"""Assumption (no published runs with full settings in the calibration set): GEMM efficiency of these
classes relative to Hopper. V100 lacks bf16; T4 is power-capped at 70 W."""

H100_SXM_GEMM_SHARE: float = 0.803
"""Share of its dense BF16 peak a large GEMM sustains on H100 SXM (MAMF, stas00/ml-engineering, as in
``EngineConstants.ridge_exponent``): the reference :data:`MEASURED_GEMM_SHARE` is divided by."""

MEASURED_GEMM_SHARE: dict[str, float] = {"L4": 0.52}
"""GPUs (catalog names) whose measured large-GEMM share of the dense 16-bit peak departs from the ridge law by more
than 20 %, used instead of it. L4 (72 W board): BF16 ``torch.mm`` 71 TFLOP/s at 2048^3 but 55-59 at 4096^3 and
above (https://github.com/zzc0721/torch-performance-test-data/issues/120), 66 in a second table
(https://github.com/chsasank/device-benchmarks): 0.45-0.59 of 121, midpoint 0.52, where the law says 0.77 (the
clock falls under the power cap at large sizes)."""

STACKED_EXPERT_GRAD_PASSES: float = 4.0
"""Hugging Face eager expert loop over *stacked* expert weights (one ``[E, out, in]`` parameter indexed per
expert, ``weight[i]``: GraniteMoE/JetMoE in transformers 4.x, every MoE model of transformers 5 when the
experts run eagerly): the backward of each ``select`` allocates a zero gradient the size of the whole
stacked tensor, copies the expert's slice in, and autograd adds it into the running sum: one write, then two
reads and a write, about 4 x the stacked tensor's bytes per visited expert. Counted with torch.profiler on
the CPU (40 experts: 40 ``select_backward`` -> 40 full-size ``zeros``, 39 full-size ``add_``)."""

EAGER_SCORE_BYTES_FORWARD: float = 26.0
EAGER_SCORE_BYTES_BACKWARD: float = 30.0
"""Eager attention (``--attention eager``: transformers' ``eager_attention_forward``, no fused kernel) writes the
``S x S`` score matrix of every head to HBM and streams it through each op. Bytes per score element, counted
from its op sequence: forward: ``Q K^T`` write (2), scale (read 2, write 2), mask add (read score 2 and mask 2,
write 2), fp32 softmax (read 2, write 4), cast back (read 4, write 2), ``P V`` read (2) = 26; backward:
``dO V^T`` write (2), cast (read 2, write 4), softmax backward (read P 4 and dP 4, write 4), scale (read 2,
write 2), the two matmuls read dS (2 + 2) = 30 (dropout p = 0 is a no-op)."""

# ---------------------------------------------------------------------------------------------- attention kernels
ATTENTION_BACKWARD_FLOP_FACTOR: float = 2.5
"""Flash attention's backward executes 2.5 x the forward's score/value FLOPs: it recomputes ``S = Q K^T`` (the
probabilities are never stored) and runs ``dV = P^T dO``, ``dP = dO V^T``, ``dQ = dS K``, ``dK = dS^T Q``: five
matmuls of the forward's size against two. Every FlashAttention benchmark counts it so
(``flops(..., mode="bwd") = 2.5 x fwd`` in flash-attention's benchmarks/benchmark_flash_attention.py,
https://github.com/Dao-AILab/flash-attention/blob/main/benchmarks/benchmark_flash_attention.py), and the kernel rates
of :data:`ATTENTION_PEAK_SHARE` are measured in that count. The MFU convention (backward = 2 x forward) stays
for the model FLOPs; only the attention time uses the executed count."""

ATTENTION_PEAK_SHARE: dict[str, tuple[float, float]] = {"hopper": (0.60, 0.52), "ampere": (0.73, 0.63)}
"""(forward, backward) share of the GPU's dense 16-bit peak that the generation's own attention kernel reaches on
long sequences (16k tokens, head dim 128, its reference GPU): Hopper (H100 SXM, 989 TFLOP/s): cuDNN attention, what
TransformerEngine and PyTorch SDPA run there, 595 and 516 TFLOP/s (FlashAttention-3 648 and 561, FlashAttention-2
370 and 322) in the FlashAttention-3 paper's figures (https://arxiv.org/abs/2407.08608, section 4.1, "Attention
forward/backward speed, head dim 128 (H100 80GB SXM5)"); Ampere (A100 SXM, 312 TFLOP/s): FlashAttention-2 "up to
73 % of the theoretical maximum FLOPs/s" forward and "up to 63 %" backward (https://arxiv.org/abs/2307.08691,
section 4.1). Other Hopper/Ampere GPUs scale from their generation's reference by the ridge law
(``EngineConstants.ridge_exponent``), Ada from the Ampere reference by the same law; Volta/Turing take the Ampere
shares x ``GPU_CLASS_FACTOR_FIXED``.
FlashAttention-2 on a Hopper GPU runs at ``EngineConstants.fa2_hopper_factor`` of the Hopper kernel."""

ATTENTION_REFERENCE_RIDGE: dict[str, float] = {"hopper": REFERENCE_RIDGE, "ampere": 312e12 / 2.039e12}
"""Roofline ridge of each generation's reference GPU for :data:`ATTENTION_PEAK_SHARE` (H100 SXM, A100 SXM 80GB)."""

ATTENTION_SEQ_HALF: tuple[float, float] = (128.0, 256.0)
"""(forward, backward): sequence length per kernel call at which a flash-attention kernel runs at half its
long-sequence rate, ``s / (s + half)``: each query tile's prologue and epilogue (load Q, write O and the
log-sum-exp; in backward also dQ's accumulation) is amortised over the ``s / block`` key tiles it visits. Fitted by
eye to the FlashAttention-3 paper's H100 figures at 16k tokens per batch (head dim 128): backward FA3 316, 424, 501,
542, 559, 561 TFLOP/s and cuDNN 305, 408, 465, 499, 518, 516 at 0.5k-16k (half-points 230-400 tokens at 0.5-2k),
forward FA3 467, 565, 625, 638, 646, 648 (half-points 80-200). Rates in :data:`ATTENTION_PEAK_SHARE` are those at
16k, so the factor is normalised to 1 there."""

ATTENTION_CAUSAL_BLOCK: float = 128.0
"""Causal masking: the kernels skip key tiles above the diagonal but compute the diagonal tiles whole, half of
which is masked: ``n (n + 1) / 2`` tiles for ``n^2 / 2`` useful ones, ``n = s / block``, i.e. a factor
``s / (s + block)`` on the causal FLOP rate (128-token tiles: FlashAttention-2/3 on head dim 128)."""

ATTENTION_REFERENCE_SEQ: float = 16384.0
"""The sequence length at which :data:`ATTENTION_PEAK_SHARE` was measured."""
