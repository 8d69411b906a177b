"""Issue 9's size rule, kept true: no file in src/ over 500 lines and no function over 80 lines (generated data
tables aside)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "trainfit"
#: Generated data, not code (written by benchmarks/speed_loso.py).
DATA_TABLES = {"estimate/engine_fit_data.py"}
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def _sources():
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        if rel not in DATA_TABLES:
            yield rel, p.read_text(encoding="utf-8")


def test_no_file_over_500_lines():
    long = {rel: n for rel, text in _sources() if (n := text.count("\n")) > MAX_FILE_LINES}
    assert not long, long


def test_no_function_over_80_lines():
    long = {}
    for rel, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{rel}:{node.name}"] = n
    assert not long, long
