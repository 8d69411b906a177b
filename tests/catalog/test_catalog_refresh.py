"""`catalog refresh --provider pai` against a local HTTP server answering like PAI-DLC ListEcsSpecs.

The real SDK code path runs (request signing, ROA call, response parsing): only the endpoint is pointed
at 127.0.0.1 over http.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

import pytest

from tests._replay import ReplayServer, isolate_alibaba_credentials, send

pytest.importorskip("alibabacloud_pai_dlc20201203")
pytest.importorskip("alibabacloud_credentials")

from trainfit.catalog import _store, get_gpu, get_instance  # noqa: E402
from trainfit.providers.alibaba.refresh import cache_file, refresh  # noqa: E402
from trainfit.cli import main  # noqa: E402
from trainfit.errors import CatalogError, NetworkError  # noqa: E402

REGION = "cn-wulanchabu"
AK_ID = "LTAI-test-key-id"
AK_SECRET = "test-secret-never-written"

ECS_SPECS = [
    {"InstanceType": "ecs.gn7i-c8g1.2xlarge", "AcceleratorType": "GPU", "Cpu": 8, "Gpu": 1, "GpuType": "A10",
     "GpuMemory": 24, "Memory": 30, "ResourceType": "ECS", "IsAvailable": True, "NonProtectSpotDiscount": 0.2,
     "PaymentTypes": ["PayAsYouGo", "Spot"], "SpotStockStatus": "WithStock"},
] + [
    {"InstanceType": f"ecs.test-{i}", "AcceleratorType": "GPU", "Cpu": 16, "Gpu": 2, "GpuType": "T4",
     "GpuMemory": 16, "Memory": 65536, "ResourceType": "ECS", "IsAvailable": True}
    for i in range(120)  # forces a second page (PageSize 100)
]
LINGJUN_SPECS = [
    {"InstanceType": "ml.gu8xf.8xlarge-gu108", "AcceleratorType": "GPU", "Cpu": 128, "Gpu": 8, "GpuType": "GU108",
     "GpuMemory": 80, "Memory": 1024, "ResourceType": "Lingjun", "IsAvailable": True},
    {"InstanceType": "ml.newthing.8xlarge-gu999", "AcceleratorType": "GPU", "Cpu": 96, "Gpu": 8, "GpuType": "GU999",
     "GpuMemory": 98304, "Memory": 1536, "ResourceType": "Lingjun"},
]


class _Server(ReplayServer):
    def __init__(self):
        self.mode = "ok"
        self.requests: list[tuple[str, dict, str]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                u = urlparse(self.path)
                q = {k: v[0] for k, v in parse_qs(u.query).items()}
                outer.requests.append((u.path, q, self.headers.get("Authorization", "")))
                code, body = outer.answer(u.path, q)
                if outer.mode == "slow":
                    time.sleep(1.5)
                send(self, code, body)

        self._serve(H)


    def answer(self, path, q):
        if path != "/api/v1/ecsspecs":
            return 404, b'{"Code":"NotFound"}'
        if self.mode == "auth":
            return 403, json.dumps({"RequestId": "r", "Code": "InvalidAccessKeyId.NotFound",
                                    "Message": "Specified access key is not found."}).encode()
        if self.mode == "html":
            return 200, b"<html>captive portal</html>"
        specs = ECS_SPECS if q.get("ResourceType") == "ECS" else LINGJUN_SPECS
        if self.mode == "badspec":
            specs = [dict(specs[0], Gpu="eight"), dict(specs[0], InstanceType=None)]
        if self.mode == "badshape":
            return 200, json.dumps({"RequestId": "r", "TotalCount": 1, "EcsSpecs": {"oops": 1}}).encode()
        size, page = int(q.get("PageSize", 100)), int(q.get("PageNumber", 1))
        chunk = specs[(page - 1) * size: page * size]
        return 200, json.dumps({"RequestId": "r", "TotalCount": len(specs), "EcsSpecs": chunk}).encode()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def credentials_from_the_default_chain(monkeypatch, tmp_path):
    isolate_alibaba_credentials(monkeypatch, tmp_path, AK_ID, AK_SECRET)


def _refresh(server, **kw):
    return refresh("pai", REGION, endpoint=server.endpoint, protocol="http", timeout_s=kw.pop("timeout_s", 5), **kw)


def test_refresh_success_writes_cache_and_updates_catalog(server, isolated_catalog):
    res = _refresh(server)
    assert res.instances == 1 + 120 + 2 and res.path == cache_file("pai", REGION)
    assert res.new_gpus == ("GU999",)
    # the real SDK made signed ROA calls with the chain's key, paging through both resource types
    paths = {(p, q.get("ResourceType"), q.get("PageNumber")) for p, q, _ in server.requests}
    assert paths == {("/api/v1/ecsspecs", "ECS", "1"), ("/api/v1/ecsspecs", "ECS", "2"),
                     ("/api/v1/ecsspecs", "Lingjun", "1")}
    assert all(AK_ID in auth for _, _, auth in server.requests)
    assert all(q.get("AcceleratorType") == "GPU" for _, q, _ in server.requests)

    text = res.path.read_text(encoding="utf-8")
    assert AK_SECRET not in text and AK_ID not in text  # credentials never written
    assert not [p for p in res.path.parent.iterdir() if p.name.startswith(".")]  # no temp files left

    a10 = get_instance("ecs.gn7i-c8g1.2xlarge")
    assert a10.regions == (REGION,) and a10.spot_discount == 0.2 and a10.ram_gib == 30
    assert a10.verified and a10.origin.startswith("refresh:") and "ListEcsSpecs" in a10.source
    assert get_instance("ecs.test-7").ram_gib == 64  # 65536 read as MiB
    lj = get_instance("ml.gu8xf.8xlarge-gu108")
    assert lj.gpu_count == 8 and lj.vcpu == 128 and lj.inter_node == "rdma"  # bundled field kept
    assert get_gpu("GU108").mem_gib == 80  # live memory fills an unknown field
    assert get_gpu("GU999").mem_gib == 96 and get_gpu("GU999").verified is False
    assert get_gpu("A10").mem_gib == 24  # datasheet rows are not overwritten


def _seed_cache():
    path = cache_file("pai", REGION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": "trainfit-refresh/1", "gpus": [], "instances": []}', encoding="utf-8")
    return path, path.read_bytes(), path.stat().st_mtime_ns


@pytest.mark.parametrize("mode,needle", [
    ("auth", "refused the credentials"),
    ("html", "not JSON"),
    ("badshape", "malformed"),
    ("badspec", "malformed specs"),
])
def test_refresh_failures_leave_cache_untouched(server, mode, needle):
    path, before, mtime = _seed_cache()
    server.mode = mode
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert needle in ei.value.message and ei.value.fix
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert AK_SECRET not in ei.value.message


def test_refresh_badspec_lists_every_problem(server):
    server.mode = "badspec"
    with pytest.raises(CatalogError) as ei:
        _refresh(server)
    assert "Gpu='eight' is not a number" in ei.value.message and "InstanceType is missing" in ei.value.message


def test_refresh_timeout(server):
    path, before, _ = _seed_cache()
    server.mode = "slow"
    t = time.monotonic()
    with pytest.raises(NetworkError) as ei:
        _refresh(server, timeout_s=0.3)
    assert "timed out" in ei.value.message and time.monotonic() - t < 5
    assert path.read_bytes() == before


def test_refresh_without_credentials(server, monkeypatch):
    from alibabacloud_credentials.utils import auth_util

    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_ID")
    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
    monkeypatch.setattr(auth_util, "environment_access_key_id", None)
    monkeypatch.setattr(auth_util, "environment_access_key_secret", None)
    with pytest.raises(CatalogError) as ei:
        _refresh(server, timeout_s=1)
    assert "credential" in (ei.value.message + ei.value.fix).lower()
    assert not cache_file("pai", REGION).exists()


def test_corrupt_cache_falls_back_to_bundled_with_warning():
    path = cache_file("pai", REGION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    _store.reset_cache()
    with pytest.warns(_store.CatalogWarning, match="ignoring refresh cache"):
        inst = get_instance("ecs.gn7i-c8g1.2xlarge")
    assert inst.origin == "bundled" and inst.regions == ()
    path.write_text(json.dumps({"format": "trainfit-refresh/1", "gpus": [],
                                "instances": [{"provider": "alibaba", "instance_type": "x"}]}), encoding="utf-8")
    with pytest.warns(_store.CatalogWarning, match="invalid rows"):
        assert get_gpu("A100").name == "A100-80GB-SXM"


def test_cli_refresh(server, capsys):
    rc = main(["catalog", "refresh", "--provider", "pai", "--region", REGION, "--endpoint", server.endpoint,
               "--protocol", "http", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["instances"] == 123 and out["region"] == REGION
    server.mode = "auth"
    rc = main(["catalog", "refresh", "--provider", "pai", "--region", REGION, "--endpoint", server.endpoint,
               "--protocol", "http"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "refused the credentials" in err and "fix:" in err and "Traceback" not in err
