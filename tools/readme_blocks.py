"""Regenerate the output of README.md's self-contained console examples.

    python tools/readme_blocks.py [README.md README.zh-CN.md ...]

A ``$ trainfit plan ...`` or ``$ trainfit memory ...`` line (no redirection, pipe, ``--plan`` or ``--dataset``,
which need files an earlier line wrote) in a ```console block is run again at 150 columns and the lines up to the
next ``$`` line or the end of the block are replaced by what it prints (a long "rejected" table is cut after its
first rows). Other lines are left as they are.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _runnable(cmd: str) -> bool:
    words = cmd.split()
    if words[1:3] and words[1] == "--lang":  # `trainfit --lang zh plan ...` (README.zh-CN.md)
        words = words[:1] + words[3:]
    return (len(words) > 2 and words[0] == "trainfit" and words[1] in ("plan", "memory")
            and not any(t in cmd for t in (">", "|", "&&", "--plan", "--dataset", "#")))


def _run(cmd: str) -> list[str]:
    env = dict(os.environ, COLUMNS="150", TERM="dumb", NO_COLOR="1")
    args = [sys.executable, "-m", "trainfit.cli", *shlex.split(cmd)[1:]]
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    return [ln.rstrip() for ln in (out.stdout + out.stderr).rstrip("\n").split("\n")]


KEEP_AFTER_REJECTED = 14  # the "rejected" table is long: its head and first rows, then "..."


def _trim(lines: list[str]) -> list[str]:
    for k, ln in enumerate(lines):
        if ln in ("rejected", "已淘汰") and len(lines) > k + KEEP_AFTER_REJECTED:
            return lines[:k + KEEP_AFTER_REJECTED] + ["..."]
    return lines


def regenerate(path: Path) -> int:
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[str] = []
    i, n, in_console = 0, 0, False
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.startswith("```"):
            in_console = line.strip() == "```console" and not in_console
            continue
        if in_console and line.startswith("$ ") and _runnable(line[2:]):
            while i < len(lines) and not lines[i].startswith("$ ") and not lines[i].startswith("```"):
                i += 1
            out.extend(_trim(_run(line[2:])))
            n += 1
    path.write_text("\n".join(out), encoding="utf-8")
    return n


def main(argv: list[str]) -> int:
    for name in argv or ["README.md"]:
        print(f"{name}: {regenerate(ROOT / name)} example(s) regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
