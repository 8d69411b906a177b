"""`catalog refresh --provider ecs [--prices]` against a local server answering like the ECS RPC API.

The official SDK (alibabacloud_ecs20140526) runs its real code path: request signing with the key from the
default credential chain, RPC call, response parsing. Only the endpoint is 127.0.0.1 over http. Response
shapes follow the ECS API reference of DescribeInstanceTypes, DescribePrice and DescribeSpotPriceHistory.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

import pytest

from tests._replay import ReplayServer, isolate_alibaba_credentials, send

pytest.importorskip("alibabacloud_ecs20140526")
pytest.importorskip("alibabacloud_credentials")

from trainfit.catalog import _store, get_gpu, get_instance  # noqa: E402
from trainfit.catalog.prices import latest_price, latest_spot_discount  # noqa: E402
from trainfit.cli import main  # noqa: E402
from trainfit.errors import CatalogError, NetworkError  # noqa: E402
from trainfit.providers.alibaba.ecs_refresh import cache_path, refresh_ecs  # noqa: E402

REGION = "cn-hangzhou"
AK_ID = "LTAI-ecs-test-key"
AK_SECRET = "ecs-secret-never-written"


def _itype(name, gpus, vcpu, mem, spec, gmem, bw_kbit, eri=0):
    return {"InstanceTypeId": name, "CpuCoreCount": vcpu, "MemorySize": mem, "GPUAmount": gpus, "GPUSpec": spec,
            "GPUMemorySize": gmem, "InstanceBandwidthRx": bw_kbit, "InstanceBandwidthTx": bw_kbit,
            "EriQuantity": eri, "InstanceTypeFamily": name.rsplit(".", 1)[0], "CpuArchitecture": "X86"}


PAGE1 = [
    _itype("ecs.gn7i-c8g1.2xlarge", 1, 8, 30.0, "NVIDIA A10", 24.0, 16_000_000),
    _itype("ecs.gn8v-8x.48xlarge", 8, 192, 1024.0, "NVIDIA H20", 96.0, 100_000_000, eri=2),
]
PAGE2 = [
    _itype("ecs.gnnew-8x.64xlarge", 8, 256, 2048.0, "NVIDIA Z900", 144.0, 200_000_000, eri=4),
    _itype("ecs.g8i.xlarge", 0, 4, 16.0, "", 0.0, 2_500_000),  # a CPU type slipping through the filter
]
PRICES = {"ecs.gn7i-c8g1.2xlarge": 12.5, "ecs.gn6v-c8g1.2xlarge": 26.46}


class _Server(ReplayServer):
    def __init__(self):
        self.mode = "ok"
        self.requests: list[dict] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode() if n else ""
                u = urlparse(self.path)
                q = {k: v[0] for k, v in parse_qs(u.query).items()}
                q.update({k: v[0] for k, v in parse_qs(body).items()})
                # the SDK signs with ACS3 (action and key in headers) or the older RPC style (in the query)
                q.setdefault("Action", self.headers.get("x-acs-action"))
                q["_auth"] = self.headers.get("Authorization", "") + q.get("AccessKeyId", "")
                outer.requests.append(q)
                if outer.mode == "slow":
                    time.sleep(1.5)
                code, payload = outer.answer(q)
                send(self, code, payload)

            do_GET = _handle
            do_POST = _handle

        self._serve(H)


    def answer(self, q):
        action = q.get("Action")
        err = {"auth": (404, "InvalidAccessKeyId.NotFound", "Specified access key is not found."),
               "throttle": (400, "Throttling.User", "Request was denied due to user flow control.")}.get(self.mode)
        if err:
            return err[0], json.dumps({"RequestId": "r", "Code": err[1], "Message": err[2]}).encode()
        if self.mode == "html":
            return 200, b"<html>captive portal</html>"
        if action == "DescribeInstanceTypes":
            if self.mode == "badtype":
                return 200, json.dumps({"RequestId": "r", "InstanceTypes": {"InstanceType": [
                    dict(PAGE1[0], GPUAmount="eight"), dict(PAGE1[0], InstanceTypeId=None)]}}).encode()
            if self.mode == "badshape":
                return 200, json.dumps({"RequestId": "r", "InstanceTypes": {"InstanceType": {"x": 1}}}).encode()
            if q.get("NextToken") == "page2":
                return 200, json.dumps({"RequestId": "r", "InstanceTypes": {"InstanceType": PAGE2}}).encode()
            return 200, json.dumps({"RequestId": "r", "NextToken": "page2",
                                    "InstanceTypes": {"InstanceType": PAGE1}}).encode()
        if action == "DescribePrice":
            it = q.get("InstanceType")
            if it not in PRICES:
                return 400, json.dumps({"RequestId": "r", "Code": "InvalidInstanceType.NotFound",
                                        "Message": "The specified InstanceType does not exist."}).encode()
            p = PRICES[it]
            return 200, json.dumps({"RequestId": "r", "PriceInfo": {"Price": {
                "OriginalPrice": p + 0.3, "DiscountPrice": 0.0, "TradePrice": p + 0.3, "Currency": "CNY",
                "DetailInfos": {"DetailInfo": [
                    {"Resource": "instanceType", "OriginalPrice": p, "DiscountPrice": 0.0, "TradePrice": p},
                    {"Resource": "systemDisk", "OriginalPrice": 0.3, "DiscountPrice": 0.0, "TradePrice": 0.3}]}},
                "Rules": {"Rule": []}}}).encode()
        if action == "DescribeSpotPriceHistory":
            it = q.get("InstanceType")
            if it != "ecs.gn7i-c8g1.2xlarge":
                return 200, json.dumps({"RequestId": "r", "Currency": "CNY", "SpotPrices": {"SpotPriceType": []}}).encode()
            return 200, json.dumps({"RequestId": "r", "Currency": "CNY", "NextOffset": 0, "SpotPrices": {"SpotPriceType": [
                {"ZoneId": "cn-hangzhou-h", "InstanceType": it, "SpotPrice": 3.0, "OriginPrice": 12.5,
                 "Timestamp": "2026-12-02T10:00:00Z", "NetworkType": "vpc", "IoOptimized": "optimized"},
                {"ZoneId": "cn-hangzhou-h", "InstanceType": it, "SpotPrice": 2.5, "OriginPrice": 12.5,
                 "Timestamp": "2026-12-02T11:00:00Z", "NetworkType": "vpc", "IoOptimized": "optimized"},
                {"ZoneId": "cn-hangzhou-i", "InstanceType": it, "SpotPrice": 4.0, "OriginPrice": 12.5,
                 "Timestamp": "2026-12-02T11:00:00Z", "NetworkType": "vpc", "IoOptimized": "optimized"},
            ]}}).encode()
        return 400, json.dumps({"RequestId": "r", "Code": "InvalidAction", "Message": action or "?"}).encode()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def credentials_from_the_default_chain(monkeypatch, tmp_path):
    isolate_alibaba_credentials(monkeypatch, tmp_path, AK_ID, AK_SECRET)


def _run(server, **kw):
    kw.setdefault("timeout_s", 5)
    return refresh_ecs(REGION, endpoint=server.endpoint, protocol="http", **kw)


def test_spec_refresh_pages_validates_and_updates_the_catalog(server):
    before = get_instance("ecs.gn8v-8x.48xlarge")
    assert before.gpu == "ALI-GPU-H-96GB"  # bundled: known by its memory only (DescribeInstanceTypes says "GPU H")
    res = _run(server)
    assert res.instances == 3 and res.path == cache_path(REGION, prices=False)
    assert res.new_gpus == ("NVIDIA Z900",)
    actions = [(q.get("Action"), q.get("NextToken"), q.get("MinimumGPUAmount")) for q in server.requests]
    assert actions == [("DescribeInstanceTypes", None, "1"), ("DescribeInstanceTypes", "page2", "1")]
    assert all(AK_ID in q["_auth"] for q in server.requests)  # signed with the chain's key
    text = res.path.read_text(encoding="utf-8")
    assert AK_SECRET not in text and AK_ID not in text
    assert not [p for p in res.path.parent.iterdir() if p.name.startswith(".")]

    a10 = get_instance("ecs.gn7i-c8g1.2xlarge")
    assert a10.resource_class == "pai-public" and a10.origin.startswith("refresh:")  # kept its class
    assert (a10.gpu, a10.gpu_count, a10.vcpu, a10.ram_gib, a10.inter_node_gbit_per_s) == ("A10", 1, 8, 30, 16)
    h20 = get_instance("ecs.gn8v-8x.48xlarge")
    assert h20.gpu == "H20" and h20.inter_node == "rdma" and h20.inter_node_gbit_per_s == 100
    new = get_instance("ecs.gnnew-8x.64xlarge")
    assert new.resource_class == "ecs" and new.gpu == "NVIDIA Z900" and new.ram_gib == 2048
    assert get_gpu("NVIDIA Z900").mem_gib == 144 and get_gpu("NVIDIA Z900").verified is False
    with pytest.raises(CatalogError):
        get_instance("ecs.g8i.xlarge")  # CPU-only types are not cached


def test_price_refresh_writes_payg_and_spot_rows(server):
    res = _run(server, prices=True, instance_types=["ecs.gn7i-c8g1.2xlarge", "ecs.gn6v-c8g1.2xlarge",
                                                    "ecs.gn7e-c16g1.32xlarge"])
    assert res.prices == 3 and res.skipped == ("ecs.gn7e-c16g1.32xlarge",)
    assert res.path == cache_path(REGION, prices=True)
    p = latest_price("alibaba", "pai-public", "ecs.gn7i-c8g1.2xlarge", region=REGION)
    # the instanceType line, not the total with the system disk
    assert (p.price_per_hour, p.currency, p.region, p.billing) == (12.5, "CNY", REGION, "payg")
    assert "DescribePrice" in p.source and p.origin.startswith("refresh:")
    s = latest_spot_discount("alibaba", "pai-public", "ecs.gn7i-c8g1.2xlarge", region=REGION)
    assert s.price_per_hour == 2.5 and s.spot_discount == pytest.approx(0.2) and "cn-hangzhou-h" in s.notes
    assert latest_spot_discount("alibaba", None, "ecs.gn6v-c8g1.2xlarge", region=REGION) is None
    sent = {(q.get("Action"), q.get("InstanceType")) for q in server.requests}
    assert ("DescribePrice", "ecs.gn7e-c16g1.32xlarge") in sent
    assert all(q.get("PriceUnit") == "Hour" for q in server.requests if q.get("Action") == "DescribePrice")


def _seed(prices=False):
    path = cache_path(REGION, prices=prices)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": "trainfit-refresh/1", "gpus": [], "instances": []}', encoding="utf-8")
    return path, path.read_bytes()


@pytest.mark.parametrize("mode,needle", [
    ("auth", "refused the credentials"),
    ("throttle", "throttled"),
    ("html", "not JSON"),
    ("badshape", "malformed"),
    ("badtype", "malformed instance types"),
])
def test_failures_leave_the_cache_untouched(server, mode, needle):
    path, before = _seed()
    server.mode = mode
    with pytest.raises(CatalogError) as ei:
        _run(server)
    assert needle in ei.value.message and ei.value.fix, ei.value.message
    assert path.read_bytes() == before
    assert AK_SECRET not in ei.value.message


def test_bad_types_list_every_problem(server):
    server.mode = "badtype"
    with pytest.raises(CatalogError) as ei:
        _run(server)
    assert "GPUAmount='eight' is not a number" in ei.value.message
    assert "InstanceTypeId is missing" in ei.value.message


def test_network_error_is_reported_as_network_not_quota():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connection refused
    with pytest.raises(NetworkError) as ei:
        refresh_ecs(REGION, endpoint=f"127.0.0.1:{port}", protocol="http", timeout_s=2)
    assert "network error" in ei.value.message and "quota" not in ei.value.message


def test_per_call_timeout_and_total_deadline(server):
    path, before = _seed(prices=True)
    server.mode = "slow"
    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        _run(server, timeout_s=0.3)
    assert "timed out" in ei.value.message and time.monotonic() - t < 5
    server.mode = "ok"
    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:  # many calls, each fast, but a total budget of 0.2 s
        _run(server, prices=True, total_timeout_s=0.2,
             instance_types=["ecs.gn7i-c8g1.2xlarge"] * 200)
    assert "whole refresh took more than 0.2 s" in ei.value.message and time.monotonic() - t < 5
    assert path.read_bytes() == before


def test_cli_refresh_ecs(server, capsys):
    rc = main(["catalog", "refresh", "--provider", "ecs", "--region", REGION, "--endpoint", server.endpoint,
               "--protocol", "http", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["instances"] == 3 and out["provider"] == "ecs"
    rc = main(["catalog", "refresh", "--provider", "ecs", "--prices", "--region", REGION, "--endpoint",
               server.endpoint, "--protocol", "http", "--instance-type", "ecs.gn7i-c8g1.2xlarge", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prices"] == 2
    server.mode = "auth"
    rc = main(["catalog", "refresh", "--provider", "ecs", "--region", REGION, "--endpoint", server.endpoint,
               "--protocol", "http"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "refused the credentials" in err and "Traceback" not in err
    _store.reset_cache()
