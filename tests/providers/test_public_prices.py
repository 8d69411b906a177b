"""``catalog refresh --provider alibaba --public-prices``: Alibaba's public ECS price list (instancePrice.json)
replayed by a 127.0.0.1 server in the documented layout; malformed, huge and slow answers; the prices in plans."""

from __future__ import annotations

import json
import re
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests._replay import ReplayServer, send
from trainfit.catalog.instances import get_instance
from trainfit.catalog.prices import latest_price, price_for_instance, prices_for, regional_prices
from trainfit.cli import main
from trainfit.errors import CatalogError, NetworkError
from trainfit.providers.alibaba import public_prices
from trainfit.providers.alibaba.public_prices import HOURS_PER_MONTH, cache_path, refresh_public_prices

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "alibaba" / "instancePrice.json"
PATH = "/aliyun/ecs-price-info/2.0.999/price/download/instancePrice.json"
A10 = "ecs.gn7i-c8g1.2xlarge"
SAME = "ecs.gn7i-c16g1.4xlarge"


class _Server(ReplayServer):
    """Serves the fixture (or a variant chosen by ``mode``) at :data:`PATH`."""

    def __init__(self, body: bytes):
        self.body = body
        self.page = b"<html>no price list named here</html>"
        self.mode = "ok"
        self.hits = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.hits += 1
                if self.path == "/price/ecs/ecs-pricing/zh":
                    send(self, 200, outer.page)
                elif self.path.split("?")[0] != PATH or outer.mode == "404":
                    send(self, 404, b"<html>Not Found</html>")
                elif outer.mode == "slow":
                    time.sleep(3)
                    send(self, 200, outer.body)
                elif outer.mode == "trickle":  # each byte arrives in time, the whole answer never does
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(outer.body)))
                    self.end_headers()
                    try:
                        for b in outer.body[:40]:
                            self.wfile.write(bytes([b]))
                            self.wfile.flush()
                            time.sleep(0.1)
                    except OSError:
                        pass
                elif outer.mode == "no-length":  # no Content-Length: the body ends when the connection closes
                    self.send_response(200)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(outer.body)
                    self.close_connection = True
                elif outer.mode == "declared-huge":
                    self.send_response(200)
                    self.send_header("Content-Length", str(10**12))
                    self.end_headers()
                else:
                    send(self, 200, outer.body)

        self._serve(H)

    @property
    def url(self) -> str:
        return f"http://{self.endpoint}{PATH}"


@pytest.fixture
def fixture_data() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture
def server(fixture_data, monkeypatch):
    for v in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(v, raising=False)
    s = _Server(FIXTURE.read_bytes())
    yield s
    s.close()


def _refresh(server, **kw):
    kw.setdefault("timeout_s", 5)
    kw.setdefault("instance_types", [A10, SAME, "ecs.gn8v-8x.48xlarge"])
    return refresh_public_prices(url=server.url, **kw)


def test_refresh_writes_regional_rows_with_version_date_and_source(server, fixture_data):
    res = _refresh(server)
    assert res.path == cache_path("cn") and res.version == "2.0.999" and res.publication_date == "2026-11-20"
    assert res.currency == "CNY" and res.missing == ("ecs.gn8v-8x.48xlarge",)
    assert res.regions == ("cn-beijing", "cn-hangzhou", "cn-shanghai", "cn-wulanchabu")
    info = fixture_data["pricingInfo"]
    hz = latest_price("alibaba", "ecs", A10, region="cn-hangzhou")
    want = float(info[f"cn-hangzhou::{A10}::vpc::linux::optimized"]["hours"][0]["price"])
    assert (hz.price_per_hour, hz.currency, hz.billing, hz.as_of) == (want, "CNY", "payg", "2026-11-20")
    assert server.url in hz.source and "version 2.0.999" in hz.source and "published 2026-11-20" in hz.source
    # linux + vpc only; "optimized" io beats "none"
    bj = latest_price("alibaba", "ecs", A10, region="cn-beijing")
    assert bj.price_per_hour == float(info[f"cn-beijing::{A10}::vpc::linux::optimized"]["hours"][0]["price"])
    # the one-month subscription at 730 h/month, never as pay-as-you-go
    sub = latest_price("alibaba", "ecs", A10, region="cn-hangzhou", billing="subscription")
    month = float(info[f"cn-hangzhou::{A10}::vpc::linux::optimized"]["months"][0]["price"])
    assert sub.price_per_hour == pytest.approx(month / HOURS_PER_MONTH) and "730 h/month" in sub.notes
    assert latest_price("alibaba", "ecs", A10, region="cn-beijing", billing="subscription") is None
    # the cache records the list's metadata and has no temporary files left over
    data = json.loads(res.path.read_text(encoding="utf-8"))
    assert data["price_list"]["version"] == "2.0.999" and data["price_list"]["url"] == server.url
    assert not [p for p in res.path.parent.iterdir() if p.name.startswith(".")]
    # a type the list does not carry for our filter (a CPU type) is not kept
    assert not prices_for("alibaba", None, "ecs.g7.xlarge")


def test_pai_public_instance_uses_the_ecs_list_price_and_says_so(server):
    _refresh(server)
    inst = get_instance(A10)
    assert inst.resource_class == "pai-public"
    row = price_for_instance(inst, "cn-wulanchabu")
    assert row.price_per_hour == 10.0 and row.region == "cn-wulanchabu"
    assert "ECS list price used for PAI-DLC public resources" in row.source and "billing-of-dlc" in row.source
    # no region: the cheapest region's
    assert price_for_instance(inst, None).region == "cn-wulanchabu"
    # a region the list does not price the type in: no price (never another region's)
    assert price_for_instance(inst, "ap-southeast-1") is None
    regions = [r.region for r in regional_prices(inst)]
    assert regions == ["cn-wulanchabu", "cn-beijing", "cn-hangzhou"]


def test_saved_copy_and_intl_site_currency(tmp_path, fixture_data):
    d = dict(fixture_data)
    d.pop("currency")
    f = tmp_path / "instancePrice.json"
    f.write_text(json.dumps(d), encoding="utf-8")
    res = refresh_public_prices(site="intl", url=str(f), instance_types=[A10])
    assert res.currency == "USD" and res.path == cache_path("intl") and res.url.startswith("file ")
    assert latest_price("alibaba", "ecs", A10, region="cn-hangzhou").currency == "USD"


def _seed(site="cn"):
    path = cache_path(site)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": "trainfit-refresh/1", "gpus": [], "instances": [], "prices": []}', encoding="utf-8")
    return path, path.read_bytes()


@pytest.mark.parametrize("body,needle", [
    (b"<html>pricing</html>", "malformed JSON"),
    (b'{"version": "1"}', "no 'pricingInfo'"),
    (b"[" * 500 + b"]" * 500, "nests deeper"),
    (json.dumps({"pricingInfo": {f"cn-hangzhou::{A10}::vpc::linux::optimized": {"hours": [{"price": "12,5"}]},
                                 f"cn-beijing::{A10}::vpc::linux::optimized": {"months": []},
                                 f"bad region!::{A10}::vpc::linux::optimized": {"hours": [{"price": "1"}]}}}).encode(),
     "malformed entries"),
    (json.dumps({"pricingInfo": {f"cn-hangzhou::ecs.other::vpc::linux::optimized": {"hours": [{"price": "1"}]}}})
     .encode(), "lists none of"),
    (b"\xff\xfe garbage", "not UTF-8"),
])
def test_malformed_lists_leave_the_cache_untouched(server, body, needle):
    path, before = _seed()
    server.body = body
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert needle in ei.value.message and ei.value.fix, ei.value.message
    assert path.read_bytes() == before


def test_every_malformed_entry_is_listed(server):
    server.body = json.dumps({"pricingInfo": {
        f"cn-hangzhou::{A10}::vpc::linux::optimized": {"hours": [{"price": "12,5"}]},
        f"cn-beijing::{A10}::vpc::linux::optimized": {"months": []},
        f"bad region!::{A10}::vpc::linux::optimized": {"hours": [{"price": "1"}]}}}).encode()
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    m = ei.value.message
    assert "'12,5' is not a decimal number" in m and "no 'hours' list" in m and "is not a region id" in m


def test_http_error_huge_and_slow_answers(server, monkeypatch):
    path, before = _seed()
    server.mode = "404"
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert "HTTP 404" in ei.value.message
    server.mode = "declared-huge"
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert "over the" in ei.value.message and "limit" in ei.value.message
    monkeypatch.setattr(public_prices, "MAX_PRICE_LIST_BYTES", 1000)
    server.mode = "ok"  # the stated length is over the limit
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert "is 1,591 bytes, over the 1,000-byte limit" in ei.value.message.replace(str(len(server.body)), "1,591") \
        or "over the 1,000-byte limit" in ei.value.message
    server.mode = "no-length"  # no length stated: the read itself stops at the limit
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert "larger than the 1,000-byte limit" in ei.value.message
    monkeypatch.undo()
    server.mode = "slow"
    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        _refresh(server, timeout_s=0.3)
    assert "timed out" in ei.value.message and time.monotonic() - t < 3
    server.mode = "trickle"
    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        _refresh(server, timeout_s=2, total_timeout_s=0.5)
    assert "timed out" in ei.value.message and time.monotonic() - t < 2.5
    assert path.read_bytes() == before


def test_unreachable_server_is_a_network_error():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(NetworkError) as ei:
        refresh_public_prices(url=f"http://127.0.0.1:{port}{PATH}", instance_types=[A10], timeout_s=2)
    assert "network error" in ei.value.message and ei.value.fix


def test_file_limits(tmp_path, monkeypatch):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    monkeypatch.setattr(public_prices, "MAX_PRICE_LIST_BYTES", 1000)
    with pytest.raises(CatalogError) as ei:
        refresh_public_prices(url=str(big), instance_types=[A10])
    assert "over the 1,000-byte limit" in ei.value.message
    with pytest.raises(CatalogError) as ei:
        refresh_public_prices(url=str(tmp_path / "missing.json"), instance_types=[A10])
    assert "cannot read" in ei.value.message
    with pytest.raises(CatalogError) as ei:
        refresh_public_prices(url="ftp://example.invalid/x.json", instance_types=[A10])
    assert "only http://, https:// or a local file" in ei.value.message


def test_cli_public_prices(server, capsys):
    rc = main(["catalog", "refresh", "--provider", "alibaba", "--public-prices", "--url", server.url,
               "--instance-type", A10, "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == "2.0.999" and out["publication_date"] == "2026-11-20" and out["prices"] == 5
    rc = main(["catalog", "refresh", "--provider", "alibaba", "--public-prices", "--url", server.url,
               "--instance-type", A10])
    assert rc == 0
    text = capsys.readouterr().out
    assert "version 2.0.999" in text and "published 2026-11-20" in text
    for argv, needle in (
        (["--provider", "alibaba"], "--public-prices"),
        (["--provider", "alibaba", "--public-prices", "--region", "cn-hangzhou"], "do not apply"),
        (["--provider", "ecs"], "needs --region"),
        (["--provider", "ecs", "--region", "cn-hangzhou", "--url", server.url], "--url only applies"),
        (["--provider", "alibaba", "--public-prices", "--url", "/nonexistent/instancePrice.json"], "cannot read"),
    ):
        rc = main(["catalog", "refresh", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and needle in err and "Traceback" not in err, (argv, err)


# ------------------------------------------------------------------------------------------ plans

def _plan(*extra):
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["plan", "Qwen3-0.6B", "--method", "lora", "--tokens", "20M", "--provider", "alibaba",
                   "--gpus", "1", *extra, "--json"])
    return rc, json.loads(buf.getvalue())


def test_plans_are_priced_per_region_and_say_when_the_region_changes_nothing(server):
    _refresh(server)
    rc, out = _plan("--instance-type", A10)
    assert rc == 0
    p = out["plans"][0]
    assert p["currency"] == "CNY" and p["price_per_hour"] == 10.0  # cheapest region without --region
    assert "version 2.0.999" in p["price_source"] and p["price_as_of"] == "2026-11-20"
    assert any("cheapest region" in n and "cn-wulanchabu" in n for n in out["notes"])
    _, hz = _plan("--instance-type", A10, "--region", "cn-hangzhou")
    _, wl = _plan("--instance-type", A10, "--region", "cn-wulanchabu")
    a, b = hz["plans"][0], wl["plans"][0]
    assert a["hours"] == b["hours"] and a["price_per_hour"] == 12.5 and b["price_per_hour"] == 10.0
    assert a["cost"] == pytest.approx(b["cost"] * 1.25)
    assert not any("changes nothing" in n for n in hz["notes"])
    # the same price everywhere: the plan says the region changes nothing
    _, v1 = _plan("--instance-type", SAME, "--region", "cn-hangzhou")
    assert any("changes nothing" in n and SAME in n and "same list price" in n for n in v1["notes"]), v1["notes"]
    # no regional price at all: says so too
    _, t4 = _plan("--instance-type", "ecs.gn7s-c8g1.2xlarge", "--region", "cn-hangzhou")
    assert any("changes nothing" in n and "no source gives a regional price" in n for n in t4["notes"])


def test_compare_regions(server):
    _refresh(server)
    rc, out = _plan("--instance-type", A10, "--region", "cn-hangzhou", "--compare-regions")
    assert rc == 0
    p = out["plans"][0]
    rp = out["region_prices"][0]
    assert rp["plan"] == 0 and [g["region"] for g in rp["regions"]] == ["cn-wulanchabu", "cn-beijing", "cn-hangzhou"]
    own = next(g for g in rp["regions"] if g["region"] == "cn-hangzhou")
    assert own["cost"] == pytest.approx(p["cost"])  # the plan's own region prices as the plan does
    assert rp["regions"][0]["cost"] == pytest.approx(p["cost"] * 10.0 / 12.5)
    # issue 26: every region's cost carries its p10-p90 range, the plan's own cost range in its own region
    assert own["cost_interval"] == pytest.approx(p["intervals"]["cost"])
    for g in rp["regions"]:
        r = g["cost_interval"]
        assert r["p10"] < g["cost"] < r["p90"] and r["p50"] / g["cost"] == pytest.approx(
            p["intervals"]["cost"]["p50"] / p["cost"])
    _, plain = _plan("--instance-type", A10, "--region", "cn-hangzhou")
    assert "region_prices" not in plain
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["plan", "Qwen3-0.6B", "--method", "lora", "--tokens", "20M", "--provider", "alibaba", "--gpus", "1",
              "--instance-type", A10, "--compare-regions"])
    text = buf.getvalue()
    assert "priced per region" in text and "cn-wulanchabu" in text
    table = text[text.index("priced per region"):]
    assert re.search(r"\(\s*[\d.,k]+–[\d.,k]+\s*\)", table), table  # the region table's cost shows its range


def test_every_alibaba_plan_in_the_list_has_a_cny_cost(server, fixture_data):
    """Done-when of issue 25: after the refresh, every Alibaba plan whose instance type the list prices has a cost
    in CNY with source, version and date (a list that prices every catalog ECS type in two regions)."""
    from trainfit.catalog import list_instances

    types = sorted({i.instance_type for i in list_instances(provider="alibaba") if i.instance_type.startswith("ecs.")})
    info = {}
    for k, t in enumerate(types):
        for region, price in (("cn-hangzhou", 10.0 + k), ("cn-wulanchabu", 9.0 + k)):
            info[f"{region}::{t}::vpc::linux::optimized"] = {"hours": [{"price": f"{price:.2f}", "period": "1"}]}
    server.body = json.dumps({**fixture_data, "pricingInfo": info}).encode()
    res = refresh_public_prices(url=server.url, timeout_s=5)
    assert res.instance_types == len(types) and not res.missing
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["plan", "Qwen3-0.6B", "--method", "lora", "--tokens", "20M", "--provider", "alibaba",
              "--region", "cn-hangzhou", "--top", "1000", "--json"])
    out = json.loads(buf.getvalue())
    ecs_plans = [p for p in out["plans"] if p["instance_type"].startswith("ecs.")]
    assert ecs_plans
    for p in ecs_plans:
        assert p["cost"] is not None and p["currency"] == "CNY", p["instance_type"]
        assert "version 2.0.999" in p["price_source"] and p["price_as_of"] == "2026-11-20"


def test_the_pricing_page_names_the_current_list(server, monkeypatch):
    server.page = (b'<script src="https://g.alicdn.com/aliyun/ecs-price-info/2.0.9/price/js/x.js"></script>'
                   b'<script>var a="//g.alicdn.com/aliyun/ecs-price-info/2.0.412";'
                   b'var b="//g.alicdn.com/aliyun/ecs-price-info-intl/9.9.9";</script>')
    monkeypatch.setitem(public_prices.PRICING_PAGES, "cn", f"http://{server.endpoint}/price/ecs/ecs-pricing/zh")
    got = public_prices.discover_url("cn", timeout_s=5)
    assert got == "https://g.alicdn.com/aliyun/ecs-price-info/2.0.412/price/download/instancePrice.json"
    assert public_prices.discover_url("intl", timeout_s=5) is None  # no page is known for the intl site
    # the refresh reads the discovered link; a page naming nothing falls back to the pinned default
    monkeypatch.setattr(public_prices, "discover_url", lambda site, **kw: server.url)
    res = refresh_public_prices(instance_types=[A10], timeout_s=5)
    assert res.url == server.url and "the link on" in res.how
    monkeypatch.setattr(public_prices, "discover_url", lambda site, **kw: None)
    monkeypatch.setitem(public_prices.DEFAULT_URLS, "cn", server.url)
    res = refresh_public_prices(instance_types=[A10], timeout_s=5)
    assert res.url == server.url and "pinned default" in res.how


def test_web_api_compare_regions(server):
    """The option is one Option in options.py: the web API takes it too and returns the same per-region prices."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from trainfit.web.app import create_app

    _refresh(server)
    client = TestClient(create_app(), base_url="http://127.0.0.1")
    body = {"model": "Qwen3-0.6B", "method": "lora", "tokens": "20M", "provider": "alibaba", "gpus": 1,
            "instance_type": A10, "region": "cn-hangzhou", "compare_regions": True}
    r = client.post("/api/plan", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    _, cli = _plan("--instance-type", A10, "--region", "cn-hangzhou", "--compare-regions")
    assert out["region_prices"] == cli["region_prices"]
    r = client.post("/api/plan", json={**body, "compare_regions": "sometimes"})
    assert r.status_code in (400, 422) and "compare_regions" in r.text


@pytest.mark.parametrize("raw,want", [("2026-11-20T08:00:00Z", "2026-11-20"), ("2026/1/2", "2026-01-02"),
                                      ("20261120", "2026-11-20"), ("2026-13-01", None), ("soon", None)])
def test_publication_date_forms(server, fixture_data, raw, want):
    import datetime as dt

    server.body = json.dumps({**fixture_data, "publicationDate": raw}).encode()
    res = _refresh(server)
    row = latest_price("alibaba", "ecs", A10, region="cn-hangzhou")
    assert res.publication_date == want
    if want:
        assert row.as_of == want and f"published {want}" in row.source
    else:  # never guessed: dated the day it was read, and the source says so
        assert row.as_of == dt.datetime.now(dt.timezone.utc).date().isoformat()
        assert "not a date trainfit reads" in row.source and repr(raw) in row.source
