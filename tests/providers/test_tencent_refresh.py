"""`catalog refresh --provider tencent [--prices]` against a local server answering like the CVM API 3.0.

The official SDK (tencentcloud-sdk-python-cvm) runs its real code path (TC3-HMAC-SHA256 signing with the key
from the SDK's default credential chain, JSON POST, response parsing); only the endpoint is 127.0.0.1 over
http. Response shapes follow the CVM API reference (DescribeInstanceTypeConfigs, InquiryPriceRunInstances).
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler

import pytest

from tests._replay import ReplayServer, send

pytest.importorskip("tencentcloud.cvm")

from trainfit.catalog import get_gpu, get_instance  # noqa: E402
from trainfit.catalog.prices import latest_price, latest_spot_discount  # noqa: E402
from trainfit.cli import main  # noqa: E402
from trainfit.errors import CatalogError, NetworkError  # noqa: E402
from trainfit.providers.tencent.refresh import cache_path, default_credential, refresh_tencent  # noqa: E402

REGION = "ap-guangzhou"
SID = "AKID-tencent-test"
SKEY = "tencent-secret-never-written"


def _cfg(zone, itype, fam, gpu, cpu, mem, gtype, gmem, count=None):
    return {"Zone": zone, "InstanceType": itype, "InstanceFamily": fam, "GPU": gpu, "CPU": cpu, "Memory": mem,
            "FPGA": 0, "GpuCount": gpu if count is None else count, "GpuType": gtype, "GpuMemory": gmem}


CONFIGS = [
    _cfg("ap-guangzhou-4", "GT4.41XLARGE948", "GT4", 8, 164, 948, "NVIDIA A100", 40),
    _cfg("ap-guangzhou-6", "GT4.41XLARGE948", "GT4", 8, 164, 948, "NVIDIA A100", 40),
    _cfg("ap-guangzhou-3", "GN7.2XLARGE32", "GN7", 1, 8, 32, "NVIDIA T4", 16),
    _cfg("ap-guangzhou-3", "GN7.LARGE20", "GN7", 1, 4, 20, "NVIDIA T4", 4, count=0.25),  # vGPU slice
    _cfg("ap-guangzhou-6", "PNV5b.8XLARGE96", "PNV5b", 1, 32, 96, "NVIDIA Q50", 48),
    _cfg("ap-guangzhou-6", "S5.LARGE8", "S5", 0, 4, 8, "", 0),
]
UNIT = {"GN7.2XLARGE32": 9.02, "GT4.41XLARGE948": 168.88}


class _Server(ReplayServer):
    def __init__(self):
        self.mode = "ok"
        self.requests: list[tuple[str, dict, str]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                action = self.headers.get("X-TC-Action", "")
                outer.requests.append((action, body, self.headers.get("Authorization", "")))
                if outer.mode == "slow":
                    time.sleep(2.5)
                payload = json.dumps({"Response": outer.answer(action, body)}).encode()
                if outer.mode == "html":
                    payload = b"<html>captive portal</html>"
                send(self, 200, payload)

        self._serve(H)


    def answer(self, action, body):
        err = {"auth": ("AuthFailure.SecretIdNotFound", "The SecretId is not found"),
               "throttle": ("RequestLimitExceeded", "Your current request times equals to `21` in a second")}
        if self.mode in err:
            return {"Error": {"Code": err[self.mode][0], "Message": err[self.mode][1]}, "RequestId": "r"}
        if action == "DescribeInstanceTypeConfigs":
            if self.mode == "badcfg":
                return {"InstanceTypeConfigSet": [dict(CONFIGS[0], CPU="many"), dict(CONFIGS[0], InstanceType="")],
                        "RequestId": "r"}
            flt = {f["Name"]: f["Values"] for f in body.get("Filters") or []}
            sets = [c for c in CONFIGS if not flt.get("instance-type") or c["InstanceType"] in flt["instance-type"]]
            return {"InstanceTypeConfigSet": sets, "RequestId": "r"}
        if action == "InquiryPriceRunInstances":
            it = body.get("InstanceType")
            if it not in UNIT:
                return {"Error": {"Code": "InvalidInstanceType.NotSupported", "Message": "not sold"}, "RequestId": "r"}
            unit = UNIT[it] * (0.2 if body.get("InstanceChargeType") == "SPOTPAID" else 1)
            return {"Price": {"InstancePrice": {"UnitPrice": round(unit * 1.25, 4), "UnitPriceDiscount": round(unit, 4),
                                                "Discount": 80, "ChargeUnit": "HOUR"},
                              "BandwidthPrice": {"UnitPrice": 0.8, "ChargeUnit": "GB"}}, "RequestId": "r"}
        return {"Error": {"Code": "InvalidAction", "Message": action}, "RequestId": "r"}


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def credentials_from_the_default_chain(monkeypatch, tmp_path):
    # The SDK's chain reads the environment first, so neither ~/.tencentcloud nor the CVM metadata service
    # is reached; HOME is isolated anyway and proxies are off, so only 127.0.0.1 is contacted.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SKEY)
    for v in ("TENCENTCLOUD_SESSION_TOKEN", "TENCENTCLOUD_REGION", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
              "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def _run(server, **kw):
    kw.setdefault("timeout_s", 5)
    return refresh_tencent(REGION, endpoint=server.endpoint, protocol="http", **kw)


def test_spec_refresh_updates_the_catalog(server):
    res = _run(server)
    assert res.instances == 3 and res.path == cache_path(REGION, prices=False)
    assert res.new_gpus == ("NVIDIA Q50",)
    assert [a for a, _, _ in server.requests] == ["DescribeInstanceTypeConfigs"]
    assert all(SID in auth and "TC3-HMAC-SHA256" in auth for _, _, auth in server.requests)
    text = res.path.read_text(encoding="utf-8")
    assert SKEY not in text and SID not in text
    gt4 = get_instance("GT4.41XLARGE948")
    assert gt4.resource_class == "ecs" and gt4.origin.startswith("refresh:")
    # "NVIDIA A100" with 40 GiB is the 40 GB part, not the catalog's bare-"A100" default (80 GB)
    assert (gt4.gpu, gt4.gpu_count, gt4.vcpu, gt4.ram_gib) == ("A100-40GB-SXM", 8, 164, 948)
    assert REGION in gt4.regions  # added to the regions the bundled row already documents
    assert "ap-guangzhou-4, ap-guangzhou-6" in gt4.notes
    assert get_instance("PNV5b.8XLARGE96").gpu == "NVIDIA Q50" and get_gpu("NVIDIA Q50").mem_gib == 48
    with pytest.raises(CatalogError):
        get_instance("GN7.LARGE20")  # a quarter GPU is not a node you train on


def test_price_refresh(server):
    res = _run(server, prices=True, image_id="img-test", instance_types=["GN7.2XLARGE32", "GT4.41XLARGE948",
                                                                         "GN10Xp.20XLARGE320"])
    assert res.prices == 4 and res.skipped == ("GN10Xp.20XLARGE320",)
    p = latest_price("tencent", "ecs", "GN7.2XLARGE32", region=REGION)
    assert (p.price_per_hour, p.currency, p.region) == (9.02, "CNY", REGION) and p.origin.startswith("refresh:")
    s = latest_spot_discount("tencent", "ecs", "GT4.41XLARGE948", region=REGION)
    assert s.spot_discount == pytest.approx(0.2) and s.price_per_hour == pytest.approx(168.88 * 0.2)
    quotes = [b for a, b, _ in server.requests if a == "InquiryPriceRunInstances"]
    assert {b["Placement"]["Zone"] for b in quotes if b["InstanceType"] == "GT4.41XLARGE948"} == {"ap-guangzhou-4"}
    assert all(b["ImageId"] == "img-test" for b in quotes)
    assert {b["InstanceChargeType"] for b in quotes} == {"POSTPAID_BY_HOUR", "SPOTPAID"}


def test_price_refresh_needs_an_image_and_states_the_currency(server):
    with pytest.raises(CatalogError) as ei:
        _run(server, prices=True)
    assert "--image-id" in ei.value.fix
    _run(server, prices=True, image_id="img-test", currency="USD", zone="ap-guangzhou-3",
         instance_types=["GN7.2XLARGE32"])
    assert latest_price("tencent", "ecs", "GN7.2XLARGE32", region=REGION).currency == "USD"


def _seed():
    path = cache_path(REGION, prices=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": "trainfit-refresh/1", "gpus": [], "instances": []}', encoding="utf-8")
    return path, path.read_bytes()


@pytest.mark.parametrize("mode,needle", [
    ("auth", "refused the credentials"),
    ("throttle", "throttled"),
    ("badcfg", "malformed configs"),
])
def test_failures_leave_the_cache_untouched(server, mode, needle):
    path, before = _seed()
    server.mode = mode
    with pytest.raises(CatalogError) as ei:
        _run(server)
    assert needle in ei.value.message and ei.value.fix, ei.value.message
    assert path.read_bytes() == before and SKEY not in ei.value.message


def test_bad_configs_list_every_problem(server):
    server.mode = "badcfg"
    with pytest.raises(CatalogError) as ei:
        _run(server)
    assert "CPU='many' is not a number" in ei.value.message and "InstanceType is missing" in ei.value.message


def test_network_error_is_not_a_quota_error():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(NetworkError) as ei:
        refresh_tencent(REGION, endpoint=f"127.0.0.1:{port}", protocol="http", timeout_s=2)
    assert "network error" in ei.value.message and "quota" not in ei.value.message


def test_timeout(server):
    path, before = _seed()
    server.mode = "slow"
    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        _run(server, timeout_s=1)
    assert "timed out" in ei.value.message and time.monotonic() - t < 5
    assert path.read_bytes() == before


def test_credential_chain_has_a_deadline(monkeypatch):
    from tencentcloud.common import credential as tc

    monkeypatch.delenv("TENCENTCLOUD_SECRET_ID")
    monkeypatch.delenv("TENCENTCLOUD_SECRET_KEY")
    # stand-ins for the chain's metadata steps: one hangs (as urlopen without a timeout would), one finds nothing
    monkeypatch.setattr(tc.CVMRoleCredential, "get_credential", lambda self: time.sleep(5))
    t = time.monotonic()
    with pytest.raises(CatalogError) as ei:
        default_credential(0.3)
    assert "did not answer" in ei.value.message and time.monotonic() - t < 2
    monkeypatch.setattr(tc.CVMRoleCredential, "get_credential", lambda self: None)
    monkeypatch.setattr(tc.DefaultTkeOIDCRoleArnProvider, "get_credential", lambda self: None)
    with pytest.raises(CatalogError) as ei:
        default_credential(1)
    assert "no Tencent Cloud credentials" in ei.value.message and "TENCENTCLOUD_SECRET_ID" in ei.value.fix


def test_cli_refresh_tencent(server, capsys):
    assert main(["catalog", "refresh", "--provider", "tencent", "--region", REGION, "--endpoint", server.endpoint,
                 "--protocol", "http", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["instances"] == 3
    assert main(["catalog", "refresh", "--provider", "tencent", "--prices", "--region", REGION, "--endpoint",
                 server.endpoint, "--protocol", "http", "--image-id", "img-x", "--instance-type", "GN7.2XLARGE32",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prices"] == 2
    server.mode = "auth"
    assert main(["catalog", "refresh", "--provider", "tencent", "--region", REGION, "--endpoint", server.endpoint,
                 "--protocol", "http"]) == 2
    err = capsys.readouterr().err
    assert "refused the credentials" in err and "Traceback" not in err
