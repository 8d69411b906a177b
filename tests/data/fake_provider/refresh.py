"""fakecloud's ``catalog refresh``: read its public price list (a local JSON file here, ``--url``) and cache one
price row per instance type and region, as the built-in refreshes do (a ``trainfit-refresh/1`` cache file)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from trainfit.catalog import reset_cache
from trainfit.catalog.cache import CACHE_FORMAT, cache_file, write_cache_atomic
from trainfit.catalog.prices import parse_price_rows, reset_price_cache
from trainfit.errors import CatalogError
from trainfit.providers.registry import PriceListRefreshed, RefreshRequest


def refresh_request(req: RefreshRequest) -> PriceListRefreshed:
    if not req.url:
        raise CatalogError("fakecloud's price list is a file", fix="pass --url FILE")
    data = json.loads(Path(req.url).read_text(encoding="utf-8"))
    today = dt.date.today().isoformat()
    raw = [{"provider": "fakecloud", "resource_class": "fake-gpu", "instance_type": it, "region": region,
            "billing": "payg", "price_per_hour": price, "currency": data["currency"], "verified": "no",
            "source": f"fakecloud price list {data['version']} https://example.com/fakecloud/prices", "as_of": today}
           for it, by_region in data["prices"].items() for region, price in by_region.items()]
    rows, problems = parse_price_rows(raw, "fakecloud price list")
    if problems:
        raise CatalogError("fakecloud's price list does not validate:\n  " + "\n  ".join(problems))
    fetched = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
    path = cache_file("fakecloud-public-prices", "all")
    write_cache_atomic(path, {"format": CACHE_FORMAT, "provider": "fakecloud", "region": "all", "fetched_at": fetched,
                              "sdk": "none", "gpus": [], "instances": [], "prices": raw})
    reset_cache()
    reset_price_cache()
    return PriceListRefreshed(site=req.site, path=path, url=req.url, version=data["version"],
                              publication_date=data["published"], currency=data["currency"], prices=len(rows),
                              regions=tuple(sorted({r["region"] for r in raw})), instance_types=len(data["prices"]),
                              missing=(), fetched_at=fetched, how="--url")
