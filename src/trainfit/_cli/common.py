"""Options shared by ``memory``, ``trace``, ``plan`` and ``render``: the model and the training request.

The options themselves are defined once in :mod:`trainfit.options` (the web API validates with the same table);
this module only attaches them to argparse and reads them back.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any

from trainfit import inputs
from trainfit.models import ModelShape
from trainfit.options import WORKLOAD_OPTION_NAMES, WORKLOAD_OPTIONS, add_options, workload_from_values
from trainfit.workload import Workload
from trainfit.i18n import _
from trainfit.service import resolve_model


def _arg(parse):
    def conv(text: str):
        try:
            return parse(text)
        except inputs.InputError as e:
            raise argparse.ArgumentTypeError(_("{message} ({fix})").format(message=e.message, fix=e.fix) if e.fix
                                             else e.message) from None
    return conv


def count_arg(name: str, lo: float = 1, hi: float = 1e15):
    """argparse type for counts such as 2B, 500M, 8k (the input gate's rules)."""
    return _arg(lambda t: inputs.as_count(name, t, lo=lo, hi=hi))


def float_arg(name: str, lo: float | None = None, hi: float | None = None, lo_open: bool = False):
    return _arg(lambda t: inputs.as_float(name, t, lo=lo, hi=hi, lo_open=lo_open))


def int_arg(name: str, lo: int = 1, hi: int | None = None):
    return _arg(lambda t: inputs.as_int(name, t, lo=lo, hi=hi))


def ident_arg(name: str, kind: str):
    return _arg(lambda t: inputs.as_ident(name, t, kind))


def parse_count(text: str) -> int:
    """'2B' -> 2_000_000_000, '500M', '8k', '1e9', '4096' (decimal SI suffixes)."""
    return count_arg("count")(text)


def add_model_argument(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("model", nargs="?", metavar="MODEL",
                   help=_("registry name (Qwen3-8B, qwen/qwen3-30b-a3b...); see `trainfit models`"))
    p.add_argument("--config", metavar="PATH", help=_("a config.json or model folder instead of a registry name"))


def add_workload_options(p: argparse.ArgumentParser, *, unset_defaults: bool = False) -> None:
    add_options(p, WORKLOAD_OPTIONS, unset_defaults=unset_defaults)


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help=_("print JSON instead of tables"))


def model_from_args(args: argparse.Namespace) -> ModelShape:
    return resolve_model(getattr(args, "model", None), config=getattr(args, "config", None))


def workload_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The Workload fields the user gave (``None`` where an option has no value, e.g. plan's unpinned ones)."""
    return {k: getattr(args, k) for k in WORKLOAD_OPTION_NAMES}


def workload_from_args(args: argparse.Namespace, **overrides: Any) -> Workload:
    kw = workload_kwargs(args)
    kw.update(overrides)
    return workload_from_values(kw)


def _finite(obj: Any) -> Any:
    """JSON output never carries NaN or infinity: they become null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(obj: Any, **kw: Any) -> str:
    """``obj`` as JSON text with non-ASCII characters as they are (``ensure_ascii=False``), except lone surrogates:
    a command-line argument that is not valid UTF-8 reaches Python as ``\\udcXX`` (surrogateescape) and can be echoed
    back in a message, and such a character cannot be written to a UTF-8 stdout. They can only sit inside JSON
    strings, where the ``\\uXXXX`` escape says the same thing (``json.loads`` gives the character back)."""
    text = json.dumps(obj, ensure_ascii=False, **kw)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def print_json(obj: Any) -> None:
    sys.stdout.write(json_text(_finite(obj), indent=2, allow_nan=False) + "\n")
