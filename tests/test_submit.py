"""`trainfit submit`: dry run by default; --yes sends through the official SDK to a local HTTP server
(success, quota error, auth error); no secret ever reaches a file, stdout, stderr or a log."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from trainfit.cli import main

FAKE_ID = "LTAI5tFAKEKEYID0123456789"
FAKE_SECRET = "FAKEsecretVALUEdoNotLeak0123456789"
SECRETS = (FAKE_ID, FAKE_SECRET)


class _Handler(BaseHTTPRequestHandler):
    mode = "ok"
    seen: list = []

    def do_POST(self):  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        type(self).seen.append((self.path, dict(self.headers), body))
        if self.mode == "ok":
            code, out = 200, {"JobId": "dlc-test-123", "RequestId": "req-1"}
        elif self.mode == "quota":
            code, out = 400, {"Code": "QuotaExceeded", "Message": "Insufficient quota: GPU quota exceeded",
                              "RequestId": "req-2"}
        else:
            code, out = 403, {"Code": "InvalidAccessKeyId.NotFound", "Message": "Specified access key is not found.",
                              "RequestId": "req-3"}
        data = json.dumps(out).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep the test output quiet
        pass


@pytest.fixture
def server():
    _Handler.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def creds(monkeypatch, tmp_path):
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", FAKE_ID)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", FAKE_SECRET)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    for v in ("ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CREDENTIALS_FILE"):
        monkeypatch.delenv(v, raising=False)
    # alibabacloud_credentials copies these variables into module globals once, at import (possibly
    # earlier in the session, with other values): mirror them there too.
    auth_util = pytest.importorskip("alibabacloud_credentials.utils.auth_util")
    for attr, value in (("environment_access_key_id", FAKE_ID), ("environment_access_key_secret", FAKE_SECRET),
                        ("environment_security_token", None), ("environment_ecs_metadata_disabled", "true"),
                        ("environment_credentials_file", None), ("environment_credentials_uri", None),
                        ("environment_profile_name", None)):
        if hasattr(auth_util, attr):
            monkeypatch.setattr(auth_util, attr, value)


@pytest.fixture
def job_dir(tmp_path):
    out = tmp_path / "job"
    rc = main(["render", "Qwen3-8B", "--method", "lora", "--instance-type", "ecs.gn7i-c8g1.2xlarge", "--spot",
               "--checkpoint-uri", "oss://bkt/ckpt/", "--target", "dlc", "--out", str(out)])
    assert rc == 0
    return out


def _run(args, capsys):
    rc = main(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_dry_run_prints_the_request_and_sends_nothing(job_dir, server, creds, capsys):
    rc, out, err = _run(["submit", str(job_dir)], capsys)
    assert rc == 0 and "dry run" in out and '"JobType": "PyTorchJob"' in out
    assert _Handler.seen == []
    assert not any(s in out + err for s in SECRETS)


@pytest.mark.parametrize("mode,rc_expected,needle", [
    ("ok", 0, "dlc-test-123"), ("quota", 2, "quota"), ("auth", 2, "refused the credentials")])
def test_send_through_the_sdk(job_dir, server, creds, capsys, caplog, mode, rc_expected, needle):
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    pytest.importorskip("alibabacloud_credentials")
    _Handler.mode = mode
    caplog.set_level(logging.DEBUG)
    host, port = server.server_address
    rc, out, err = _run(["submit", str(job_dir / "dlc_job.json"), "--yes", "--region", "cn-hangzhou",
                         "--endpoint", f"{host}:{port}", "--protocol", "http"], capsys)
    assert rc == rc_expected, (out, err)
    assert needle in out + err
    assert "Traceback" not in err
    path, headers, body = _Handler.seen[-1]
    assert path.startswith("/api/v1/jobs")
    sent = json.loads(body)
    assert sent["DisplayName"] == "qwen3-8b-lora" and sent["JobSpecs"][0]["UseSpotInstance"] is True
    assert FAKE_ID in headers.get("Authorization", "")  # signed with the chain's key...
    assert FAKE_SECRET not in json.dumps(headers) and FAKE_SECRET.encode() not in body  # ...never the secret
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for s in SECRETS:
        assert s not in out and s not in err and s not in logs
    for f in job_dir.rglob("*"):
        if f.is_file():
            text = f.read_text(errors="replace")
            assert not any(s in text for s in SECRETS), f


def test_submit_refuses_a_job_check_rejects(tmp_path, creds, capsys):
    body = json.loads((Path(__file__).parent / "fixtures" / "check" / "dlc_lingjun_no_vpc.json").read_text())
    p = tmp_path / "dlc_job.json"
    p.write_text(json.dumps(body))
    rc, out, err = _run(["submit", str(p), "--yes"], capsys)
    assert rc == 2 and "lingjun-needs-vpc" in err


def test_submit_refuses_placeholders_left_in_the_job(tmp_path, server, creds, capsys):
    """A rendered job without --checkpoint-uri keeps oss://REPLACE_ME-bucket/...: `check` warns (it is a draft),
    `submit --yes` must not queue it on the platform; the dry run still shows it."""
    out_dir = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", "lora", "--instance-type", "ecs.gn7i-c8g1.2xlarge", "--spot",
                 "--target", "dlc", "--out", str(out_dir)]) == 0
    capsys.readouterr()
    assert "REPLACE_ME" in (out_dir / "dlc_job.json").read_text()
    _Handler.seen.clear()
    host, port = server.server_address
    rc, out, err = _run(["submit", str(out_dir / "dlc_job.json"), "--yes", "--region", "cn-hangzhou",
                         "--endpoint", f"{host}:{port}", "--protocol", "http"], capsys)
    assert rc == 2 and "placeholder" in err and _Handler.seen == []
    rc, out, err = _run(["submit", str(out_dir / "dlc_job.json"), "--region", "cn-hangzhou"], capsys)
    assert rc == 0 and "dry run" in out


@pytest.mark.parametrize("content,needle", [("{oops", "malformed JSON"), ('{"a": 1}', "not a PAI-DLC")])
def test_bad_job_file(tmp_path, capsys, content, needle):
    p = tmp_path / "dlc_job.json"
    p.write_text(content)
    rc, out, err = _run(["submit", str(p)], capsys)
    assert rc == 2 and needle in err and "Traceback" not in err


def test_no_credentials_is_not_a_refusal():
    """No credentials in the chain is a local failure: 'PAI-DLC refused the credentials (None)' read as if the
    service had been asked."""
    from trainfit.providers.alibaba.client import classify_create_job

    class CredentialException(Exception):
        pass

    err = classify_create_job(CredentialException("unable to load credentials from any of the providers in the "
                                                  "chain"), "cn-hangzhou")
    assert err.message.startswith("no Alibaba Cloud credentials found") and "nothing was submitted" in err.message


def test_submit_takes_the_region_workspace_and_resource_class_from_the_job(tmp_path, server, creds, capsys):
    """Issue 25: a job rendered for cn-wulanchabu (Lingjun) is checked and sent there without --region (it used to
    default to cn-hangzhou and then fail its own region check); its workspace and quota are the job's."""
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    out_dir = tmp_path / "job"
    assert main(["render", "Qwen3-8B", "--method", "lora", "--instance-type", "ml.gu7xf.c96m1600.8-gu108",
                 "--gpu", "H800", "--gpus", "8", "--region", "cn-wulanchabu", "--checkpoint-uri", "oss://bkt/ckpt/",
                 "--workspace-id", "ws-42", "--resource-id", "quota-7", "--vpc-id", "vpc-t", "--vswitch-id", "vsw-t",
                 "--security-group-id", "sg-t", "--target", "dlc", "--out", str(out_dir)]) == 0
    capsys.readouterr()
    rc, out, err = _run(["submit", str(out_dir), "--json"], capsys)
    assert rc == 0, err
    got = json.loads(out)
    assert got["region"] == "cn-wulanchabu" and got["region_source"] == "the job's trainfit header"
    assert got["endpoint"] == "pai-dlc.cn-wulanchabu.aliyuncs.com"
    assert got["job"]["workspace_id"] == "ws-42" and got["job"]["resource_id"] == "quota-7"
    assert got["job"]["resource_class"] == "pai-lingjun"
    assert not [v for v in got["check"]["violations"] if v["rule"] == "region-must-match"]
    host, port = server.server_address
    _Handler.seen.clear()
    _Handler.mode = "ok"
    rc, out, err = _run(["submit", str(out_dir), "--yes", "--endpoint", f"{host}:{port}", "--protocol", "http"],
                        capsys)
    assert rc == 0, err
    assert "cn-wulanchabu" in out and json.loads(_Handler.seen[-1][2])["WorkspaceId"] == "ws-42"
    # an explicit other region still wins, and the region check says the job was rendered elsewhere
    rc, out, err = _run(["submit", str(out_dir), "--region", "cn-hangzhou", "--json"], capsys)
    got = json.loads(out)
    assert got["region"] == "cn-hangzhou" and got["region_source"] == "--region"
    assert [v for v in got["check"]["violations"] if v["rule"] == "region-must-match"]


def test_job_region_falls_back_to_the_image_registry_then_the_default():
    from trainfit.providers.alibaba.submit import DEFAULT_REGION, job_target, resolve_region

    body = {"JobSpecs": [{"EcsSpec": "ecs.gn7i-c8g1.2xlarge",
                          "Image": "dsw-registry-vpc.cn-shanghai.cr.aliyuncs.com/pai/x:1"}], "UserCommand": "true"}
    t = job_target(body)
    assert (t.region, t.region_source, t.resource_class) == ("cn-shanghai", "the job's image registry", None)
    body["JobSpecs"][0]["Image"] = "myimage:1"
    assert resolve_region(None, job_target(body)) == (DEFAULT_REGION, "default (the job file names no region)")
