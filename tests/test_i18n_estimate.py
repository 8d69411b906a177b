"""Chinese for what ``memory``, ``plan``, ``diagnose`` and ``trace`` say from the estimate side: fit reasons, suggestions,
memory and speed assumptions, interval notes, workload/layout and model errors, RL sizing, diagnose findings. Under
``--lang zh`` (or ``i18n.language("zh")``) none of it keeps an English sentence (tests/_lang.py); stable codes stay
English in both languages; the caches that hold translated text give each language its own text."""

from __future__ import annotations

import json

import pytest

from _lang import english_sentences
from trainfit import i18n
from trainfit.cli import main
from trainfit.errors import TrainfitError, UnknownModelError, WorkloadError
from trainfit.estimate.fit import decide_fit, fit_answer
from trainfit.estimate.memory import estimate_memory
from trainfit.estimate.terms import term_label
from trainfit.models import get_model
from trainfit.workload import Workload, check_layout



def _chinese(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def _assert_zh(texts, what: str) -> None:
    texts = [t for t in texts if t]
    assert texts, f"no {what} to check"
    for t in texts:
        assert _chinese(t), f"{what} is not Chinese: {t!r}"
        assert not english_sentences(t), f"{what} keeps English: {english_sentences(t)} in {t!r}"


def _run_json(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["--lang", "zh", *argv, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


# ------------------------------------------------------------------ memory: OOM, tight, host RAM, layout
def test_memory_oom_reasons_suggestions_and_assumptions_are_chinese(capsys):
    rc, d = _run_json(capsys, "memory", "Qwen3-14B", "--method", "full", "--gpu", "A100-80G", "--gpus", "1")
    assert d["verdict"] == "oom" and d["fit"]["verdict"] == "oom"  # codes stay English
    _assert_zh(d["fit"]["reasons"], "OOM reason")
    _assert_zh([s["why"] for s in d["suggestions"]], "suggestion")
    assert all(s["change"].startswith("--") for s in d["suggestions"])  # the flags are not translated
    _assert_zh(d["assumptions"], "memory assumption")


def test_memory_tight_and_host_ram_reasons_are_chinese(capsys):
    m, wl = get_model("Qwen3-8B"), Workload(method="lora", gpus=8, gpus_per_node=8, strategy="zero3")
    reserved = estimate_memory(m, wl).reserved_gib
    rc, d = _run_json(capsys, "memory", "Qwen3-8B", "--method", "lora", "--gpus", "8", "--gpus-per-node", "8",
                      "--strategy", "zero3", "--gpu-mem", f"{reserved / 0.975:.3f}")
    assert d["fit"]["gpu_verdict"] == "tight"
    _assert_zh(d["fit"]["reasons"], "tight reason")
    with i18n.language("zh"):
        est = estimate_memory(m, wl)
        for host in (est.host_ram_gib * 0.5, est.host_ram_gib / 0.95, None):
            dec = decide_fit(est, usable_gib=1000.0, gpus_per_node=8, host_ram_gib=host)
            assert dec.host_verdict in ("oom", "tight", "unknown", "fits")
            if dec.host_verdict != "fits":
                _assert_zh(dec.reasons, f"host RAM reason ({dec.host_verdict})")


def test_layout_and_workload_errors_are_chinese_with_english_codes():
    m = get_model("Qwen3-8B")
    cases = [lambda: Workload(gpus=3, tp=2), lambda: Workload(gpus=8, gpus_per_node=8, pp=64),
             lambda: Workload(offload="all", strategy="zero2", gpus=2), lambda: Workload(method="lorra"),
             lambda: check_layout(Workload(gpus=8, gpus_per_node=8, tp=8, pp=1), get_model("Qwen3-30B-A3B")),
             lambda: check_layout(Workload(gpus=8, gpus_per_node=8, pp=8), get_model("Qwen3-0.6B").__class__(
                 **{**_shape_kw(m), "num_layers": 4}))]
    for make in cases:
        with i18n.language("zh"), pytest.raises(WorkloadError) as ei:
            make()
        e = ei.value
        assert e.code == "bad-workload"
        _assert_zh([e.message], "workload error")
        if e.fix:
            _assert_zh([e.fix], "workload fix")
    with pytest.raises(WorkloadError) as ei:  # and English by default
        Workload(gpus=3, tp=2)
    assert ei.value.message == "--gpus 3 is not divisible by tp*pp*cp = 2"


def _shape_kw(m) -> dict:
    from dataclasses import fields

    return {f.name: getattr(m, f.name) for f in fields(m) if not f.name.startswith("_")}


def test_memory_cli_layout_error_is_chinese(capsys):
    rc = main(["--lang", "zh", "memory", "Qwen3-30B-A3B", "--gpus", "8", "--gpus-per-node", "8", "--tp", "8"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--tp 8" in err and _chinese(err)
    line = next(ln for ln in err.splitlines() if "--tp 8" in ln)
    assert not english_sentences(line), line


def test_model_errors_are_chinese_with_english_codes():
    with i18n.language("zh"), pytest.raises(UnknownModelError) as ei:
        get_model("Qwen3-8C")
    assert ei.value.code == "unknown-model"
    _assert_zh([ei.value.message, ei.value.fix], "unknown-model error")
    assert "Qwen3-8B" in ei.value.fix


# ------------------------------------------------------------------ speed and intervals
def test_speed_warnings_and_assumptions_are_chinese():
    from trainfit.catalog import get_gpu
    from trainfit.estimate.speed import estimate_speed
    from trainfit.estimate.uncertainty import memory_interval, speed_interval
    from trainfit.catalog.hardware import hardware_for

    m = get_model("Qwen3-30B-A3B")
    wl = Workload(method="qlora", gpus=16, gpus_per_node=8, strategy="zero3", attention="flash")
    with i18n.language("zh"):
        sp = estimate_speed(m, wl, hardware_for(get_gpu("V100")))
        _assert_zh(sp.warnings, "speed warning")
        _assert_zh(sp.assumptions, "speed assumption")
        _assert_zh([speed_interval(m, wl, None).note, memory_interval().note], "interval note")


# ------------------------------------------------------------------ RL
def test_rl_sizing_and_lint_are_chinese():
    from trainfit.errors import RolloutMemoryError
    from trainfit.rl import RLConfig, estimate_rl_memory
    from trainfit.rl.lint import lint_rl

    m = get_model("Qwen3-8B")
    wl = Workload(method="full", gpus=8, gpus_per_node=8, strategy="fsdp")
    rl = RLConfig(algo="ppo", rollout_util=0.9, engine_sleep=False, response_len=8192, prompt_len=1024)
    with i18n.language("zh"):
        est = estimate_rl_memory(m, wl, rl, 80.0, strict=False)
        _assert_zh(est.assumptions, "RL assumption")
        _assert_zh(est.warnings, "RL warning")
        _assert_zh(est.fit["reasons"], "RL fit reason")
        findings = lint_rl(m, wl, rl, 80.0)
        assert {f.rule for f in findings} >= {"rl-util-too-high", "rl-colocate-no-sleep"}  # codes English
        _assert_zh([f.message for f in findings] + [f.fix for f in findings], "RL finding")
        with pytest.raises(RolloutMemoryError) as ei:
            estimate_rl_memory(m, wl, RLConfig(rollout_util=0.05, rollout_tp=1, response_len=65536), 16.0)
        _assert_zh([ei.value.message, ei.value.fix], "rollout memory error")
        with pytest.raises(WorkloadError) as ei:
            RLConfig(algo="grpo", num_generations=1)
        _assert_zh([ei.value.message, ei.value.fix], "RL config error")


def test_rl_memory_cli_is_chinese(capsys):
    rc, d = _run_json(capsys, "memory", "Qwen3-8B", "--rl", "grpo", "--gpu", "A100-80G", "--gpus", "8",
                      "--gpus-per-node", "8", "--rollout-util", "0.95", "--no-engine-sleep")
    text = json.dumps(d, ensure_ascii=False)
    rl = d.get("rl") or d
    assert "assumptions" in text
    notes = [s for s in _strings(rl) if any(c.isalpha() for c in s) and " " in s and not s.startswith("--")]
    sentences = [s for s in notes if len(s.split()) >= 4 or _chinese(s)]
    assert sentences and all(not english_sentences(s) for s in sentences), \
        [(s, english_sentences(s)) for s in sentences if english_sentences(s)][:5]


def _strings(obj, key=None):
    """The human texts of a JSON answer: values under reasons/assumptions/warnings/message/fix/why/note keys."""
    human = {"reasons", "assumptions", "warnings", "message", "fix", "why", "note"}
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v, key)
    elif isinstance(obj, str) and key in human:
        yield obj


# ------------------------------------------------------------------ diagnose, metrics file, trace
def _steps(n=40, *, wait=0.3, step=1.0):
    out = []
    for i in range(1, n + 1):
        out.append({"step": i, "time_unix": 1000.0 + i * step, "step_seconds": step, "data_wait_seconds": wait,
                    "tokens": 1000, "tokens_per_s": 1000 / step, "gpu_util": 0.4,
                    "loss": 9.0 if i == 20 else 2.0, "grad_norm": 1.0, "mem_reserved_gib": 78.0, "gpu_mem_gib": 80.0,
                    **({"save_seconds": 30.0} if i % 10 == 0 else {})})
    return out


def test_diagnose_findings_are_chinese_with_english_codes():
    from trainfit.diagnose import diagnose

    events = [{"event": "start", "max_grad_norm": 1.0}]
    with i18n.language("zh"):
        d = diagnose(events, _steps(), plan=(4000.0, 60.0, 80.0), interruptions_per_hour=0.5)
    codes = {f.code for f in d.findings}
    assert {"input-bound", "low-gpu-util", "loss-spike", "memory-near-limit", "plan-comparison",
            "slower-than-plan", "memory-above-plan", "checkpoint-interval"} <= codes
    _assert_zh([f.message for f in d.findings], "diagnose finding")
    _assert_zh([f.fix for f in d.findings], "diagnose fix")
    en = diagnose(events, _steps(), plan=(4000.0, 60.0, 80.0), interruptions_per_hour=0.5)
    assert {f.code for f in en.findings} == codes
    assert all(not _chinese(f.message) for f in en.findings)


def test_diagnose_cli_and_metrics_errors_are_chinese(tmp_path, capsys):
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [{"event": "start"}] + _steps()) + "\n")
    assert main(["--lang", "zh", "diagnose", str(p), "--json"]) in (0, 1)
    d = json.loads(capsys.readouterr().out)
    _assert_zh([f["message"] for f in d["findings"]], "diagnose finding (CLI)")
    assert {f["code"] for f in d["findings"]} >= {"input-bound", "loss-spike"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "start"}\n{"step": 1}\n')
    from trainfit.errors import MetricsError
    from trainfit.metrics_file import load_metrics

    with i18n.language("zh"), pytest.raises(MetricsError) as ei:
        load_metrics(bad)
    _assert_zh([ei.value.message, ei.value.fix], "metrics-file error")


def test_not_traceable_errors_are_chinese():
    from trainfit.trace import check_traceable

    m = get_model("Qwen3-0.6B")
    for wl in (Workload(method="qlora"), Workload(strategy="zero3", gpus=2), Workload(precision="fp16"),
               Workload(gpus=2, tp=2), Workload(strategy="zero2", offload="optimizer", gpus=2)):
        with i18n.language("zh"), pytest.raises(TrainfitError) as ei:
            check_traceable(m, wl)
        assert ei.value.code == "not-traceable"
        _assert_zh([ei.value.message, ei.value.fix], "not-traceable error")


# ------------------------------------------------------------------ caches hold each language's text
def test_memory_cache_gives_each_language_its_text():
    m = get_model("Qwen3-8B")
    wl = Workload(method="full", gpus=4, gpus_per_node=4, strategy="zero3", precision="amp-bf16")
    en1 = estimate_memory(m, wl).assumptions
    with i18n.language("zh"):
        zh = estimate_memory(m, wl).assumptions
        zh_fit = fit_answer(m, wl, 20.0)
    en2 = estimate_memory(m, wl).assumptions
    assert en1 == en2 and len(zh) == len(en1)
    assert all(not _chinese(a) for a in en1) and all(_chinese(a) for a in zh)
    assert estimate_memory(m, wl).reserved_gib == pytest.approx(zh_fit.decision.reserved_gib)
    _assert_zh(zh_fit.decision.reasons, "fit reason")
    assert all(not _chinese(r) for r in fit_answer(m, wl, 20.0).decision.reasons)


def test_state_and_interval_caches_give_each_language_its_text():
    from trainfit.estimate.states import cached_states
    from trainfit.estimate.uncertainty import memory_interval, speed_interval

    m = get_model("Qwen3-8B")
    wl = Workload(gpus=4, gpus_per_node=4, strategy="fsdp", offload="optimizer")
    en = (cached_states(m, wl).notes, memory_interval().note, speed_interval(m, wl, None).note)
    with i18n.language("zh"):
        zh = (cached_states(m, wl).notes, memory_interval().note, speed_interval(m, wl, None).note)
    again = (cached_states(m, wl).notes, memory_interval().note, speed_interval(m, wl, None).note)
    assert en == again
    assert all(_chinese(n) for n in zh[0]) and _chinese(zh[1]) and _chinese(zh[2])
    assert not any(_chinese(n) for n in en[0]) and not _chinese(en[1]) and not _chinese(en[2])


def test_term_labels_and_calibration_line_follow_the_language():
    from trainfit.estimate.calibration import Calibration, calibration_note

    cal = Calibration(gpu="H100-SXM", family="hf", factor=0.9, runs=3, date="2026-12-01", source="probe.json",
                      spread=(0.85, 0.95))
    assert term_label("optimizer") == "optimizer states (+fp32 master)"
    assert calibration_note(["x", cal.line()]) == cal.line()
    with i18n.language("zh"):
        assert _chinese(term_label("optimizer")) and term_label("nope") == "nope"
        line = cal.line()
        assert _chinese(line) and calibration_note(["x", line]) == line  # the translated line is still found
