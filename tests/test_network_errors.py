"""Network calls have a total deadline and network failures are named as such (never "quota/stock").
Every server here is a local 127.0.0.1 socket."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from trainfit.cli import main
from trainfit.errors import NetworkError

FAKE_ID, FAKE_SECRET = "LTAI5tFAKEFAKEFAKE0000", "fakeSecretFakeSecretFake0000"


@pytest.fixture
def creds(monkeypatch, tmp_path):
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", FAKE_ID)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", FAKE_SECRET)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    auth_util = pytest.importorskip("alibabacloud_credentials.utils.auth_util")
    for attr, value in (("environment_access_key_id", FAKE_ID), ("environment_access_key_secret", FAKE_SECRET),
                        ("environment_security_token", None), ("environment_ecs_metadata_disabled", "true")):
        if hasattr(auth_util, attr):
            monkeypatch.setattr(auth_util, attr, value)


@pytest.fixture
def job(tmp_path):
    out = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", "lora", "--instance-type", "ecs.gn7i-c8g1.2xlarge",
                 "--checkpoint-uri", "oss://bkt/ckpt/", "--target", "dlc", "--out", str(out)]) == 0
    return out / "dlc_job.json"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def trickle():
    """A server that answers HTTP headers, then one body byte every 0.2 s, forever (each read succeeds, so
    per-read socket timeouts never fire)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def serve(conn):
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while not stop.is_set():
                conn.sendall(b" ")
                time.sleep(0.2)
        except OSError:
            pass
        finally:
            conn.close()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    srv.close()


def test_submit_network_down_is_a_network_error_not_quota(job, creds, capsys):
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    rc = main(["submit", str(job), "--yes", "--no-check", "--endpoint", f"127.0.0.1:{_closed_port()}",
               "--protocol", "http", "--timeout", "5"])
    err = capsys.readouterr().err
    assert rc == 2 and "network error" in err and "quota" not in err and "Traceback" not in err


def test_submit_trickling_server_is_cut_off_at_the_deadline(job, creds, capsys, trickle):
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    t = time.monotonic()
    rc = main(["submit", str(job), "--yes", "--no-check", "--endpoint", trickle, "--protocol", "http",
               "--timeout", "1"])
    took = time.monotonic() - t
    err = capsys.readouterr().err
    assert rc == 2 and "timed out" in err and took < 4, (took, err)


def test_refresh_trickling_server_is_cut_off_at_the_deadline(creds, trickle):
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    from trainfit.providers.alibaba.refresh import refresh

    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        refresh("pai", "cn-hangzhou", endpoint=trickle, protocol="http", timeout_s=1)
    assert "timed out" in ei.value.message and time.monotonic() - t < 4


@pytest.mark.parametrize("text", [
    "HTTPConnectionPool(host='pai-dlc.cn-hangzhou.aliyuncs.com', port=443): Max retries exceeded with url: /api/v1/jobs "
    "(Caused by NewConnectionError: Failed to establish a new connection: [Errno 111] Connection refused)",
    "[Errno -3] Temporary failure in name resolution",
])
def test_transport_messages_are_network_errors(text):
    from trainfit.providers.alibaba.submit import _classify

    err = _classify(Exception(text), "cn-hangzhou")
    assert isinstance(err, NetworkError) and "quota" not in err.message.split(":")[0]


def test_a_quota_answer_is_still_quota():
    from trainfit.providers.alibaba.submit import _classify

    class Answer(Exception):
        code = "QuotaExceeded.GPU"
        status_code = 400
        message = "GPU quota exceeded in this resource group"

    err = _classify(Answer("x"), "cn-hangzhou")
    assert not isinstance(err, NetworkError) and "quota/stock" in err.message


def test_deadline_helper():
    from trainfit.providers._net import call_with_deadline

    assert call_with_deadline(lambda: 7, timeout_s=1, what="x") == 7
    with pytest.raises(NetworkError):
        call_with_deadline(lambda: time.sleep(5), timeout_s=0.2, what="slow call")
    with pytest.raises(ZeroDivisionError):
        call_with_deadline(lambda: 1 / 0, timeout_s=1, what="x")


@pytest.mark.parametrize("argv", [
    ["catalog", "refresh", "--provider", "pai", "--region", "cn-hangzhou", "--timeout", "nan"],
    ["catalog", "refresh", "--provider", "pai", "--region", "cn-hangzhou", "--timeout", "inf"],
    ["catalog", "refresh", "--provider", "pai", "--region", "evil.example/x"],
    ["catalog", "refresh", "--provider", "pai", "--region", "cn-hangzhou\nx"],
])
def test_refresh_options_pass_the_gate_before_any_network(argv, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and ("--timeout" in err or "--region" in err)


def test_submit_region_is_part_of_the_host_name_and_is_checked(job, capsys):
    rc = main(["submit", str(job), "--region", "evil.example/x"])
    assert rc == 2 and "--region" in capsys.readouterr().err


def test_ecs_refresh_trickling_server_is_cut_off_at_the_total_deadline(creds, trickle):
    pytest.importorskip("alibabacloud_ecs20140526")
    from trainfit.providers.alibaba.ecs_refresh import refresh_ecs

    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        refresh_ecs("cn-hangzhou", endpoint=trickle, protocol="http", timeout_s=5, total_timeout_s=1)
    assert "timed out" in ei.value.message and time.monotonic() - t < 4
