"""``trainfit diagnose``: findings on synthetic metrics (pure, fast) and the plan comparison."""

from __future__ import annotations

import json
import math

import pytest

from trainfit.cli import main
from trainfit.diagnose import Thresholds, plan_prediction, diagnose, load_metrics, young_daly_interval_s
from trainfit.errors import MetricsError, PlanFileError


def _steps(n=30, *, wait=0.0, step=1.0, loss=None, **extra):
    out = []
    for i in range(1, n + 1):
        r = {"step": i, "time_unix": 1000.0 + i * step, "step_seconds": step, "data_wait_seconds": wait,
             "compute_seconds": step - wait, "tokens": 1000, "tokens_per_s": 1000 / step,
             "loss": loss(i) if loss else 2.0 - 0.01 * i}
        r.update({k: (v(i) if callable(v) else v) for k, v in extra.items()})
        out.append(r)
    return out


def _codes(d, severity=None):
    return {f.code for f in d.findings if severity is None or f.severity == severity}


def _write(path, events, steps):
    with open(path, "w") as f:
        for r in events + steps:
            f.write(json.dumps(r) + "\n")
    return path


@pytest.mark.parametrize("wait,severity", [(0.05, None), (0.099, None), (0.10, "warning"), (0.19, "warning"),
                                           (0.20, "critical"), (0.5, "critical")])
def test_input_bound_thresholds(wait, severity):
    d = diagnose([], _steps(wait=wait))
    got = [f.severity for f in d.findings if f.code == "input-bound"]
    assert got == ([severity] if severity else [])


def test_low_gpu_util_says_whether_input_explains_it():
    d = diagnose([], _steps(gpu_util=0.4))
    f = next(f for f in d.findings if f.code == "low-gpu-util")
    assert "not the cause" in f.message
    d = diagnose([], _steps(gpu_util=0.4, wait=0.3))
    f = next(f for f in d.findings if f.code == "low-gpu-util")
    assert "input" in f.message and "input-bound" in _codes(d)
    assert "low-gpu-util" not in _codes(diagnose([], _steps(gpu_util=0.9)))


def test_loss_spike_with_clipping_advice():
    events = [{"event": "start", "max_grad_norm": 0.0}]
    d = diagnose(events, _steps(loss=lambda i: 9.0 if i == 20 else 2.0, grad_norm=lambda i: 50.0 if i == 20 else 1.0))
    f = next(f for f in d.findings if f.code == "loss-spike")
    assert f.data["spikes"][0]["step"] == 20 and f.data["spikes"][0]["grad_norm"] == 50.0
    assert "max_grad_norm" in f.fix and "learning rate" in f.fix
    assert "divergence" not in _codes(d)  # one spike that recovers is not divergence


def test_divergence_nan_and_sustained_rise():
    d = diagnose([], _steps(loss=lambda i: float("nan") if i == 25 else 2.0))
    f = next(f for f in d.findings if f.code == "divergence")
    assert f.severity == "critical" and f.data["nonfinite_steps"] == [25]
    d = diagnose([], _steps(n=40, loss=lambda i: 2.0 if i < 30 else 5.0))
    assert "divergence" in _codes(d, "critical")


def test_memory_near_limit():
    assert "memory-near-limit" not in _codes(diagnose([], _steps(mem_reserved_gib=70.0, gpu_mem_gib=80.0)))
    assert "memory-near-limit" in _codes(diagnose([], _steps(mem_reserved_gib=73.0, gpu_mem_gib=80.0)), "warning")
    assert "memory-near-limit" in _codes(diagnose([], _steps(mem_reserved_gib=77.0, gpu_mem_gib=80.0)), "critical")


def test_young_daly_interval():
    assert young_daly_interval_s(60, 1.0) == pytest.approx(math.sqrt(2 * 60 * 3600))
    # saves every 10 steps of 100 s = 1000 s, 30 s each, 4 interruptions/hour -> optimum sqrt(2*30*900) = 232 s
    steps = _steps(n=50, step=100.0, save_seconds=lambda i: 30.0 if i % 10 == 0 else None)
    steps = [{k: v for k, v in r.items() if v is not None} for r in steps]
    d = diagnose([{"event": "start", "save_steps": 10}], steps, interruptions_per_hour=4)
    f = next(f for f in d.findings if f.code == "checkpoint-interval")
    assert f.severity == "warning" and "too rare" in f.message
    assert f.data["optimal_interval_seconds"] == pytest.approx(math.sqrt(2 * 30 * 900), abs=0.1)
    assert f.data["optimal_save_steps"] == round(math.sqrt(2 * 30 * 900) / 100)
    d = diagnose([{"event": "start", "save_steps": 10}], steps)  # no rate: info only
    assert [f.severity for f in d.findings if f.code == "checkpoint-interval"] == ["info"]


def test_plan_comparison_ratios_from_a_real_plan_file(tmp_path, capsys):
    assert main(["plan", "Qwen3-0.6B", "--tokens", "100M", "--json"]) == 0
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(capsys.readouterr().out)
    doc = json.loads(plan_path.read_text())
    p2 = doc["plans"][1] if len(doc["plans"]) > 1 else doc["plans"][0]
    pick = 2 if len(doc["plans"]) > 1 else 1
    tps, reserved, gpu_mem, ivs = plan_prediction(plan_path, pick)
    assert (tps, reserved, gpu_mem) == (p2["tokens_per_s"], p2["per_gpu_gib"], p2["gpu_mem_gib"])
    assert ivs["tokens_per_s"] == pytest.approx(p2["intervals"]["tokens_per_s"])  # issue 26: the plan's ranges
    measured_tps = tps * 0.6
    steps = _steps(step=1000 / measured_tps, mem_reserved_gib=reserved * 1.2)
    metrics = _write(tmp_path / "m.jsonl", [{"event": "start"}], steps)
    rc = main(["diagnose", str(metrics), "--plan", str(plan_path), "--pick", str(pick), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["speed_ratio"] == pytest.approx(0.6, abs=0.001)
    assert out["plan"]["memory_ratio"] == pytest.approx(1.2, abs=0.001)
    # the prediction's p10-p90 ranges in JSON and in the comparison's message (issue 26)
    assert out["plan"]["predicted_tokens_per_s_interval"] == pytest.approx(p2["intervals"]["tokens_per_s"])
    assert out["plan"]["predicted_reserved_gib_interval"] == pytest.approx(p2["intervals"]["per_gpu_gib"])
    cmp_msg = next(f["message"] for f in out["findings"] if f["code"] == "plan-comparison")
    assert cmp_msg.count("(p10-p90 ") == 2, cmp_msg
    codes = {f["code"]: f["severity"] for f in out["findings"]}
    assert codes["slower-than-plan"] == "warning" and codes["memory-above-plan"] == "warning"
    assert codes["plan-comparison"] == "info"
    near = reserved * 1.2 / gpu_mem  # the plan fills most of the GPU, so 1.2x may be near its limit
    assert ("memory-near-limit" in codes) == (near >= 0.90)
    assert rc == (1 if near >= 0.95 else 0)
    with pytest.raises(PlanFileError):
        plan_prediction(plan_path, len(doc["plans"]) + 1)
    (tmp_path / "old.json").write_text(json.dumps({"plans": [{"tokens_per_s": 1.0}]}))  # unversioned 0.1 file
    with pytest.raises(PlanFileError):
        plan_prediction(tmp_path / "old.json")


def test_load_metrics_keeps_the_last_record_of_a_replayed_step(tmp_path):
    first = _steps(n=6, loss=lambda i: 3.0)
    replay = _steps(n=6, loss=lambda i: 1.0)[3:]  # relaunch from checkpoint 3 replays steps 4-6
    path = tmp_path / "m.jsonl"
    _write(path, [], [{"event": "start"}, *first, {"event": "start"}, *replay])
    events, steps, first_after_start = load_metrics(path)
    assert [r["step"] for r in steps] == [1, 2, 3, 4, 5, 6]
    assert [r["loss"] for r in steps] == [3.0, 3.0, 3.0, 1.0, 1.0, 1.0]
    assert sorted(first_after_start) == [1, 4]
    assert not any(k.startswith("_") for r in steps for k in r)  # the records are the file's, nothing added
    assert len(events) == 2


def test_a_line_cut_short_by_a_kill_is_skipped(tmp_path):
    good = [json.dumps(r) for r in _steps(n=4)]
    start = json.dumps({"event": "start"})
    (tmp_path / "a.jsonl").write_text("\n".join([start, *good[:2], good[2][:17], start, *good[2:]]) + "\n")
    events, steps, _starts = load_metrics(tmp_path / "a.jsonl")
    assert [r["step"] for r in steps] == [1, 2, 3, 4] and events[-1] == {"event": "truncated", "lines": 1}
    (tmp_path / "b.jsonl").write_text("\n".join([start, *good, good[0][:9]]))  # cut at the very end
    assert len(load_metrics(tmp_path / "b.jsonl")[1]) == 4
    (tmp_path / "c.jsonl").write_text("\n".join([start, good[0], good[1][:9], good[2]]))  # damage mid-run
    with pytest.raises(MetricsError, match="c.jsonl:3"):
        load_metrics(tmp_path / "c.jsonl")


def test_bad_metrics_files(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"step": 1, "step_seconds": 1}\n')
    with pytest.raises(MetricsError, match="data_wait_seconds"):
        load_metrics(tmp_path / "a.jsonl")
    (tmp_path / "b.jsonl").write_text("not json\n")
    with pytest.raises(MetricsError, match="b.jsonl:1"):
        load_metrics(tmp_path / "b.jsonl")
    with pytest.raises(MetricsError):
        load_metrics(tmp_path / "missing.jsonl")
    with pytest.raises(MetricsError):
        Thresholds(input_warn=0.3, input_critical=0.2)


def test_cli_exit_code_and_text(tmp_path, capsys):
    ok = _write(tmp_path / "ok.jsonl", [], _steps())
    assert main(["diagnose", str(ok)]) == 0
    assert "no problems found" in capsys.readouterr().out
    bad = _write(tmp_path / "bad.jsonl", [], _steps(wait=0.5))
    assert main(["diagnose", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "critical input-bound" in out.replace("  ", " ") and "fix:" in out
    assert main(["diagnose", str(tmp_path / "missing.jsonl")]) == 2


def test_diagnose_with_a_plan_imports_no_heavy_module(tmp_path):
    import subprocess
    import sys

    metrics = _write(tmp_path / "m.jsonl", [{"event": "start"}], _steps())
    plan = tmp_path / "plan.json"
    code = ("import contextlib, sys; from trainfit.cli import main\n"
            f"with open({str(plan)!r}, 'w') as f, contextlib.redirect_stdout(f): main(['plan', 'Qwen3-0.6B', "
            "'--tokens', '100M', '--json'])\n"
            f"with contextlib.redirect_stdout(sys.stderr): main(['diagnose', {str(metrics)!r}, '--plan', "
            f"{str(plan)!r}, '--json'])\n"
            "bad = [m for m in ('torch', 'transformers', 'prometheus_client', 'pandas') if m in sys.modules]\n"
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert '"speed_ratio"' in r.stderr
