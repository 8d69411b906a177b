"""Issue 27's surfaces at a CI budget (``benchmarks/fuzz.py`` runs the same generators at full count): ``calibrate``
results, ``diagnose`` metrics, ``submit`` folders, ``watch`` options, refresh caches, tampered plan files, render into
folders holding links / FIFOs / hand-edited files, and the web handlers through fastapi's ``TestClient``.

No traceback, no hang, nothing created or changed outside ``--out``, no user file overwritten without ``--force``,
every tampered input refused.
"""

from __future__ import annotations

import pytest
import surfaces as sf
from hypothesis import HealthCheck, given, settings

import fuzzkit as fk

FAST = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _ok(outcomes, problems):
    outs = outcomes if isinstance(outcomes, list) else [outcomes]
    assert not problems, ([o.argv for o in outs], problems, [o.err[-400:] for o in outs],
                          [o.traceback[-1500:] for o in outs])


@FAST
@given(x=sf.calibrate_input())
def test_calibrate_results(x):
    with fk.workdir() as d:
        _ok(*sf.calibrate_case(x, d))


@FAST
@given(x=sf.metrics_input())
def test_diagnose_metrics(x):
    with fk.workdir() as d:
        _ok(*sf.diagnose_case(x, d))


@FAST
@given(x=sf.submit_input())
def test_submit_folders(x):
    with fk.workdir() as d:
        _ok(*sf.submit_case(x, d))


@settings(FAST, max_examples=15)
@given(x=sf.watch_input())
def test_watch_options(x):
    with fk.workdir() as d:
        _ok(*sf.watch_case(x, d))


@FAST
@given(x=sf.cache_input())
def test_refresh_caches(x):
    with fk.workdir() as d:
        _ok(*sf.cache_case(x, d))


@FAST
@given(x=sf.tampered_plan())
def test_tampered_plan_files(x):
    with fk.workdir() as d:
        _ok(*sf.plan_tamper_case(x, d))


@FAST
@given(x=sf.folder_input())
def test_render_into_hostile_folders(x):
    with fk.workdir() as d:
        _ok(*sf.render_folder_case(x, d))


def test_render_folder_oracle_can_fail(monkeypatch):
    """The oracle sees a write outside --out and an overwritten user file (so the test above can fail)."""
    from pathlib import Path

    real = fk.run_cli

    def clobbering(argv, **kw):
        o = real(argv, **kw)
        out = Path(argv[argv.index("--out") + 1])
        (out.parent / "outside" / "victim.txt").write_text("gone")
        (out / "launch.sh").write_text("clobbered")
        return o

    monkeypatch.setattr(fk, "run_cli", clobbering)
    with fk.workdir() as d:
        _, probs = sf.render_folder_case({"things": [("foreign-file", "launch.sh")], "force": False,
                                          "pre_render": False, "target": "torchrun"}, d)
    assert any(p.startswith("outside:") for p in probs), probs
    assert any(p.startswith("overwritten:") for p in probs), probs


@settings(FAST, max_examples=40)
@given(r=sf.web_request())
def test_web_handlers(r):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    with fk.workdir() as d:
        _ok(*sf.web_case(r, d))


def teardown_module(module):
    sf.close_web_client()
