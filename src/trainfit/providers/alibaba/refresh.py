"""``trainfit catalog refresh --provider pai``: live GPU specs from Alibaba PAI-DLC ``ListEcsSpecs``.

Uses the official SDK ``alibabacloud_pai_dlc20201203`` (extra ``pai``) with credentials from the standard
Alibaba Cloud credential chain (``alibabacloud_credentials`` default client: environment variables,
``~/.alibabacloud/credentials``, ``~/.aliyun/config.json``, ECS RAM role, OIDC...). trainfit never reads,
prints or stores the credentials itself.

Flow: page through ``GET /api/v1/ecsspecs?AcceleratorType=GPU&ResourceType=ECS|Lingjun``, validate every
spec (types, ranges, required fields), and only then write ``<cache dir>/catalog/pai-<region>.json``
atomically (temporary file in the same folder + ``os.replace``). Any failure (auth, timeout, malformed
answer) raises :class:`~trainfit.errors.CatalogError` and leaves the existing cache untouched.

Unit notes (the SDK documents ``Memory`` as "MiB or GiB" and ``GpuMemory`` without a unit): a ``Memory``
value of 8192 or more is read as MiB (no GPU node has 8 TiB of host memory), smaller values as GiB;
``GpuMemory`` of 1024 or more is read as MiB, smaller as GB (=GiB, as the EAS example's "24 GB" for GU30).
The raw values are kept in each row's ``notes``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainfit.catalog import to_csv_value, current_catalog
from trainfit.catalog.cache import gpu_update_columns, cache_file
from trainfit.errors import CatalogError
from trainfit.i18n import _
from trainfit.providers._refresh_common import check_schema, sdk_version, short, write_cache
from trainfit.providers.alibaba.client import (PAI_PIP, PAI_READ_CRED_FIX, Sdk, classify_list_specs,  # noqa: F401
                                               default_credential, import_sdk, make_config, runtime_options)
from trainfit.catalog.gpus import normalize_gpu_name
from trainfit import inputs
from trainfit.providers._net import call_with_deadline
from trainfit.providers.registry import RefreshRequest, SpecsRefreshed
from trainfit.json_types import JSON

if TYPE_CHECKING:
    from alibabacloud_credentials.client import Client as CredentialClient

_RESOURCE_CLASS = {"ECS": "pai-public", "Lingjun": "pai-lingjun"}
_PAGE_SIZE = 100
_MAX_PAGES = 100


# ------------------------------------------------------------------------------------------- SDK

_CRED_FIX = PAI_READ_CRED_FIX
_short = short
_classify = classify_list_specs


def _import_sdk() -> Sdk:
    return import_sdk("alibabacloud_pai_dlc20201203", label="Alibaba PAI SDK")


def _default_credential():
    return default_credential(error=CatalogError, fix=PAI_READ_CRED_FIX)


def fetch_pai_specs(region: str, *, endpoint: str | None = None, protocol: str = "https", timeout_s: float = 15.0,
                    resource_types: tuple[str, ...] = ("ECS", "Lingjun"), credential: CredentialClient | None = None
                    ) -> list[dict]:
    """Raw ``EcsSpec`` maps (the API's field names) for GPU specs in ``region``; raises CatalogError."""
    sdk = _import_sdk()
    models = sdk.models
    cred = credential if credential is not None else _default_credential()
    ms = int(timeout_s * 1000)
    config = make_config(sdk, credential=cred, region=region, endpoint=endpoint or f"pai-dlc.{region}.aliyuncs.com",
                         protocol=protocol, timeout_s=timeout_s)
    try:
        client = sdk.Client(config)
    except Exception as e:  # noqa: BLE001
        raise _classify(e, region, timeout_s) from None
    specs: list[dict] = []
    for rtype in resource_types:
        page = 1
        while True:
            req = models.ListEcsSpecsRequest(accelerator_type="GPU", resource_type=rtype, page_number=page,
                                             page_size=_PAGE_SIZE)
            runtime = runtime_options(sdk, ms)
            try:
                resp = client.list_ecs_specs_with_options(req, {}, runtime)
            except Exception as e:  # noqa: BLE001 - the SDK raises several unrelated types
                raise _classify(e, region, timeout_s) from None
            body = getattr(resp, "body", None)
            if body is None:
                raise CatalogError(_("PAI-DLC ListEcsSpecs in {region} returned a malformed response (no parsable "
                                     "body, HTTP {status})").format(region=region,
                                                                    status=getattr(resp, "status_code", "?")),
                                   fix=_("the cache was left as it was; retry later or check --endpoint"))
            try:
                m = body.to_map()
            except Exception as e:  # noqa: BLE001
                raise CatalogError(_("PAI-DLC ListEcsSpecs in {region}: malformed response ({error})").format(
                    region=region, error=_short(e)), fix=_("the cache was left as it was")) from None
            items = m.get("EcsSpecs")
            total = m.get("TotalCount")
            if not isinstance(items, list):
                raise CatalogError(_("PAI-DLC ListEcsSpecs in {region}: malformed response (EcsSpecs is {type}, not a "
                                     "list)").format(region=region, type=type(items).__name__),
                                   fix=_("the cache was left as it was"))
            if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 0):
                raise CatalogError(_("PAI-DLC ListEcsSpecs in {region}: malformed TotalCount {total!r}").format(
                    region=region, total=total), fix=_("the cache was left as it was"))
            specs.extend(items)
            got = sum(1 for s in specs if isinstance(s, dict) and s.get("ResourceType", rtype) == rtype)
            if not items or total is None or got >= total or page >= _MAX_PAGES:
                break
            page += 1
    return specs


# ----------------------------------------------------------------------------------- conversion

def _num(spec: dict, key: str, *, integer: bool = False, required: bool = True, where: str) -> int | float | None:
    v = spec.get(key)
    if v is None:
        if required:
            raise ValueError(f"{where}: {key} is missing")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: {key}={v!r} is not a number")
    if integer and not float(v).is_integer():
        raise ValueError(f"{where}: {key}={v!r} is not a whole number")
    if v < 0:
        raise ValueError(f"{where}: {key}={v!r} is negative")
    return int(v) if integer else float(v)


@dataclass(frozen=True, kw_only=True)
class _Spec:
    """The validated fields of one raw ``EcsSpec``."""

    instance_type: str
    """``InstanceType``, stripped."""
    resource_type: str
    """``ResourceType``: ECS or Lingjun."""
    gpu_count: int
    """``Gpu``."""
    vcpu: int
    """``Cpu``."""
    memory: float | None
    """``Memory`` as reported (MiB or GiB, see the module docstring)."""
    gpu_memory: float | None
    """``GpuMemory`` as reported (MiB or GB)."""
    spot_discount: float | None
    """``NonProtectSpotDiscount`` (0..1)."""
    gpu_type: str | None
    """``GpuType``."""


def _check_spec(spec: JSON, where: str) -> _Spec:
    """The fields of one raw spec; ValueError naming ``where`` when it is malformed."""
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: not an object")
    itype = spec.get("InstanceType")
    if not isinstance(itype, str) or not itype.strip():
        raise ValueError(f"{where}: InstanceType is missing")
    where = f"{where} ({itype})"
    rtype = spec.get("ResourceType") or "ECS"
    if rtype not in _RESOURCE_CLASS:
        raise ValueError(f"{where}: ResourceType={rtype!r} is not ECS or Lingjun")
    gpu_count = _num(spec, "Gpu", integer=True, where=where)
    cpu = _num(spec, "Cpu", integer=True, where=where)
    mem = _num(spec, "Memory", required=False, where=where)
    gpu_mem = _num(spec, "GpuMemory", required=False, where=where)
    disc = _num(spec, "NonProtectSpotDiscount", required=False, where=where)
    if disc is not None and disc > 1:
        raise ValueError(f"{where}: NonProtectSpotDiscount={disc} is above 1")
    gtype = spec.get("GpuType")
    if gtype is not None and not isinstance(gtype, str):
        raise ValueError(f"{where}: GpuType={gtype!r} is not a string")
    for k in ("IsAvailable",):
        if spec.get(k) is not None and not isinstance(spec.get(k), bool):
            raise ValueError(f"{where}: {k}={spec.get(k)!r} is not a boolean")
    return _Spec(instance_type=itype.strip(), resource_type=rtype, gpu_count=gpu_count, vcpu=cpu, memory=mem,
                 gpu_memory=gpu_mem, spot_discount=disc, gpu_type=gtype)


def _spec_gpu(s: _Spec, index: dict, gpu_rows: dict[str, dict[str, str]], source: str, today: str) -> str:
    """The catalog GPU name of ``s`` ("" if none); records a GPU row for an unknown type, or the memory of a
    known GPU whose catalog memory is empty."""
    gtype, gpu_mem = s.gpu_type, s.gpu_memory
    if not gtype or not gtype.strip():
        return ""
    known = index.get(normalize_gpu_name(gtype))
    gpu_mem_gib = None if gpu_mem is None or gpu_mem == 0 else (gpu_mem / 1024 if gpu_mem >= 1024 else gpu_mem)
    if known is not None:
        if known.mem_gib is None and gpu_mem_gib is not None:
            gpu_rows[known.name] = {"name": known.name, "mem_gib": to_csv_value(gpu_mem_gib),
                                    "source": source, "as_of": today,
                                    "notes": f"GpuMemory={gpu_mem:g} from ListEcsSpecs (unit not documented)"}
        return known.name
    gpu_name = gtype.strip()
    gpu_rows[gpu_name] = {"name": gpu_name, "vendor": "unknown", "pai_codes": gpu_name,
                          "mem_gib": to_csv_value(gpu_mem_gib), "verified": "no", "source": source,
                          "as_of": today,
                          "notes": f"GPU type reported by ListEcsSpecs; GpuMemory={gpu_mem} "
                                   "(unit not documented); model and compute unknown"}
    return gpu_name


def _instance_row(s: _Spec, raw: dict, gpu_name: str, region: str, source: str, today: str) -> dict[str, str]:
    mem, gpu_mem, disc = s.memory, s.gpu_memory, s.spot_discount
    ram_gib = None if mem is None else (mem / 1024 if mem >= 8192 else mem)
    notes = [f"Memory={mem:g}" if mem is not None else "Memory not reported",
             f"GpuMemory={gpu_mem:g}" if gpu_mem is not None else ""]
    for k in ("IsAvailable", "SpotStockStatus", "PaymentTypes", "DefaultGPUDriver"):
        if raw.get(k) not in (None, "", []):
            notes.append(f"{k}={raw.get(k)}")
    return {
        "provider": "alibaba", "resource_class": _RESOURCE_CLASS[s.resource_type], "instance_type": s.instance_type,
        "gpu": gpu_name, "gpu_count": str(s.gpu_count), "vcpu": str(s.vcpu) if s.vcpu else "",
        "ram_gib": to_csv_value(round(ram_gib, 2)) if ram_gib else "",
        "regions": region, "spot_discount": to_csv_value(disc) if disc else "",
        "verified": "yes", "source": source, "as_of": today,
        "notes": "; ".join(n for n in notes if n) + " (live API)",
    }


def specs_to_rows(specs: list[JSON], region: str, *, today: str | None = None
                  ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Validate raw specs and turn them into catalog rows (CSV-style string values).

    Raises :class:`CatalogError` listing every problem when any spec is malformed.
    """
    today = today or _dt.date.today().isoformat()
    source = f"Alibaba PAI-DLC ListEcsSpecs, region {region} (alibabacloud_pai_dlc20201203)"
    index = current_catalog().gpu_index
    problems: list[str] = []
    inst_rows: list[dict[str, str]] = []
    gpu_rows: dict[str, dict[str, str]] = {}
    for i, raw in enumerate(specs):
        try:
            s = _check_spec(raw, f"EcsSpecs[{i}]")
        except ValueError as e:
            problems.append(str(e))
            continue
        if not s.gpu_count:
            continue  # CPU-only spec slipped through the filter
        gpu_name = _spec_gpu(s, index, gpu_rows, source, today)
        inst_rows.append(_instance_row(s, raw, gpu_name, region, source, today))
    if problems:
        raise CatalogError(_("PAI-DLC ListEcsSpecs returned malformed specs:") + "\n  " + "\n  ".join(problems),
                           fix=_("the cache was left as it was; report this if the API changed"))
    check_schema("PAI-DLC ListEcsSpecs", inst_rows, list(gpu_rows.values()), gpu_columns=gpu_update_columns)
    return list(gpu_rows.values()), inst_rows


def refresh(provider: str, region: str, *, endpoint: str | None = None, protocol: str = "https",
            timeout_s: float = 15.0, credential: CredentialClient | None = None) -> SpecsRefreshed:
    """Fetch, validate and cache live specs for ``provider`` (only ``pai`` today) in ``region``."""
    if provider.lower() not in ("pai", "alibaba"):
        raise CatalogError(_("refresh is not available for provider {provider!r}").format(provider=provider),
                           fix=_("use --provider pai; for other clouds add rows to your overlay"))
    if not region or not region.strip():
        raise CatalogError(_("refresh needs a region"), fix=_("pass --region, e.g. cn-hangzhou or cn-wulanchabu"))

    # the region becomes part of the API host name: a strict pattern keeps "evil.example/x" out of it
    region = inputs.as_ident("--region", region, "region")

    specs = call_with_deadline(
        lambda: fetch_pai_specs(region, endpoint=endpoint, protocol=protocol, timeout_s=timeout_s,
                                credential=credential),
        timeout_s=timeout_s, what=_("PAI-DLC ListEcsSpecs in {region}").format(region=region),
        fix=_("check the network/proxy and --endpoint, or retry with a larger --timeout; the cache was left as it was"))
    if not specs:
        raise CatalogError(_("PAI-DLC ListEcsSpecs in {region} returned no GPU specs").format(region=region),
                           fix=_("check the region id; the cache was left as it was"))
    gpus, insts = specs_to_rows(specs, region)
    path = cache_file("pai", region)
    fetched = write_cache(path, provider="pai", region=region, sdk=sdk_version("alibabacloud_pai_dlc20201203"),
                          gpus=gpus, instances=insts)
    return SpecsRefreshed(provider="pai", region=region, path=path, instances=len(insts),
                         new_gpus=tuple(g["name"] for g in gpus if "verified" in g), fetched_at=fetched)


def refresh_request(req: RefreshRequest) -> SpecsRefreshed:
    """``catalog refresh --provider pai``: :func:`refresh` with the command's options."""
    return refresh("pai", req.region, endpoint=req.endpoint, protocol=req.protocol, timeout_s=req.timeout_s)
