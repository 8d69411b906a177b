"""Build a :class:`ModelShape` from a Hugging Face ``config.json``.

Supported ``model_type`` values and the fields each one reads (defaults are those of the transformers
config classes, version 5.24):

* ``qwen3``: dense, q/k-norm, no attention bias.
* ``qwen3_moe``: every layer MoE unless listed in ``mlp_only_layers`` or off ``decoder_sparse_step``.
* ``qwen3_next``: hybrid Gated DeltaNet / gated full attention, MoE with a gated shared expert.
* ``qwen2``: dense, q/k/v bias, no q/k-norm.
* ``qwen2_moe``: like ``qwen3_moe`` plus a gated shared expert, q/k/v bias, no q/k-norm.
* ``llama``, ``mistral``: dense, no q/k-norm, optional ``attention_bias`` / ``mlp_bias``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from trainfit.errors import ModelConfigError
from trainfit.models.shapes import ModelShape

SUPPORTED_MODEL_TYPES = ("qwen3", "qwen3_moe", "qwen3_next", "qwen2", "qwen2_moe", "llama", "mistral")


def _req(cfg: Mapping[str, Any], key: str, name: str) -> Any:
    if key not in cfg or cfg[key] is None:
        raise ModelConfigError(f"{name}: config has no '{key}'", fix="pass a complete Hugging Face config.json")
    return cfg[key]


def _moe_layers(cfg: Mapping[str, Any], n_layers: int) -> tuple[int, ...]:
    step = int(cfg.get("decoder_sparse_step", 1) or 1)
    only = set(cfg.get("mlp_only_layers") or [])
    return tuple(i for i in range(n_layers) if i not in only and (i + 1) % step == 0)


def from_hf_config(cfg: Mapping[str, Any], *, name: str | None = None, source: str = "") -> ModelShape:
    """Turn a config dict into a :class:`ModelShape` (raises :class:`ModelConfigError`)."""
    if not isinstance(cfg, Mapping):
        raise ModelConfigError("config.json must hold a JSON object")
    mt = cfg.get("model_type")
    name = name or str(cfg.get("_name_or_path") or mt or "custom")
    if mt not in SUPPORTED_MODEL_TYPES:
        raise ModelConfigError(
            f"{name}: model_type {mt!r} is not supported",
            fix="supported: " + ", ".join(SUPPORTED_MODEL_TYPES),
        )
    try:
        h = int(_req(cfg, "hidden_size", name))
        nh = int(_req(cfg, "num_attention_heads", name))
        L = int(_req(cfg, "num_hidden_layers", name))
        nkv = int(cfg.get("num_key_value_heads") or nh)
        hd = int(cfg.get("head_dim") or h // nh)
        V = int(_req(cfg, "vocab_size", name))
        tie = bool(cfg.get("tie_word_embeddings", False))
        inter = int(cfg.get("intermediate_size") or 0)
        kw: dict[str, Any] = dict(
            name=name, model_type=mt, hidden_size=h, intermediate_size=inter, num_layers=L, num_heads=nh,
            num_kv_heads=nkv, head_dim=hd, vocab_size=V, tie_word_embeddings=tie,
            max_position_embeddings=int(cfg.get("max_position_embeddings") or 0), source=source,
        )
        if mt in ("qwen3", "qwen3_moe", "qwen3_next"):
            kw.update(qk_norm=True, attention_bias=bool(cfg.get("attention_bias", False)))
            kw["o_bias"] = kw["attention_bias"]
        elif mt in ("qwen2", "qwen2_moe"):
            kw.update(qk_norm=False, attention_bias=True, o_bias=False)
        else:  # llama, mistral
            ab = bool(cfg.get("attention_bias", False))
            kw.update(qk_norm=False, attention_bias=ab, o_bias=ab, mlp_bias=bool(cfg.get("mlp_bias", False)))
        if mt in ("qwen3_moe", "qwen2_moe", "qwen3_next"):
            E = int(_req(cfg, "num_experts", name))
            kw.update(
                num_experts=E,
                experts_per_token=int(_req(cfg, "num_experts_per_tok", name)),
                moe_intermediate_size=int(_req(cfg, "moe_intermediate_size", name)),
            )
            if mt == "qwen3_next":
                kw["moe_layers"] = _moe_layers(cfg, L)
            else:
                kw["moe_layers"] = _moe_layers(cfg, L)
            if mt in ("qwen2_moe", "qwen3_next"):
                kw["shared_expert_intermediate_size"] = int(cfg.get("shared_expert_intermediate_size") or 0)
                kw["shared_expert_gate"] = kw["shared_expert_intermediate_size"] > 0
        if mt == "qwen3_next":
            lt = cfg.get("layer_types")
            if not lt:
                interval = int(cfg.get("full_attention_interval") or 4)
                lt = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(L)]
            kw.update(
                layer_types=tuple(lt),
                linear_num_key_heads=int(_req(cfg, "linear_num_key_heads", name)),
                linear_num_value_heads=int(_req(cfg, "linear_num_value_heads", name)),
                linear_key_head_dim=int(_req(cfg, "linear_key_head_dim", name)),
                linear_value_head_dim=int(_req(cfg, "linear_value_head_dim", name)),
                linear_conv_kernel_dim=int(_req(cfg, "linear_conv_kernel_dim", name)),
                attn_output_gate=True,
            )
    except (TypeError, ValueError) as e:
        raise ModelConfigError(f"{name}: a config field has the wrong type ({e})") from None
    return ModelShape(**kw)


def load_config_path(path: str | Path) -> ModelShape:
    """Read ``config.json`` (or a model folder that holds one) into a :class:`ModelShape`."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise ModelConfigError(f"no config file at {path}", fix="pass a config.json or a folder that has one")
    if p.stat().st_size > 5_000_000:
        raise ModelConfigError(f"{p} is {p.stat().st_size} bytes, too large for a config.json")
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelConfigError(f"cannot read {p}: {e}", fix="pass a valid JSON config.json") from None
    name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    # Multimodal wrappers keep the language model under text_config.
    if isinstance(cfg, dict) and "text_config" in cfg and cfg.get("model_type") not in SUPPORTED_MODEL_TYPES:
        cfg = cfg["text_config"]
    return from_hf_config(cfg, name=name, source=str(p))
