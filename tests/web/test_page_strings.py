"""The page's drawing functions run under Node on real API answers, for machines without Chromium (where
tests/web/test_page.py is skipped): a stub DOM (dom_stub.js) and app.js itself, no copy of its logic. Issue 26: the
strings the page shows for check's memory, the per-region costs and an RL job's binding phase carry their p10-p90
ranges; each test fails when the page drops the range."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from trainfit.cli import main

NODE = shutil.which("node") or shutil.which("nodejs")
if not NODE:
    pytest.skip("no node on PATH", allow_module_level=True)

HERE = Path(__file__).resolve().parent
APP = HERE.parents[1] / "src" / "trainfit" / "web" / "static" / "app.js"


def _labels() -> dict:
    """The page's English labels and memory terms as /api/labels and /api/terms serve them."""
    from trainfit.web.labels import labels, terms

    return {"labels": labels("en"), "terms": terms("en")}


def _draw(fn: str, answer: dict, tmp_path: Path) -> str:
    arg = tmp_path / f"{fn}.json"
    arg.write_text(json.dumps({"answer": answer, **_labels()}))
    r = subprocess.run([NODE, str(HERE / "dom_stub.js"), str(APP), fn, str(arg)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _cli_json(argv: list[str]) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(argv)
    return json.loads(buf.getvalue())


def test_check_result_shows_the_memory_note_with_its_range(tmp_path):
    with redirect_stdout(io.StringIO()):
        main(["render", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--gpus", "8", "--instance-type",
              "generic-8xH100", "--target", "swift", "--out", str(tmp_path / "job")])
    answer = _cli_json(["check", str(tmp_path / "job" / "swift_sft.sh"), "--json"])  # = /api/check's answer
    text = _draw("check", answer, tmp_path)
    lo, hi = answer["memory"]["reserved_interval_gib"]["p10"], answer["memory"]["reserved_interval_gib"]["p90"]
    assert f"p10-p90 {lo:.1f}-{hi:.1f}" in text and "P(OOM)" in text, text


def test_region_costs_show_their_range(tmp_path):
    iv = {"p10": 800.0, "p50": 1000.0, "p90": 1500.0}
    answer = {"region_prices": [{"plan": 0, "instance_type": "ecs.x", "plan_region": "cn-a", "same_everywhere": False,
                                 "regions": [{"region": "cn-a", "price_per_hour": 10.0, "currency": "CNY",
                                              "cost": 1000.0, "cost_interval": iv, "as_of": "2026-12-01"}]}]}
    text = _draw("showRegionPrices", answer, tmp_path)
    assert "1,000 CNY" in text and "(800–1,500)" in text, text


def test_rl_binding_phase_shows_its_range(tmp_path):
    answer = _cli_json(["memory", "Qwen3-8B", "--rl", "grpo", "--gpus", "8", "--gpu", "H100", "--json"])
    text = _draw("showMemory", answer, tmp_path)
    rl = answer["rl"]
    peak, rng = rl["phases_gib"][rl["binding_phase"]], rl["peak_interval_gib"]
    assert re.search(rf"{peak:.1f} \({rng['p10']:.1f}–{rng['p90']:.1f}\)", text), text
    # and the summary's reserved GiB (the policy update's) with its range, as for every memory answer
    mem = answer["reserved_interval_gib"]
    assert f"{answer['reserved_gib']:.1f} ({mem['p10']:.1f}–{mem['p90']:.1f}) GiB" in text, text
    # the headroom with its range (the card less the binding phase's memory range)
    h = answer["headroom_interval_gib"]
    assert f"{answer['headroom_gib']:.1f} ({h['p10']:.1f}–{h['p90']:.1f}) GiB" in text, text
