"""Price table: schema validation (every problem listed), provenance of bundled rows, layered lookups."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import textwrap
from importlib import resources

import pytest

from trainfit.catalog import _store
from trainfit.catalog import set_overlay_path
from trainfit.catalog import prices as P
from trainfit.catalog._schema import CURRENCIES
from trainfit.cli import main
from trainfit.errors import CatalogError

RAW = list(csv.DictReader(io.StringIO(
    resources.files("trainfit.catalog").joinpath("data/prices.csv").read_text(encoding="utf-8"))))


@pytest.fixture(autouse=True)
def _fresh_prices():
    P.reset_price_cache()
    yield
    P.reset_price_cache()


def _row(**kw):
    base = dict(provider="tencent", resource_class="ecs", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                billing="payg", price_per_hour="1.5", currency="USD", verified="yes",
                source="https://example.org/price", as_of="2026-11-01")
    base.update(kw)
    return base


def test_header_matches_schema():
    text = resources.files("trainfit.catalog").joinpath("data/prices.csv").read_text(encoding="utf-8")
    assert text.splitlines()[0].split(",") == [c.name for c in P.PRICE_COLUMNS]


def test_every_bundled_row_has_a_url_a_date_and_a_currency():
    assert RAW, "no bundled prices"
    today = dt.date.today()
    for raw in RAW:
        assert None not in raw
        for part in raw["source"].split(";"):
            assert part.startswith("https://"), raw["instance_type"]
        assert dt.date.fromisoformat(raw["as_of"]) <= today
        assert raw["currency"] in CURRENCIES or raw["price_per_hour"] == ""
    rows = P.bundled_price_rows()
    assert len(rows) == len(RAW)


def test_bundled_prices_refer_to_catalog_instances():
    from trainfit.catalog import list_instances

    keys = {(i.provider, i.resource_class, i.instance_type.lower()) for i in list_instances()}
    for r in P.bundled_price_rows():
        assert (r["provider"], r["resource_class"], r["instance_type"].lower()) in keys, r["instance_type"]


def test_validation_lists_every_problem():
    bad = [
        _row(billing="hourly"),                                   # unknown billing
        _row(price_per_hour="-3"),                                # negative
        _row(currency="RMB"),                                     # not ISO 4217
        _row(currency=""),                                        # price without currency
        _row(price_per_hour="", currency=""),                     # states nothing
        _row(spot_discount="0.3"),                                # discount on a payg row
        _row(billing="spot", spot_discount="1.5"),                # discount out of 0-1
        _row(as_of="2026-13-01"),                                 # bad date
        _row(source=""),                                          # no source
        _row(as_of=(dt.date.today() + dt.timedelta(days=30)).isoformat()),  # future
        {**_row(), "colour": "red"},                              # unknown column
    ]
    rows, problems = P.parse_price_rows(bad, "t")
    assert rows == []
    for i in range(len(bad)):
        assert any(p.startswith(f"t[{i}]") for p in problems), (i, problems)
    text = "\n".join(problems)
    for needle in ("billing='hourly'", "below 0", "currency='RMB'", "together", "neither", "only meaningful",
                   "spot_discount=1.5", "as_of='2026-13-01'", "source is required", "future", "unknown column"):
        assert needle in text, needle


def test_price_row_dataclass_validates():
    with pytest.raises(CatalogError) as ei:
        P.PriceRow(provider="tencent", resource_class="ecs", instance_type="x", billing="payg", price_per_hour=1.0,
                   source="s", as_of="2026-01-01")
    assert "together" in ei.value.message
    r = P.PriceRow(provider="tencent", resource_class="ecs", instance_type="x", billing="spot", spot_discount=0.2,
                   source="s", as_of="2026-01-01")
    assert r.price_per_hour is None and r.age_days >= 0


def test_bundled_lookup():
    got = P.latest_price("tencent", "ecs", "gn7.2xlarge32")
    assert got is not None and got.currency == "USD" and got.origin == "bundled"
    raw = next(r for r in RAW if r["instance_type"] == "GN7.2XLARGE32")
    assert got.price_per_hour == float(raw["price_per_hour"])
    assert P.latest_price("tencent", "ecs", "GN7.2XLARGE32", billing="subscription") is None
    assert P.latest_price("alibaba", "pai-public", "ecs.gn7i-c8g1.2xlarge") is None  # nothing published: unknown
    with pytest.raises(CatalogError):
        P.prices_for("tencent", "ecs", "GN7.2XLARGE32", billing="monthly")


OVERLAY = textwrap.dedent("""
    prices:
      - provider: tencent
        resource_class: ecs
        instance_type: GN7.2XLARGE32
        region: ap-guangzhou
        billing: payg
        price_per_hour: 9.9
        currency: CNY
        verified: yes
        source: our Tencent bill, November 2026
        as_of: 2026-11-30
      - provider: tencent
        resource_class: ecs
        instance_type: GN7.2XLARGE32
        region: ap-shanghai
        billing: payg
        price_per_hour: 11
        currency: CNY
        verified: yes
        source: our Tencent bill, November 2026
        as_of: 2026-11-30
      - provider: tencent
        resource_class: ecs
        instance_type: GN7.2XLARGE32
        billing: spot
        spot_discount: 0.25
        verified: no
        source: DescribeSpotPriceHistory by hand
        as_of: 2026-11-29
""")


def _overlay(tmp_path, text):
    p = tmp_path / "catalog.yaml"
    p.write_text(text, encoding="utf-8")
    set_overlay_path(str(p))
    return p


def test_overlay_prices_rank_by_date_and_region(tmp_path):
    _overlay(tmp_path, OVERLAY)
    gz = P.latest_price("tencent", "ecs", "GN7.2XLARGE32", region="ap-guangzhou")
    assert (gz.price_per_hour, gz.currency, gz.region) == (9.9, "CNY", "ap-guangzhou")
    assert gz.origin.startswith("overlay:")
    sh = P.latest_price("tencent", "ecs", "GN7.2XLARGE32", region="ap-shanghai")
    assert sh.price_per_hour == 11
    # a region with no own row falls back to the list price (region not stated), never to another region
    bj = P.latest_price("tencent", "ecs", "GN7.2XLARGE32", region="ap-beijing")
    assert bj.region is None and bj.currency == "USD"
    all_rows = P.prices_for("tencent", None, "GN7.2XLARGE32")
    assert [r.as_of for r in all_rows] == sorted((r.as_of for r in all_rows), reverse=True)
    spot = P.latest_spot_discount("tencent", "ecs", "GN7.2XLARGE32")
    assert spot.spot_discount == 0.25 and spot.price_per_hour is None


def test_bad_overlay_prices_fail_loudly_and_validate_lists_them(tmp_path, capsys):
    p = _overlay(tmp_path, textwrap.dedent("""
        prices:
          - {provider: tencent, resource_class: ecs, instance_type: X, billing: payg, price_per_hour: 1,
             verified: yes, source: me, as_of: 2026-11-30}
          - {provider: tencent, resource_class: ecs, instance_type: X, billing: spot, spot_discount: 2,
             verified: yes, source: me, as_of: 2026-11-30}
    """))
    with pytest.raises(CatalogError) as ei:
        P.current_prices()
    assert "prices[0]" in ei.value.message and "prices[1]" in ei.value.message
    assert main(["catalog", "validate", str(p)]) == 1
    err = capsys.readouterr().err
    assert "together" in err and "spot_discount=2" in err


def test_refresh_cache_prices_are_read(tmp_path, monkeypatch):
    from trainfit.catalog.cache import CACHE_FORMAT, write_cache_atomic

    monkeypatch.setenv("TRAINFIT_CACHE_DIR", str(tmp_path / "c"))
    row = {k: v for k, v in _row(price_per_hour=2.5, region="ap-beijing", source="Tencent InquiryPriceRunInstances",
                                 as_of="2026-12-01").items()}
    write_cache_atomic(tmp_path / "c" / "catalog" / "tencent-ap-beijing.json",
                       {"format": CACHE_FORMAT, "gpus": [], "instances": [], "prices": [row]})
    _store.reset_cache()
    got = P.latest_price("tencent", "ecs", "GN7.2XLARGE32", region="ap-beijing")
    assert got.price_per_hour == 2.5 and got.origin.startswith("refresh:")


def test_cli_show_prices_json(capsys):
    assert main(["catalog", "show", "prices", "--provider", "tencent", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len([r for r in RAW if r["provider"] == "tencent"])
    assert all(r["source"].startswith("https://") for r in rows)
    assert main(["catalog", "show", "prices", "--provider", "tencent", "--instance-type", "GN10Xp.20XLARGE320",
                 "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert [r["instance_type"] for r in one] == ["GN10Xp.20XLARGE320"]


def test_price_for_instance_prefers_the_table_then_the_instance_row(tmp_path):
    from trainfit.catalog import get_instance

    gn7 = get_instance("GN7.2XLARGE32")
    raw = next(r for r in RAW if r["instance_type"] == "GN7.2XLARGE32")
    assert P.price_for_instance(gn7).price_per_hour == float(raw["price_per_hour"])
    assert P.price_for_instance(gn7, billing="spot") is None  # no spot discount anywhere: unknown, not payg
    a10 = get_instance("ecs.gn7i-c8g1.2xlarge")
    assert P.price_for_instance(a10) is None
    _overlay(tmp_path, textwrap.dedent("""
        instances:
          - provider: alibaba
            resource_class: pai-public
            instance_type: ecs.gn7i-c8g1.2xlarge
            price_per_hour: 12
            currency: CNY
            spot_discount: 0.25
            source: our bill
            as_of: 2026-11-30
    """))
    _store.reset_cache()
    a10 = get_instance("ecs.gn7i-c8g1.2xlarge")
    pay = P.price_for_instance(a10)
    assert (pay.price_per_hour, pay.currency) == (12, "CNY") and pay.origin.startswith("overlay:")
    spot = P.price_for_instance(a10, billing="spot")
    assert spot.price_per_hour == pytest.approx(3.0) and spot.spot_discount == 0.25 and "derived" in spot.notes
