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

from trainfit.errors import TrainfitError

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
    p.add_argument("--version", action="store_true", help="print the version and exit")
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


def main(argv: Sequence[str] | None = None) -> int:
    _quiet_sdk_loggers()
    parser = build_parser()
    _Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else list(argv))
    try:
        args = parser.parse_args(argv)
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
