"""Issue 26, item 2: a fitted constant must explain an engine mechanism seen across sources, not one source. Every
constant the fit sets (``engines.FIT_FIELDS``) moves runs of at least two calibration sources; the rest stay at the
prior written from their cited mechanism (``engines.FIXED_AT_PRIOR``), which every run of their kind gets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainfit.estimate import engines

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def loso():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import speed_loso

    return speed_loso


def test_every_fitted_constant_is_informed_by_two_calibration_sources(loso):
    from _split import is_frozen

    _, rows = loso.load()
    calib = [r for r in rows if not is_frozen(r.source)]
    inf = loso.constant_influence(calib, engines.DEFAULT_CONSTANTS)
    thin = {n: inf[n]["sources"] for n in engines.FIT_FIELDS if len(inf[n]["sources"]) < 2}
    assert not thin, f"fitted constants informed by fewer than two calibration sources: {thin}"


def test_unfitted_constants_keep_their_documented_prior_and_are_not_written_by_the_fit(loso):
    from trainfit.estimate import engine_fit_data

    assert not set(engine_fit_data.FITTED) & set(engines.FIXED_AT_PRIOR)
    for n in engines.FIXED_AT_PRIOR:
        assert getattr(engines.DEFAULT_CONSTANTS, n) == getattr(engines.PRIORS, n)
        assert n in engines.EngineConstants.__dataclass_fields__
    # the fit's parameter vector has exactly the fitted constants
    x = [0.0] * len(engines.FIT_FIELDS)
    c = loso._to_constants(x)
    for n in engines.FIXED_AT_PRIOR:
        assert getattr(c, n) == getattr(engines.PRIORS, n)
