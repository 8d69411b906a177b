"""TrainfitCallback in a real (tiny, CPU) HF Trainer run: metrics JSONL, the Prometheus endpoint scraped
over 127.0.0.1 and parsed with prometheus_client's parser, complete-checkpoint markers, and diagnose telling
an input-bound run from a healthy one."""

from __future__ import annotations

import json
import urllib.request

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _train_tiny import Synthetic, build_model  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from trainfit.diagnose import diagnose, load_metrics  # noqa: E402
from trainfit.integrations.hf import TrainfitCallback  # noqa: E402
from trainfit.watch.checkpoint import COMPLETE_MARKER, SAVING_MARKER  # noqa: E402


def _train(tmp_path, cb, *, steps=8, slow_s=0.0, save_steps=4, workers=0):
    torch.set_num_threads(1)
    args = TrainingArguments(output_dir=str(tmp_path / "ckpt"), max_steps=steps, per_device_train_batch_size=4,
                             learning_rate=1e-3, save_strategy="steps", save_steps=save_steps, logging_steps=1,
                             report_to=[], use_cpu=True, seed=0, dataloader_num_workers=workers,
                             disable_tqdm=True)
    trainer = Trainer(model=build_model("dense"), args=args, train_dataset=Synthetic(slow_s), callbacks=[cb])
    trainer.train()
    return trainer


def test_prometheus_endpoint_and_jsonl(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAINFIT_STOP_FILE", raising=False)
    prom = pytest.importorskip("prometheus_client.parser")
    cb = TrainfitCallback(metrics_path=tmp_path / "m.jsonl", prometheus_port=0, prometheus_addr="127.0.0.1",
                          flops_per_token=6 * 1e5, peak_tflops_per_gpu=1.0)
    try:
        _train(tmp_path, cb)
        assert cb.prometheus_port
        with urllib.request.urlopen(f"http://127.0.0.1:{cb.prometheus_port}/metrics", timeout=10) as r:
            text = r.read().decode()
    finally:
        cb.close()
    fams = {f.name: f for f in prom.text_string_to_metric_families(text)}
    value = {name: fams[name].samples[0].value for name in fams if fams[name].samples}
    from trainfit.watch.metrics import METRICS

    assert {m.prom_name for m in METRICS if m.prom_name} <= set(fams)  # every gauge is exposed (GPU ones empty)
    lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    steps = [x for x in lines if "step" in x]
    assert lines[0]["event"] == "start" and [s["step"] for s in steps] == list(range(1, 9))
    last = steps[-1]
    assert value["trainfit_step"] == 8
    for key, name in (("loss", "trainfit_loss"), ("grad_norm", "trainfit_grad_norm"),
                      ("learning_rate", "trainfit_learning_rate"), ("tokens_per_s", "trainfit_tokens_per_second"),
                      ("data_wait_seconds", "trainfit_data_wait_seconds"), ("mfu", "trainfit_mfu_ratio")):
        assert value[name] == pytest.approx(last[key], rel=1e-9), name
    assert fams["trainfit_loss"].samples[0].labels == {"rank": "0"}
    for s in steps:
        assert s["tokens"] == 4 * 16  # batch 4 x 16 tokens, counted through num_input_tokens_seen
        assert s["step_seconds"] == pytest.approx(s["data_wait_seconds"] + s["compute_seconds"])
        assert s["mfu"] == pytest.approx(s["tokens_per_s"] * 6e5 / 1e12)
    assert [s["step"] for s in steps if "save_seconds" in s] == [4, 8]
    for step in (4, 8):
        cp = tmp_path / "ckpt" / f"checkpoint-{step}"
        assert json.loads((cp / COMPLETE_MARKER).read_text())["step"] == step
        assert not (cp / SAVING_MARKER).exists()
    assert not cb.stopped


def test_slow_dataloader_is_input_bound_and_healthy_run_is_clean(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAINFIT_STOP_FILE", raising=False)
    slow = TrainfitCallback(metrics_path=tmp_path / "slow.jsonl")
    _train(tmp_path / "s", slow, steps=6, slow_s=0.01, save_steps=100)  # 4 samples x 10 ms per step
    d = diagnose(*load_metrics(tmp_path / "slow.jsonl"))
    f = next((f for f in d.findings if f.code == "input-bound"), None)
    assert f is not None and f.severity == "critical", [x.to_dict() for x in d.findings]
    assert f.data["data_wait_fraction"] >= 0.2

    fast = TrainfitCallback(metrics_path=tmp_path / "fast.jsonl")
    _train(tmp_path / "f", fast, steps=12, save_steps=100)
    d = diagnose(*load_metrics(tmp_path / "fast.jsonl"))
    assert [x.to_dict() for x in d.findings if x.severity != "info"] == []
    assert d.summary["data_wait_fraction"] < 0.10


def test_stop_file_stops_at_the_step_boundary(tmp_path, monkeypatch):
    stop = tmp_path / "stop"
    monkeypatch.setenv("TRAINFIT_STOP_FILE", str(stop))

    class StopAt3(TrainfitCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 3:
                stop.write_text("{}")
            return super().on_step_end(args, state, control, **kw)

    cb = StopAt3(metrics_path=tmp_path / "m.jsonl")
    with pytest.raises(SystemExit) as e:
        _train(tmp_path, cb, steps=8, save_steps=100)
    assert e.value.code == 143 and cb.stopped
    assert json.loads((tmp_path / "stop.ack").read_text())["step"] == 3
    assert (tmp_path / "ckpt" / "checkpoint-3" / COMPLETE_MARKER).exists()
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["checkpoint-3"]
