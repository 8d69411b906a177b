"""Run corpus cases in a fresh process under a memory cap: ``python corpus_runner.py CASES.json LIMIT_MIB``.

Reads ``[{"argv": [...], "env": {...}}, ...]``, runs each through ``fuzzkit.run_cli`` (time-bounded) with the
address space capped at LIMIT_MIB (``resource.setrlimit``), and prints one JSON object per case: rc, stdout,
stderr, seconds, hang, traceback.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import fuzzkit as fk  # noqa: E402


def main() -> int:
    cases = json.loads(Path(sys.argv[1]).read_text())
    limit = int(sys.argv[2]) * 2**20
    import importlib

    importlib.import_module("trainfit.cli")  # imported before the cap, as in a real run

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for c in cases:
        o = fk.run_cli(c["argv"], seconds=c.get("seconds", 10), env=c.get("env"))
        print(json.dumps({"rc": o.rc, "out": o.out[-2000:], "err": o.err[-2000:], "seconds": round(o.seconds, 3),
                          "hang": o.hang, "traceback": o.traceback[-3000:]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
