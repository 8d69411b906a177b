"""Marked sections of docs/accuracy.md that several benchmark scripts write independently.

A section is ``<!-- section: NAME -->`` ... ``<!-- /section: NAME -->``. A script replaces its own section
(or appends it) and leaves the rest of the file alone; ``benchmarks/memory_accuracy.py`` rewrites the file
from scratch but carries every marked section over (``carry_sections``).
"""

from __future__ import annotations

import re
from pathlib import Path

ACCURACY_MD = Path(__file__).resolve().parents[1] / "docs" / "accuracy.md"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- section: {re.escape(name)} -->.*?<!-- /section: {re.escape(name)} -->\n?", re.S)


def replace_section(name: str, body: str, path: Path = ACCURACY_MD) -> None:
    """Write ``body`` as section ``name`` of ``path`` (replacing an older copy, else appending)."""
    block = f"<!-- section: {name} -->\n{body.rstrip()}\n<!-- /section: {name} -->\n"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pat = _pattern(name)
    if pat.search(text):
        text = pat.sub(lambda _m: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


def carry_sections(new_text: str, path: Path = ACCURACY_MD) -> str:
    """``new_text`` followed by every marked section of the current ``path`` that it lacks."""
    if not path.exists():
        return new_text
    old = path.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- section: (.+?) -->.*?<!-- /section: \1 -->\n?", old, re.S)
    out = new_text.rstrip("\n") + "\n"
    for name in blocks:
        if f"<!-- section: {name} -->" in new_text:
            continue
        m = _pattern(name).search(old)
        if m:
            out += "\n" + m.group(0)
    return out
