"""The load benchmark stays runnable (a 2-client, 1-second smoke run against a local server)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("psutil")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_web_load_smoke(tmp_path):
    out = tmp_path / "web_load.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "web_load.py"), "--clients", "2", "--seconds", "1",
                        "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert res["errors"] == 0 and res["requests"] > 0
    assert "memory" in res["by_endpoint"] and res["latency_ms"]["p50"] > 0
    assert res["rss_mib"]["peak"] >= res["rss_mib"]["start"] > 0
