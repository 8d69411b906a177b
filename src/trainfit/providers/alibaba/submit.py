"""``trainfit submit``: send a rendered PAI-DLC job (``dlc_job.json``) through the official SDK.

Dry run by default: the request is printed (it holds no credentials; the body never does) and nothing is
sent. With ``yes=True`` the body goes through ``alibabacloud_pai_dlc20201203.Client.create_job`` with
credentials from the standard Alibaba Cloud credential chain (``alibabacloud_credentials``: environment
variables, ``~/.alibabacloud/credentials``, ``~/.aliyun/config.json``, ECS RAM role, OIDC...). trainfit
never reads, prints, logs or writes the credentials itself; error messages are scrubbed of anything that
looks like a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainfit.errors import MissingExtraError, SubmitError, TrainfitError

PAI_PIP = "pip install 'trainfit[pai]' (alibabacloud-pai-dlc20201203, alibabacloud-credentials)"
MAX_BODY_BYTES = 65_536
_CRED_FIX = ("set ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET, or run `aliyun configure`, "
             "or use an ECS RAM role; the key needs paidlc:CreateJob")


@dataclass(frozen=True, kw_only=True)
class SubmitResult:
    sent: bool
    region: str
    endpoint: str
    body: dict[str, Any]
    job_id: str | None = None
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"sent": self.sent, "region": self.region, "endpoint": self.endpoint, "job_id": self.job_id,
                "request_id": self.request_id, "request": {"method": "POST", "path": "/api/v1/jobs",
                                                           "body": self.body}}


def load_job(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The CreateJob body of ``path`` (a ``dlc_job.json`` or a folder holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "dlc_job.json"
    from trainfit._io import read_json_limited

    body = read_json_limited(p, max_bytes=MAX_BODY_BYTES, error=SubmitError, what="DLC job",
                             fix="pass dlc_job.json or the folder `trainfit render --target dlc` wrote",
                             too_big_fix="shorten UserCommand (move scripts into a code source or mounted file)")
    if not isinstance(body, dict) or not body.get("JobSpecs") or not body.get("UserCommand"):
        raise SubmitError(f"{p} is not a PAI-DLC CreateJob body (JobSpecs and UserCommand are required)",
                          fix="regenerate it with `trainfit render --target dlc`")
    return p, body


def _scrub(text: str) -> str:
    """Remove anything shaped like an AccessKey id/secret or STS token from a message."""
    text = re.sub(r"LTAI[0-9A-Za-z]{8,}", "<redacted>", text)
    text = re.sub(r"(?i)(access_?key_?(id|secret)|secret|token|signature)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",&]+",
                  r"\1\3<redacted>", text)
    return text


def _import_sdk():
    try:
        from alibabacloud_pai_dlc20201203 import models
        from alibabacloud_pai_dlc20201203.client import Client
        from alibabacloud_tea_openapi.utils_models import Config
    except ImportError as e:
        raise MissingExtraError(f"the PAI-DLC SDK is not installed ({e.name})", fix=PAI_PIP) from None
    return Client, models, Config


def _credential():
    try:
        from alibabacloud_credentials.client import Client as CredentialClient
    except ImportError as e:
        raise MissingExtraError(f"alibabacloud-credentials is not installed ({e.name})", fix=PAI_PIP) from None
    try:
        return CredentialClient()
    except Exception as e:  # the chain raises its own exception types
        raise SubmitError(f"no Alibaba Cloud credentials found: {_scrub(str(e))[:300]}", fix=_CRED_FIX) from None


def _classify(e: Exception, region: str, timeout_s: float = 30.0) -> TrainfitError:
    """What went wrong, in words: credentials, the network (never reported as quota), quota/stock, or another
    refusal of the service."""
    from trainfit.errors import NetworkError
    from trainfit.providers._net import network_failure, server_status

    code = str(getattr(e, "code", "") or "")
    status = server_status(e)
    msg = _scrub(str(getattr(e, "message", "") or e))[:400]
    low = (code + " " + msg).lower()
    if status in (401, 403) or any(k in low for k in ("invalidaccesskey", "signaturedoesnotmatch", "forbidden",
                                                      "nopermission", "unauthorized", "credential")):
        return SubmitError(f"PAI-DLC refused the credentials ({code or status}): {msg}", fix=_CRED_FIX)
    if network_failure(e):
        return NetworkError(f"could not reach PAI-DLC in {region} (network error, nothing was submitted): "
                            f"{type(e).__name__}: {msg}",
                            fix="check the network, proxy, region and --endpoint; retry later")
    answered = status is not None or bool(code)
    if answered and any(k in low for k in ("quota", "insufficient", "stock", "exceeded the limit", "limitexceeded",
                                           "quotaexceeded")):
        return SubmitError(f"PAI-DLC rejected the job for quota/stock ({code or status}): {msg}",
                           fix="use a resource quota (--resource-id), fewer GPUs, another region or spot; "
                               "public resources allow 2 GPUs per job unless raised")
    if status is not None and int(status) >= 400 or code:
        return SubmitError(f"PAI-DLC CreateJob failed in {region} ({code or status}): {msg}",
                           fix="run `trainfit check dlc_job.json` and fix what it lists")
    return SubmitError(f"PAI-DLC CreateJob in {region} failed: {type(e).__name__}: {msg}",
                       fix="check the network, region and endpoint")


def submit(path: str | Path, *, region: str, yes: bool = False, endpoint: str | None = None,
           protocol: str = "https", credential: Any = None, timeout_s: float = 30.0) -> SubmitResult:
    """Dry run (default) or send the job at ``path``; see the module docstring."""
    from trainfit import inputs

    _, body = load_job(path)
    region = inputs.as_ident("--region", region, "region")  # part of the API host name
    ep = endpoint or f"pai-dlc.{region}.aliyuncs.com"
    if not yes:
        return SubmitResult(sent=False, region=region, endpoint=ep, body=body)
    Client, models, Config = _import_sdk()
    cred = credential if credential is not None else _credential()
    ms = int(timeout_s * 1000)
    config = Config(credential=cred, region_id=region, endpoint=ep, protocol=protocol, read_timeout=ms,
                    connect_timeout=ms)
    from trainfit.providers._net import call_with_deadline

    def send() -> Any:
        client = Client(config)
        return client.create_job(models.CreateJobRequest().from_map(body))

    try:
        resp = call_with_deadline(send, timeout_s=timeout_s, what=f"PAI-DLC CreateJob in {region}",
                                  fix="check the network and endpoint; the job may or may not have been created: "
                                      "look in the PAI console before sending it again")
    except TrainfitError:
        raise
    except Exception as e:  # the SDK raises Tea/Dara exceptions and transport errors
        raise _classify(e, region, timeout_s) from None
    rb = getattr(resp, "body", None)
    return SubmitResult(sent=True, region=region, endpoint=ep, body=body, job_id=getattr(rb, "job_id", None),
                        request_id=getattr(rb, "request_id", None))
