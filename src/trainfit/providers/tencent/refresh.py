"""``trainfit catalog refresh --provider tencent [--prices]``: CVM GPU specs and prices from the Tencent API.

Official SDK ``tencentcloud-sdk-python-cvm`` (extra ``tencent``); credentials only through the SDK's
default chain (``TENCENTCLOUD_SECRET_ID`` / ``TENCENTCLOUD_SECRET_KEY``, ``~/.tencentcloud/credentials``,
CVM role, TKE OIDC). The chain's CVM-role step opens the instance-metadata service without a timeout, so
trainfit resolves credentials in a worker thread and gives up after the per-call timeout. Nothing is
written unless every row validates; the cache is replaced atomically; every call has a timeout and the
whole refresh a total deadline.

Specs (``DescribeInstanceTypeConfigs``, the whole region): one row per instance type with whole GPUs
(``GpuCount >= 1``; vGPU slices are left out): ``GpuCount`` -> ``gpu_count``, ``CPU`` -> ``vcpu``,
``Memory`` (GiB) -> ``ram_gib``, ``GpuType`` -> ``gpu`` when the GPU catalog knows the name (else a new
GPU row with ``GpuMemory`` GiB as its memory), the queried region -> ``regions`` (zones in ``notes``).

Prices (``InquiryPriceRunInstances``, one quote per instance type, ``POSTPAID_BY_HOUR`` and
``SPOTPAID``): ``InstancePrice.UnitPriceDiscount`` per ``ChargeUnit=HOUR`` (your discount applied;
``UnitPrice`` kept in notes). The API states amounts in 元 (CNY); an international-site account is
billed in USD, so pass ``--currency USD`` there: trainfit never converts. ``spot_discount`` = spot unit
price / pay-as-you-go unit price. The API needs a zone and an image id (``--zone``, ``--image-id``).
"""

from __future__ import annotations

import threading

from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from trainfit.catalog import to_csv_value, current_catalog, list_instances
from trainfit.errors import CatalogError, MissingExtraError, TrainfitError
from trainfit.i18n import N_, _, translate
from trainfit.providers._refresh_common import (Deadline, check_schema, classify, reported_gpu,
                                                sdk_version, short,
                                                today, wanted_types, write_cache, write_price_cache)
from trainfit.catalog.cache import cache_file
from trainfit.providers.registry import CloudRefreshed, RefreshRequest
from trainfit.json_types import JSON, JSONObject

if TYPE_CHECKING:
    from tencentcloud.common.abstract_client import AbstractClient
    from tencentcloud.common.abstract_model import AbstractModel
    from tencentcloud.common.credential import Credential

TENCENT_PIP = "pip install 'trainfit[tencent]'"
SDK_DIST = "tencentcloud-sdk-python-cvm"
CRED_FIX = N_("set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY, or configure ~/.tencentcloud/credentials; "
              "the key needs CVM read access (cvm:Describe*, cvm:InquiryPrice*)")  # shown with i18n.translate
_NOT_SOLD = ("invalidinstancetype", "resourcesoldout", "resourceunavailable", "invalidzone",
             "invalidparametervalue.instancetype", "unsupportedoperation.instancetype")


def cache_path(region: str, *, prices: bool) -> Path:
    return cache_file("tencent-prices" if prices else "tencent", region)


def _import_sdk():
    try:
        from tencentcloud.common.profile.client_profile import ClientProfile
        from tencentcloud.common.profile.http_profile import HttpProfile
        from tencentcloud.cvm.v20170312 import cvm_client, models
    except ImportError as e:
        raise MissingExtraError(_("the {label} is not installed ({module})").format(label="Tencent Cloud CVM SDK",
                                                                                   module=e.name),
                                fix=TENCENT_PIP) from None
    return cvm_client.CvmClient, models, ClientProfile, HttpProfile


def default_credential(timeout_s: float):
    """The SDK's default credential chain, given at most ``timeout_s`` seconds."""
    try:
        from tencentcloud.common.credential import DefaultCredentialProvider
    except ImportError as e:
        raise MissingExtraError(_("the {label} is not installed ({module})").format(label="Tencent Cloud SDK",
                                                                                   module=e.name),
                                fix=TENCENT_PIP) from None
    box: dict[str, Credential | Exception] = {}

    def work():
        try:
            box["cred"] = DefaultCredentialProvider().get_credentials()
        except Exception as e:  # noqa: BLE001 - the chain raises its own types
            box["err"] = e

    t = threading.Thread(target=work, daemon=True, name="tencent-credential-chain")
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise CatalogError(_("no Tencent Cloud credentials found: the credential chain did not answer within "
                             "{timeout_s:g} s (it probes the CVM metadata service last)").format(timeout_s=timeout_s),
                           fix=translate(CRED_FIX))
    if "err" in box or box.get("cred") is None:
        raise CatalogError(_("no Tencent Cloud credentials found: {error}").format(
            error=short(box.get("err", "empty chain"))), fix=translate(CRED_FIX))
    return box["cred"]


class _Api:
    def __init__(self, region: str, *, endpoint: str | None, protocol: str, timeout_s: float, total_s: float,
                 credential: Credential | None, what: str):
        Client, self.models, ClientProfile, HttpProfile = _import_sdk()
        self.region = region
        self.timeout_s = timeout_s
        self.deadline = Deadline(total_s=total_s, per_call_s=timeout_s, what=what)
        cred = credential if credential is not None else default_credential(self.deadline.call_timeout_s())
        self._make = lambda t: Client(cred, region, ClientProfile(httpProfile=HttpProfile(
            protocol=protocol, endpoint=endpoint or "cvm.tencentcloudapi.com", reqTimeout=max(1, int(round(t))))))
        self._clients: dict[int, AbstractClient] = {}

    def call(self, action: str, request: AbstractModel, what: str) -> JSONObject:
        t = self.deadline.call_timeout_s()
        key = max(1, int(round(t)))  # the SDK takes whole seconds
        client = self._clients.get(key) or self._clients.setdefault(key, self._make(t))
        try:
            resp = self.deadline.run(lambda: getattr(client, action)(request))
        except TrainfitError:
            raise
        except Exception as e:  # noqa: BLE001 - TencentCloudSDKException and transport errors
            raise classify(e, what=what, timeout_s=key, cred_fix=CRED_FIX) from None
        try:
            import json

            return json.loads(resp.to_json_string())
        except Exception as e:  # noqa: BLE001
            raise CatalogError(_("{what}: malformed response ({detail})").format(what=what, detail=short(e)),
                               fix=_("the cache was left as it was")) from None


def _num(d: dict, key: str, where: str, *, required: bool = False) -> int | float | None:
    v = d.get(key)
    if v is None or v == "":
        if required:
            raise ValueError(f"{where}: {key} is missing")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: {key}={v!r} is not a number")
    if v < 0:
        raise ValueError(f"{where}: {key}={v!r} is negative")
    return v


def _check_config(c: JSON, where: str) -> tuple[str, int | float | None]:
    """(instance type, GPU count) of one raw ``InstanceTypeConfig``; ValueError naming ``where`` if malformed."""
    if not isinstance(c, dict):
        raise ValueError(f"{where}: not an object")
    name = c.get("InstanceType")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: InstanceType is missing")
    where = f"{where} ({name})"
    n_gpu = _num(c, "GpuCount", where)
    if n_gpu is None:
        n_gpu = _num(c, "GPU", where)
    cpu = _num(c, "CPU", where, required=True)
    _num(c, "Memory", where)
    _num(c, "GpuMemory", where)
    gtype = c.get("GpuType")
    if gtype is not None and not isinstance(gtype, str):
        raise ValueError(f"{where}: GpuType={gtype!r} is not a string")
    if n_gpu and n_gpu >= 1 and not float(n_gpu).is_integer():
        raise ValueError(f"{where}: GpuCount={n_gpu!r} is not a whole number of GPUs")
    if cpu and not float(cpu).is_integer():
        raise ValueError(f"{where}: CPU={cpu!r} is not a whole number")
    return name, n_gpu


class _TypeConfigs(TypedDict):
    """The first raw config of an instance type and the zones that offer it."""

    cfg: JSONObject
    zones: list[str]


def _group_configs(items: list[JSON]) -> dict[str, _TypeConfigs]:
    """Whole-GPU configs by instance type (``{"cfg": first config, "zones": [...]}``); raises listing every
    malformed config."""
    problems: list[str] = []
    by_type: dict[str, _TypeConfigs] = {}
    for i, c in enumerate(items):
        try:
            name, n_gpu = _check_config(c, f"InstanceTypeConfigSet[{i}]")
        except ValueError as e:
            problems.append(str(e))
            continue
        if not n_gpu or n_gpu < 1:
            continue  # CPU type or a vGPU slice
        entry = by_type.setdefault(name.strip(), {"cfg": c, "zones": []})
        if c.get("Zone"):
            entry["zones"].append(str(c["Zone"]))
    if problems:
        raise CatalogError(_("CVM DescribeInstanceTypeConfigs returned malformed configs:") + "\n  "
                           + "\n  ".join(problems), fix=_("the cache was left as it was; report this if the API changed"))
    return by_type


def configs_to_rows(items: list[JSON], region: str, *, as_of: str | None = None
                    ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(gpu rows, instance rows) from raw ``InstanceTypeConfig`` maps; raises listing every problem."""
    as_of = as_of or today()
    source = f"Tencent Cloud CVM DescribeInstanceTypeConfigs, region {region} ({SDK_DIST})"
    cat = current_catalog()
    classes = {i.instance_type.lower(): i.resource_class for i in cat.instances if i.provider == "tencent"}
    gpus: dict[str, dict[str, str]] = {}
    rows: list[dict[str, str]] = []
    for name, entry in _group_configs(items).items():
        c = entry["cfg"]
        n_gpu = int(c.get("GpuCount") or c.get("GPU"))
        gtype, gmem = c.get("GpuType"), c.get("GpuMemory")
        gpu_name, gnote = reported_gpu(
            gtype, gmem, cat.gpu_index, gpus, source=source, as_of=as_of,
            notes=f"GPU reported by DescribeInstanceTypeConfigs as GpuType={gtype!r}, GpuMemory={gmem} GiB; "
                  "bandwidth and compute unknown (add them in your overlay)")
        row = {"provider": "tencent", "resource_class": classes.get(name.lower(), "ecs"), "instance_type": name,
               "gpu": gpu_name, "gpu_count": str(n_gpu), "vcpu": str(int(c["CPU"])),
               "ram_gib": to_csv_value(c.get("Memory")) if c.get("Memory") else "", "regions": region,
               "verified": "yes", "source": source, "as_of": as_of,
               "notes": f"zones {', '.join(sorted(set(entry['zones'])))}; GpuType={gtype!r}, GpuMemory={gmem} GiB, "
                        f"InstanceFamily={c.get('InstanceFamily')} (live API)" + (f"; {gnote}" if gnote else "")}
        if n_gpu == 1:
            row["intra_node_link"] = "none"
        rows.append(row)
    check_schema("CVM DescribeInstanceTypeConfigs", rows, list(gpus.values()))
    return list(gpus.values()), rows


def _zone_of(api: _Api, itype: str) -> str | None:
    m = api.models
    req = m.DescribeInstanceTypeConfigsRequest()
    f = m.Filter()
    f.Name, f.Values = "instance-type", [itype]
    req.Filters = [f]
    body = api.call("DescribeInstanceTypeConfigs", req, f"CVM DescribeInstanceTypeConfigs ({api.region}, {itype})")
    zones = sorted({c.get("Zone") for c in body.get("InstanceTypeConfigSet") or [] if isinstance(c, dict) and c.get("Zone")})
    return zones[0] if zones else None


def _quote(api: _Api, itype: str, zone: str, image_id: str, spot: bool) -> JSONObject:
    m = api.models
    req = m.InquiryPriceRunInstancesRequest()
    req.Placement = m.Placement()
    req.Placement.Zone = zone
    req.ImageId = image_id
    req.InstanceType = itype
    req.InstanceCount = 1
    req.InstanceChargeType = "SPOTPAID" if spot else "POSTPAID_BY_HOUR"
    if spot:
        req.InstanceMarketOptions = m.InstanceMarketOptionsRequest()
        req.InstanceMarketOptions.MarketType = "spot"
        req.InstanceMarketOptions.SpotOptions = m.SpotMarketOptions()
        req.InstanceMarketOptions.SpotOptions.MaxPrice = "1000"
        req.InstanceMarketOptions.SpotOptions.SpotInstanceType = "one-time"
    what = f"CVM InquiryPriceRunInstances ({zone}, {itype}, {req.InstanceChargeType})"
    body = api.call("InquiryPriceRunInstances", req, what)
    ip = (body.get("Price") or {}).get("InstancePrice")
    if not isinstance(ip, dict):
        raise CatalogError(_("{what}: malformed response ({detail})").format(what=what, detail="no Price.InstancePrice"),
                           fix=_("the cache was left as it was"))
    return ip


def _price_rows_for(api: _Api, itype: str, rc: str, zone: str, image_id: str, currency: str, as_of: str
                    ) -> list[JSONObject]:
    src = f"Tencent Cloud CVM InquiryPriceRunInstances ({SDK_DIST})"
    pay = _quote(api, itype, zone, image_id, spot=False)
    if pay.get("ChargeUnit") not in (None, "HOUR"):
        raise CatalogError(_("{what}: malformed response ({detail})").format(
            what=f"CVM InquiryPriceRunInstances ({itype})", detail=f"ChargeUnit={pay.get('ChargeUnit')!r}, not HOUR"),
            fix=_("report this; the cache was left as it was"))
    unit = pay.get("UnitPriceDiscount", pay.get("UnitPrice"))
    rows = [{"provider": "tencent", "resource_class": rc, "instance_type": itype, "region": api.region,
             "billing": "payg", "price_per_hour": unit, "currency": currency, "verified": True, "source": src,
             "as_of": as_of,
             "notes": f"zone {zone}, image {image_id}; UnitPrice={pay.get('UnitPrice')}, "
                      f"UnitPriceDiscount={pay.get('UnitPriceDiscount')} (your discount applied); "
                      "instance part only (disks and bandwidth extra)"}]
    try:
        spot = _quote(api, itype, zone, image_id, spot=True)
    except CatalogError as e:
        if any(k in e.message.lower() for k in _NOT_SOLD + ("spot",)):
            return rows  # no spot offer for this type/zone
        raise
    s_unit = spot.get("UnitPriceDiscount", spot.get("UnitPrice"))
    if isinstance(s_unit, (int, float)) and isinstance(unit, (int, float)) and unit > 0:
        rows.append({"provider": "tencent", "resource_class": rc, "instance_type": itype, "region": api.region,
                     "billing": "spot", "price_per_hour": s_unit, "currency": currency,
                     "spot_discount": round(s_unit / unit, 4), "verified": True, "source": src, "as_of": as_of,
                     "notes": f"zone {zone}; SPOTPAID quote; spot_discount = spot unit price / pay-as-you-go unit price"})
    return rows


def _gpu_types_in_catalog() -> list[tuple[str, str]]:
    return [(i.instance_type, i.resource_class) for i in list_instances(provider="tencent")
            if i.resource_class == "ecs" and i.gpu_count]


def refresh_tencent(region: str, *, prices: bool = False, instance_types: list[str] | None = None,
                    zone: str | None = None, image_id: str | None = None, currency: str = "CNY",
                    endpoint: str | None = None, protocol: str = "https", timeout_s: float = 15.0,
                    total_timeout_s: float | None = None, credential: Credential | None = None
                    ) -> CloudRefreshed:
    """Fetch, validate and cache CVM GPU specs (or, with ``prices``, quotes) for ``region``."""
    if not region or not region.strip():
        raise CatalogError(_("refresh needs a region"), fix=_("pass --region, e.g. ap-guangzhou or ap-shanghai"))
    region = region.strip()
    if prices and not image_id:
        raise CatalogError(_("Tencent InquiryPriceRunInstances needs an image id"),
                           fix=_("pass --image-id img-... (any public Linux image of the region; see DescribeImages)"))
    total = total_timeout_s if total_timeout_s is not None else max(60.0, 4 * timeout_s)
    what = f"Tencent CVM {'price' if prices else 'spec'} refresh ({region})"
    api = _Api(region, endpoint=endpoint, protocol=protocol, timeout_s=timeout_s, total_s=total,
               credential=credential, what=what)
    sdk = sdk_version(SDK_DIST)
    as_of = today()
    if not prices:
        body = api.call("DescribeInstanceTypeConfigs", api.models.DescribeInstanceTypeConfigsRequest(),
                        f"CVM DescribeInstanceTypeConfigs ({region})")
        items = body.get("InstanceTypeConfigSet")
        if not isinstance(items, list):
            raise CatalogError(_("{what}: malformed response ({detail})").format(
                what=f"CVM DescribeInstanceTypeConfigs ({region})", detail="InstanceTypeConfigSet is not a list"),
                fix=_("the cache was left as it was"))
        gpus, rows = configs_to_rows(items, region, as_of=as_of)
        if not rows:
            raise CatalogError(_("{what} returned no GPU instance types").format(
                what=f"CVM DescribeInstanceTypeConfigs ({region})"),
                fix=_("check the region id; the cache was left as it was"))
        path = cache_path(region, prices=False)
        fetched = write_cache(path, provider="tencent", region=region, sdk=sdk, gpus=gpus, instances=rows)
        return CloudRefreshed(region=region, path=path, instances=len(rows),
                                    new_gpus=tuple(g["name"] for g in gpus), fetched_at=fetched)

    wanted = wanted_types(_gpu_types_in_catalog(), instance_types)
    price_rows: list[JSONObject] = []
    skipped: list[str] = []
    for itype, rc in wanted:
        z = zone or _zone_of(api, itype)
        if z is None:
            skipped.append(itype)
            continue
        try:
            price_rows += _price_rows_for(api, itype, rc, z, image_id, currency, as_of)
        except CatalogError as e:
            if any(k in e.message.lower() for k in _NOT_SOLD):
                skipped.append(itype)
                continue
            raise
    path = cache_path(region, prices=True)
    n, fetched = write_price_cache(
        path, price_rows, label="CVM prices", provider="tencent", region=region, sdk=sdk,
        schema_what="CVM InquiryPriceRunInstances", schema_fix=_("the cache was left as it was"),
        empty=_("no CVM prices in {region}: none of {n} instance types is sold there").format(region=region,
                                                                                            n=len(wanted)),
        empty_fix=_("check the region, --zone and --image-id; the cache was left as it was"))
    return CloudRefreshed(region=region, path=path, prices=n, skipped=tuple(skipped), fetched_at=fetched)


def refresh_request(req: RefreshRequest) -> CloudRefreshed:
    """``catalog refresh --provider tencent``: :func:`refresh_tencent` with the command's options."""
    return refresh_tencent(req.region, prices=req.prices, instance_types=req.instance_types, zone=req.zone,
                           image_id=req.image_id, currency=req.currency, endpoint=req.endpoint, protocol=req.protocol,
                           timeout_s=req.timeout_s, total_timeout_s=req.total_timeout_s)
