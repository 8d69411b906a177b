"""docs/architecture.md is drawn from the code: its layer table is what ``tools/layers.py`` computes from the imports
of ``src/trainfit`` now, and its list of parts names every part there is (issue 30)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _layers():
    spec = importlib.util.spec_from_file_location("trainfit_tools_layers", ROOT / "tools" / "layers.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_layer_table_is_the_codes():
    layers = _layers()
    assert layers.main(["--check"]) == 0, "run python tools/layers.py --write"


def test_every_part_has_a_row():
    layers = _layers()
    parts = set(layers.part_graph()[0])
    text = DOC.read_text(encoding="utf-8").split("## Every part", 1)[1].split("\n## ", 1)[0]
    named = {name for row in text.splitlines() if row.startswith("| `")
             for name in re.findall(r"`([\w.]+)`", row.split("|")[1])}
    assert parts - named == set(), f"parts without a row in docs/architecture.md's 'Every part': {parts - named}"
    assert named - parts == set(), f"rows naming no part of src/trainfit: {named - parts}"


def test_the_table_follows_the_imports(tmp_path):
    """The tool sees a new import between parts, and a type-only one apart."""
    layers = _layers()
    src = tmp_path / "trainfit"
    (src / "low").mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "low" / "__init__.py").write_text("")
    (src / "high.py").write_text("from trainfit.low import x\n")
    (src / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from trainfit.high import y\n")
    top, local, typing = layers.part_graph(src)
    assert top["high"] == {"low"} and typing["typed"] == {"high"} and not top["typed"]
    assert "| 1 | `high` | low |" in layers.table(src)
