"""``trainfit watch`` with a stand-in trainer (no torch): notice sources, stop protocol, deadline, exit codes;
checkpoint markers. Nothing here contacts a cloud metadata address: notices come from a file, a 127.0.0.1
server or SIGTERM."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from trainfit.cli import main
from trainfit.errors import WatchError
from trainfit.watch import checkpoint as ck
from trainfit.watch.notice import PROVIDERS, FilePoller, parse_notice_body
from trainfit.watch.runner import WatchConfig

HERE = Path(__file__).resolve().parent
FAKE = str(HERE / "_fake_trainer.py")
SRC = str(HERE.parent.parent / "src")


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINFIT_")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _watch(tmp: Path, *opts: str, trainer: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "trainfit.cli", "watch", "--poll-seconds", "0.02", "--stop-file",
            str(tmp / "stop"), *opts, "--", sys.executable, FAKE, str(tmp / "info.json"), *trainer]


def _info(tmp: Path) -> dict:
    return json.loads((tmp / "info.json").read_text())


def _weights(cp: Path) -> None:
    """A checkpoint folder's weights (a complete marker lists them; a folder without weights is not complete)."""
    cp.mkdir(parents=True, exist_ok=True)
    (cp / "model.safetensors").write_bytes(b"w" * 64)


def _wait_for(path: Path, timeout: float = 30) -> None:
    t0 = time.time()
    while not path.exists():
        assert time.time() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.01)


# --------------------------------------------------------------------------- notice parsing (pure)
def test_provider_table_has_sources_and_the_documented_urls():
    assert PROVIDERS["alibaba"].url == "http://100.100.100.200/latest/meta-data/instance/spot/termination-time"
    assert PROVIDERS["tencent"].url == "http://metadata.tencentyun.com/latest/meta-data/spot/termination-time"
    assert {"aws", "gcp"} <= set(PROVIDERS)
    for src in PROVIDERS.values():
        assert src.source.startswith("https://"), src.provider
        assert src.lead_seconds is None or src.lead_seconds > 0


def test_parse_notice_bodies():
    now = 1_000_000.0
    iso = parse_notice_body("2015-01-05T18:02:00Z", fmt="iso", now=now, lead_seconds=300)
    assert iso == datetime(2015, 1, 5, 18, 2, tzinfo=timezone.utc).timestamp()
    cn = parse_notice_body("2018-08-18 12:05:33", fmt="local+8", now=now, lead_seconds=60)
    assert cn == datetime(2018, 8, 18, 4, 5, 33, tzinfo=timezone.utc).timestamp()  # UTC+8 wall clock
    aws = parse_notice_body('{"action": "terminate", "time": "2017-09-18T08:22:00Z"}', fmt="json-time", now=now,
                            lead_seconds=120)
    assert aws == datetime(2017, 9, 18, 8, 22, tzinfo=timezone.utc).timestamp()
    assert parse_notice_body("TRUE", fmt="bool", now=now, lead_seconds=30) == now + 30
    assert parse_notice_body("FALSE", fmt="bool", now=now, lead_seconds=30) is None
    assert parse_notice_body('{"Events": []}', fmt="azure-events", now=now, lead_seconds=30) is None
    az = parse_notice_body('{"Events": [{"EventType": "Preempt", "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT"}]}',
                           fmt="azure-events", now=now, lead_seconds=30)
    assert az == datetime(2016, 9, 19, 18, 29, 47, tzinfo=timezone.utc).timestamp()
    no_time = parse_notice_body('{"Events": [{"EventType": "Preempt"}]}', fmt="azure-events", now=now,
                                lead_seconds=30)
    assert no_time == now + 30  # no time stated: the documented lead
    assert parse_notice_body("", fmt=None, now=now, lead_seconds=5) is None


def test_file_poller(tmp_path):
    p = FilePoller(str(tmp_path / "n"), lead_seconds=50)
    assert p.poll(100.0) is None
    (tmp_path / "n").write_text("")
    assert p.poll(100.0).deadline_unix == 150.0
    (tmp_path / "n").write_text("2030-01-01T00:00:00Z")
    assert p.poll(100.0).deadline_unix == datetime(2030, 1, 1, tzinfo=timezone.utc).timestamp()


def test_config_validation():
    with pytest.raises(WatchError):
        WatchConfig(command=())
    with pytest.raises(WatchError):
        WatchConfig(command=("x",), providers=("nimbus",))
    with pytest.raises(WatchError):
        WatchConfig(command=("x",), restart_exit_code=0)


# --------------------------------------------------------------------------- the loop
def test_notice_file_stop_ack_exit_143(tmp_path):
    w = subprocess.Popen(_watch(tmp_path, "--notice-file", str(tmp_path / "notice")), env=_env(),
                         stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "info.json")
    time.sleep(0.1)
    (tmp_path / "notice").write_text("")
    _, err = w.communicate(timeout=60)
    assert w.returncode == 143, err
    info = _info(tmp_path)
    assert info["stop_file"] == str(tmp_path / "stop")
    assert info["stopped_at"] and info["request"]["source"] == "notice-file"
    assert "trainer stopped at step" in err


class _Metadata(http.server.BaseHTTPRequestHandler):
    body: str | None = None  # set by the test: None -> 404
    hits = 0

    def do_GET(self):  # noqa: N802
        type(self).hits += 1
        if type(self).body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = type(self).body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def metadata_server():
    _Metadata.body, _Metadata.hits = None, 0
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metadata)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/latest/meta-data/instance/spot/termination-time"
    srv.shutdown()
    srv.server_close()


def test_metadata_url_on_localhost(tmp_path, metadata_server):
    w = subprocess.Popen(_watch(tmp_path, "--metadata-url", metadata_server), env=_env(),
                         stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "info.json")
    time.sleep(0.2)
    assert w.poll() is None and _Metadata.hits > 0  # 404: no notice, still training
    deadline = datetime.now(timezone.utc) + timedelta(minutes=5)
    _Metadata.body = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    _, err = w.communicate(timeout=60)
    assert w.returncode == 143, err
    req = _info(tmp_path)["request"]
    assert req["source"] == "metadata-url"
    assert abs(req["deadline_unix"] - deadline.replace(microsecond=0).timestamp()) < 1


def test_sigterm_is_a_notice(tmp_path):
    w = subprocess.Popen(_watch(tmp_path), env=_env(), stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "info.json")
    w.send_signal(signal.SIGTERM)
    _, err = w.communicate(timeout=60)
    assert w.returncode == 143, err
    assert _info(tmp_path)["request"]["source"] == "sigterm"


def test_deadline_stops_a_trainer_that_ignores_the_request(tmp_path):
    w = subprocess.Popen(_watch(tmp_path, "--notice-file", str(tmp_path / "notice"), "--lead-seconds", "1.5",
                                "--margin-seconds", "0.5", "--kill-grace-seconds", "0.5",
                                trainer=("--ignore-stop", "--steps", "100000")),
                         env=_env(), stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "info.json")
    pgid = _info(tmp_path)["pgid"]
    t0 = time.time()
    (tmp_path / "notice").write_text("")
    _, err = w.communicate(timeout=60)
    took = time.time() - t0
    assert w.returncode == 143, err
    assert took < 5, took  # 1.5 s lead - 0.5 s margin, then SIGTERM
    assert "deadline reached" in err
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # the trainer's whole group is gone


@pytest.mark.parametrize("code", [0, 3])
def test_exit_code_passes_through_without_notice(tmp_path, code):
    r = subprocess.run(_watch(tmp_path, trainer=("--steps", "2", "--exit", str(code))), env=_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == code, r.stderr


def test_killed_trainer_reports_128_plus_signal(tmp_path):
    w = subprocess.Popen(_watch(tmp_path, trainer=("--steps", "100000")), env=_env(), stderr=subprocess.PIPE,
                         text=True)
    _wait_for(tmp_path / "info.json")
    os.killpg(_info(tmp_path)["pgid"], signal.SIGKILL)
    w.communicate(timeout=60)
    assert w.returncode == 128 + signal.SIGKILL


def test_stale_stop_file_is_removed_and_resume_exported(tmp_path):
    (tmp_path / "stop").write_text("{}")  # left over from the previous launch
    (tmp_path / "stop.ack").write_text("{}")
    out = tmp_path / "out"
    for step in (2, 4):
        _weights(out / f"checkpoint-{step}")
        ck.mark_complete(out / f"checkpoint-{step}", step=step)
    ck.mark_saving(out / "checkpoint-6", step=6)
    r = subprocess.run(_watch(tmp_path, "--checkpoint-dir", str(out), trainer=("--steps", "3")), env=_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # the stale stop file did not stop it
    assert _info(tmp_path)["stopped_at"] is None
    assert _info(tmp_path)["resume_from"] == str(out / "checkpoint-4")
    assert not (out / "checkpoint-6").exists()
    assert any(p.name.startswith("incomplete-checkpoint-6-") for p in out.iterdir())


def test_cli_without_command_is_a_clear_error(capsys):
    assert main(["watch", "--"]) == 2
    assert "no training command" in capsys.readouterr().err


# --------------------------------------------------------------------------- checkpoints
def test_latest_complete_checkpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAINFIT_RESUME_FROM", raising=False)
    assert ck.latest_complete_checkpoint(tmp_path / "missing") is None
    for step in (9, 10):
        _weights(tmp_path / f"checkpoint-{step}")
        ck.mark_complete(tmp_path / f"checkpoint-{step}", step=step)
    ck.mark_saving(tmp_path / "checkpoint-12", step=12)  # killed mid-save
    (tmp_path / "checkpoint-11").mkdir()  # written without trainfit: skipped, never renamed
    ck.mark_saving(tmp_path / "checkpoint-15", step=15)
    _weights(tmp_path / "checkpoint-15")
    ck.mark_complete(tmp_path / "checkpoint-15", step=15)  # save finished: the saving marker is gone
    (tmp_path / "checkpoint-20").write_text("a file, not a checkpoint")
    assert ck.latest_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-15"
    assert not (tmp_path / "checkpoint-15" / ck.SAVING_MARKER).exists()
    assert (tmp_path / "checkpoint-12").exists()  # not marked without mark_incomplete
    assert ck.latest_complete_checkpoint(tmp_path, mark_incomplete=True) == tmp_path / "checkpoint-15"
    assert not (tmp_path / "checkpoint-12").exists() and (tmp_path / "checkpoint-11").exists()
    assert ck.resume_from(tmp_path) == str(tmp_path / "checkpoint-15")
    monkeypatch.setenv("TRAINFIT_RESUME_FROM", "")
    assert ck.resume_from(tmp_path) is None  # watch decided: start fresh
    monkeypatch.setenv("TRAINFIT_RESUME_FROM", str(tmp_path / "checkpoint-10"))
    assert ck.resume_from(tmp_path) == str(tmp_path / "checkpoint-10")


def test_core_does_not_import_torch_or_prometheus():
    heavy = ("torch", "transformers", "prometheus_client", "pandas")
    code = ("import sys; from trainfit.cli import build_parser; build_parser(); "
            "import trainfit.watch, trainfit.watch.runner, trainfit.watch.monitoring, trainfit.diagnose; "
            f"bad=[m for m in {heavy!r} if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr


def test_hf_callback_hook_is_installed_and_chains_the_shadowed_sitecustomize(tmp_path):
    from trainfit.integrations.hf_autoload import AUTOLOAD_DIR

    other = tmp_path / "site"
    other.mkdir()
    (other / "sitecustomize.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([AUTOLOAD_DIR, str(other), env["PYTHONPATH"]])
    code = ("import sys; from trainfit.integrations.hf_autoload import _TrainerHook; "
            "ok = any(isinstance(f, _TrainerHook) for f in sys.meta_path); "
            "heavy = 'transformers' in sys.modules; sys.exit(0 if ok and not heavy else 1)")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ran").exists()  # the sitecustomize we shadow still ran


def test_sigterm_after_a_notice_moves_the_deadline_earlier(tmp_path):
    w = subprocess.Popen(_watch(tmp_path, "--notice-file", str(tmp_path / "notice"), "--lead-seconds", "600",
                                "--sigterm-lead-seconds", "1", "--margin-seconds", "0.2", "--kill-grace-seconds",
                                "0.5", trainer=("--ignore-stop", "--steps", "100000")),
                         env=_env(), stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "info.json")
    (tmp_path / "notice").write_text("")
    _wait_for(tmp_path / "stop")
    t0 = time.time()
    w.send_signal(signal.SIGTERM)
    _, err = w.communicate(timeout=60)
    assert w.returncode == 143, err
    assert time.time() - t0 < 5 and "deadline moves" in err  # not the notice's 600 s


def test_render_wires_watch_and_monitoring(tmp_path):
    """`render` wraps the launch line in `trainfit watch` (when installed), resumes only from a complete checkpoint,
    and `--target monitoring` writes a Prometheus scrape config and a Grafana dashboard that parse."""
    import json
    import subprocess

    import yaml

    from trainfit.cli import main

    out = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "--target", "torchrun,monitoring",
                 "--out", str(out)]) == 0
    text = (out / "launch.sh").read_text()
    assert "$WATCH torchrun" in text and "trainfit watch --checkpoint-dir" in text and "--hf-callback" in text
    assert "trainfit-complete.json" in text
    assert subprocess.run(["bash", "-n", str(out / "launch.sh")]).returncode == 0
    assert yaml.safe_load((out / "prometheus-scrape.yaml").read_text())
    assert json.loads((out / "grafana-dashboard.json").read_text())["panels"]
    # resume picks the newest complete checkpoint, skipping one whose save never finished
    ck = tmp_path / "ck"
    for step, marker in ((100, "trainfit-complete.json"), (200, "trainfit-saving.json")):
        (ck / f"checkpoint-{step}").mkdir(parents=True)
        (ck / f"checkpoint-{step}" / marker).write_text("{}")
    start = text.index("RESUME=\"\"")
    end = text.index("WATCH=\"\"")
    snippet = f"CKPT_DIR={ck}\n" + text[start:end] + 'echo "$RESUME"\n'
    r = subprocess.run(["sh", "-c", snippet], capture_output=True, text=True)
    assert r.stdout.strip() == f"--resume_from_checkpoint {ck}/checkpoint-100"
