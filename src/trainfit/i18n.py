"""Messages in English and 简体中文: gettext catalogs, one language per call.

Every user-facing string (errors, fixes, reasons, warnings, notes, table headers, page labels) is written in
English in the code as a gettext message id and passed through :func:`_` where it is shown::

    from trainfit.i18n import _
    raise WorkloadError(_("--tp {tp} must divide the {heads} attention heads").format(tp=tp, heads=heads))

Placeholders are named and filled with ``str.format`` *after* translation (never ``_(f"...")``: the id must be a
literal that ``pybabel extract`` can read). :func:`N_` marks a literal for extraction where it is stored and
translated later (tables of labels, rule messages).

The Chinese catalogs live in ``trainfit/locale/zh_CN/parts/<area>.po`` (one per area of the code, so the people
translating them do not meet in one file) and are compiled into ``trainfit/locale/zh_CN/LC_MESSAGES/trainfit.mo``
by ``python tools/i18n.py build``; ``tests/test_i18n.py`` fails when an extracted id has no Chinese entry or the
compiled file is stale. The runtime needs only the standard library's :mod:`gettext`.

The language is ``en`` or ``zh``. It is chosen, first match wins, by :func:`language` / :func:`set_language`
(the CLI's ``--lang``, the web API's ``lang`` field), then ``TRAINFIT_LANG``, then the POSIX variables in gettext's
order (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``); anything not Chinese is English. The choice is a
context variable, so concurrent web requests in different languages do not mix. Caches that keep translated text
must key on :func:`current`.
"""

from __future__ import annotations

import contextvars
import gettext
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Mapping
from trainfit.errors import InputError, did_you_mean

DOMAIN = "trainfit"
LANGUAGES = ("en", "zh")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
_GETTEXT_LOCALE = {"zh": "zh_CN"}
_ENV_ORDER = ("TRAINFIT_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("trainfit_lang", default=None)


def normalize(code: str | None) -> str | None:
    """'zh', 'zh_CN.UTF-8', 'zh-Hans', 'ZH' -> 'zh'; 'en', 'en_US', 'C', 'POSIX' -> 'en'; '' or None -> None.

    Any other language is English (the only other catalog); the CLI's ``--lang`` accepts only ``en`` and ``zh``
    (see :func:`parse_lang`)."""
    if code is None:
        return None
    text = code.strip()
    if not text:
        return None
    head = text.split(":")[0].split(".")[0].split("@")[0].replace("-", "_").lower()
    if head.startswith("zh") or head in ("chinese", "cn", "中文"):
        return "zh"
    return "en"


def parse_lang(text: str) -> str:
    """The value of ``--lang`` / the API's ``lang``: en, zh (also zh-CN, zh_CN, en-US...)."""
    value = (text or "").strip()
    head = value.split(".")[0].replace("-", "_").lower()
    if head in ("en", "zh") or head.startswith(("en_", "zh_")):
        return "zh" if head.startswith("zh") else "en"
    sugg = did_you_mean(value, list(LANGUAGES), n=1)
    raise InputError(_("--lang must be en or zh, got {value!r}").format(value=value),
                     fix=_("did you mean {s}?").format(s=sugg[0]) if sugg else _("use --lang en or --lang zh"))


def from_env(environ: Mapping[str, str] | None = None) -> str:
    """The language the environment asks for: TRAINFIT_LANG, then LANGUAGE, LC_ALL, LC_MESSAGES, LANG."""
    env = os.environ if environ is None else environ
    for name in _ENV_ORDER:
        lang = normalize(env.get(name))
        if lang is not None:
            return lang
    return "en"


def current() -> str:
    """The language of this call: the one set by :func:`language` / :func:`set_language`, else the environment's."""
    lang = _current.get()
    return lang if lang is not None else from_env()


def set_language(lang: str | None) -> contextvars.Token:
    """Set the language for this context (``None``: back to the environment's); returns the token to reset."""
    return _current.set(normalize(lang))


@contextmanager
def language(lang: str | None) -> Iterator[str]:
    """``with language("zh"): ...`` renders every message inside in Chinese."""
    token = set_language(lang)
    try:
        yield current()
    finally:
        _current.reset(token)


@lru_cache(maxsize=None)
def _catalog(lang: str) -> gettext.NullTranslations:
    locale = _GETTEXT_LOCALE.get(lang)
    if locale is None:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[locale], fallback=True)


def reload() -> None:
    """Forget the loaded catalogs (after ``tools/i18n.py build`` in the same process, e.g. in tests)."""
    _catalog.cache_clear()


def _(message: str) -> str:
    """``message`` (an English gettext id) in the current language."""
    if not message:
        return message
    return _catalog(current()).gettext(message)


def translate(message: str) -> str:
    """``message`` held in a variable, in the current language: it must be an id marked with :func:`N_` (or a
    rule's title/why/fix) where it is defined, else it is shown as it is (English)."""
    return _catalog(current()).gettext(message) if message else message


def gettext_in(lang: str, message: str) -> str:
    """``message`` in ``lang`` whatever the current language (the web page's label table)."""
    return _catalog(normalize(lang) or "en").gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form of a message for ``n`` (Chinese has one form)."""
    return _catalog(current()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark ``message`` for extraction without translating it here (it is translated where it is shown)."""
    return message


def is_translated(message: str, lang: str = "zh") -> bool:
    """Whether the catalog of ``lang`` has an entry for ``message`` (tests and the coverage report)."""
    cat = _catalog(lang)
    return getattr(cat, "_catalog", {}).get(message) not in (None, "")
