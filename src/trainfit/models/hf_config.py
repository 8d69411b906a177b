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

from pathlib import Path
from typing import Mapping

from trainfit.errors import ModelConfigError
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.json_types import JSON

SUPPORTED_MODEL_TYPES = ("qwen3", "qwen3_moe", "qwen3_next", "qwen2", "qwen2_moe", "llama", "mistral")


def _req(cfg: Mapping[str, JSON], key: str, name: str) -> JSON:
    if key not in cfg or cfg[key] is None:
        raise ModelConfigError(_("{name}: config has no '{key}'").format(name=name, key=key),
                               fix=_("pass a complete Hugging Face config.json"))
    return cfg[key]


#: config.json key -> the ModelShape field whose documented range (``SHAPE_LIMITS``) it must respect.
_FIELD_OF = {"hidden_size": "hidden_size", "num_attention_heads": "num_heads", "num_hidden_layers": "num_layers",
             "num_key_value_heads": "num_kv_heads", "head_dim": "head_dim", "vocab_size": "vocab_size",
             "intermediate_size": "intermediate_size", "max_position_embeddings": "max_position_embeddings",
             "num_experts": "num_experts", "num_experts_per_tok": "experts_per_token",
             "moe_intermediate_size": "moe_intermediate_size",
             "shared_expert_intermediate_size": "shared_expert_intermediate_size",
             "linear_num_key_heads": "linear_num_key_heads", "linear_num_value_heads": "linear_num_value_heads",
             "linear_key_head_dim": "linear_key_head_dim", "linear_value_head_dim": "linear_value_head_dim",
             "linear_conv_kernel_dim": "linear_conv_kernel_dim"}


def _num(cfg: Mapping[str, JSON], key: str, name: str, *, required: bool = False, default: int = 0,
         lo: int | None = None, hi: int | None = None) -> int:
    """An integer field through the input gate, inside its documented range (a wrong type, ``1e9`` layers or zero
    heads is one :class:`ModelConfigError`, never a ZeroDivisionError or a hang)."""
    from trainfit import inputs
    from trainfit.errors import InputError
    from trainfit.models.shapes import SHAPE_LIMITS

    raw = _req(cfg, key, name) if required else cfg.get(key)
    if raw is None or (not required and raw == 0 and not isinstance(raw, bool)):
        return default
    flo, fhi = SHAPE_LIMITS.get(_FIELD_OF.get(key, ""), (1, 1_000_000))
    try:
        return inputs.as_int(key, raw, lo=flo if lo is None else lo, hi=fhi if hi is None else hi)
    except InputError as e:
        raise ModelConfigError(_("{name}: config field {detail}").format(name=name, detail=e.message),
                               fix=_("pass a real Hugging Face config.json")) from None


def _moe_layers(cfg: Mapping[str, JSON], n_layers: int, name: str) -> tuple[int, ...]:
    step = _num(cfg, "decoder_sparse_step", name, default=1, lo=1, hi=1000)
    only_raw = cfg.get("mlp_only_layers") or []
    if not isinstance(only_raw, list) or len(only_raw) > n_layers:
        raise ModelConfigError(_("{name}: mlp_only_layers must be a list of at most {n_layers} layer indices").format(
            name=name, n_layers=n_layers))
    only = {_num({"mlp_only_layers": x}, "mlp_only_layers", name, required=True, lo=0, hi=n_layers) for x in only_raw}
    return tuple(i for i in range(n_layers) if i not in only and (i + 1) % step == 0)


def _flag(cfg: Mapping[str, JSON], key: str, name: str) -> bool:
    v = cfg.get(key, False)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise ModelConfigError(_("{name}: config field {key} must be true or false, not {value!r}").format(
                                   name=name, key=key, value=str(v)[:40]),
                               fix=_("pass a real Hugging Face config.json"))
    return v


def from_hf_config(cfg: Mapping[str, JSON] | JSON, *, name: str | None = None, source: str = "") -> ModelShape:
    """Turn a config dict into a :class:`ModelShape` (raises :class:`ModelConfigError`)."""
    if not isinstance(cfg, Mapping):
        raise ModelConfigError(_("config.json must hold a JSON object"))
    mt = cfg.get("model_type")
    name = _display_name(name or cfg.get("_name_or_path") or (mt if isinstance(mt, str) else None) or "custom")
    if mt not in SUPPORTED_MODEL_TYPES:
        raise ModelConfigError(
            _("{name}: model_type {model_type!r} is not supported").format(name=name, model_type=str(mt)[:60]),
            fix=_("supported: {types}").format(types=", ".join(SUPPORTED_MODEL_TYPES)),
        )
    try:
        h = _num(cfg, "hidden_size", name, required=True)
        nh = _num(cfg, "num_attention_heads", name, required=True)
        L = _num(cfg, "num_hidden_layers", name, required=True)
        nkv = _num(cfg, "num_key_value_heads", name, default=nh)
        hd = _num(cfg, "head_dim", name, default=h // nh)
        V = _num(cfg, "vocab_size", name, required=True)
        tie = _flag(cfg, "tie_word_embeddings", name)
        inter = _num(cfg, "intermediate_size", name)
        kw: dict[str, str | int | bool | tuple[int, ...]] = dict(
            name=name, model_type=mt, hidden_size=h, intermediate_size=inter, num_layers=L, num_heads=nh,
            num_kv_heads=nkv, head_dim=hd, vocab_size=V, tie_word_embeddings=tie,
            max_position_embeddings=_num(cfg, "max_position_embeddings", name), source=source,
        )
        if mt in ("qwen3", "qwen3_moe", "qwen3_next"):
            kw.update(qk_norm=True, attention_bias=_flag(cfg, "attention_bias", name))
            kw["o_bias"] = kw["attention_bias"]
        elif mt in ("qwen2", "qwen2_moe"):
            kw.update(qk_norm=False, attention_bias=True, o_bias=False)
        else:  # llama, mistral
            ab = _flag(cfg, "attention_bias", name)
            kw.update(qk_norm=False, attention_bias=ab, o_bias=ab, mlp_bias=_flag(cfg, "mlp_bias", name))
        if mt in ("qwen3_moe", "qwen2_moe", "qwen3_next"):
            E = _num(cfg, "num_experts", name, required=True, lo=1)
            kw.update(
                num_experts=E,
                experts_per_token=_num(cfg, "num_experts_per_tok", name, required=True, lo=1, hi=E),
                moe_intermediate_size=_num(cfg, "moe_intermediate_size", name, required=True, lo=1),
            )
            kw["moe_layers"] = _moe_layers(cfg, L, name)
            if mt in ("qwen2_moe", "qwen3_next"):
                kw["shared_expert_intermediate_size"] = _num(cfg, "shared_expert_intermediate_size", name)
                kw["shared_expert_gate"] = kw["shared_expert_intermediate_size"] > 0
        if mt == "qwen3_next":
            lt = cfg.get("layer_types")
            if lt and (not isinstance(lt, list) or len(lt) != L or not all(isinstance(t, str) for t in lt)):
                raise ModelConfigError(_("{name}: layer_types must be a list of {n} strings (one per layer)").format(
                    name=name, n=L))
            if not lt:
                interval = _num(cfg, "full_attention_interval", name, default=4, lo=1, hi=1000)
                lt = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(L)]
            kw.update(
                layer_types=tuple(lt),
                linear_num_key_heads=_num(cfg, "linear_num_key_heads", name, required=True, lo=1),
                linear_num_value_heads=_num(cfg, "linear_num_value_heads", name, required=True, lo=1),
                linear_key_head_dim=_num(cfg, "linear_key_head_dim", name, required=True, lo=1),
                linear_value_head_dim=_num(cfg, "linear_value_head_dim", name, required=True, lo=1),
                linear_conv_kernel_dim=_num(cfg, "linear_conv_kernel_dim", name, required=True, lo=1),
                attn_output_gate=True,
            )
    except (TypeError, ValueError) as e:
        raise ModelConfigError(_("{name}: a config field has the wrong type ({error})").format(name=name, error=e)) from None
    return ModelShape(**kw)


#: Largest config.json read (real ones are a few KB).
MAX_CONFIG_BYTES = 1 * 2**20


def _display_name(raw: JSON) -> str:
    """A model name safe to print and to write into job files: the characters of a repo id, at most 100."""
    import re

    s = re.sub(r"[^A-Za-z0-9._/@+=-]+", "-", str(raw))
    s = "/".join(p for p in s.split("/") if p not in ("", ".", "..")).strip("-/")[:100]  # no path that climbs
    return s or "custom"


def load_config_path(path: str | Path) -> ModelShape:
    """Read ``config.json`` (or a model folder that holds one) into a :class:`ModelShape`: a regular file of at most
    :data:`MAX_CONFIG_BYTES`, JSON with a depth limit and no NaN/Infinity, every number inside its documented range."""
    from trainfit.inputs import loads_json, read_text_file

    p = Path(path)
    try:
        if p.is_dir():
            p = p / "config.json"
    except (OSError, ValueError):
        pass
    fix = _("pass a config.json or a folder that has one")
    try:
        exists = p.exists()
    except (OSError, ValueError):
        exists = False
    if not exists:
        raise ModelConfigError(_("no config file at {path}").format(path=str(path)[:200]), fix=fix)
    text = read_text_file(p, max_bytes=MAX_CONFIG_BYTES, what=_("config file"), error=ModelConfigError, fix=fix)
    cfg = loads_json(text, what=_("config file {path}").format(path=str(p)[:120]), error=ModelConfigError)
    name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    # Multimodal wrappers keep the language model under text_config.
    if isinstance(cfg, dict) and "text_config" in cfg and cfg.get("model_type") not in SUPPORTED_MODEL_TYPES:
        cfg = cfg["text_config"]
    return from_hf_config(cfg, name=_display_name(name), source=str(p))
