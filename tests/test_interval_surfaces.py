"""Issue 26, done-when: every speed, time, cost and memory figure shows its p10-p90 interval on every surface. One
test per surface that an audit found without it (check's JSON and RL notes, render's step time, RL speed figures,
the "why #1" sentence, the web page's check result and region costs); each fails when the interval disappears.
The ranges come from estimate/uncertainty.py through the service, never from the shell."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout

import pytest

from trainfit.cli import main
from trainfit.estimate.uncertainty import memory_range

RANGE = re.compile(r"\(p10-p90 [\d.,]+-[\d.,]+")


def _run(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


@pytest.fixture(scope="module")
def sft_job(tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    rc, _ = _run(["render", "Qwen3-8B", "--method", "full", "--tokens", "1B", "--gpus", "8", "--strategy", "zero3",
                  "--instance-type", "generic-8xH100", "--target", "swift", "--out", str(out),
                  "--checkpoint-uri", "oss://b/c/"])
    return out / "swift_sft.sh"


@pytest.fixture(scope="module")
def rl_job(tmp_path_factory):
    out = tmp_path_factory.mktemp("rl")
    rc, text = _run(["plan", "Qwen3-8B", "--rl", "grpo", "--steps", "50", "--provider", "generic", "--gpu", "H100",
                     "--json"])
    plan = out / "plan.json"
    plan.write_text(text)
    _run(["render", "--plan", str(plan), "--out", str(out / "job")])
    (script,) = [p for p in (out / "job").iterdir() if p.suffix == ".sh"]
    return script


def test_check_json_has_the_memory_figure_with_p10_p50_p90(sft_job):
    rc, text = _run(["check", str(sft_job), "--json"])
    mem = json.loads(text)["memory"]
    rng = mem["reserved_interval_gib"]
    assert rng == pytest.approx(memory_range(mem["reserved_gib"]))  # the one interval function, not a copy
    assert rng["p10"] < rng["p90"] and mem["verdict"] in ("fits", "tight", "oom", "unknown")
    assert 0 <= mem["oom_probability"] <= 1 and mem["usable_gib"] == pytest.approx(80.0)


def test_check_notes_an_rl_job_s_memory_with_its_range(rl_job):
    """An RL launch was checked without any memory figure; now the binding phase's peak shows with its range."""
    rc, text = _run(["check", str(rl_job)])
    note = next(line for line in text.splitlines() if "note: memory:" in line)
    assert RANGE.search(note) and "P(OOM)" in note and "binding:" in note, note
    rc, text = _run(["check", str(rl_job), "--json"])
    mem = json.loads(text)["memory"]
    assert mem["binding_phase"] in ("rollout", "train", "sync")
    assert mem["reserved_interval_gib"] == pytest.approx(memory_range(mem["reserved_gib"]))
    rc, zh = _run(["--lang", "zh", "check", str(rl_job)])
    assert "p10-p90" in zh and "决定显存的阶段" in zh


def test_render_summary_gives_the_step_time_its_range(tmp_path):
    rc, text = _run(["render", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--gpus", "8",
                     "--instance-type", "generic-8xH100", "--target", "swift", "--out", str(tmp_path)])
    line = next(ln for ln in text.splitlines() if ln.startswith("speed:"))
    step = re.search(r"([\d.,]+) s/step \(p10-p90 ([\d.,]+)-([\d.,]+)\)", line)
    assert step, line
    mid, lo, hi = (float(x.replace(",", "")) for x in step.groups())
    assert lo < mid < hi  # a time moves against the speed: its p10 is below the figure


def test_rl_memory_gives_every_speed_figure_its_range():
    rc, text = _run(["memory", "Qwen3-8B", "--rl", "grpo", "--gpus", "8", "--gpu", "H100", "--json"])
    sp = json.loads(text)["rl"]["speed"]
    ivs = sp["intervals"]
    for k in ("step_seconds", "rollout_seconds", "update_seconds", "rollout_tokens_per_s", "update_tokens_per_s"):
        assert ivs[k]["p10"] <= ivs[k]["p90"], k
    # seconds against the speed, tokens/s with it
    assert ivs["step_seconds"]["p90"] == pytest.approx(sp["step_seconds"] / sp["interval"]["p10"])
    assert ivs["rollout_tokens_per_s"]["p90"] == pytest.approx(sp["rollout_tokens_per_s"] * sp["interval"]["p90"])
    rc, table = _run(["memory", "Qwen3-8B", "--rl", "grpo", "--gpus", "8", "--gpu", "H100"])
    flat = " ".join(table.split())
    assert re.search(r"step [\d,]+ s \([\d,]+–[\d,]+\)", flat), flat
    assert re.search(r"tok/s \([\d,]+–[\d,]+\)", flat), flat


def test_why_first_gives_the_ranking_figures_their_ranges():
    rc, text = _run(["plan", "Qwen3-8B", "--tokens", "2B", "--provider", "generic", "--json"])
    doc = json.loads(text)
    why = doc["ranking"]["why_first"]
    first = doc["plans"][0]["intervals"]["gpu_hours"]
    assert f"({first['p10']:,.0f}–{first['p90']:,.0f})" in why, why


def test_web_check_answer_and_page_show_the_memory_range(sft_job):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from trainfit.web.app import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1")
    r = client.post("/api/check", files={"file": ("swift_sft.sh", sft_job.read_bytes())})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["memory"]["reserved_interval_gib"]["p10"] < d["memory"]["reserved_interval_gib"]["p90"]
    assert any(RANGE.search(n) for n in d["notes"])
    # what the page draws from this answer (check's notes, region costs, an RL job's binding phase) is checked by
    # running app.js under Node in tests/web/test_page_strings.py, and in Chromium by tests/web/test_page.py


def test_spot_warning_gives_interruptions_and_extra_hours_their_ranges():
    rc, text = _run(["plan", "Qwen3-8B", "--tokens", "2B", "--provider", "generic", "--spot", "--top", "1",
                     "--json"])
    p = json.loads(text)["plans"][0]
    spot = next(w for w in p["warnings"] if w.startswith("spot:"))
    m = re.search(r"spot: ([\d.]+) \(([\d.]+)–([\d.]+)\) expected interruptions, \+([\d.]+) h \(([\d.]+)–([\d.]+)\)",
                  spot)
    assert m, spot
    n, n_lo, n_hi, extra, lo, hi = (float(x) for x in m.groups())
    iv = p["speed_interval"]  # both are proportional to the hours: the inverse of the speed's range
    assert n_lo <= n <= n_hi and lo <= extra <= hi
    tol = 0.05 / iv["p10"] + 0.05  # the printed figures are rounded to 0.1
    assert hi == pytest.approx(extra / iv["p10"], abs=tol) and lo == pytest.approx(extra / iv["p90"], abs=tol)


@pytest.mark.parametrize("rl", [[], ["--rl", "grpo", "--gpus", "8"]], ids=["sft", "rl"])
def test_memory_headroom_has_its_range(rl):
    """The headroom (usable - reserved) is a GiB figure too: the card less the memory's p10-p90 range."""
    rc, text = _run(["memory", "Qwen3-8B", "--gpu", "H100", *rl, "--json"])
    d = json.loads(text)
    peak = d["rl"]["peak_gib"] if rl else d["reserved_gib"]
    rng = memory_range(peak)
    card = d["gpu_mem_gib"]
    want = {"p10": card - rng["p90"], "p50": card - rng["p50"], "p90": card - rng["p10"]}
    assert d["headroom_interval_gib"] == pytest.approx(want, abs=0.01)  # reserved_gib is rounded in JSON
    rc, table = _run(["memory", "Qwen3-8B", "--gpu", "H100", *rl])
    r = d["headroom_interval_gib"]
    assert f"(p10 {r['p10']:.1f}, p90 {r['p90']:.1f})" in " ".join(table.split()), table
