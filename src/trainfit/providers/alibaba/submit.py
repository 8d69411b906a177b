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
from typing import TYPE_CHECKING

from trainfit.errors import SubmitError, TrainfitError, InputError
from trainfit.i18n import N_, _
from trainfit.providers.alibaba.client import (CREATE_JOB_CRED_FIX, Sdk, classify_create_job, default_credential,
                                               import_sdk, make_config, scrub)
from trainfit import inputs
from trainfit.jobspec.facts import plan_facts
from trainfit._io import read_json_limited
from trainfit.writes import stale_in
from trainfit.providers._net import call_with_deadline
from trainfit.json_types import JSON, JSONLike, JSONObject
from trainfit.providers.registry import DEFAULT_REGION

if TYPE_CHECKING:
    from alibabacloud_credentials.client import Client as CredentialClient
    from alibabacloud_pai_dlc20201203.models import CreateJobResponse

PAI_PIP = "pip install 'trainfit[pai]' (alibabacloud-pai-dlc20201203, alibabacloud-credentials)"
MAX_BODY_BYTES = 65_536
_CRED_FIX = CREATE_JOB_CRED_FIX


#: Where ``submit`` sends a job whose file names no region (and the CLI did not): PAI-DLC's first documented region.


@dataclass(frozen=True, kw_only=True)
class JobTarget:
    """Where a rendered job is meant to run, read from the job file itself: the region of its ``trainfit-plan``
    header line (in ``UserCommand``, which render writes), else of its image registry
    (``dsw-registry-vpc.<region>.cr.aliyuncs.com``) or OSS data source; the workspace and quota the body names;
    the resource class of its header, else Lingjun for an ``ml.*`` spec."""

    region: str | None = None
    region_source: str | None = None
    """An English phrase (a message id: shown with ``i18n.translate``; JSON keeps it as it is)."""
    workspace_id: str | None = None
    resource_id: str | None = None
    resource_class: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"region": self.region, "region_source": self.region_source, "workspace_id": self.workspace_id,
                "resource_id": self.resource_id, "resource_class": self.resource_class}


def job_target(body: JSONObject) -> JobTarget:
    """:class:`JobTarget` of a CreateJob body (see there); every value through the input gate."""
    import re

    def ident(v: JSON, kind: str) -> str | None:
        try:
            return inputs.as_ident(kind, v, kind) if isinstance(v, str) and v.strip() else None
        except InputError:
            return None

    plan: dict = {}
    cmd = body.get("UserCommand")
    for line in (cmd.splitlines()[:40] if isinstance(cmd, str) else ()):
        pf = plan_facts(line.lstrip("#").strip())
        if pf is not None:
            plan = pf
            break
    region, source = ident(plan.get("region"), "region"), N_("the job's trainfit header")
    specs = body.get("JobSpecs") if isinstance(body.get("JobSpecs"), list) else []
    spec = specs[0] if specs and isinstance(specs[0], dict) else {}
    if region is None:
        m = re.search(r"\.([a-z]{2}-[a-z0-9-]+?)\.cr\.aliyuncs\.com", str(spec.get("Image") or ""))
        region, source = (ident(m.group(1), "region"), N_("the job's image registry")) if m else (None, None)
    if region is None:
        sources = body.get("DataSources")
        for d in sources if isinstance(sources, list) else ():  # a hand-edited body may hold anything here
            if not isinstance(d, dict):
                continue
            m = re.search(r"oss-([a-z]{2}-[a-z0-9-]+?)(?:-internal)?\.aliyuncs\.com", str(d.get("Uri") or ""))
            if m:
                region, source = ident(m.group(1), "region"), N_("the job's OSS data source")
                break
    rc = plan.get("resource_class") if isinstance(plan.get("resource_class"), str) else None
    if rc is None and str(spec.get("EcsSpec") or "").startswith("ml."):
        rc = "pai-lingjun"
    return JobTarget(region=region, region_source=source if region else None,
                     workspace_id=ident(body.get("WorkspaceId"), "workspace_id"),
                     resource_id=ident(body.get("ResourceId"), "resource_id"), resource_class=ident(rc, "resource_id"))


def resolve_region(region: str | None, target: JobTarget) -> tuple[str, str]:
    """(region, where it came from): ``--region`` when given, else the job's, else :data:`DEFAULT_REGION`."""
    if region:
        return region, "--region"
    if target.region:
        return target.region, target.region_source or N_("the job file")
    return DEFAULT_REGION, N_("default (the job file names no region)")


@dataclass(frozen=True, kw_only=True)
class SubmitResult:
    sent: bool
    region: str
    endpoint: str
    body: JSONObject
    job_id: str | None = None
    request_id: str | None = None
    region_source: str = "--region"
    """Where the region came from: ``--region``, the job's trainfit header, its image registry, or the default."""
    target: JobTarget | None = None

    def to_dict(self) -> dict[str, JSONLike]:
        return {"sent": self.sent, "region": self.region, "region_source": self.region_source,
                "endpoint": self.endpoint, "job_id": self.job_id, "request_id": self.request_id,
                "job": None if self.target is None else self.target.to_dict(),
                "request": {"method": "POST", "path": "/api/v1/jobs", "body": self.body}}


def load_job(path: str | Path) -> tuple[Path, JSONObject]:
    """The CreateJob body of ``path`` (a ``dlc_job.json`` or a folder holding one)."""
    p = Path(path)
    try:
        is_dir = p.is_dir()
    except OSError as e:  # a name over the file system's limit (ENAMETOOLONG)
        raise SubmitError(_("{path} cannot be read: {error}").format(
            path=str(p)[:80] + ("…" if len(str(p)) > 80 else ""), error=e.strerror or e),
            fix=_("pass dlc_job.json or the folder `trainfit render --target dlc` wrote")) from None
    if is_dir:
        p = p / "dlc_job.json"

    if stale_in(p.parent, p.name):
        raise SubmitError(_("{path} is not one of the files trainfit rendered last into {folder} (its manifest does "
                            "not list it): it is left from an earlier render or was put there by hand").format(
            path=p, folder=p.parent),
            fix=_("render again with --target dlc, or submit a folder that holds only this job"))

    body = read_json_limited(p, max_bytes=MAX_BODY_BYTES, error=SubmitError, what=_("DLC job"),
                             fix=_("pass dlc_job.json or the folder `trainfit render --target dlc` wrote"),
                             too_big_fix=_("shorten UserCommand (move scripts into a code source or mounted file)"))
    if not isinstance(body, dict) or not body.get("JobSpecs") or not body.get("UserCommand"):
        raise SubmitError(_("{path} is not a PAI-DLC CreateJob body (JobSpecs and UserCommand are required)").format(
            path=p), fix=_("regenerate it with `trainfit render --target dlc`"))
    return p, body


_scrub = scrub
_classify = classify_create_job


def _import_sdk() -> Sdk:
    return import_sdk("alibabacloud_pai_dlc20201203", label="PAI-DLC SDK", fix=PAI_PIP)


def _credential():
    return default_credential(error=SubmitError, fix=_CRED_FIX, pip=PAI_PIP, describe=lambda e: _scrub(str(e))[:300])


def submit(path: str | Path, *, region: str | None = None, yes: bool = False, endpoint: str | None = None,
           protocol: str = "https", credential: CredentialClient | None = None, timeout_s: float = 30.0
           ) -> SubmitResult:
    """Dry run (default) or send the job at ``path``; see the module docstring. ``region`` None: the job file's
    (:func:`job_target`), else :data:`DEFAULT_REGION`."""
    _path, body = load_job(path)
    target = job_target(body)
    region, source = resolve_region(region, target)
    region = inputs.as_ident("--region", region, "region")  # part of the API host name
    ep = endpoint or f"pai-dlc.{region}.aliyuncs.com"
    if not yes:
        return SubmitResult(sent=False, region=region, endpoint=ep, body=body, region_source=source, target=target)
    sdk = _import_sdk()
    Client, models = sdk.Client, sdk.models
    cred = credential if credential is not None else _credential()
    config = make_config(sdk, credential=cred, region=region, endpoint=ep, protocol=protocol, timeout_s=timeout_s)

    def send() -> CreateJobResponse:
        client = Client(config)
        return client.create_job(models.CreateJobRequest().from_map(body))

    try:
        resp = call_with_deadline(send, timeout_s=timeout_s,
                                  what=_("PAI-DLC CreateJob in {region}").format(region=region),
                                  fix=_("check the network and endpoint; the job may or may not have been created: "
                                        "look in the PAI console before sending it again"))
    except TrainfitError:
        raise
    except Exception as e:  # the SDK raises Tea/Dara exceptions and transport errors
        raise _classify(e, region, timeout_s) from None
    rb = getattr(resp, "body", None)
    return SubmitResult(sent=True, region=region, endpoint=ep, body=body, job_id=getattr(rb, "job_id", None),
                        request_id=getattr(rb, "request_id", None), region_source=source, target=target)
