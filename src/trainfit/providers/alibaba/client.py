"""The Alibaba Cloud SDK plumbing shared by ``catalog refresh --provider pai`` (:mod:`.refresh`), ``--provider
ecs`` (:mod:`.ecs_refresh`) and ``trainfit submit`` (:mod:`.submit`), in one place:

* :func:`import_sdk`: the official product SDK (``alibabacloud_pai_dlc20201203``, ``alibabacloud_ecs20140526``)
  plus ``Config`` and ``RuntimeOptions``, or a :class:`~trainfit.errors.MissingExtraError` naming the extra;
* :func:`default_credential`: the standard Alibaba Cloud credential chain (``alibabacloud_credentials`` default
  client: environment variables, ``~/.alibabacloud/credentials``, ``~/.aliyun/config.json``, ECS RAM role,
  OIDC...). trainfit never reads, prints or stores the credentials itself;
* :func:`make_config` / :func:`runtime_options`: region, endpoint, protocol and millisecond timeouts;
* the error classification of PAI-DLC calls: :func:`classify_list_specs` (a refresh: failures are
  :class:`~trainfit.errors.CatalogError`) and :func:`classify_create_job` (a submit:
  :class:`~trainfit.errors.SubmitError`); the service not reached or not answering in time is a
  :class:`~trainfit.errors.NetworkError` in both. ECS calls use :func:`trainfit.providers._refresh_common.classify`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Callable

from trainfit.errors import CatalogError, MissingExtraError, SubmitError, TrainfitError, NetworkError
from trainfit.i18n import N_, _, translate
from trainfit.providers._refresh_common import short
from trainfit.providers._net import network_failure, server_status

if TYPE_CHECKING:
    from alibabacloud_credentials.client import Client as CredentialClient
    from alibabacloud_tea_openapi.client import Client as OpenApiClient
    from alibabacloud_tea_openapi.utils_models import Config
    from darabonba.runtime import RuntimeOptions

PAI_PIP = "pip install 'trainfit[pai]'"
# message ids (English), shown with i18n.translate where an error is raised
PAI_READ_CRED_FIX = N_("set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET, or configure "
                       "~/.alibabacloud/credentials (`aliyun configure`); the key needs PAI-DLC read access")
ECS_READ_CRED_FIX = N_("set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET, or configure "
                       "~/.alibabacloud/credentials (`aliyun configure`); the key needs ECS read access "
                       "(ecs:Describe*)")
CREATE_JOB_CRED_FIX = N_("set ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET, or run `aliyun "
                         "configure`, or use an ECS RAM role; the key needs paidlc:CreateJob")


@dataclass(frozen=True, kw_only=True)
class Sdk:
    """The pieces of one official Alibaba Cloud product SDK."""

    Client: type[OpenApiClient]
    """The product's ``client.Client`` class."""
    models: ModuleType
    """The product's ``models`` module (request classes)."""
    Config: type[Config]
    """``alibabacloud_tea_openapi.utils_models.Config``."""
    RuntimeOptions: type[RuntimeOptions]
    """``darabonba.runtime.RuntimeOptions``."""


def import_sdk(package: str, *, label: str, fix: str = PAI_PIP) -> Sdk:
    """``package`` (e.g. ``alibabacloud_pai_dlc20201203``) or a MissingExtraError "the <label> is not installed"."""
    try:
        models = importlib.import_module(f"{package}.models")
        client = importlib.import_module(f"{package}.client")
        from alibabacloud_tea_openapi.utils_models import Config
        from darabonba.runtime import RuntimeOptions
    except ImportError as e:
        raise MissingExtraError(_("the {label} is not installed ({module})").format(label=label, module=e.name),
                                fix=translate(fix)) from None
    return Sdk(Client=client.Client, models=models, Config=Config, RuntimeOptions=RuntimeOptions)


def default_credential(*, error: type[TrainfitError] = CatalogError, fix: str, pip: str = PAI_PIP,
                       describe: Callable[[BaseException], str] = short) -> CredentialClient:
    """A client of the default credential chain; ``error`` (with ``fix``) when the chain finds nothing."""
    try:
        from alibabacloud_credentials.client import Client as CredentialClient
    except ImportError as e:
        raise MissingExtraError(_("alibabacloud-credentials is not installed ({module})").format(module=e.name),
                                fix=translate(pip)) from None
    try:
        return CredentialClient()  # the default credential chain
    except Exception as e:  # noqa: BLE001 - the chain raises its own types
        raise error(_("no Alibaba Cloud credentials found: {error}").format(error=describe(e)),
                    fix=translate(fix)) from None


def make_config(sdk: Sdk, *, credential: CredentialClient, region: str, endpoint: str | None, protocol: str,
                timeout_s: float) -> Config:
    """The SDK ``Config``: connect and read timeouts of ``timeout_s`` each; no endpoint key when ``endpoint`` is
    None (the SDK then picks the region's endpoint)."""
    ms = int(timeout_s * 1000)
    cfg: dict[str, CredentialClient | str | int] = dict(credential=credential, region_id=region, protocol=protocol, read_timeout=ms,
                               connect_timeout=ms)
    if endpoint:
        cfg["endpoint"] = endpoint
    return sdk.Config(**cfg)


def runtime_options(sdk: Sdk, ms: int, **extra: int) -> RuntimeOptions:
    """Per-call runtime options without the SDK's automatic retries."""
    return sdk.RuntimeOptions(autoretry=False, read_timeout=ms, connect_timeout=ms, **extra)


def scrub(text: str) -> str:
    """Remove anything shaped like an AccessKey id/secret or STS token from a message."""
    text = re.sub(r"LTAI[0-9A-Za-z]{8,}", "<redacted>", text)
    text = re.sub(r"(?i)(access_?key_?(id|secret)|secret|token|signature)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",&]+",
                  r"\1\3<redacted>", text)
    return text


# ------------------------------------------------------------------------------------ classification

def classify_list_specs(e: BaseException, region: str, timeout_s: float) -> TrainfitError:
    """The error for an exception of PAI-DLC ``ListEcsSpecs``: NetworkError when the service was not reached or
    did not answer in time, else CatalogError."""
    api = _("PAI-DLC ListEcsSpecs in {region}").format(region=region)
    code = str(getattr(e, "code", "") or "")
    status = getattr(e, "status_code", None)
    text = short(e)
    low = (code + " " + text).lower()
    if "unable to load credentials" in low or "credentialexception" in type(e).__name__.lower():
        return CatalogError(_("no Alibaba Cloud credentials found for {api}: {error}").format(api=api, error=text),
                            fix=translate(PAI_READ_CRED_FIX))
    if status in (401, 403) or any(k in low for k in ("accesskey", "signature", "forbidden", "unauthorized",
                                                         "noauth", "nopermission", "credential", "sts token")):
        return CatalogError(_("{api} refused the credentials ({code}): {error}").format(
            api=api, code=code or status, error=text), fix=translate(PAI_READ_CRED_FIX))
    if "timed out" in low or "timeout" in low:
        return NetworkError(_("{api} timed out after {timeout_s:g} s (network error; the cache was left as it "
                              "was)").format(api=api, timeout_s=timeout_s),
                            fix=_("check the network/proxy or retry with a larger --timeout"))
    if "parse" not in low and network_failure(e):
        return NetworkError(_("could not reach {api} (network error; the cache was left as it was): {error}").format(
            api=api, error=f"{type(e).__name__}: {text}"), fix=_("check the network, proxy, region id and --endpoint"))
    if "parse" in low and "json" in low:
        return CatalogError(_("{api} answered something that is not JSON: {error}").format(api=api, error=text),
                            fix=_("check --endpoint/proxy settings; the cache was left as it was"))
    if status is not None or code:
        return CatalogError(_("{api} failed ({code}): {error}").format(api=api, code=code or status, error=text),
                            fix=_("check the region id (e.g. cn-hangzhou, cn-wulanchabu) and the endpoint"))
    return CatalogError(_("{api} failed: {error}").format(api=api, error=f"{type(e).__name__}: {text}"),
                        fix=_("check the network, region id and endpoint; the cache was left as it was"))


_QUOTA_WORDS = ("quota", "insufficient", "stock", "exceeded the limit", "limitexceeded", "quotaexceeded")


def classify_create_job(e: Exception, region: str, timeout_s: float = 30.0) -> TrainfitError:
    """What went wrong with PAI-DLC ``CreateJob``, in words: credentials, the network (a NetworkError, never
    reported as quota), quota/stock, or another refusal of the service (SubmitError)."""
    code = str(getattr(e, "code", "") or "")
    status = server_status(e)
    msg = scrub(str(getattr(e, "message", "") or e))[:400]
    low = (code + " " + msg).lower()
    if "unable to load credentials" in low or "credentialexception" in type(e).__name__.lower():
        return SubmitError(_("no Alibaba Cloud credentials found (nothing was submitted): {error}").format(error=msg),
                           fix=translate(CREATE_JOB_CRED_FIX))
    if status in (401, 403) or any(k in low for k in ("invalidaccesskey", "signaturedoesnotmatch", "forbidden",
                                                      "nopermission", "unauthorized", "credential")):
        return SubmitError(_("PAI-DLC refused the credentials ({code}): {error}").format(code=code or status,
                                                                                       error=msg),
                           fix=translate(CREATE_JOB_CRED_FIX))
    if network_failure(e):
        return NetworkError(_("could not reach PAI-DLC in {region} (network error, nothing was submitted): "
                              "{error}").format(region=region, error=f"{type(e).__name__}: {msg}"),
                            fix=_("check the network, proxy, region and --endpoint; retry later"))
    answered = status is not None or bool(code)
    if answered and any(k in low for k in _QUOTA_WORDS):
        return SubmitError(_("PAI-DLC rejected the job for quota/stock ({code}): {error}").format(code=code or status,
                                                                                                error=msg),
                           fix=_("use a resource quota (--resource-id), fewer GPUs, another region or spot; public "
                                 "resources allow 2 GPUs per job unless raised"))
    if status is not None and int(status) >= 400 or code:
        return SubmitError(_("PAI-DLC CreateJob failed in {region} ({code}): {error}").format(
            region=region, code=code or status, error=msg),
            fix=_("run `trainfit check dlc_job.json` and fix what it lists"))
    return SubmitError(_("PAI-DLC CreateJob in {region} failed: {error}").format(
        region=region, error=f"{type(e).__name__}: {msg}"), fix=_("check the network, region and endpoint"))
