"""Trace every configuration of benchmarks/grid.py (``trainfit.trace.trace_memory``), one fresh
subprocess per configuration, and cache the results in benchmarks/results/trace_grid.json.

    python benchmarks/trace_grid.py              # trace what is not cached yet
    python benchmarks/trace_grid.py --force      # re-trace everything
    python benchmarks/trace_grid.py --only 8B    # configurations whose id contains "8B"
    python benchmarks/trace_grid.py --list       # print ids and cache status

Each entry records: status (ok | not-traceable | error | timeout), the trace result (``to_dict()``),
process_seconds (wall time of the subprocess, imports included), versions and the date.

    python benchmarks/trace_grid.py --timings    # dedicated timing runs, written to "timings"

``timings`` holds dedicated runs (nothing else on the machine) of a Qwen3-8B and a Qwen3-30B-A3B full
fine-tuning step against the targets (8B < 60 s, 30B-A3B < 5 min per step on 2 CPU cores);
``grid_step_timings`` the slowest step seen in the grid for those models.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from grid import GRID, config_id  # noqa: E402

RESULTS = HERE / "results" / "trace_grid.json"
TARGETS = {"Qwen3-8B": 60.0, "Qwen3-30B-A3B": 300.0}


def _worker(entry_json: str) -> int:
    """Run one trace and print one JSON line (in the subprocess)."""
    entry = json.loads(entry_json)
    t0 = time.perf_counter()
    from trainfit.errors import TrainfitError
    from trainfit.models import get_model
    from trainfit.workload import Workload

    kw = {k: v for k, v in entry.items() if k != "model"}
    out: dict = {}
    try:
        shape = get_model(entry["model"])
        w = Workload(**kw)
        from trainfit.trace import trace_memory

        r = trace_memory(shape, w)
        out = {"status": "ok", "result": r.to_dict()}
    except TrainfitError as e:
        out = {"status": e.code if e.code == "not-traceable" else "error", "error": e.message, "fix": e.fix}
    except Exception as e:  # noqa: BLE001 - record any failure
        import traceback

        out = {"status": "error", "error": f"{type(e).__name__}: {e}",
               "traceback": traceback.format_exc()[-3000:]}
    out["import_and_trace_seconds"] = round(time.perf_counter() - t0, 2)
    print("@@RESULT@@" + json.dumps(out))
    return 0


def load() -> dict:
    if RESULTS.is_file():
        return json.loads(RESULTS.read_text(encoding="utf-8"))
    return {"configs": {}}


def save(data: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, RESULTS)


def run_one(entry: dict, timeout: float) -> dict:
    t0 = time.perf_counter()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(entry)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"no result within {timeout:.0f} s",
                "process_seconds": round(time.perf_counter() - t0, 1)}
    wall = round(time.perf_counter() - t0, 1)
    line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("@@RESULT@@")), None)
    if line is None:
        return {"status": "error", "error": f"worker exited {p.returncode} without a result",
                "stderr": p.stderr[-3000:], "process_seconds": wall}
    out = json.loads(line[len("@@RESULT@@"):])
    out["process_seconds"] = wall
    return out


#: Dedicated timing runs (``--timings``): one fresh process each, nothing else running.
TIMING_RUNS = {
    "Qwen3-8B full step": {"model": "Qwen3-8B", "method": "full", "seq_len": 4096, "grad_ckpt": False},
    "Qwen3-30B-A3B step": {"model": "Qwen3-30B-A3B", "method": "full", "seq_len": 4096, "grad_ckpt": False},
}


def timing_runs(timeout: float) -> dict:
    out = {}
    for label, entry in TIMING_RUNS.items():
        print(f"timing {label} ...", end=" ", flush=True)
        rec = run_one(entry, timeout)
        res = rec.get("result") or {}
        target = TARGETS[entry["model"]]
        steps = res.get("step_seconds") or []
        out[label] = {
            "entry": entry, "status": rec.get("status"), "step_seconds": steps,
            "max_step_seconds": max(steps) if steps else None,
            "trace_seconds": res.get("trace_seconds"), "process_seconds": rec.get("process_seconds"),
            "target_step_seconds": target, "meets_target": bool(steps) and max(steps) < target,
            "tensor_peak_gib": res.get("tensor_peak_gib"),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        print(f"steps {steps} s, process {rec.get('process_seconds')} s", flush=True)
    return out


def timings(configs: dict) -> dict:
    """Slowest traced step per model of interest over the grid (runs may have shared the CPUs)."""
    out = {}
    for model, target in TARGETS.items():
        best = None
        for cid, rec in configs.items():
            res = rec.get("result") or {}
            if rec.get("status") != "ok" or res.get("model") != model:
                continue
            if res["workload"].get("method") != "full":
                continue
            step = max(res.get("step_seconds") or [0.0])
            if best is None or step > best["max_step_seconds"]:
                best = {"config": cid, "max_step_seconds": step, "trace_seconds": res.get("trace_seconds"),
                        "process_seconds": rec.get("process_seconds")}
        if best is not None:
            best["target_step_seconds"] = target
            best["meets_target"] = best["max_step_seconds"] < target
            out[model] = best
    return out


def summarize(data: dict) -> dict:
    configs = data["configs"]
    status: dict[str, int] = {}
    for rec in configs.values():
        status[rec.get("status", "?")] = status.get(rec.get("status", "?"), 0) + 1
    proc = [rec.get("process_seconds", 0) for rec in configs.values() if rec.get("status") == "ok"]
    return {"configs": len(configs), "grid_size": len(GRID), "status": status,
            "process_seconds_total": round(sum(proc), 1),
            "process_seconds_max": max(proc) if proc else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="re-trace cached configurations")
    ap.add_argument("--only", default=None, help="only configuration ids containing this text")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per configuration (default 1200)")
    ap.add_argument("--list", action="store_true", help="list configuration ids and cache status")
    ap.add_argument("--timings", action="store_true",
                    help="only run the dedicated timing runs (Qwen3-8B, Qwen3-30B-A3B) and record them")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args.worker)

    data = load()
    if args.timings:
        data["timings"] = timing_runs(args.timeout)
        save(data)
        print(json.dumps(data["timings"], indent=1))
        return 0
    configs = data.setdefault("configs", {})
    entries = [e for e in GRID if args.only is None or args.only in config_id(e)]
    if args.list:
        for e in entries:
            cid = config_id(e)
            print(f"{configs.get(cid, {}).get('status', '-'):14s} {cid}")
        return 0
    for i, e in enumerate(entries, 1):
        cid = config_id(e)
        if cid in configs and not args.force and configs[cid].get("status") != "timeout":
            continue
        print(f"[{i}/{len(entries)}] {cid} ...", end=" ", flush=True)
        rec = run_one(e, args.timeout)
        rec["entry"] = e
        rec["date"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        configs[cid] = rec
        res = rec.get("result") or {}
        if rec["status"] == "ok":
            print(f"{res['tensor_peak_gib']:.2f} GiB ({res['peak_phase']}), {rec['process_seconds']} s", flush=True)
        else:
            print(f"{rec['status']}: {rec.get('error', '')[:200]}", flush=True)
        data["grid_step_timings"] = timings(configs)
        data["summary"] = summarize(data)
        data["machine"] = {"platform": platform.platform(), "python": platform.python_version(),
                           "cpus": os.cpu_count()}
        save(data)
    data["grid_step_timings"] = timings(configs)
    data["summary"] = summarize(data)
    save(data)
    print(json.dumps({"summary": data["summary"], "grid_step_timings": data["grid_step_timings"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
