"""What ``memory``, ``trace``, ``plan`` and ``render`` share: reading the model and the training request back from
the parsed command line, and the JSON output.

The options themselves are defined once in the option table (:mod:`trainfit.options`, which the web API validates
with too, and :mod:`trainfit.command_options`); :mod:`trainfit._cli.arguments` makes the argparse arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

from trainfit.models import ModelShape
from trainfit.json_types import JSONLike
from trainfit.service import resolve_model


def model_from_args(args: argparse.Namespace) -> ModelShape:
    return resolve_model(getattr(args, "model", None), config=getattr(args, "config", None))


def _finite(obj: JSONLike) -> JSONLike:
    """JSON output never carries NaN or infinity: they become null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(obj: JSONLike, *, indent: int | None = None, allow_nan: bool = True) -> str:
    """``obj`` as JSON text with non-ASCII characters as they are (``ensure_ascii=False``), except lone surrogates:
    a command-line argument that is not valid UTF-8 reaches Python as ``\\udcXX`` (surrogateescape) and can be echoed
    back in a message, and such a character cannot be written to a UTF-8 stdout. They can only sit inside JSON
    strings, where the ``\\uXXXX`` escape says the same thing (``json.loads`` gives the character back)."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=allow_nan)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def print_json(obj: JSONLike) -> None:
    sys.stdout.write(json_text(_finite(obj), indent=2, allow_nan=False) + "\n")
