"""Tiny model shapes for the trace tests (fast under fake tensors and on real CPU tensors)."""

from trainfit.models import from_hf_config



def tiny_qwen3(vocab: int = 8192, **kw):
    cfg = dict(model_type="qwen3", hidden_size=256, intermediate_size=768, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=vocab,
               tie_word_embeddings=False)
    cfg.update(kw)
    return from_hf_config(cfg, name="tiny-qwen3")


def tiny_qwen3_moe():
    return from_hf_config(dict(model_type="qwen3_moe", hidden_size=128, intermediate_size=384,
                               moe_intermediate_size=64, num_experts=8, num_experts_per_tok=2,
                               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                               vocab_size=4096, tie_word_embeddings=False), name="tiny-qwen3-moe")


