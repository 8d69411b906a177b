"""Every test runs against the bundled catalog only: no user overlay, no user cache."""

import pytest


@pytest.fixture(autouse=True)
def isolated_catalog(tmp_path, monkeypatch):
    from trainfit.catalog import _store

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TRAINFIT_CATALOG_OVERLAY", raising=False)
    monkeypatch.delenv("TRAINFIT_CACHE_DIR", raising=False)
    _store.set_overlay_path(None)
    _store.reset_cache()
    yield tmp_path
    _store.set_overlay_path(None)
    _store.reset_cache()
