"""Speed calibration from GPU probe results (estimate/calibration.py, `trainfit calibrate`)."""

from __future__ import annotations

import json

import pytest

from trainfit.catalog import get_gpu
from trainfit.cli import main
from trainfit.errors import WorkloadError
from trainfit import calibrate, calibration_file
from trainfit.estimate.speed import estimate_speed
from trainfit.models import get_model
from trainfit.catalog.hardware import hardware_for
from trainfit.workload import Workload

CFG = {"model": "Qwen3-0.6B", "seq_len": 2048, "grad_ckpt": False}


def _results(tmp_path, ratio: float):
    hw = hardware_for(get_gpu("H100"), None)
    pred = estimate_speed(get_model("Qwen3-0.6B"), Workload(seq_len=2048, grad_ckpt=False), hw,
                          framework="hf-trainer").tokens_per_s_per_gpu
    res = {"runs": {"a": {"config": CFG, "date": "2026-12-01T10:00:00+00:00",
                          "measured": {"device": "NVIDIA H100 80GB HBM3", "tokens_per_s": pred * ratio}},
                    "broken": {"config": CFG, "measured": {"error": "OOM"}}}}
    p = tmp_path / "probe.json"
    p.write_text(json.dumps(res))
    return p, pred


def test_calibrate_folds_and_the_speed_model_uses_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(calibration_file.ENV_CALIBRATION, str(tmp_path / "cal.yaml"))
    probe, pred = _results(tmp_path, 0.8)
    assert main(["calibrate", str(probe)]) == 0
    assert "calibrated on H100-SXM" in capsys.readouterr().out
    hw = hardware_for(get_gpu("H100"), None)
    cals = calibration_file.load_calibrations()
    s = estimate_speed(get_model("Qwen3-0.6B"), Workload(seq_len=2048, grad_ckpt=False), hw, framework="hf-trainer",
                       calibrations=cals)
    assert any(a.startswith("calibrated on H100-SXM") for a in s.assumptions)
    assert s.tokens_per_s_per_gpu < pred  # slower by about the measured factor (compute part only)
    # another engine family on the same GPU is not touched
    m = estimate_speed(get_model("Qwen3-0.6B"), Workload(seq_len=2048, grad_ckpt=False), hw, framework="megatron",
                       calibrations=cals)
    assert not any(a.startswith("calibrated") for a in m.assumptions)


def test_dry_run_writes_nothing_and_bad_factors_are_refused(tmp_path, monkeypatch):
    target = tmp_path / "cal.yaml"
    monkeypatch.setenv(calibration_file.ENV_CALIBRATION, str(target))
    probe, _ = _results(tmp_path, 0.9)
    assert main(["calibrate", str(probe), "--dry-run"]) == 0
    assert not target.exists()
    bad, _ = _results(tmp_path, 50.0)
    with pytest.raises(WorkloadError):
        calibrate.fold(json.loads(bad.read_text()), source="x")
    with pytest.raises(WorkloadError):
        calibrate.fold({"runs": {}}, source="x")


def test_a_search_reads_the_overlay_once_and_times_every_candidate_with_it(tmp_path, monkeypatch, capsys):
    """The planner reads the calibration overlay once per search (not once per layout timed) and every H100 plan
    it returns is timed with it."""
    from trainfit.plan import search
    from trainfit.plan.request import PlanRequest

    monkeypatch.setenv(calibration_file.ENV_CALIBRATION, str(tmp_path / "cal.yaml"))
    probe, _pred = _results(tmp_path, 0.8)
    assert main(["calibrate", str(probe)]) == 0
    reads: list[int] = []
    load = search.load_calibrations
    monkeypatch.setattr(search, "load_calibrations", lambda: reads.append(1) or load())
    res = search.plan(PlanRequest(model=get_model("Qwen3-0.6B"), workload=Workload(seq_len=2048, grad_ckpt=False),
                                  tokens=1e8, gpu="H100", framework="hf-trainer"))
    assert reads == [1]
    assert res.plans and all(p.speed.calibration and "H100-SXM" in p.speed.calibration for p in res.plans)


def test_calibrate_over_a_malformed_overlay_is_an_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    """`trainfit calibrate` reads the entries it keeps with the same checks as the speed model: an entry that is not
    a mapping of engine families is the overlay's error (it was an AttributeError traceback on save)."""
    cal = tmp_path / "cal.yaml"
    cal.write_text("gpus:\n  H100-SXM: [1, 2]\n")
    monkeypatch.setenv(calibration_file.ENV_CALIBRATION, str(cal))
    probe, _pred = _results(tmp_path, 0.8)
    assert main(["calibrate", str(probe)]) == 2
    err = capsys.readouterr().err
    assert "is not a mapping of engine families" in err and "Traceback" not in err
    assert cal.read_text() == "gpus:\n  H100-SXM: [1, 2]\n"
