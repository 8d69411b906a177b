"""The :class:`Option` record of the option table (:mod:`trainfit.options`) and its small parse helpers.

One option is one flag of the CLI and one field of the web API; its help text is a message id (marked with ``N_``)
shown in the current language by :meth:`Option.help_text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from trainfit import inputs
from trainfit.i18n import N_, translate


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option of the CLI and the web API."""

    name: str
    """Field name (``seq_len``); CLI flag ``--seq-len`` unless ``flag`` says otherwise."""
    parse: Callable[[str, Any], Any]
    """``parse(field, raw) -> value`` through :mod:`trainfit.inputs` (raises InputError)."""
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    """The values it takes, or a function giving them when they come from a registry (``--target``)."""
    flag: str | None = None
    group: str = N_("training request")
    metavar: str | None = None
    negatable: bool = False
    """A yes/no option: ``--name`` sets True, ``--no-name`` False (default None = not given)."""
    help_fill: Callable[[], dict[str, str]] | None = None
    """Placeholders of ``help`` filled from a registry each time it is shown (``--provider``'s providers)."""

    @property
    def choice_values(self) -> tuple[str, ...] | None:
        """The values it takes now (a registry's choices are read at each call)."""
        return self.choices() if callable(self.choices) else self.choices

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def filled(self, text: str) -> str:
        """``text`` (``help``, translated or not) with the :attr:`help_fill` placeholders filled in, the others
        kept."""
        if self.help_fill is None:
            return text
        return text.format_map(_Keep(self.help_fill()))

    def help_text(self) -> str:
        """``help`` in the current language (an id marked with N_); ``{default}`` and ``{choices}`` filled in."""
        text = self.filled(translate(self.help))
        if "{" in self.help:
            text = text.format(default=self.default, choices=", ".join(self.choice_values or ()))
        return text


class _Keep(dict[str, str]):
    """A ``format_map`` mapping that keeps the placeholders it does not know."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _int(lo: int = 1, hi: int | None = None) -> Callable[[str, Any], int]:
    return lambda f, v: inputs.as_int(f, v, lo=lo, hi=hi)


def _float(lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> Callable[[str, Any], float]:
    return lambda f, v: inputs.as_float(f, v, lo=lo, hi=hi, lo_open=lo_open)


def _choice(choices: tuple[str, ...] | Callable[[], tuple[str, ...]]) -> Callable[[str, Any], str]:
    if callable(choices):
        return lambda f, v: inputs.as_choice(f, v, choices())
    return lambda f, v: inputs.as_choice(f, v, choices)
