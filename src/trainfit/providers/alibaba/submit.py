"""``trainfit submit``: send a rendered PAI-DLC job (``dlc_job.json``) through the official SDK.

Dry run by default: the request is printed (it holds no credentials; the body never does) and nothing is
sent. With ``yes=True`` the body goes through ``alibabacloud_pai_dlc20201203.Client.create_job`` with
credentials from the standard Alibaba Cloud credential chain (``alibabacloud_credentials``: environment
variables, ``~/.alibabacloud/credentials``, ``~/.aliyun/config.json``, ECS RAM role, OIDC...). trainfit
never reads, prints, logs or writes the credentials itself; error messages are scrubbed of anything that
looks like a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainfit.errors import SubmitError, TrainfitError
from trainfit.providers.alibaba.client import (CREATE_JOB_CRED_FIX, Sdk, classify_create_job, default_credential,
                                               import_sdk, make_config, scrub)

PAI_PIP = "pip install 'trainfit[pai]' (alibabacloud-pai-dlc20201203, alibabacloud-credentials)"
MAX_BODY_BYTES = 65_536
_CRED_FIX = CREATE_JOB_CRED_FIX


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
    from trainfit.writes import stale_in

    if stale_in(p.parent, p.name):
        raise SubmitError(f"{p} is not one of the files trainfit rendered last into {p.parent} (its manifest does "
                          "not list it): it is left from an earlier render or was put there by hand",
                          fix="render again with --target dlc, or submit a folder that holds only this job")

    body = read_json_limited(p, max_bytes=MAX_BODY_BYTES, error=SubmitError, what="DLC job",
                             fix="pass dlc_job.json or the folder `trainfit render --target dlc` wrote",
                             too_big_fix="shorten UserCommand (move scripts into a code source or mounted file)")
    if not isinstance(body, dict) or not body.get("JobSpecs") or not body.get("UserCommand"):
        raise SubmitError(f"{p} is not a PAI-DLC CreateJob body (JobSpecs and UserCommand are required)",
                          fix="regenerate it with `trainfit render --target dlc`")
    return p, body


_scrub = scrub
_classify = classify_create_job


def _import_sdk() -> Sdk:
    return import_sdk("alibabacloud_pai_dlc20201203", label="PAI-DLC SDK", fix=PAI_PIP)


def _credential():
    return default_credential(error=SubmitError, fix=_CRED_FIX, pip=PAI_PIP, describe=lambda e: _scrub(str(e))[:300])


def submit(path: str | Path, *, region: str, yes: bool = False, endpoint: str | None = None,
           protocol: str = "https", credential: Any = None, timeout_s: float = 30.0) -> SubmitResult:
    """Dry run (default) or send the job at ``path``; see the module docstring."""
    from trainfit import inputs

    _, body = load_job(path)
    region = inputs.as_ident("--region", region, "region")  # part of the API host name
    ep = endpoint or f"pai-dlc.{region}.aliyuncs.com"
    if not yes:
        return SubmitResult(sent=False, region=region, endpoint=ep, body=body)
    sdk = _import_sdk()
    Client, models = sdk.Client, sdk.models
    cred = credential if credential is not None else _credential()
    config = make_config(sdk, credential=cred, region=region, endpoint=ep, protocol=protocol, timeout_s=timeout_s)
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
