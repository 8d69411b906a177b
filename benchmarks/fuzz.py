"""Hostile-input fuzz run at a large budget: the generators and oracles of ``tests/fuzz/fuzzkit.py`` at >= 10,000
cases, counts written to ``benchmarks/results/fuzz.json``.

Run: python benchmarks/fuzz.py [--scale 1.0] [--only plan-json,...] [--out benchmarks/results/fuzz.json]

Each case runs ``trainfit.cli.main`` in-process under a wall-clock bound (``fuzzkit.CASE_SECONDS``); the whole run
is capped in memory (``RLIMIT_AS``, 8 GiB) so a blow-up shows as a MemoryError finding instead of swapping. The
generators are derandomized (the same cases every run). A case counts as

* ``traceback``: an exception escaped ``main`` or "Traceback" was printed;
* ``hang``: the case ran past its bound;
* ``other``: a bad exit code, NaN/Infinity in ``--json`` output, a rendered value that does not re-parse to what
  went in, an injected command in a rendered script, or a broken overlay that did not stop the command.

Nothing here reaches the network (no command that sends is generated).
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
sys.path.insert(0, str(ROOT / "src"))

import fuzzkit as fk  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

#: generator -> cases at scale 1.0 (the total is >= 10,000).
BUDGET = {"cli-memory": 1600, "cli-plan": 1200, "cli-render": 1200, "cli-check": 1200, "job-files": 2800,
          "config-json": 900, "overlays": 350, "plan-json": 500, "render-round-trip": 900}


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.exit_codes: collections.Counter = collections.Counter()
        self.tracebacks = 0
        self.hangs = 0
        self.other = 0
        self.slowest_s = 0.0
        self.examples: list[dict] = []

    def add(self, outcomes, problems: list[str]) -> None:
        outs = outcomes if isinstance(outcomes, list) else [outcomes]
        self.cases += 1
        for o in outs:
            self.exit_codes[str(o.rc)] += 1
            self.slowest_s = max(self.slowest_s, o.seconds)
        tb = any("traceback" in p for p in problems)
        hang = any(p.startswith("hang") for p in problems)
        self.tracebacks += tb
        self.hangs += hang
        self.other += bool(problems) and not tb and not hang
        if problems and len(self.examples) < 10:
            self.examples.append({"argv": [a[:200] for a in (outs[0].argv if outs else [])],
                                  "problems": [p[:300] for p in problems[:3]]})

    def to_dict(self) -> dict:
        return {"cases": self.cases, "tracebacks": self.tracebacks, "hangs": self.hangs, "other_failures": self.other,
                "exit_codes": dict(sorted(self.exit_codes.items())), "slowest_case_s": round(self.slowest_s, 3),
                "failing_examples": self.examples}


def _run(name: str, strategy, body, n: int, tallies: dict[str, Tally]) -> None:
    if n <= 0:
        return
    tally = tallies.setdefault(name, Tally())
    cfg = settings(max_examples=n, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))

    @cfg
    @given(x=strategy)
    def case(x):
        with fk.workdir() as d:
            outcomes, problems = body(x, d)
        tally.add(outcomes, problems)

    t = time.monotonic()
    case()
    print(f"{name:<18} {tally.cases:>6} cases  {tally.tracebacks} tracebacks  {tally.hangs} hangs  "
          f"{tally.other} other  ({time.monotonic() - t:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every budget (default 1.0: >= 10,000 cases)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fuzz.json"))
    ap.add_argument("--only", help=f"comma-separated generators ({', '.join(BUDGET)})")
    args = ap.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = 8 * 2**30
    if hard == resource.RLIM_INFINITY or hard > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    only = set(args.only.split(",")) if args.only else set(BUDGET)
    n = {k: (max(1, int(v * args.scale)) if k in only else 0) for k, v in BUDGET.items()}
    tallies: dict[str, Tally] = {}
    t0 = time.monotonic()
    for cmd in ("memory", "plan", "render", "check"):
        _run(f"cli-{cmd}", fk.cli_argv(cmd), lambda a, d: fk.run_argv(a, d), n[f"cli-{cmd}"], tallies)
    _run("job-files", fk.job_file(), lambda j, d: fk.check_job_case(*j, d), n["job-files"], tallies)
    _run("config-json", fk.config_file(), fk.config_case, n["config-json"], tallies)
    _run("overlays", fk.overlay_text(), fk.overlay_case, n["overlays"], tallies)
    _run("plan-json", fk.plan_document(), fk.plan_case, n["plan-json"], tallies)
    _run("render-round-trip", fk.render_values(), fk.render_case, n["render-round-trip"], tallies)
    total = {"cases": sum(t.cases for t in tallies.values()),
             "tracebacks": sum(t.tracebacks for t in tallies.values()),
             "hangs": sum(t.hangs for t in tallies.values()),
             "other_failures": sum(t.other for t in tallies.values())}
    result = {"benchmark": "fuzz", "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
              "python": platform.python_version(), "case_bound_s": fk.CASE_SECONDS, "memory_cap_gib": cap / 2**30,
              "seconds": round(time.monotonic() - t0, 1), "total": total,
              "generators": {k: t.to_dict() for k, t in tallies.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(total), f"-> {args.out}")
    return 0 if not (total["tracebacks"] or total["hangs"] or total["other_failures"]) else 1


if __name__ == "__main__":
    sys.exit(main())
