"""Command-line entry point: parse, dispatch, render; every TrainfitError is caught here, once.

Each subcommand lives in ``trainfit._cli.<name>`` with ``register(subparsers)``; those modules import
only the light core at import time (no torch, transformers or pandas), so ``trainfit memory`` answers
fast. Heavy parts (``trace``) import their dependencies inside their ``run`` function.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from trainfit import i18n
from trainfit.errors import InputError, TrainfitError
from trainfit.i18n import _

COMMANDS = ("models", "memory", "trace", "plan", "catalog", "render", "check", "submit", "serve", "watch",
            "diagnose", "calibrate", "data")


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's own error shape: one ``error:`` line and a ``fix:`` (no 40-line usage dump), or the
    ``{"error": ...}`` JSON object on stdout when the command line asks for ``--json``."""

    json_errors = False

    def error(self, message: str) -> None:  # type: ignore[override]
        head, _, rest = message.partition(": ")
        if head.startswith("argument ") and rest.startswith(head[len("argument "):].split("/")[0] + ":"):
            message = rest  # "argument --seq-len: --seq-len: must be ..." -> "--seq-len: must be ..."
        import re

        from trainfit.errors import did_you_mean

        bad = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        sugg = did_you_mean(bad.group(1), re.findall(r"'([^']*)'", bad.group(2)), n=1) if bad else []
        if sugg:
            message += f" (did you mean {sugg[0]}?)"
        fix = f"`{self.prog} --help` lists the options and their values"
        if _Parser.json_errors:
            print(json.dumps({"error": {"code": "bad-input", "message": message, "fix": fix}}))
        else:
            print(f"error: {message}\n  fix: {fix}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    p = _Parser(
        prog="trainfit",
        description="Will a Qwen3 training job fit, how fast is it, what does it cost, and how to launch it.",
    )
    p.add_argument("--version", action="store_true", help=_("print the version and exit"))
    p.add_argument("--lang", metavar="LANG", help=_("language of messages and tables: en or zh (default: TRAINFIT_LANG, "
                                                    "LANGUAGE, LC_ALL, LC_MESSAGES, LANG; else en); "
                                                    "taken before or after the command"))
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
        print(json.dumps({"error": {"code": err.code, "message": err.message, "fix": err.fix}}))
        return
    msg = f"error: {err.message}"
    if err.fix:
        msg += f"\n  fix: {err.fix}"
    print(msg, file=sys.stderr)


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
    with i18n.language(lang):
        return _run(raw)


def _run(raw: list[str]) -> int:
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
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
