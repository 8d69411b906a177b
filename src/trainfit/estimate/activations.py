"""Activation bytes that one decoder layer keeps for backward, per token, tensor by tensor.

The rules follow what PyTorch autograd really saves when the Hugging Face transformers code runs
(transformers 5.24, torch 2.13), checked against fake-tensor traces of the real code
(docs/memory-model.md, ../shared/reference/trace-findings.md):

* RMSNorm (``x.float()``, ``x * rsqrt(mean(x^2)+eps)``, ``weight * x.to(dtype)``) saves the fp32 input
  (4 B/elem), the fp32 ``rsqrt`` (4 B/token) and, only when its weight trains, the normalised tensor in
  the activation dtype.
* ``nn.Linear`` saves its input only when its weight trains (the input gradient needs only the weight);
  a shared input (q/k/v read the same normalised tensor) is one storage, counted once.
* PEFT LoRA with ``autocast_adapter_dtype=True`` (the default) keeps adapters in fp32 and so saves an
  fp32 copy of every adapted layer's input (4 B/elem, one per adapted module) plus the fp32 ``lora_A``
  output (4r B).
* q_norm/k_norm (Qwen3) save the fp32 copy and rsqrt; RoPE saves only cos/sin (shared, not counted);
  SDPA/flash save q, k, v (after RoPE), the output and the fp32 log-sum-exp per head; eager attention
  saves the fp32 softmax and its bf16 copy (``6 * heads * S`` B/token) and the K/V repeated to all heads.
* SwiGLU saves gate and up outputs, ``silu(gate)`` and the product (4 tensors of width I).
* MoE (transformers 5 ``grouped_mm`` experts): per routed slot the gathered input (h), the gate_up output
  (2I), ``silu`` (I), the product (I) and the down output (h), plus the fp32 router softmax (E) and int64
  routing indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload


@dataclass(frozen=True, kw_only=True)
class LayerTraining:
    """Which parts of one decoder layer train (decides what autograd saves)."""

    norms: bool
    """RMSNorm weights train."""
    linears: bool
    """Base linear weights (attention, MLP, experts, router) train."""
    lora: frozenset[str] = frozenset()
    """Module names with LoRA adapters (fp32 adapter input copies)."""
    input_requires_grad: bool = True
    """Whether the layer input carries grad (False below the first trainable layer)."""


def _norm(h: int, t: LayerTraining, act: int) -> int:
    """RMSNorm over width h: fp32 input copy + rsqrt + normalised (if weight trains)."""
    if not t.input_requires_grad:
        return 0
    return 4 * h + 4 + (act * h if t.norms else 0)


def _linear_in(width: int, module: str, t: LayerTraining, rank: int) -> int:
    """What a linear saves for its weight / LoRA adapter gradient (its input is counted by the caller)."""
    n = 0
    if module in t.lora:
        n += 4 * width + 4 * rank
    return n


def dense_attention_bytes(m: ModelShape, wl: Workload, t: LayerTraining, *, seq: int) -> int:
    """Saved bytes per token of a full-attention block (norm, q/k/v, q/k-norm, RoPE, attention, o_proj)."""
    h, nh, nkv, hd = m.hidden_size, m.num_heads, m.num_kv_heads, m.head_dim
    amp = wl.precision in ("amp-bf16", "fp16")
    act = 2
    r = wl.lora_rank
    n = 0
    # input RMSNorm: in AMP the residual stream is fp32, so "x.float()" is the input itself (still 4h)
    # and the normalised tensor stays fp32.
    n += _norm(h, t, 4 if amp else act)
    # the normalised output, read by q/k/v: saved once when their weights train; in AMP autocast makes a
    # bf16 copy per projection.
    if t.linears:
        n += (3 * act * h) if amp else act * h
    for mod in ("q_proj", "k_proj", "v_proj"):
        n += _linear_in(h, mod, t, r)
    # q_norm / k_norm: fp32 copy (4) + rsqrt (4 per head) + normalised bf16 (2) when the weight trains
    if m.qk_norm:
        n += (4 + (act if t.norms else 0)) * nh * hd + 4 * nh
        n += (4 + (act if t.norms else 0)) * nkv * hd + 4 * nkv
    if m.attn_output_gate:  # Qwen3-Next: sigmoid gate on the attention output (gate + sigmoid saved)
        n += 2 * act * nh * hd
    if wl.attention == "eager":
        # q and K/V repeated to every head, fp32 softmax + bf16 copy, attention output (o_proj input)
        n += act * nh * hd * 3 + 6 * nh * seq + act * nh * hd
    else:
        # q, k, v after RoPE; the output (shared with o_proj's input); fp32 log-sum-exp per head
        n += act * nh * hd + 2 * act * nkv * hd + act * nh * hd + 4 * nh
    n += _linear_in(nh * hd, "o_proj", t, r)
    return n


def mlp_bytes(m: ModelShape, wl: Workload, t: LayerTraining, *, width: int, prefix: str = "") -> int:
    """Saved bytes per token of a SwiGLU MLP of intermediate width ``width`` (input norm excluded)."""
    act = 2
    r = wl.lora_rank
    if not t.linears and not t.lora and not t.input_requires_grad:
        return 0
    # gate out (saved by silu), up out and silu(gate) (saved by the product); the product is saved by
    # down_proj only when its weight trains
    n = 3 * act * width + (act * width if t.linears else 0)
    for mod in ("gate_proj", "up_proj"):
        n += _linear_in(m.hidden_size, mod, t, r)
    n += _linear_in(width, "down_proj", t, r)
    return n


def post_norm_bytes(m: ModelShape, wl: Workload, t: LayerTraining, consumers: int = 2) -> int:
    """post_attention_layernorm plus its output when the MLP weights train (AMP: one bf16 copy per reader)."""
    amp = wl.precision in ("amp-bf16", "fp16")
    h = m.hidden_size
    n = _norm(h, t, 4 if amp else 2)
    if t.linears:
        n += consumers * 2 * h if amp else 2 * h
    return n


def moe_bytes(m: ModelShape, wl: Workload, t: LayerTraining, *, ep: int = 1, imbalance: float = 1.0) -> int:
    """Saved bytes per token of a MoE block (router + routed experts + shared expert); ``imbalance``: the routed
    copies of the most-loaded expert-parallel rank over the mean (``workload.routing_imbalance``)."""
    h, k, E, Im = m.hidden_size, m.experts_per_token, m.num_experts, m.moe_intermediate_size
    act = 2
    # per routed slot: gathered input, gate_up output (2I), silu (I), product (I), down output (h)
    per_slot = act * (h + 2 * Im + Im + Im + h)
    n = k * per_slot * imbalance
    # router: fp32 softmax over E, top-k values (fp32) and int64 indices, sort permutation, weights
    n += 4 * E + 4 * k + 8 * k * 3 + act * k
    # LoRA on fused experts (PEFT ParamWrapper) merges B@A into the weight instead of running x@A@B, so it
    # adds no per-token copies; the merged weights are counted per layer (expert_lora_merged_bytes).
    if "gate" in t.lora:  # the router, adapted like an nn.Linear (fp32 input copy + lora_A output)
        n += 4 * h + 4 * wl.lora_rank
    if m.shared_expert_intermediate_size:
        n += mlp_bytes(m, wl, t, width=m.shared_expert_intermediate_size)
        if m.shared_expert_gate:
            n += act + 4  # gate logit and sigmoid output
    return n


def linear_attention_bytes(m: ModelShape, wl: Workload, t: LayerTraining, *, seq: int) -> int:
    """Qwen3-Next Gated DeltaNet, approximate: projections, conv, fp32 q/k/v copies, chunked state.

    Counted: in_proj outputs (bf16), conv input/output and silu, fp32 l2-normalised q/k and fp32 v/beta/g
    (the torch chunked kernel works in fp32), per-chunk (64) decay and attention matrices, the fp32 core
    output, the gated RMSNorm (fp32 copies of output and gate) and out_proj's input. Not yet validated
    by a trace; marked as an assumption in every estimate that uses it.
    """
    h = m.hidden_size
    kd = m.linear_num_key_heads * m.linear_key_head_dim
    vd = m.linear_num_value_heads * m.linear_value_head_dim
    nv = m.linear_num_value_heads
    conv = 2 * kd + vd
    act = 2
    chunk = 64
    n = _norm(h, t, act) + (act * h if t.linears else 0)
    n += act * (2 * kd + 2 * vd) + act * 2 * nv  # in_proj outputs
    n += act * conv * 2  # conv input and pre-activation output
    n += act * conv  # silu output
    # fp32 copies: q and k repeated to value heads, then l2-normalised (2 tensors each), v, beta, g
    rep = m.linear_num_value_heads // max(1, m.linear_num_key_heads)
    n += 4 * (2 * kd * rep) * 2 + 4 * vd + 4 * nv * 3
    n += 4 * nv * chunk * 3  # per-chunk decay mask and attention matrices
    n += 4 * vd * 2  # core output and its pre-norm copy
    n += 4 * vd * 2 + act * vd * 2  # gated norm: fp32 copies of x and gate, z, out_proj input
    for mod in ("in_proj_qkvz", "in_proj_ba"):
        n += _linear_in(h, mod, t, wl.lora_rank)
    n += _linear_in(vd, "out_proj", t, wl.lora_rank)
    return n


def layer_bytes_per_token(m: ModelShape, wl: Workload, i: int, t: LayerTraining, *, seq: int, ep: int = 1,
                          imbalance: float = 1.0) -> int:
    """All saved bytes per token of decoder layer ``i`` (no recomputation)."""
    if m.layer_type(i) == "linear_attention":
        n = linear_attention_bytes(m, wl, t, seq=seq)
    else:
        n = dense_attention_bytes(m, wl, t, seq=seq)
    if m.is_moe_layer(i):
        n += post_norm_bytes(m, wl, t, consumers=1) + moe_bytes(m, wl, t, ep=ep, imbalance=imbalance)
    else:
        n += post_norm_bytes(m, wl, t, consumers=2) + mlp_bytes(m, wl, t, width=m.intermediate_size)
    return n


def layer_backward_temp_per_token(m: ModelShape, wl: Workload, i: int, imbalance: float = 1.0) -> int:
    """Transient bytes per token while one layer runs backward: the incoming activation gradient, the
    gradient of the widest intermediate (SwiGLU: gate/up/product grads) and an fp32 norm-gradient."""
    h = m.hidden_size
    if m.is_moe_layer(i):
        wide = m.experts_per_token * (2 * m.moe_intermediate_size) * 2 * 2 * imbalance
    else:
        wide = 3 * 2 * m.intermediate_size
    return wide + 4 * h + 2 * h


def expert_lora_merged_bytes(m: ModelShape, wl: Workload, t: LayerTraining, *, ep: int = 1, tp: int = 1) -> float:
    """Bytes per MoE layer of the merged expert weights ``W + B@A`` that PEFT's ParamWrapper builds in the
    forward (bf16, the base dtype) and grouped_mm saves for backward: 2 bytes per expert element."""
    if "experts" not in t.lora:
        return 0.0
    E, h, Im = m.num_experts, m.hidden_size, m.moe_intermediate_size
    return 2.0 * E * 3 * h * Im / ep / tp
