"""The GPU probe and calibration loop end to end on CPU (issue 12, part 5): the probe's real code path (HF models
with random weights, real steps, memory and speed bookkeeping, one results file) on tiny models, then
`trainfit calibrate` on its file, then `trainfit plan` uses the factor and says "calibrated on <GPU>, <date>"."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from trainfit.catalog import get_gpu  # noqa: E402
from trainfit.cli import main  # noqa: E402
from trainfit import calibration_file  # noqa: E402
from trainfit.estimate.memory import estimate_memory  # noqa: E402
from trainfit.estimate.speed import estimate_speed  # noqa: E402
from trainfit.models import from_hf_config, get_model  # noqa: E402
from trainfit.catalog.hardware import hardware_for  # noqa: E402
from trainfit.workload import Workload  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def probe():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_probe

    return gpu_probe


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(argv)
    return rc, out.getvalue()


def _shape(cfg: dict):
    return from_hf_config(cfg["hf_config"], name=cfg["model"]) if cfg.get("hf_config") else get_model(cfg["model"])


def _wl(cfg: dict) -> Workload:
    return Workload(**{k: v for k, v in cfg.items() if k not in ("model", "hf_config")})


def test_grid_covers_dense_moe_gc_seq_and_lora(probe):
    g = probe.grid("cuda")
    assert len(g) == 16
    shapes = {c["model"]: _shape(c) for c in g}
    assert {s.is_moe for s in shapes.values()} == {False, True}
    assert {c["grad_ckpt"] for c in g} == {False, True} and {c["method"] for c in g} == {"full", "lora"}
    assert len({c["seq_len"] for c in g}) == 2
    for c in g:  # every configuration fits one 80 GB GPU by trainfit's own estimate
        assert estimate_memory(shapes[c["model"]], _wl(c)).reserved_gib < 75


@pytest.mark.slow
def test_probe_on_cpu_then_calibrate_then_plan(probe, tmp_path, monkeypatch):
    out = tmp_path / "probe.json"
    assert probe.main(["--device", "cpu", "--out", str(out), "--only", "seq_len=64"]) == 0
    data = json.loads(out.read_text())
    runs = list(data["runs"].values())
    assert len(runs) == 8 and data["probe"]["summary"]["measured"] == 8
    assert {r["config"]["model"] for r in runs} == {"tiny-dense", "tiny-moe"}
    for r in runs:  # predicted vs measured memory and speed, in the one file
        cfg, p, m = r["config"], r["predicted"], r["measured"]
        assert p["tensor_peak_gib"] == pytest.approx(estimate_memory(_shape(cfg), _wl(cfg)).tensor_peak_gib)
        assert m["device"] == "cpu" and m["max_allocated_gib"] > 0 and m["tokens_per_s"] > 0
        assert r["compare"]["tensor_peak_error_pct"] == pytest.approx(
            (p["tensor_peak_gib"] - m["max_allocated_gib"]) / m["max_allocated_gib"] * 100, abs=0.01)
        assert abs(r["compare"]["tensor_peak_error_pct"]) < 50  # the real steps ran the modelled workload

    monkeypatch.setenv(calibration_file.ENV_CALIBRATION, str(tmp_path / "cal.yaml"))
    rc, text = _cli(["calibrate", str(out)])  # a CPU's speed never calibrates a GPU
    assert rc != 0 and "CPU run" in text and not (tmp_path / "cal.yaml").exists()

    # The same file as a GPU run would write it: the device an A10, each measured 1.25x the A10 prediction.
    hw = hardware_for(get_gpu("A10"), None)
    for r in data["runs"].values():
        pred = estimate_speed(_shape(r["config"]), _wl(r["config"]), hw,
                              framework="hf-trainer").tokens_per_s_per_gpu
        r["measured"].update({"device": "NVIDIA A10", "tokens_per_s": 1.25 * pred})
    gpu_file = tmp_path / "probe_a10.json"
    gpu_file.write_text(json.dumps(data))

    plan_argv = ["plan", "Qwen3-0.6B", "--tokens", "100M", "--gpu", "A10", "--gpus", "1", "--json"]
    rc, before = _cli(plan_argv)
    assert rc == 0
    before_plan = json.loads(before)["plans"][0]
    assert before_plan["calibration"] is None

    rc, text = _cli(["calibrate", str(gpu_file)])
    assert rc == 0 and "calibrated on A10 (hf engine)" in text and "x1.250" in text

    rc, after = _cli(plan_argv)
    after_plan = json.loads(after)["plans"][0]
    assert after_plan["calibration"].startswith("calibrated on A10 (hf engine), " + runs[0]["date"][:10])
    assert after_plan["instance_type"] == before_plan["instance_type"]
    assert after_plan["tokens_per_s"] > before_plan["tokens_per_s"]
    # the factor divides the compute time of the same workload on that GPU
    wl = Workload(**{k: v for k, v in after_plan["workload"].items() if k != "lora_targets"})
    cal = estimate_speed(get_model("Qwen3-0.6B"), wl, hw, framework=after_plan["framework"],
                         calibrations=calibration_file.load_calibrations())
    raw = estimate_speed(get_model("Qwen3-0.6B"), wl, hw, framework=after_plan["framework"])
    assert cal.compute_seconds == pytest.approx(raw.compute_seconds / 1.25, rel=1e-9)
    rc, table = _cli(plan_argv[:-1])
    assert "calibrated on A10 (hf engine)" in table.replace("\n", " ")


def test_time_budget_guard_stops_starting_configurations(probe, tmp_path):
    out = tmp_path / "probe.json"
    data = probe.run(probe.grid("cpu")[:3], device="cpu", gpu=None, budget_s=5.0, timeout=240, out=out)
    assert not data["runs"] and len(data["probe"]["skipped"]) == 3
    assert all(why.startswith("time budget") for why in data["probe"]["skipped"].values())
    assert json.loads(out.read_text())["probe"]["summary"]["measured"] == 0


def test_probe_pairs_the_attention_kernels(probe):
    """--extended measures SDPA's own choice against its flash backend (FlashAttention-2 code) at a long sequence
    (fa2_hopper_factor on the probe's GPU); the flash run really forces that backend (here on CPU)."""
    pair = [c for c in probe.EXTENDED if c.get("attention") in ("sdpa", "flash")]
    assert len(pair) == 2 and len({(c["model"], c["seq_len"], c["grad_ckpt"]) for c in pair}) == 1
    c = {"model": "tiny-dense", "hf_config": probe.TINY_DENSE, "seq_len": 64, "grad_ckpt": True, "method": "full",
         "attention": "flash"}
    m = probe.measure(c, "cpu")
    assert any("flash backend" in n for n in m["notes"]) and m["tokens_per_s"] > 0
    assert not any("flash backend" in n for n in probe.measure({**c, "attention": "sdpa"}, "cpu")["notes"])
