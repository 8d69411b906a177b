"""Command-line entry point: parse, dispatch, render; every TrainfitError is caught here, once.

Each subcommand lives in ``trainfit._cli.<name>`` with ``register(subparsers)``; those modules import
only the light core at import time (no torch, transformers or pandas), so ``trainfit memory`` answers
fast. Heavy parts (``trace``) import their dependencies inside their ``run`` function.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from typing import Iterator, Sequence

from trainfit import i18n
from trainfit._cli.arguments import add_options
from trainfit._cli.common import json_text
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.errors import InputError, TrainfitError
from trainfit.i18n import _

COMMANDS = ("models", "memory", "trace", "plan", "catalog", "render", "check", "submit", "serve", "watch",
            "diagnose", "calibrate", "data")


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's own error shape: one ``error:`` line and a ``fix:`` (no 40-line usage dump), or the
    ``{"error": ...}`` JSON object on stdout when the command line asks for ``--json``."""

    json_errors = False

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """argparse's "invalid choice" (in the current language) plus the closest choice, whatever the language."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as e:
            from trainfit.errors import did_you_mean

            sugg = did_you_mean(str(value), [str(c) for c in action.choices or ()], n=1)
            if not sugg:
                raise
            raise argparse.ArgumentError(action, e.message + _(" (did you mean {s}?)").format(s=sugg[0])) from None

    def error(self, message: str) -> None:  # type: ignore[override]
        message = _drop_repeated_flag(message)
        fix = _("`{prog} --help` lists the options and their values").format(prog=self.prog)
        if _Parser.json_errors:
            print(json_text({"error": {"code": "bad-input", "message": message, "fix": fix}}))
        else:
            print(_error_text(message, fix), file=sys.stderr)
        raise SystemExit(2)


def _drop_repeated_flag(message: str) -> str:
    """"argument --seq-len: --seq-len: must be ..." -> "--seq-len: must be ..." (the input gate names the flag
    itself), in English and in the current language's form of argparse's "argument %(argument_name)s: ..."; the
    English form (Python 3.10 does not translate it) is put in the current language."""
    english = "argument %(argument_name)s: %(message)s"
    local = i18n.translate(english)
    for fmt in dict.fromkeys((local, english)):
        head, sep, tail = fmt.partition("%(argument_name)s")
        mid = tail.partition("%(message)s")[0]
        if not sep or not message.startswith(head) or mid not in message[len(head):]:
            continue
        name, _sep, rest = message[len(head):].partition(mid)
        flag = name.split("/")[0]
        if rest.startswith(flag) and rest[len(flag):len(flag) + 1] in (":", "："):  # the input gate's "--x: ..."
            return rest
        return local % {"argument_name": name, "message": rest}
    return message


def _error_text(message: str, fix: str | None) -> str:
    """The CLI's error shape: ``error: ...`` and, indented below, ``fix: ...`` (both in the current language)."""
    text = _("error: {message}").format(message=message)
    if fix:
        text += "\n  " + _("fix: {fix}").format(fix=fix)
    return text


@contextmanager
def _argparse_language() -> Iterator[None]:
    """argparse's own words ("usage:", "options", "the following arguments are required: %s", ...) in the current
    language while the CLI builds and parses: argparse looks them up through the ``_``/``ngettext`` bound in its
    module, pointed here at trainfit's catalog (ids listed in :mod:`trainfit._cli.argparse_ids`) and restored
    afterwards."""
    saved = argparse._, argparse.ngettext  # type: ignore[attr-defined]
    argparse._, argparse.ngettext = i18n._, i18n.ngettext  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved  # type: ignore[attr-defined]


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    p = _Parser(
        prog="trainfit",
        description=_("Will a Qwen3 training job fit, how fast is it, what does it cost, and how to launch it."),
    )
    add_options(p, COMMAND_OPTIONS[""])
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            mod = import_module(f"trainfit._cli.{name}")
        except ModuleNotFoundError as e:  # a command whose module is not built yet
            if e.name == f"trainfit._cli.{name}":
                continue
            raise
        mod.register(sub)
    return p


def _print_error(err: TrainfitError, as_json: bool) -> None:
    if as_json:
        print(json_text({"error": {"code": err.code, "message": err.message, "fix": err.fix}}))
        return
    print(_error_text(err.message, err.fix), file=sys.stderr)


def _quiet_sdk_loggers() -> None:
    """The Alibaba credential chain logs every provider it tries (with tracebacks) on the 'credentials'
    logger; the CLI reports the outcome itself as one clear error, so keep those records off stderr
    (``TRAINFIT_DEBUG=1`` shows them)."""
    import logging
    import os

    if not os.environ.get("TRAINFIT_DEBUG"):
        # the SDK sets the level and attaches its own StreamHandlers when it is imported, so drop the
        # records with a filter on the logger (filters survive that)
        logging.getLogger("credentials").addFilter(lambda record: False)


def _take_lang(argv: list[str]) -> tuple[list[str], str | None]:
    """``--lang zh`` / ``--lang=zh`` anywhere on the command line (before or after the command): removed from the
    arguments and returned, so every command takes it without declaring it."""
    out: list[str] = []
    lang = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
        if a == "--lang":
            if i + 1 >= len(argv):
                raise InputError(_("--lang needs a value: en or zh"), fix=_("e.g. trainfit --lang zh plan Qwen3-8B"))
            lang = argv[i + 1]
            i += 2
            continue
        if a.startswith("--lang="):
            lang = a.split("=", 1)[1]
            i += 1
            continue
        out.append(a)
        i += 1
    return out, lang


def main(argv: Sequence[str] | None = None) -> int:
    _quiet_sdk_loggers()
    raw = list(sys.argv[1:] if argv is None else argv)
    _Parser.json_errors = "--json" in raw
    try:
        raw, lang = _take_lang(raw)
        if lang is not None:
            lang = i18n.parse_lang(lang)
    except TrainfitError as err:
        _print_error(err, _Parser.json_errors)
        return 2
    # resolved once here: every message and language-keyed cache of the run reads the context variable instead of
    # parsing the environment again (tens of thousands of times in one plan)
    with i18n.language(lang if lang is not None else i18n.from_env()):
        return _run(raw)


def _run(raw: list[str]) -> int:
    with _argparse_language():  # the whole command: `catalog` without an action prints its help from its run
        return _run_parsed(raw)


def _run_parsed(raw: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(raw)
    except SystemExit as e:  # _Parser printed its one error (or --help ran); keep its exit code (2 = usage)
        return e.code if isinstance(e.code, int) else 2
    if args.version:
        from trainfit import __version__

        print(__version__)
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
    except TrainfitError as err:
        _print_error(err, bool(getattr(args, "json", False)))
        return 2
    except KeyboardInterrupt:
        print(_("interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
