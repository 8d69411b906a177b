"""Load benchmark of the web API: N concurrent clients for S seconds against `trainfit serve` on 127.0.0.1.

Starts the real command (``python -m trainfit.cli serve``) on a free local port, runs a bounded request loop
(stops at the deadline or after --max-requests, whichever comes first; 30 s timeout per request), samples the
server's resident memory, stops the server and writes benchmarks/results/web_load.json:
requests, errors (unexpected status or failed request; a 422 for a deliberately bad request is expected), p50/p95/
p99 latency overall and per endpoint, requests/s, RSS at start/peak/end.

    python benchmarks/web_load.py                       # 50 clients x 30 s (the README's numbers)
    python benchmarks/web_load.py --clients 3 --seconds 2 --out /tmp/x.json   # smoke run

Local addresses only (127.0.0.1): nothing leaves the machine. Needs the ``web`` extra and httpx, psutil.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (name, method, path, JSON body, expected status), weighted by repetition: mostly memory (the page's main
#: call), some plans (the heaviest), the page and its script, catalogs, and refused requests.
MIX = (
    [("memory", "POST", "/api/memory", {"model": "Qwen3-8B", "method": "lora", "gpu": "A10"}, 200)] * 4
    + [("memory", "POST", "/api/memory", {"model": "Qwen3-32B", "method": "qlora", "gpu": "L20", "seq_len": "4k"}, 200)] * 2
    + [("memory", "POST", "/api/memory", {"model": "Qwen3-30B-A3B", "method": "full", "gpus": 8,
                                          "strategy": "zero3", "gpu": "H800"}, 200)] * 2
    + [("plan", "POST", "/api/plan", {"model": "Qwen3-8B", "method": "lora", "tokens": "2B"}, 200)]
    + [("plan", "POST", "/api/plan", {"model": "Qwen3-4B", "method": "full", "tokens": "500M",
                                      "provider": "alibaba"}, 200)]
    + [("models", "GET", "/api/models", None, 200), ("catalog", "GET", "/api/catalog", None, 200)]
    + [("page", "GET", "/", None, 200), ("page", "GET", "/static/app.js", None, 200)]
    + [("bad", "POST", "/api/memory", {"model": "Qwen3-8B", "seq_len": "abc"}, 422),
       ("bad", "POST", "/api/plan", {"model": "Qwen3-8B"}, 422)]
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RssSampler(threading.Thread):
    """Resident memory of the server process (and its children) every 0.2 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.proc = psutil.Process(pid)
        self.samples: list[int] = []
        self.stop = threading.Event()

    def rss(self) -> int:
        total = self.proc.memory_info().rss
        for c in self.proc.children(recursive=True):
            try:
                total += c.memory_info().rss
            except Exception:  # noqa: BLE001 - a child that just ended
                pass
        return total

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append(self.rss())
            except Exception:  # noqa: BLE001 - the process ended
                return
            self.stop.wait(0.2)


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 1)


async def load(base: str, clients: int, seconds: float, max_requests: int) -> dict:
    import httpx

    lat: dict[str, list[float]] = {}
    errors: list[str] = []
    count = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=30.0, limits=limits) as client:
        async def worker(k: int) -> None:
            nonlocal count
            i = k * 7
            while time.monotonic() < deadline and count < max_requests:
                name, method, path, body, want = MIX[i % len(MIX)]
                i += 1
                count += 1
                t0 = time.perf_counter()
                try:
                    r = await client.request(method, path, json=body)
                    ok = r.status_code == want
                    if ok and want == 200 and path.startswith("/api/"):
                        r.json()
                except Exception as e:  # noqa: BLE001 - every failure is counted as an error
                    ok, r = False, None
                    errors.append(f"{name}: {type(e).__name__}: {e}"[:200])
                dt = time.perf_counter() - t0
                lat.setdefault(name, []).append(dt)
                if not ok and r is not None:
                    errors.append(f"{name}: HTTP {r.status_code} (expected {want}): {r.text[:120]}")

        t_start = time.monotonic()
        await asyncio.gather(*(worker(k) for k in range(clients)))
        elapsed = time.monotonic() - t_start
    allv = [x for v in lat.values() for x in v]
    return {
        "requests": len(allv), "errors": len(errors), "error_examples": errors[:5], "elapsed_s": round(elapsed, 2),
        "requests_per_s": round(len(allv) / elapsed, 1),
        "latency_ms": {"p50": pct(allv, 0.50), "p95": pct(allv, 0.95), "p99": pct(allv, 0.99),
                       "max": round(max(allv) * 1000, 1) if allv else None,
                       "mean": round(statistics.fmean(allv) * 1000, 1) if allv else None},
        "by_endpoint": {k: {"requests": len(v), "p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95)}
                        for k, v in sorted(lat.items())},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--max-requests", type=int, default=1_000_000, help="hard cap on requests (a bounded loop)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "web_load.json"))
    args = ap.parse_args(argv)
    if not 1 <= args.clients <= 500 or not 0 < args.seconds <= 600:
        ap.error("--clients 1..500 and --seconds (0, 600]")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    server = subprocess.Popen([sys.executable, "-m", "trainfit.cli", "serve", "--host", "127.0.0.1", "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import httpx

        t0 = time.monotonic()
        while True:
            try:
                if httpx.get(base + "/api/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() - t0 > 60:
                raise SystemExit(f"the server did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        startup_s = time.monotonic() - t0
        load_before = os.getloadavg()
        sampler = RssSampler(server.pid)
        rss_start = sampler.rss()
        sampler.start()
        res = asyncio.run(load(base, args.clients, args.seconds, args.max_requests))
        sampler.stop.set()
        sampler.join()
        rss_end = sampler.rss()
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    mib = 2**20
    out = {
        "benchmark": "web_load", "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python benchmarks/web_load.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "clients": args.clients, "seconds": args.seconds, "server": "trainfit serve (uvicorn, 1 process)",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2),
                            "note": "the machine's 1-minute load: other work on it slows the numbers, not the errors"},
        "server_startup_s": round(startup_s, 2), **res,
        "rss_mib": {"start": round(rss_start / mib, 1), "peak": round(max(sampler.samples + [rss_end]) / mib, 1),
                    "end": round(rss_end / mib, 1)},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("requests", "errors", "requests_per_s", "latency_ms", "rss_mib")}, indent=2))
    return 0 if out["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
