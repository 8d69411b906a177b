"""The model's own tokenizer and chat template, read from a local model folder (``modelscope download`` /
``huggingface-cli download`` output): ``tokenizer.json`` for the Hugging Face ``tokenizers`` library and the
Jinja chat template from ``chat_template.jinja`` or ``tokenizer_config.json``'s ``chat_template``.

The template is rendered the way transformers' ``apply_chat_template`` does (a sandboxed Jinja environment with
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, ``raise_exception`` and a ``tojson`` that
keeps non-ASCII text), and the rendered text is encoded without adding special tokens, as ``apply_chat_template
(tokenize=True)`` does, so counts equal the tokenizer's own. Needs the ``data`` extra (``tokenizers``, ``jinja2``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trainfit import inputs
from trainfit.errors import DatasetError, MissingExtraError
from trainfit.i18n import N_, _, translate
from trainfit.json_types import JSONLike

_MAX_TOKENIZER_BYTES = 64 * 2**20
_MAX_CONFIG_BYTES = 4 * 2**20
_EXTRA_FIX = N_("pip install 'trainfit[data]' (Hugging Face tokenizers and jinja2)")


def _fix_template(folder: str) -> str:
    return _("put the model's tokenizer_config.json (with chat_template) or chat_template.jinja into {folder}, "
             "pass --chat-template FILE, or --no-template to count the plain text").format(folder=folder)


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of conversations with one tokenizer and, when given, one chat template."""

    encode: Callable[[str], int]
    """Number of tokens of a text (no special tokens added)."""
    render: Callable[[list[dict[str, str]], bool], str] | None
    """The chat template: (messages, add_generation_prompt) -> text; None = plain text."""
    tokenizer_path: str
    template_source: str | None

    def count(self, turns: list[tuple[str, str]]) -> tuple[int, int]:
        """(tokens of the whole sample, tokens the loss is computed on: every assistant turn)."""
        if self.render is None:
            total = loss = 0
            for role, text in turns:
                n = self.encode(text)
                total += n
                loss += n if role == "assistant" else 0
            return total, loss
        msgs = [{"role": r, "content": c} for r, c in turns]
        total = self.encode(self.render(msgs, False))
        loss = 0
        for i, (role, _content) in enumerate(turns):
            if role != "assistant":
                continue
            upto = total if i == len(turns) - 1 else self.encode(self.render(msgs[: i + 1], False))
            loss += max(0, upto - self.encode(self.render(msgs[:i], True)))
        return total, loss


def _tojson(x: JSONLike, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _compile(source: str, folder: str) -> Callable[[list[dict[str, str]], bool], str]:
    try:
        from jinja2 import TemplateError
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise MissingExtraError(_("reading a chat template needs jinja2"), fix=translate(_EXTRA_FIX)) from None

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def strftime_now(fmt: str) -> str:
        import datetime

        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    try:
        tmpl = env.from_string(source)
    except TemplateError as e:
        raise DatasetError(_("the chat template in {folder} does not compile: {error}").format(folder=folder, error=e),
                           fix=_fix_template(folder)) from None

    def render(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        try:
            return tmpl.render(messages=messages, add_generation_prompt=add_generation_prompt, tools=None)
        except TemplateError as e:
            raise ValueError(_("the chat template refused this conversation: {error}").format(error=e)) from None

    return render


def _template_source(folder: Path, explicit: str | None) -> tuple[str, str] | None:
    if explicit:
        return inputs.read_text_file(explicit, max_bytes=_MAX_CONFIG_BYTES, what=_("chat template"),
                                     error=DatasetError), explicit
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return inputs.read_text_file(jinja, max_bytes=_MAX_CONFIG_BYTES, what=_("chat template"),
                                     error=DatasetError), str(jinja)
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        text = inputs.read_text_file(cfg, max_bytes=_MAX_CONFIG_BYTES, what="tokenizer_config.json", error=DatasetError)
        data = inputs.loads_json(text, what="tokenizer_config.json", error=DatasetError)
        tmpl = data.get("chat_template") if isinstance(data, dict) else None
        if isinstance(tmpl, list):  # [{"name": "default", "template": ...}, ...]
            named = {t.get("name"): t.get("template") for t in tmpl if isinstance(t, dict)}
            tmpl = named.get("default")
        if isinstance(tmpl, str) and tmpl:
            return tmpl, f"{cfg} (chat_template)"
    return None


def load_counter(folder: str, *, use_template: bool = True, chat_template: str | None = None) -> TokenCounter:
    """The token counter of a local model folder (``tokenizer.json``, and the chat template unless
    ``use_template`` is False)."""
    path = Path(folder)
    try:
        is_dir = path.is_dir()
    except OSError as e:  # a name over the file system's limit (ENAMETOOLONG), an unreadable parent
        raise DatasetError(_("--tokenizer {folder} cannot be read: {error}").format(
            folder=folder[:80] + ("…" if len(folder) > 80 else ""), error=e.strerror or e),
            fix=_("pass the local model folder that holds tokenizer.json")) from None
    if not is_dir:
        raise DatasetError(_("--tokenizer {folder} is not a folder").format(folder=folder),
                           fix=_("pass the local model folder that holds tokenizer.json (modelscope download "
                                 "--model Qwen/Qwen3-8B --local_dir DIR)"))
    tok_file = path / "tokenizer.json"
    if not tok_file.is_file():
        raise DatasetError(_("{folder} has no tokenizer.json").format(folder=folder),
                           fix=_("download the model's tokenizer files into it (tokenizer.json, "
                                 "tokenizer_config.json)"))
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingExtraError(_("counting tokens needs Hugging Face tokenizers"), fix=translate(_EXTRA_FIX)) from None
    text = inputs.read_text_file(tok_file, max_bytes=_MAX_TOKENIZER_BYTES, what="tokenizer.json", error=DatasetError)
    try:
        tok = Tokenizer.from_str(text)
    except Exception as e:  # the Rust library raises its own Exception subclass
        raise DatasetError(_("{file} is not a tokenizers file: {error}").format(file=tok_file, error=str(e)[:200]),
                           fix=_("pass the model folder whose tokenizer.json the tokenizers library reads")) from None

    def encode(s: str) -> int:
        return len(tok.encode(s, add_special_tokens=False).ids)

    render = None
    source = None
    if use_template:
        found = _template_source(path, chat_template)
        if found is None:
            raise DatasetError(_("no chat template in {folder}").format(folder=folder), fix=_fix_template(folder))
        render = _compile(found[0], folder)
        source = found[1]
    return TokenCounter(encode=encode, render=render, tokenizer_path=str(tok_file), template_source=source)
