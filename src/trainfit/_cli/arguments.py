"""The one place the CLI's argparse arguments are made: from the option table's :class:`~trainfit.options.Option`
records (:mod:`trainfit.options`, :mod:`trainfit.command_options`), so the CLI and the web API take the same
options (a test forbids ``add_argument`` anywhere else)."""

from __future__ import annotations

import argparse
from typing import Callable, Iterable

from trainfit import inputs
from trainfit.errors import InputError
from trainfit.i18n import _, translate
from trainfit.options import Option, OptionValue

_Container = argparse.ArgumentParser | argparse._ArgumentGroup


def _argparse_type(opt: Option) -> Callable[[str], OptionValue]:
    parse = opt.parse
    assert parse is not None

    def conv(text: str) -> OptionValue:
        try:
            return parse(opt.cli_flag, text)
        except InputError as e:
            raise argparse.ArgumentTypeError(_("{message} ({fix})").format(message=e.message, fix=e.fix) if e.fix
                                             else e.message) from None
    conv.__name__ = opt.name
    return conv


def _default(o: Option) -> OptionValue | list[str]:
    if o.unset_default:
        return None
    if o.action == "append" and isinstance(o.default, tuple):  # a fresh list for argparse to append to
        return list(o.default)
    return o.default


def _help(o: Option) -> str | None:
    if o.hidden:
        return argparse.SUPPRESS
    return o.help_text() if o.help else None


def _add_switch(g: _Container, o: Option) -> None:
    if o.negatable:
        g.add_argument(o.cli_flag, dest=o.name, action=argparse.BooleanOptionalAction, default=_default(o),
                       help=_help(o))
        return
    g.add_argument(o.cli_flag, dest=o.name, action="store_true", default=_default(o), help=_help(o))
    if o.off_flag:
        g.add_argument(o.off_flag, dest=o.name, action="store_false", help=argparse.SUPPRESS)


def _add_value(g: _Container, o: Option) -> None:
    kind: Callable[[str], OptionValue] | None = o.cli_type
    choices = None
    metavar = o.metavar
    if o.parse is not None:
        kind = _argparse_type(o)
        if o.choices and not metavar:
            metavar = "{" + ",".join(o.choice_values or ()) + "}"
    elif o.choices:
        choices = o.choice_values
    if o.positional:
        g.add_argument(o.name, nargs=o.nargs, default=_default(o), type=kind, choices=choices, metavar=metavar,
                       help=_help(o))
        return
    g.add_argument(o.cli_flag, dest=o.name, action=o.action, nargs=o.nargs, default=_default(o), type=kind,
                   choices=choices, required=o.required, metavar=metavar, help=_help(o))


def add_options(p: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    """Add ``options`` to an argparse parser in their order, each in its help section (``group``; "" = the
    command's own options), a section made where its first option comes."""
    groups: dict[str, _Container] = {}
    for o in options:
        g = p if not o.group else groups.get(o.group) or groups.setdefault(o.group,
                                                                           p.add_argument_group(translate(o.group)))
        if o.negatable or o.action == "store_true" or o.parse is inputs.as_bool:
            _add_switch(g, o)
        else:
            _add_value(g, o)
