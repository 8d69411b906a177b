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
            "diagnose", "calibrate")


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    p = argparse.ArgumentParser(
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
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse printed its one-line error (or --help); keep its exit code (2 = usage)
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
