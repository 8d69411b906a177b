"""Wall time of cold CLI calls (a fresh process each), written to benchmarks/results/cli_speed.json.

Run: python benchmarks/cli_speed.py
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

COMMANDS = [
    ["memory", "Qwen3-8B", "--json"],
    ["memory", "Qwen3-8B", "--gpu", "A100-80GB", "--json"],
    ["memory", "Qwen3-235B-A22B", "--gpus", "64", "--strategy", "zero3", "--json"],
]


def main() -> None:
    out = {"date": date.today().isoformat(), "python": platform.python_version(), "machine": platform.machine(),
           "cpus": __import__("os").cpu_count(), "results": []}
    for argv in COMMANDS:
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "trainfit.cli", *argv], check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        out["results"].append({"command": "trainfit " + " ".join(argv), "median_s": round(statistics.median(times), 3),
                               "max_s": round(max(times), 3)})
        print(f"{out['results'][-1]['median_s']:.3f}s  trainfit {' '.join(argv)}")
    p = Path(__file__).parent / "results" / "cli_speed.json"
    p.parent.mkdir(exist_ok=True)
    p.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
