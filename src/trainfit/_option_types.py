"""The :class:`Option` record of the option table (:mod:`trainfit.options`) and its small parse helpers.

One option is one flag (or positional argument) of the CLI and, for the options the web page shows, one field of
the web API; its help text is a message id (marked with ``N_``) shown in the current language by
:meth:`Option.help_text`. The CLI's argparse parsers are generated from these records
(:mod:`trainfit._cli.arguments`), so every argparse detail a flag needs is a field here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Literal, Union

from trainfit import inputs
from trainfit.i18n import N_, translate

#: A parsed option value.
OptionValue = Union[str, int, float, bool, tuple[str, ...], None]
#: ``parse(field, raw) -> value``: the input gate's check of one raw value (a CLI string or a JSON value).
Parse = Callable[[str, object], OptionValue]
#: How argparse stores the option: its value, True when given, or every occurrence in a list.
Action = Literal["store", "store_true", "append"]


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option of the CLI and (``web``) the web API."""

    name: str
    """Field name and argparse dest (``seq_len``); CLI flag ``--seq-len`` unless ``flag`` says otherwise."""
    parse: Parse | None = None
    """``parse(field, raw) -> value`` through :mod:`trainfit.inputs` (raises InputError); None: the CLI keeps the
    text (or converts it with ``cli_type``) and argparse checks ``choices`` itself."""
    default: OptionValue = None
    help: str = ""
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    """The values it takes, or a function giving them when they come from a registry (``--target``)."""
    flag: str | None = None
    group: str = N_("training request")
    """The help section (a message id); "" = the command's own options (argparse's "options")."""
    metavar: str | None = None
    negatable: bool = False
    """A yes/no option: ``--name`` sets True, ``--no-name`` False (default None = not given)."""
    off_flag: str | None = None
    """A switch that is on by default: this hidden flag (``--no-packing``) turns it off."""
    action: Action = "store"
    positional: bool = False
    nargs: str | None = None
    required: bool = False
    hidden: bool = False
    """Accepted but left out of ``--help``."""
    cli_type: Callable[[str], int] | None = None
    """argparse's own conversion when there is no ``parse`` (``int``: argparse's "invalid int value")."""
    help_fill: Callable[[], dict[str, str]] | None = None
    """Placeholders of ``help`` filled from a registry each time it is shown (``--provider``'s providers)."""
    unset_default: bool = False
    """The CLI leaves it None when not given (``plan`` searches it; the help still states ``default``)."""
    web: bool = True
    """The web page and API take it (False: a CLI-only option, e.g. a path on the user's machine)."""

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
        """``help`` in the current language (an id marked with N_); ``help_fill``, ``{default}`` and ``{choices}``
        filled in."""
        text = self.filled(translate(self.help))
        if "{" in self.help:
            text = text.format(default=self.default, choices=", ".join(self.choice_values or ()))
        return text


class _Keep(dict[str, str]):
    """A ``format_map`` mapping that keeps the placeholders it does not know."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def cli_only(*options: Option) -> tuple[Option, ...]:
    """``options`` marked as the CLI's only (the web page and API do not take them)."""
    return tuple(replace(o, web=False) for o in options)


def unset_defaults(options: tuple[Option, ...]) -> tuple[Option, ...]:
    """``options`` as a command that searches (or fills in) what the user does not give takes them: None when not
    given, the help unchanged."""
    return tuple(replace(o, unset_default=True) for o in options)


def parse_int(lo: int = 1, hi: int | None = None) -> Callable[[str, object], int]:
    """An integer from ``lo`` to ``hi`` (the input gate's :func:`~trainfit.inputs.as_int`)."""
    return lambda f, v: inputs.as_int(f, v, lo=lo, hi=hi)


def parse_float(lo: float | None = None, hi: float | None = None,
                lo_open: bool = False) -> Callable[[str, object], float]:
    """A number in the range (``lo_open``: above ``lo``, not at it)."""
    return lambda f, v: inputs.as_float(f, v, lo=lo, hi=hi, lo_open=lo_open)


def parse_choice(choices: tuple[str, ...] | Callable[[], tuple[str, ...]]) -> Callable[[str, object], str]:
    """One of ``choices`` (a registry's, read at each call, when it is a function)."""
    if callable(choices):
        return lambda f, v: inputs.as_choice(f, v, choices())
    return lambda f, v: inputs.as_choice(f, v, choices)


def parse_ident(kind: str) -> Callable[[str, object], str]:
    """A name of the kind ``kind`` (``gpu``, ``region``...: :func:`~trainfit.inputs.as_ident`)."""
    return lambda f, v: inputs.as_ident(f, v, kind)
