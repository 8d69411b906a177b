"""The bundled registry of Qwen3 models (data: ``data/qwen3_configs.json``, copied from the project's
reference folder with each entry's ``_source``).

Names resolve case-insensitively, with or without the ``Qwen/`` organisation prefix; an unknown name
raises :class:`UnknownModelError` with "did you mean" suggestions.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from trainfit.errors import UnknownModelError, did_you_mean
from trainfit.i18n import _
from trainfit.models.hf_config import from_hf_config
from trainfit.models.shapes import ModelShape

#: Short aliases users type (the registry key is the Hugging Face repo name).
_ALIASES = {
    "qwen3-coder-480b-a35b": "Qwen3-Coder-480B-A35B-Instruct",
    "qwen3-30b-a3b-2507": "Qwen3-30B-A3B-Instruct-2507",
    "qwen3-next-80b-a3b-instruct": "Qwen3-Next-80B-A3B",
    "qwen3-next-80b-a3b-thinking": "Qwen3-Next-80B-A3B",
    "qwen3-235b-a22b-2507": "Qwen3-235B-A22B-2507",
    "qwen3-235b-a22b-instruct-2507": "Qwen3-235B-A22B-2507",
    "qwen3-235b-a22b-thinking-2507": "Qwen3-235B-A22B-2507",
    "qwen3-4b-instruct-2507": "Qwen3-4B-2507",
    "qwen3-4b-thinking-2507": "Qwen3-4B-2507",
    "qwen3-30b-a3b-thinking-2507": "Qwen3-30B-A3B-Instruct-2507",
}


@lru_cache(maxsize=1)
def _raw() -> dict[str, dict]:
    text = resources.files("trainfit.models").joinpath("data/qwen3_configs.json").read_text(encoding="utf-8")
    data = json.loads(text)
    # Qwen3-235B-A22B-2507: no verbatim config was found; its architecture is that of Qwen3-235B-A22B and
    # secondary pages give 256K native context. Registered so the name resolves; source says so.
    if "Qwen3-235B-A22B-2507" not in data and "Qwen3-235B-A22B" in data:
        d = dict(data["Qwen3-235B-A22B"])
        d["max_position_embeddings"] = 262144
        d["_source"] = ("architecture of Qwen3-235B-A22B (no verbatim 2507 config found); 262144 context from "
                        "secondary pages, unverified")
        data["Qwen3-235B-A22B-2507"] = d
    return data


def model_names() -> list[str]:
    """Registry names, in file order."""
    return list(_raw())


@lru_cache(maxsize=None)
def _build(key: str) -> ModelShape:
    cfg = _raw()[key]
    return from_hf_config(cfg, name=key, source=str(cfg.get("_source", "")))


def resolve_name(name: str) -> str:
    """Canonical registry key for ``name`` (raises :class:`UnknownModelError`)."""
    raw = name.strip()
    short = raw.split("/", 1)[1] if raw.lower().startswith("qwen/") else raw
    by_lower = {k.lower(): k for k in _raw()}
    key = by_lower.get(short.lower()) or _ALIASES.get(short.lower())
    if key is None:
        sugg = did_you_mean(short, list(_raw()))
        lists = _("`trainfit models` lists the registry; --config PATH reads any config.json")
        raise UnknownModelError(
            _("unknown model '{name}'").format(name=name),
            fix=(_("did you mean {names}? {lists}").format(names=_(" or ").join(sugg), lists=lists) if sugg
                 else lists),
        )
    return key


def get_model(name: str) -> ModelShape:
    """The :class:`ModelShape` of a registry model, by name (``Qwen3-8B``, ``qwen/qwen3-8b``...)."""
    return _build(resolve_name(name))
