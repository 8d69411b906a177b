"""Training FLOPs per token from exact shapes (the rules are in ``estimate/speed.py``'s module docstring and
``docs/speed-model.md``): decoder-layer matmuls of the active parameters, the LM head, the causal
full-attention core, the chunked Gated DeltaNet core and LoRA adapters; backward and recompute per method."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from trainfit.estimate.params import freeze_trainable_layer_ids, lora_adapter_shapes, lora_rank_of, lora_targeted
from trainfit.models.shapes import ModelShape, ParamTensor
from trainfit.workload import Workload

GDN_CHUNK_SIZE = 64
"""Chunk length of the chunked Gated DeltaNet kernel (flash-linear-attention ``chunk_gated_delta_rule``
uses 64, which transformers' Qwen3-Next calls). Only enters the small intra-chunk term."""


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
                  tp=1, pp=1, ep=1, cp=1, ulysses=1)
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

