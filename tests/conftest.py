"""Every test runs against the bundled catalog only: no user overlay, no user cache."""

import ipaddress
import os
import socket

import pytest

# Tests never reach a cloud address. The Alibaba credential chain would ask the ECS instance-metadata service
# (100.100.100.200) for a RAM role: switched off here, before any test imports the SDK (it copies the variable
# into a module global at import).
os.environ["ALIBABA_CLOUD_ECS_METADATA_DISABLED"] = "true"

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect


def _local_host(host) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host in ("localhost", "", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _guarded_getaddrinfo(host, *a, **k):
    if not _local_host(host):
        raise OSError(f"test tried to resolve {host!r}: tests never touch the network (use a 127.0.0.1 server)")
    return _real_getaddrinfo(host, *a, **k)


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local_host(address[0]):
        raise OSError(f"test tried to connect to {address!r}: tests never touch the network "
                      "(use a 127.0.0.1 server)")
    return _real_connect(self, address)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guarded_connect


@pytest.fixture(autouse=True)
def isolated_catalog(tmp_path, monkeypatch):
    from trainfit.catalog import _store
    from trainfit.catalog import set_overlay_path

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TRAINFIT_CATALOG_OVERLAY", raising=False)
    monkeypatch.delenv("TRAINFIT_CACHE_DIR", raising=False)
    set_overlay_path(None)
    _store.reset_cache()
    yield tmp_path
    set_overlay_path(None)
    _store.reset_cache()
