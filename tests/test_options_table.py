"""Every CLI option is in the option table (issue 30: "so CLI and web cannot drift"): the argparse arguments of
every command are made by ``trainfit._cli.arguments`` from :data:`trainfit.command_options.COMMAND_OPTIONS`, and
no ``add_argument`` call is written anywhere else."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from trainfit.cli import build_parser
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.options import PLAN_OPTIONS, RL_OPTIONS, WORKLOAD_OPTIONS

SRC = Path(__file__).resolve().parents[1] / "src" / "trainfit"
GENERATOR = SRC / "_cli" / "arguments.py"


def _add_argument_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add_argument"]


def test_no_add_argument_outside_the_generator():
    found = {str(p.relative_to(SRC)): lines for p in sorted(SRC.rglob("*.py")) if p != GENERATOR
             for lines in [_add_argument_calls(p)] if lines}
    assert not found, f"argparse arguments written by hand (declare them in the option table): {found}"
    assert _add_argument_calls(GENERATOR), "the generator makes the arguments"


def test_the_check_sees_an_add_argument(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(p):\n    p.add_argument('--x')\n    g = p.add_argument_group('y')\n")
    assert _add_argument_calls(f) == [2]


def _parsers(p: argparse.ArgumentParser, path: str = ""):
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _parsers(sub, f"{path} {name}".strip())


def test_every_parser_argument_is_an_option_of_its_command():
    seen = set()
    for path, p in _parsers(build_parser()):
        seen.add(path)
        table = {o.name for o in COMMAND_OPTIONS[path]}
        dests = {a.dest for a in p._actions
                 if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))}
        assert dests == table, path
    assert seen == set(COMMAND_OPTIONS)


def test_the_web_options_are_the_cli_options_of_the_same_name():
    """The options the web API takes are, by object, the ones the CLI's memory/plan/render take (one record)."""
    cli = {id(o) for cmd in ("plan",) for o in COMMAND_OPTIONS[cmd]}
    for o in RL_OPTIONS + tuple(x for x in PLAN_OPTIONS if x.name != "ignore_rule"):
        assert o.web and id(o) in cli, o.name
    assert all(o.web for o in WORKLOAD_OPTIONS)
    assert not any(o.web for cmd in ("check", "data", "watch", "serve", "submit", "diagnose", "calibrate")
                   for o in COMMAND_OPTIONS[cmd])
