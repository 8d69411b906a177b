"""Hostile-input fuzz run at a large budget: the generators and oracles of ``tests/fuzz/fuzzkit.py`` at >= 10,000
cases, counts written to ``benchmarks/results/fuzz.json``.

Run: python benchmarks/fuzz.py [--scale 1.0] [--only plan-json,...] [--out benchmarks/results/fuzz.json]
(about 6 minutes on 2 cores, up to 15 when they are shared)

Each case runs ``trainfit.cli.main`` in-process under a wall-clock bound (``fuzzkit.CASE_SECONDS``); the whole run
is capped in memory (``RLIMIT_AS``, 8 GiB) so a blow-up shows as a MemoryError finding instead of swapping. The
generators are derandomized (the same cases every run). A case counts as

* ``traceback``: an exception escaped ``main`` or "Traceback" was printed;
* ``hang``: the case ran past its bound;
* ``other``: a bad exit code, NaN/Infinity in ``--json`` output, a rendered value that does not re-parse to what
  went in, an injected command in a rendered script, or a broken overlay that did not stop the command.

Cases of issue 27's surfaces (``tests/fuzz/surfaces.py``: ``calibrate`` results, ``diagnose`` metrics, ``submit``
folders, ``watch`` options, refresh caches, tampered plan files, render into hostile folders, the web handlers
through fastapi's ``TestClient``) also count

* ``files_outside_out``: render created, changed or removed something outside ``--out``;
* ``user_files_overwritten_without_force``: a hand-edited or foreign file changed without ``--force``;

(a tampered input that must be refused but was not is an ``other`` failure).

Nothing here reaches the network: no command that sends is generated, ``submit`` is a dry run, and every socket
connection that is not to the loopback interface is refused (``loopback_only``).
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
import surfaces as sf  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

#: generator -> cases at scale 1.0 (the total is >= 10,000; issue 27's surfaces add 2,400).
BUDGET = {"cli-memory": 1600, "cli-plan": 1200, "cli-render": 1200, "cli-check": 1200, "job-files": 2800,
          "config-json": 900, "overlays": 350, "plan-json": 500, "render-round-trip": 900,
          # issue 27's surfaces (tests/fuzz/surfaces.py)
          "calibrate-results": 300, "diagnose-metrics": 400, "submit-dir": 250, "watch-options": 150,
          "refresh-caches": 300, "plan-tampered": 300, "render-folders": 300, "web-handlers": 400}


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.exit_codes: collections.Counter = collections.Counter()
        self.tracebacks = 0
        self.hangs = 0
        self.other = 0
        self.outside_out = 0
        self.overwritten = 0
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
        outside = any(p.startswith("outside:") for p in problems)
        overwritten = any(p.startswith("overwritten:") for p in problems)
        self.tracebacks += tb
        self.hangs += hang
        self.outside_out += outside
        self.overwritten += overwritten
        self.other += bool(problems) and not (tb or hang or outside or overwritten)
        if problems and len(self.examples) < 10:
            self.examples.append({"argv": [a[:200] for a in (outs[0].argv if outs else [])],
                                  "problems": [p[:300] for p in problems[:3]]})

    def to_dict(self) -> dict:
        return {"cases": self.cases, "tracebacks": self.tracebacks, "hangs": self.hangs,
                "files_outside_out": self.outside_out, "user_files_overwritten_without_force": self.overwritten,
                "other_failures": self.other,
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
          f"{tally.outside_out} outside --out  {tally.overwritten} overwritten  {tally.other} other  "
          f"({time.monotonic() - t:.0f} s)", flush=True)


def loopback_only() -> None:
    """Refuse every connection that is not to the loopback interface (nothing here may reach a network)."""
    import ipaddress
    import socket

    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def _check(sock: socket.socket, addr) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        host = str(addr[0]).split("%")[0]
        try:
            ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = False
        if not ok:
            raise OSError(f"benchmarks/fuzz.py: connection to {host!r} refused (loopback only)")

    def connect(self, addr):
        _check(self, addr)
        return real_connect(self, addr)

    def connect_ex(self, addr):
        _check(self, addr)
        return real_connect_ex(self, addr)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex


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
    loopback_only()
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
    _run("calibrate-results", sf.calibrate_input(), sf.calibrate_case, n["calibrate-results"], tallies)
    _run("diagnose-metrics", sf.metrics_input(), sf.diagnose_case, n["diagnose-metrics"], tallies)
    _run("submit-dir", sf.submit_input(), sf.submit_case, n["submit-dir"], tallies)
    _run("watch-options", sf.watch_input(), sf.watch_case, n["watch-options"], tallies)
    _run("refresh-caches", sf.cache_input(), sf.cache_case, n["refresh-caches"], tallies)
    _run("plan-tampered", sf.tampered_plan(), sf.plan_tamper_case, n["plan-tampered"], tallies)
    _run("render-folders", sf.folder_input(), sf.render_folder_case, n["render-folders"], tallies)
    if n["web-handlers"]:
        try:
            _run("web-handlers", sf.web_request(), sf.web_case, n["web-handlers"], tallies)
        finally:
            sf.close_web_client()
    keys = (("cases", "cases"), ("tracebacks", "tracebacks"), ("hangs", "hangs"), ("files_outside_out", "outside_out"),
            ("user_files_overwritten_without_force", "overwritten"), ("other_failures", "other"))
    total = {k: sum(getattr(t, a) for t in tallies.values()) for k, a in keys}
    result = {"benchmark": "fuzz", "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
              "python": platform.python_version(), "case_bound_s": fk.CASE_SECONDS, "memory_cap_gib": cap / 2**30,
              "seconds": round(time.monotonic() - t0, 1), "total": total,
              "generators": {k: t.to_dict() for k, t in tallies.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(total), f"-> {args.out}")
    return 0 if not any(v for k, v in total.items() if k != "cases") else 1


if __name__ == "__main__":
    sys.exit(main())
