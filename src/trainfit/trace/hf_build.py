"""Turn a :class:`~trainfit.models.ModelShape` back into a transformers config and build the real model.

The config carries only what decides tensor shapes (sizes, heads, experts, layer types, biases, tying);
RoPE settings and the like keep their transformers defaults, which do not change memory.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

from trainfit.errors import NotTraceableError
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.json_types import JSON

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedModel


def hf_config_kwargs(shape: ModelShape) -> dict[str, JSON]:
    """Keyword arguments of the transformers config class for ``shape``."""
    kw: dict[str, JSON] = dict(
        vocab_size=shape.vocab_size,
        hidden_size=shape.hidden_size,
        num_hidden_layers=shape.num_layers,
        num_attention_heads=shape.num_heads,
        num_key_value_heads=shape.num_kv_heads,
        head_dim=shape.head_dim,
        tie_word_embeddings=shape.tie_word_embeddings,
        max_position_embeddings=shape.max_position_embeddings or 40960,
        use_cache=False,
    )
    if shape.intermediate_size:
        kw["intermediate_size"] = shape.intermediate_size
    mt = shape.model_type
    if mt in ("qwen3", "qwen3_moe", "qwen3_next"):
        kw["attention_bias"] = shape.attention_bias
    elif mt == "qwen2_moe":
        kw["qkv_bias"] = shape.attention_bias
    elif mt == "llama":
        kw["attention_bias"] = shape.attention_bias
        kw["mlp_bias"] = shape.mlp_bias
    if shape.num_experts:
        moe = set(shape.moe_layers)
        kw.update(
            num_experts=shape.num_experts,
            num_experts_per_tok=shape.experts_per_token,
            moe_intermediate_size=shape.moe_intermediate_size,
            decoder_sparse_step=1,
            mlp_only_layers=[i for i in range(shape.num_layers) if i not in moe],
            norm_topk_prob=True,
            output_router_logits=False,
        )
        if mt in ("qwen2_moe", "qwen3_next"):
            kw["shared_expert_intermediate_size"] = shape.shared_expert_intermediate_size
    if mt == "qwen3_next":
        kw.update(
            layer_types=list(shape.layer_types),
            linear_num_key_heads=shape.linear_num_key_heads,
            linear_num_value_heads=shape.linear_num_value_heads,
            linear_key_head_dim=shape.linear_key_head_dim,
            linear_value_head_dim=shape.linear_value_head_dim,
            linear_conv_kernel_dim=shape.linear_conv_kernel_dim,
        )
    return kw


def hf_config(shape: ModelShape, *, attn_implementation: str = "sdpa") -> PretrainedConfig:
    """A transformers ``PretrainedConfig`` for ``shape``."""
    import transformers

    classes = {
        "qwen3": "Qwen3Config", "qwen3_moe": "Qwen3MoeConfig", "qwen3_next": "Qwen3NextConfig",
        "qwen2": "Qwen2Config", "qwen2_moe": "Qwen2MoeConfig", "llama": "LlamaConfig", "mistral": "MistralConfig",
    }
    name = classes.get(shape.model_type)
    if name is None or not hasattr(transformers, name):
        raise NotTraceableError(_("{name}: model_type {model_type!r} has no transformers config class here").format(
            name=shape.name, model_type=shape.model_type))
    cfg = getattr(transformers, name)(**hf_config_kwargs(shape))
    cfg._attn_implementation = attn_implementation
    return cfg


def model_class(shape: ModelShape) -> type[PreTrainedModel]:
    import transformers

    classes = {
        "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM", "qwen3_next": "Qwen3NextForCausalLM",
        "qwen2": "Qwen2ForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM", "llama": "LlamaForCausalLM",
        "mistral": "MistralForCausalLM",
    }
    return getattr(transformers, classes[shape.model_type])


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build_model(shape: ModelShape, *, dtype: torch.dtype, attn_implementation: str, init_weights: bool
                ) -> PreTrainedModel:
    """Instantiate the model on the current (fake or real) "cpu" device, weights in ``dtype``.

    ``init_weights=False`` skips transformers' and torch's init kernels (``no_init_weights``), which also
    skips weight tying, so ``tie_weights()`` is called afterwards.
    """
    import torch
    from transformers import initialization as tinit

    cfg = hf_config(shape, attn_implementation=attn_implementation)
    cls = model_class(shape)
    ctx = tinit.no_init_weights() if not init_weights else contextlib.nullcontext()
    with default_dtype(dtype), ctx, torch.device("cpu"):
        model = cls(cfg)
    model.tie_weights()
    n = sum(p.numel() for p in model.parameters())
    if n != shape.total_params:
        raise NotTraceableError(
            _("{name}: the transformers model has {n:,} parameters but the shape says {total:,}").format(
                name=shape.name, n=n, total=shape.total_params),
            fix=_("the config conversion misses a field; report it"),
        )
    return model
