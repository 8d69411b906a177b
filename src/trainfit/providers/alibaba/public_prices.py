"""``trainfit catalog refresh --provider alibaba --public-prices``: ECS list prices from Alibaba's public price file.

No credentials. Alibaba's ECS pricing pages are served from a versioned JSON price list on Alibaba's CDN,
``https://g.alicdn.com/aliyun/ecs-price-info[-intl]/<version>/price/download/instancePrice.json`` (China site
``ecs-price-info``, prices in CNY; international site ``ecs-price-info-intl``, prices in USD). Apache libcloud's
``contrib/update_ecs_prices.py`` and other open-source price tools read the same file. Its layout, as those tools
read it (facts, not code):

* top level: ``currency``, ``version``, ``publicationDate``, ``site``, ``type``, ``description``, ``disclaimer``
  and ``pricingInfo``;
* ``pricingInfo`` maps ``region::instanceType::network::os::io`` (e.g.
  ``cn-hangzhou::ecs.gn7i-c8g1.2xlarge::vpc::linux::optimized``) to ``{"hours": [{"price": "..", "period":
  ".."}], "weeks": [...], "months": [...], "years": [...]}``, prices as decimal strings.

What trainfit keeps: for every instance type of the Alibaba catalog (or ``--instance-type``), per region, the
``vpc`` + ``linux`` entry (``io`` = ``optimized`` preferred): ``hours[0]`` as the pay-as-you-go price per
instance-hour, and the one-month ``months`` entry as a subscription price converted to per hour at
:data:`HOURS_PER_MONTH` (8,760 h a year / 12), noted as such, with ``billing=subscription`` so it is never
used as pay-as-you-go. Rows have ``resource_class=ecs``: they are ECS list prices. A PAI-DLC public-resource
instance (class ``pai-public``) without a price of its own is priced with the ECS row, said so in the price
source (:func:`trainfit.catalog.prices.price_for_instance`): PAI-DLC bills its own per-region price, shown in
the PAI console (:data:`DLC_BILLING_URL`), which this file does not give.

Each row's ``as_of`` is the file's ``publicationDate`` (the date the figures are from, not the download date);
its ``source`` names the URL, the site, ``version`` and ``publicationDate``. Reading is bounded: the download
(or the file) is at most :data:`MAX_PRICE_LIST_BYTES`, parsed with a depth limit, under a per-call timeout and
a total deadline; nothing is written unless every kept entry validates, and the cache is replaced atomically.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

from trainfit.catalog.prices import HOURS_PER_MONTH
from trainfit.errors import CatalogError, NetworkError, TrainfitError
from trainfit.i18n import _
from trainfit.catalog.cache import cache_file
from trainfit.providers._refresh_common import Deadline, today, write_price_cache, short
from trainfit.catalog import CURRENCIES, list_instances
from trainfit.inputs import PATTERNS, loads_json, read_text_file
from trainfit.providers.registry import DLC_BILLING_URL, PriceListRefreshed, RefreshRequest  # noqa: F401 - DLC_BILLING_URL re-exported for docs and tests
from trainfit.json_types import JSON, JSONObject

#: Newest version of each site's file cited in public code (SpareCores sc-crawler cites intl 2.0.375; the
#: China-site 2.0.211 directory is cited by public code for ``bandWidthPrice.json`` next to it). The file's own
#: ``version`` and ``publicationDate`` are recorded; pass ``--url`` with the link the pricing page uses today.
DEFAULT_URLS = {
    "cn": "https://g.alicdn.com/aliyun/ecs-price-info/2.0.211/price/download/instancePrice.json",
    "intl": "https://g.alicdn.com/aliyun/ecs-price-info-intl/2.0.375/price/download/instancePrice.json",
}
#: The China site's ECS pricing page, whose script names the current price-list directory
#: (``https://g.alicdn.com/aliyun/ecs-price-info/<version>``; public code finds the list this way, e.g.
#: cloudpilot-ai/priceserver). No such page is cited for the international site: it uses :data:`DEFAULT_URLS`.
PRICING_PAGES = {"cn": "https://www.aliyun.com/price/ecs/ecs-pricing/zh"}
#: Largest pricing page read while looking for the list's link.
MAX_PAGE_BYTES = 8 * 2**20
_CDN_RE = re.compile(r"g\.alicdn\.com/aliyun/(ecs-price-info(?:-intl)?)/([0-9]{1,4}(?:\.[0-9]{1,5}){1,3})")
#: Currency of each site (the file's ``currency`` field wins when it names one).
SITE_CURRENCY = {"cn": "CNY", "intl": "USD"}
SITES = tuple(DEFAULT_URLS)
#: Largest price list read (the whole file: every region, instance type, OS and period).
MAX_PRICE_LIST_BYTES = 96 * 2**20
#: Deepest nesting accepted (the real file nests 4 levels).
MAX_DEPTH = 12
_PRICE_RE = re.compile(r"^[0-9]{1,9}(?:\.[0-9]{1,8})?$")
_URL_RE = re.compile(r"^https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]{1,2000}$")


def cache_path(site: str) -> Path:
    return cache_file("alibaba-public-prices", site)


# ------------------------------------------------------------------------------------------- read

def _is_url(src: str) -> bool:
    return src.lower().startswith(("http://", "https://"))


def read_source(src: str, *, timeout_s: float, total_timeout_s: float | None = None,
                max_bytes: int | None = None) -> bytes:
    """The bytes of ``src`` (an http(s) URL or a local file), at most ``max_bytes``, under a per-call timeout
    and a total deadline (default: max(300 s, 10 x ``timeout_s``): the whole list is tens of MB)."""
    max_bytes = MAX_PRICE_LIST_BYTES if max_bytes is None else max_bytes
    if not _is_url(src):
        if "://" in src:
            raise CatalogError(_("--url {url!r}: only http://, https:// or a local file are read").format(url=src[:80]),
                               fix=_("pass the https:// link of instancePrice.json, or the path of a saved copy"))
        return read_text_file(src, max_bytes=max_bytes, what=_("price list"), error=CatalogError,
                              fix=_("pass the path of a saved instancePrice.json")).encode("utf-8")
    if not _URL_RE.match(src):
        raise CatalogError(_("--url {url!r} is not a usable URL (spaces or control characters)").format(url=src[:80]),
                           fix=_("pass the https:// link of instancePrice.json"))
    import http.client
    import urllib.error
    import urllib.request

    what = _("Alibaba public price list {url}").format(url=src)
    deadline = Deadline(total_s=total_timeout_s if total_timeout_s is not None else max(300.0, 10 * timeout_s),
                        per_call_s=timeout_s, what=what)
    too_big = _("{what} is larger than the {limit:,}-byte limit").format(what=what, limit=max_bytes)

    def get() -> bytes:
        req = urllib.request.Request(src, headers={"User-Agent": "trainfit", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=deadline.call_timeout_s()) as resp:  # noqa: S310 - http(s) only
            n = str(resp.headers.get("Content-Length") or "").strip()
            if n.isdigit() and int(n) > max_bytes:
                raise _TooBig(_("{what} is {size:,} bytes, over the {limit:,}-byte limit").format(
                    what=what, size=int(n), limit=max_bytes))
            data = resp.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise _TooBig(too_big)
            return data

    try:
        return deadline.run(get)
    except _TooBig as e:
        raise CatalogError(str(e), fix=_("check --url (a real price list is a few MB); the cache was left as it "
                                         "was")) from None
    except urllib.error.HTTPError as e:
        raise CatalogError(_("{what} answered HTTP {code} {reason}").format(what=what, code=e.code, reason=e.reason),
                           fix=_("check --url (open the ECS pricing page and copy its instancePrice.json link); the "
                                 "cache was left as it was")) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        if "timed out" in str(reason).lower():
            raise NetworkError(_("{what} timed out (limit {timeout_s:g} s per call): {error}").format(
                what=what, timeout_s=timeout_s, error=short(reason)),
                fix=_("check the network/proxy or retry with a larger --timeout; the cache was left as it was")) from None
        raise NetworkError(_("network error reading {what}: {error}").format(what=what, error=short(reason)),
                           fix=_("check the network and proxy, or download the file and pass --url FILE; the cache "
                                 "was left as it was")) from None


class _TooBig(Exception):
    pass


def discover_url(site: str, *, timeout_s: float, total_timeout_s: float | None = None) -> str | None:
    """The ``instancePrice.json`` link the site's pricing page names today (the highest version it mentions), or
    None when no page is known for the site or the page names none. Network errors are raised."""
    page = PRICING_PAGES.get(site)
    if page is None:
        return None
    text = read_source(page, timeout_s=timeout_s, total_timeout_s=total_timeout_s,
                       max_bytes=MAX_PAGE_BYTES).decode("utf-8", errors="replace")
    want = "ecs-price-info-intl" if site == "intl" else "ecs-price-info"
    versions = [m.group(2) for m in _CDN_RE.finditer(text) if m.group(1) == want]
    if not versions:
        return None
    best = max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
    return f"https://g.alicdn.com/aliyun/{want}/{best}/price/download/instancePrice.json"


# ------------------------------------------------------------------------------------------ parse

def _pub_date(raw: JSON) -> str | None:
    """``YYYY-MM-DD`` of a ``publicationDate`` (``2026-11-20``, ``2026-11-20T08:00:00Z``, ``2026/11/20``)."""
    if not isinstance(raw, str):
        return None
    m = re.match(r"^\s*([0-9]{4})[-/]?([0-9]{1,2})[-/]?([0-9]{1,2})(?![0-9])", raw) or \
        re.match(r"^\s*([0-9]{4})([0-9]{2})([0-9]{2})", raw)
    if not m:
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
    except ValueError:
        return None


def _price(entry: JSON, where: str) -> float:
    v = entry.get("price") if isinstance(entry, dict) else None
    if isinstance(v, bool) or v is None:
        raise ValueError(f"{where}: no price")
    s = str(v).strip()
    if isinstance(v, (int, float)) or _PRICE_RE.match(s):
        x = float(s)
        if x >= 0 and x == x and x != float("inf"):
            return x
    raise ValueError(f"{where}: price {str(v)[:40]!r} is not a decimal number")


def _one_month(entries: JSON, where: str) -> float | None:
    """The price of a one-month subscription from a ``months`` list (the ``period`` 1 entry), or None."""
    if not isinstance(entries, list):
        return None
    for e in entries:
        if isinstance(e, dict) and str(e.get("period", "")).strip() == "1":
            return _price(e, f"{where} months[period=1]")
    return None


def parse_price_list(data: JSON, *, site: str, wanted: dict[str, str], source_url: str
                     ) -> tuple[list[JSONObject], dict[str, str | bool | None], tuple[str, ...]]:
    """(price rows, metadata, missing types) for the instance types ``wanted`` (lower-case type -> exact type).

    Raises :class:`CatalogError` listing every malformed entry of a wanted type (nothing is kept then)."""
    if not isinstance(data, dict) or not isinstance(data.get("pricingInfo"), dict):
        raise CatalogError(_("not an Alibaba ECS price list: no 'pricingInfo' object at the top level"),
                           fix=_("pass instancePrice.json from Alibaba's ECS pricing page; the cache was left as it "
                                 "was"))

    cur = data.get("currency")
    stated = cur.strip().upper() if isinstance(cur, str) else ""
    currency = stated if stated in CURRENCIES else SITE_CURRENCY[site]
    version = str(data["version"]).strip()[:40] if isinstance(data.get("version"), (str, int, float)) else None
    published = _pub_date(data.get("publicationDate"))
    meta = {"url": source_url, "site": site, "version": version, "publication_date": published,
            "publication_date_raw": str(data.get("publicationDate"))[:60] if data.get("publicationDate") else None,
            "currency": currency, "currency_stated": isinstance(cur, str) and bool(cur.strip())}

    as_of = published or today()
    raw_date = meta["publication_date_raw"]
    when = published or (f"{raw_date!r} (not a date trainfit reads; dated the day it was read)" if raw_date
                         else "date not stated (dated the day it was read)")
    src = (f"{source_url} (Alibaba ECS public price list instancePrice.json, {site} site, version "
           f"{version or 'not stated'}, published {when})")
    problems: list[str] = []
    best: dict[tuple[str, str], tuple[int, str, dict]] = {}
    for key, entry in data["pricingInfo"].items():
        parts = str(key).split("::")
        if len(parts) < 2 or parts[1].strip().lower() not in wanted:
            continue
        region, itype = parts[0].strip(), wanted[parts[1].strip().lower()]
        network = parts[2].strip().lower() if len(parts) > 2 else ""
        os_name = parts[3].strip().lower() if len(parts) > 3 else ""
        io = parts[4].strip().lower() if len(parts) > 4 else ""
        if os_name not in ("linux", "") or network not in ("vpc", ""):
            continue
        if not PATTERNS["region"].match(region):
            problems.append(f"pricingInfo[{str(key)[:80]!r}]: region {region[:40]!r} is not a region id")
            continue
        rank = (2 if network == "vpc" else 0) + (1 if io == "optimized" else 0)
        prev = best.get((region, itype))
        if prev is None or rank > prev[0]:
            best[(region, itype)] = (rank, str(key), entry)
    rows: list[JSONObject] = []
    for (region, itype), (_rank, key, entry) in sorted(best.items()):
        where = f"pricingInfo[{key[:80]!r}]"
        try:
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: not an object")
            hours = entry.get("hours")
            if not isinstance(hours, list) or not hours:
                raise ValueError(f"{where}: no 'hours' list")
            payg = _price(hours[0], f"{where} hours[0]")
            month = _one_month(entry.get("months"), where)
        except ValueError as e:
            problems.append(str(e))
            continue
        base = {"provider": "alibaba", "resource_class": "ecs", "instance_type": itype, "region": region,
                "currency": currency, "verified": True, "source": src, "as_of": as_of}
        rows.append({**base, "billing": "payg", "price_per_hour": payg,
                     "notes": f"key {key}; hours[0] (pay-as-you-go list price of the instance: system disk, "
                              "data disks and traffic extra; your account's discounts do not apply)"})
        if month is not None:
            rows.append({**base, "billing": "subscription", "price_per_hour": round(month / HOURS_PER_MONTH, 6),
                         "notes": f"key {key}; one-month subscription {month:g} {currency}/month stated per hour "
                                  f"at {HOURS_PER_MONTH:g} h/month (8,760 h/year / 12): subscription, not "
                                  "pay-as-you-go"})
    if problems:
        raise CatalogError(_("the price list has malformed entries:") + "\n  " + "\n  ".join(problems[:20])
                           + ("\n  " + _("... and {n} more").format(n=len(problems) - 20) if len(problems) > 20 else ""),
                           fix=_("check --url (a saved copy may be truncated or edited); the cache was left as it was"))
    found = {r["instance_type"].lower() for r in rows}
    missing = tuple(sorted(t for k, t in wanted.items() if k not in found))
    return rows, meta, missing


# ------------------------------------------------------------------------------------------ entry

def _catalog_types() -> list[str]:
    return sorted({i.instance_type for i in list_instances(provider="alibaba") if i.instance_type.startswith("ecs.")})


def refresh_public_prices(*, site: str = "cn", url: str | None = None, instance_types: list[str] | None = None,
                          timeout_s: float = 30.0, total_timeout_s: float | None = None) -> PriceListRefreshed:
    """Read Alibaba's public ECS price list (``url``; else the link the site's pricing page names, see
    :func:`discover_url`; else the site's :data:`DEFAULT_URLS`), keep the catalog's
    Alibaba ECS instance types (or ``instance_types``), write them atomically into the user cache."""
    if site not in SITES:
        raise CatalogError(_("unknown --site {site!r}").format(site=site),
                           fix=_("use one of {names}").format(names=", ".join(SITES)))

    found = None
    if not url:
        try:
            found = discover_url(site, timeout_s=timeout_s, total_timeout_s=total_timeout_s)
        except TrainfitError:
            found = None  # the pinned default below is read instead (its own version and date are recorded)
    src = (url or found or DEFAULT_URLS[site]).strip()
    if instance_types:
        bad = [t for t in instance_types if not PATTERNS["instance_type"].match(t.strip())]
        if bad:
            raise CatalogError(_("--instance-type {name!r} is not an instance type name").format(name=bad[0][:60]),
                               fix=_("e.g. --instance-type ecs.gn7i-c8g1.2xlarge"))
    types = [t.strip() for t in instance_types] if instance_types else _catalog_types()
    if not types:
        raise CatalogError(_("no Alibaba ECS instance types to price"), fix=_("pass --instance-type"))
    wanted = {t.lower(): t for t in types}
    raw = read_source(src, timeout_s=timeout_s, total_timeout_s=total_timeout_s)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CatalogError(_("price list {url} is not UTF-8 text (byte {pos})").format(url=src[:120], pos=e.start),
                           fix=_("check --url; the cache was left as it was")) from None
    source_url = src if _is_url(src) else f"file {Path(src).expanduser().resolve()}"
    data = loads_json(text, what=_("price list {url}").format(url=src[:120]), error=CatalogError, limit=MAX_DEPTH)
    rows, meta, missing = parse_price_list(data, site=site, wanted=wanted, source_url=source_url)

    path = cache_path(site)
    n, fetched = write_price_cache(
        path, rows, label="public prices", provider="alibaba-public", region=f"all ({site} site)",
        sdk="none (public price list, no credentials)", schema_what="the Alibaba public price list",
        schema_fix=_("check --url; the cache was left as it was"),
        empty=_("the price list lists none of the {n} instance types asked for").format(n=len(wanted)),
        empty_fix=_("check --site (China-site types and regions differ from the international site's) and "
                    "--instance-type; the cache was left as it was"),
        extra={"price_list": meta})
    regions = tuple(sorted({r["region"] for r in rows}))
    if url:
        how = "--url"
    elif found:
        how = _("the link on {page}").format(page=PRICING_PAGES[site])
    elif site in PRICING_PAGES:
        how = _("the pinned default ({page} named no price list)").format(page=PRICING_PAGES[site])
    else:
        how = _("the pinned default (no pricing page is known for this site)")
    return PriceListRefreshed(site=site, path=path, url=source_url, version=meta["version"], how=how,
                             publication_date=meta["publication_date"], currency=meta["currency"], prices=n,
                             regions=regions, instance_types=len({r["instance_type"] for r in rows}),
                             missing=missing, fetched_at=fetched)


def refresh_request(req: RefreshRequest) -> PriceListRefreshed:
    """``catalog refresh --provider alibaba --public-prices``: :func:`refresh_public_prices` with the command's
    options."""
    return refresh_public_prices(site=req.site, url=req.url, instance_types=req.instance_types,
                                 timeout_s=req.timeout_s, total_timeout_s=req.total_timeout_s)
