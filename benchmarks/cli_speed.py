"""Speed of the planner core: cold CLI calls (a fresh process each, median of 7) and the in-process plan
search over the whole bundled catalog (median of 7, warm imports, cold model caches per model).
Writes benchmarks/results/cli_speed.json.

Run: python benchmarks/cli_speed.py
Targets (issues #2 and #4): `trainfit memory Qwen3-8B --json` < 0.5 s; `trainfit plan Qwen3-14B --method full
--tokens 1B --json` < 1 s cold; the full plan search < 100 ms in-process.
"""

from __future__ import annotations

import json
import os
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
    ["plan", "Qwen3-14B", "--method", "full", "--tokens", "1B", "--json"],
    ["plan", "Qwen3-235B-A22B", "--method", "full", "--tokens", "1B", "--json"],
]
PLAN_MODELS = ["Qwen3-0.6B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B", "Qwen3-30B-A3B", "Qwen3-235B-A22B"]


def in_process_plan_ms(name: str) -> float:
    from trainfit.estimate import activation_profile, memory, speed, states
    from trainfit.models import get_model
    from trainfit.plan import PlanRequest, plan
    from trainfit.workload import Workload

    times = []
    for _ in range(7):
        # clear the per-model caches so every run searches from scratch
        for f in (memory._estimate_cached, states.cached_states_t, activation_profile.act_profile_t,
                  memory._cached_counts, speed._flops_cached):
            f.cache_clear()
        m = get_model(name)
        t0 = time.perf_counter()
        plan(PlanRequest(model=m, workload=Workload(method="full"), tokens=1e9))
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    env = dict(os.environ, TRAINFIT_CATALOG_OVERLAY="none")
    out = {"date": date.today().isoformat(), "python": platform.python_version(), "machine": platform.machine(),
           "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0], "cli": [], "plan_in_process_ms": {}}
    for argv in COMMANDS:
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "trainfit.cli", *argv], check=True, capture_output=True, env=env)
            times.append(time.perf_counter() - t0)
        out["cli"].append({"command": "trainfit " + " ".join(argv), "median_s": round(statistics.median(times), 3),
                           "max_s": round(max(times), 3)})
        print(f"{out['cli'][-1]['median_s']:.3f}s  trainfit {' '.join(argv)}")
    os.environ["TRAINFIT_CATALOG_OVERLAY"] = "none"
    in_process_plan_ms("Qwen3-0.6B")  # warm imports and the catalog
    for name in PLAN_MODELS:
        ms = in_process_plan_ms(name)
        out["plan_in_process_ms"][name] = round(ms, 1)
        print(f"{ms:7.1f} ms  plan({name}, full) in-process, whole catalog")
    p = Path(__file__).parent / "results" / "cli_speed.json"
    p.parent.mkdir(exist_ok=True)
    p.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
