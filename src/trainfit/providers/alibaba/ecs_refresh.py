"""``trainfit catalog refresh --provider ecs [--prices]``: GPU specs and prices from the Alibaba ECS API.

Official SDK ``alibabacloud_ecs20140526`` (extra ``pai``); credentials only through the standard Alibaba
Cloud credential chain (``alibabacloud_credentials`` default client). Nothing is written unless every row
validates; the cache is replaced atomically. Every call has a timeout and the whole refresh a total
deadline.

Specs (``DescribeInstanceTypes``, ``MinimumGPUAmount=1``, all pages via ``NextToken``):

* ``InstanceTypeId`` -> ``instance_type``; ``CpuCoreCount`` -> ``vcpu``; ``MemorySize`` (GiB) -> ``ram_gib``;
  ``GPUAmount`` -> ``gpu_count``; ``GPUSpec`` (e.g. ``NVIDIA A10``) -> ``gpu`` when the GPU catalog knows the
  name, else a new GPU row with ``GPUMemorySize`` (GiB) as memory and nothing else;
  ``InstanceBandwidthRx`` (Kbit/s) -> ``inter_node_gbit_per_s``; ``EriQuantity > 0`` -> ``inter_node = rdma``
  (elastic RDMA interfaces).
* The API lists instance types, not where they are sold, so ``regions`` is not set.
* An instance type the catalog already has under ``alibaba`` keeps its resource class (``pai-public``...);
  a new one gets ``ecs``.

Prices (``DescribePrice`` with ``ResourceType=instance, PriceUnit=Hour`` and ``DescribeSpotPriceHistory``
with ``NetworkType=vpc, OSType=linux``) for the Alibaba ``ecs.*`` GPU types of the catalog (or those given):

* pay-as-you-go: the ``instanceType`` line of ``DetailInfos`` when present (else the whole ``TradePrice``,
  noted as including the default system disk), in the API's ``Currency`` (CNY on the China site, USD on
  the international site; never converted);
* spot: the newest ``SpotPrice`` per zone, cheapest zone kept, with ``spot_discount = SpotPrice /
  OriginPrice`` (the fraction paid). A type not sold in the region is skipped and counted.
"""

from __future__ import annotations


from pathlib import Path
from typing import TYPE_CHECKING

from trainfit.catalog import to_csv_value, current_catalog, list_instances
from trainfit.errors import CatalogError, TrainfitError
from trainfit.i18n import _
from trainfit.providers._refresh_common import (Deadline, check_schema, classify, reported_gpu,
                                                sdk_version, short,
                                                today, wanted_types, write_cache, write_price_cache)

from trainfit.providers.alibaba.client import (ECS_READ_CRED_FIX, PAI_PIP, Sdk, default_credential,  # noqa: F401
                                               import_sdk, make_config, runtime_options)
from trainfit.catalog.cache import cache_file
from trainfit.providers.registry import CloudRefreshed, RefreshRequest
from trainfit.json_types import JSON, JSONObject

if TYPE_CHECKING:
    from alibabacloud_credentials.client import Client as CredentialClient
    from darabonba.model import DaraModel

SDK_DIST = "alibabacloud_ecs20140526"
CRED_FIX = ECS_READ_CRED_FIX
_PAGE_SIZE = 100
_MAX_PAGES = 100
_NOT_SOLD = ("invalidinstancetype", "instancetype.notfound", "invalidparameter.instancetype",
             "invalidzoneid", "notsupported", "price.pricingplan.result", "invalid.instancetype")


def cache_path(region: str, *, prices: bool) -> Path:
    return cache_file("ecs-prices" if prices else "ecs", region)


# ------------------------------------------------------------------------------------------- SDK

def _import_sdk() -> Sdk:
    return import_sdk("alibabacloud_ecs20140526", label="Alibaba ECS SDK")


def _credential():
    return default_credential(error=CatalogError, fix=CRED_FIX)


class _Api:
    """One ECS client plus the deadline; every call goes through :meth:`call`."""

    def __init__(self, region: str, *, endpoint: str | None, protocol: str, timeout_s: float, total_s: float,
                 credential: CredentialClient | None, what: str):
        self.sdk = _import_sdk()
        self.Client, self.models = self.sdk.Client, self.sdk.models
        self.region = region
        self.deadline = Deadline(total_s=total_s, per_call_s=timeout_s, what=what)
        self.timeout_s = timeout_s
        cred = credential if credential is not None else _credential()
        try:
            self.client = self.Client(make_config(self.sdk, credential=cred, region=region, endpoint=endpoint,
                                                  protocol=protocol, timeout_s=timeout_s))
        except Exception as e:  # noqa: BLE001
            raise classify(e, what=what, timeout_s=timeout_s, cred_fix=CRED_FIX) from None

    def call(self, method: str, request: DaraModel, what: str) -> JSONObject:
        ms = max(1, int(self.deadline.call_timeout_s() * 1000))
        runtime = runtime_options(self.sdk, ms, max_attempts=1)
        try:
            resp = self.deadline.run(lambda: getattr(self.client, method)(request, runtime))
        except TrainfitError:
            raise
        except Exception as e:  # noqa: BLE001 - the SDK raises several unrelated types
            raise classify(e, what=what, timeout_s=ms / 1000, cred_fix=CRED_FIX) from None
        body = getattr(resp, "body", None)
        if body is None:
            raise CatalogError(_("{what} returned a malformed response (no parsable body)").format(what=what),
                               fix=_("the cache was left as it was; retry later or check --endpoint"))
        try:
            return body.to_map()
        except Exception as e:  # noqa: BLE001
            raise CatalogError(_("{what}: malformed response ({detail})").format(what=what, detail=short(e)),
                               fix=_("the cache was left as it was")) from None


# ------------------------------------------------------------------------------------------ specs

def fetch_instance_types(api: _Api) -> list[JSON]:
    """Raw ``InstanceType`` maps of every GPU instance type (all pages)."""
    what = f"ECS DescribeInstanceTypes ({api.region})"
    out: list[JSON] = []
    token = None
    for _page in range(_MAX_PAGES):
        req = api.models.DescribeInstanceTypesRequest(minimum_gpuamount=1, max_results=_PAGE_SIZE, next_token=token)
        m = api.call("describe_instance_types_with_options", req, what)
        box = m.get("InstanceTypes")
        items = box.get("InstanceType") if isinstance(box, dict) else None
        if not isinstance(items, list):
            raise CatalogError(_("{what}: malformed response ({detail})").format(
                what=what, detail="InstanceTypes.InstanceType is not a list"), fix=_("the cache was left as it was"))
        out.extend(items)
        token = m.get("NextToken")
        if not token or not items:
            return out
    raise CatalogError(_("{what}: more than {n} pages").format(what=what, n=_MAX_PAGES),
                       fix=_("report this; the cache was left as it was"))


def _num(d: dict, key: str, where: str, *, integer: bool = False, required: bool = False) -> int | float | None:
    v = d.get(key)
    if v is None or v == "":
        if required:
            raise ValueError(f"{where}: {key} is missing")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: {key}={v!r} is not a number")
    if v < 0:
        raise ValueError(f"{where}: {key}={v!r} is negative")
    if integer:
        if not float(v).is_integer():
            raise ValueError(f"{where}: {key}={v!r} is not a whole number")
        return int(v)
    return float(v)


def types_to_rows(items: list[JSON], *, as_of: str | None = None
                  ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(gpu rows, instance rows) from raw ``InstanceType`` maps; raises listing every problem."""
    as_of = as_of or today()
    source = f"Alibaba ECS DescribeInstanceTypes ({SDK_DIST})"
    cat = current_catalog()
    classes = {i.instance_type.lower(): i.resource_class for i in cat.instances if i.provider == "alibaba"}
    problems: list[str] = []
    gpus: dict[str, dict[str, str]] = {}
    rows: list[dict[str, str]] = []
    for i, it in enumerate(items):
        where = f"InstanceType[{i}]"
        try:
            if not isinstance(it, dict):
                raise ValueError(f"{where}: not an object")
            name = it.get("InstanceTypeId")
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"{where}: InstanceTypeId is missing")
            where = f"{where} ({name})"
            n_gpu = _num(it, "GPUAmount", where, integer=True, required=True)
            vcpu = _num(it, "CpuCoreCount", where, integer=True, required=True)
            ram = _num(it, "MemorySize", where)
            gmem = _num(it, "GPUMemorySize", where)
            bw_kbit = _num(it, "InstanceBandwidthRx", where)
            eri = _num(it, "EriQuantity", where, integer=True)
            spec = it.get("GPUSpec")
            if spec is not None and not isinstance(spec, str):
                raise ValueError(f"{where}: GPUSpec={spec!r} is not a string")
        except ValueError as e:
            problems.append(str(e))
            continue
        if not n_gpu:
            continue
        gpu_name, gnote = reported_gpu(
            spec, gmem, cat.gpu_index, gpus, source=source, as_of=as_of,
            notes=f"GPU reported by DescribeInstanceTypes as GPUSpec={spec!r}, GPUMemorySize={gmem} GiB; "
                  "bandwidth and compute unknown (add them in your overlay)")
        row = {
            "provider": "alibaba", "resource_class": classes.get(name.strip().lower(), "ecs"),
            "instance_type": name.strip(), "gpu": gpu_name, "gpu_count": str(n_gpu), "vcpu": str(vcpu) if vcpu else "",
            "ram_gib": to_csv_value(ram) if ram else "", "verified": "yes", "source": source, "as_of": as_of,
            "notes": f"GPUSpec={spec!r}, GPUMemorySize={gmem}, MemorySize={ram}, InstanceBandwidthRx={bw_kbit} Kbit/s, "
                     f"EriQuantity={eri} (live API; lists the type, not where it is sold)"
                     + (f"; {gnote}" if gnote else ""),
        }
        if bw_kbit:
            row["inter_node_gbit_per_s"] = to_csv_value(round(bw_kbit / 1e6, 3))
        if eri:
            row["inter_node"] = "rdma"
        if n_gpu == 1:
            row["intra_node_link"] = "none"
        rows.append(row)
    if problems:
        raise CatalogError(_("ECS DescribeInstanceTypes returned malformed instance types:") + "\n  "
                           + "\n  ".join(problems), fix=_("the cache was left as it was; report this if the API changed"))
    check_schema("ECS DescribeInstanceTypes", rows, list(gpus.values()))
    return list(gpus.values()), rows


# ----------------------------------------------------------------------------------------- prices

def _not_sold(e: CatalogError) -> bool:
    low = e.message.lower()
    return any(k in low for k in _NOT_SOLD)


def _price_rows_for(api: _Api, itype: str, resource_class: str, as_of: str) -> list[JSONObject]:
    m = api.models
    rows: list[JSONObject] = []
    what = f"ECS DescribePrice ({api.region}, {itype})"
    body = api.call("describe_price_with_options",
                    m.DescribePriceRequest(region_id=api.region, resource_type="instance", instance_type=itype,
                                           price_unit="Hour", period=1, instance_network_type="vpc"), what)
    price = (body.get("PriceInfo") or {}).get("Price")
    if not isinstance(price, dict):
        raise CatalogError(_("{what}: malformed response ({detail})").format(what=what, detail="no PriceInfo.Price"),
                           fix=_("the cache was left as it was"))
    details = ((price.get("DetailInfos") or {}).get("DetailInfo")) or []
    line = next((d for d in details if isinstance(d, dict) and str(d.get("Resource", "")).lower() == "instancetype"),
                None)
    src = line if line is not None else price
    amount, currency = src.get("TradePrice"), price.get("Currency")
    note = ("instanceType line of DescribePrice" if line is not None
            else "whole DescribePrice TradePrice (includes the default system disk)")
    rows.append({"provider": "alibaba", "resource_class": resource_class, "instance_type": itype,
                 "region": api.region, "billing": "payg", "price_per_hour": amount, "currency": currency,
                 "verified": True, "source": f"Alibaba ECS DescribePrice ({SDK_DIST}), PriceUnit=Hour",
                 "as_of": as_of,
                 "notes": f"{note}; OriginalPrice={src.get('OriginalPrice')}, DiscountPrice={src.get('DiscountPrice')} "
                          "(your account's discounts apply); compute only, disks and traffic extra"})
    what = f"ECS DescribeSpotPriceHistory ({api.region}, {itype})"
    body = api.call("describe_spot_price_history_with_options",
                    m.DescribeSpotPriceHistoryRequest(region_id=api.region, instance_type=itype, network_type="vpc",
                                                      ostype="linux"), what)
    items = ((body.get("SpotPrices") or {}).get("SpotPriceType")) or []
    if not isinstance(items, list):
        raise CatalogError(_("{what}: malformed response ({detail})").format(
            what=what, detail="SpotPrices.SpotPriceType is not a list"), fix=_("the cache was left as it was"))
    newest: dict[str, dict] = {}
    for p in items:
        if not isinstance(p, dict) or not p.get("ZoneId"):
            continue
        z = p["ZoneId"]
        if z not in newest or str(p.get("Timestamp", "")) > str(newest[z].get("Timestamp", "")):
            newest[z] = p
    quotes = [p for p in newest.values() if isinstance(p.get("SpotPrice"), (int, float))
              and isinstance(p.get("OriginPrice"), (int, float)) and p["OriginPrice"] > 0]
    if quotes:
        best = min(quotes, key=lambda p: p["SpotPrice"])
        rows.append({"provider": "alibaba", "resource_class": resource_class, "instance_type": itype,
                     "region": api.region, "billing": "spot", "price_per_hour": best["SpotPrice"],
                     "currency": body.get("Currency"), "spot_discount": round(best["SpotPrice"] / best["OriginPrice"], 4),
                     "verified": True, "source": f"Alibaba ECS DescribeSpotPriceHistory ({SDK_DIST})",
                     "as_of": str(best.get("Timestamp") or as_of)[:10],
                     "notes": f"cheapest zone {best['ZoneId']} of {len(quotes)} ({', '.join(sorted(newest))}); "
                              f"OriginPrice={best['OriginPrice']}; newest quote {best.get('Timestamp')}; "
                              "spot_discount = SpotPrice / OriginPrice"})
    return rows


def _gpu_types_in_catalog() -> list[tuple[str, str]]:
    return [(i.instance_type, i.resource_class) for i in list_instances(provider="alibaba")
            if i.instance_type.startswith("ecs.") and i.gpu_count]


# ------------------------------------------------------------------------------------------ entry

def refresh_ecs(region: str, *, prices: bool = False, instance_types: list[str] | None = None,
                endpoint: str | None = None, protocol: str = "https", timeout_s: float = 15.0,
                total_timeout_s: float | None = None, credential: CredentialClient | None = None
                ) -> CloudRefreshed:
    """Fetch, validate and cache ECS GPU specs (or, with ``prices``, ECS prices) for ``region``."""
    if not region or not region.strip():
        raise CatalogError(_("refresh needs a region"), fix=_("pass --region, e.g. cn-hangzhou or cn-wulanchabu"))
    region = region.strip()
    total = total_timeout_s if total_timeout_s is not None else max(60.0, 4 * timeout_s)
    what = f"ECS {'price' if prices else 'spec'} refresh ({region})"
    api = _Api(region, endpoint=endpoint, protocol=protocol, timeout_s=timeout_s, total_s=total,
               credential=credential, what=what)
    sdk = sdk_version(SDK_DIST)
    as_of = today()
    if not prices:
        items = fetch_instance_types(api)
        gpus, rows = types_to_rows(items, as_of=as_of)
        if not rows:
            raise CatalogError(_("ECS DescribeInstanceTypes ({region}) returned no GPU instance types").format(
                region=region), fix=_("check the region id; the cache was left as it was"))
        path = cache_path(region, prices=False)
        fetched = write_cache(path, provider="ecs", region=region, sdk=sdk, gpus=gpus, instances=rows)
        return CloudRefreshed(region=region, path=path, instances=len(rows),
                                new_gpus=tuple(g["name"] for g in gpus), fetched_at=fetched)

    wanted = wanted_types(_gpu_types_in_catalog(), instance_types)
    if not wanted:
        raise CatalogError(_("no Alibaba ECS GPU instance types to price"), fix=_("pass --instance-type"))
    price_rows: list[JSONObject] = []
    skipped: list[str] = []
    for itype, rc in wanted:
        try:
            price_rows += _price_rows_for(api, itype, rc, as_of)
        except CatalogError as e:
            if _not_sold(e):
                skipped.append(itype)
                continue
            raise
    path = cache_path(region, prices=True)
    n, fetched = write_price_cache(
        path, price_rows, label="ECS prices", provider="ecs", region=region, sdk=sdk,
        schema_what="ECS price APIs", schema_fix=_("the cache was left as it was; report this if the API changed"),
        empty=_("no ECS prices in {region}: none of {n} instance types is sold there").format(region=region,
                                                                                            n=len(wanted)),
        empty_fix=_("check the region id; the cache was left as it was"))
    return CloudRefreshed(region=region, path=path, prices=n, skipped=tuple(skipped), fetched_at=fetched)


def refresh_request(req: RefreshRequest) -> CloudRefreshed:
    """``catalog refresh --provider ecs``: :func:`refresh_ecs` with the command's options."""
    return refresh_ecs(req.region, prices=req.prices, instance_types=req.instance_types, endpoint=req.endpoint,
                       protocol=req.protocol, timeout_s=req.timeout_s, total_timeout_s=req.total_timeout_s)
