"""What the engine model says about itself, in the current language: the one-line summary of the constants in a
speed estimate's assumptions (:func:`describe`) and where each constant's value comes from (:func:`constant_source`).
:data:`trainfit.estimate.engines.CONSTANT_SOURCES` keeps the English text."""

from __future__ import annotations

from functools import lru_cache

from trainfit.estimate import engine_fit_data as data
from trainfit.estimate.engines import (CONSTANT_SOURCES, FIXED_AT_PRIOR, HBM_EFFICIENCY, PRIORS, EngineConstants)
from trainfit.i18n import _, current, translate


def describe(c: EngineConstants, family: str) -> list[str]:
    """Assumption lines for a speed estimate (the constants this family used and their sources), in the current
    language. The lines depend only on the constants, the family and the language, so each set is built once: the
    planner times hundreds of layouts with the same few."""
    return list(_describe(c, family, current()))


@lru_cache(maxsize=256)
def _describe(c: EngineConstants, family: str, lang: str) -> tuple[str, ...]:
    """:func:`describe` for ``lang`` (the current language when it is called: the cache key only)."""
    kf = "megatron" if family == "megatron" else "native"
    names = [f"gemm_eff_{family}", f"elem_bytes_{family}", "gemm_half_dim", f"attention_relative_{kf}",
             "fa2_hopper_factor", "ridge_exponent", f"fp8_eff_{kf}", "launch_seconds", "compile_elementwise_factor",
             "moe_elementwise_factor", "fp8_cast_bytes", "expert_sync_seconds", "zero3_fetch_seconds",
             "zero3_host_seconds", "zero3_host_param_seconds", "zero_hook_seconds"] + (["grouped_gemm_half_tokens"] if family == "megatron" else [])
    out = [_("engine model ({family}): GEMMs at peak x {gemm_eff:.3f} x d/(d+{half_dim:.0f}), flash attention at "
             "{attention:.2f} x the published kernel rate (backward 2.5 x forward FLOPs), element-wise "
             "{elem_bytes:.1f} x (h+I)x2 B per token-layer-pass over HBM x {hbm}, {launch_us:.1f} us per eager "
             "kernel").format(
        family=family, gemm_eff=c.gemm_eff(family), half_dim=c.gemm_half_dim, attention=c.attention_relative(family),
        elem_bytes=c.elem_bytes(family), hbm=HBM_EFFICIENCY, launch_us=c.launch_seconds * 1e6)]
    lines = dict(_constant_sources(lang))
    out += [lines[n] for n in names if n in lines]
    return tuple(out)


def constant_source(name: str) -> str:
    """The line of :data:`CONSTANT_SOURCES` for constant ``name``, in the current language (that table keeps the
    English text)."""
    if name in FIXED_AT_PRIOR:
        return _("{name} = {prior:.4g}: documented prior, not fitted ({why}; see EngineConstants)").format(
            name=name, prior=getattr(PRIORS, name), why=translate(FIXED_AT_PRIOR[name]))
    if name not in data.FITTED:
        return _("{name} = {prior:.4g}: prior (assumption), not fitted yet").format(
            name=name, prior=getattr(PRIORS, name))
    return _("{name} = {value:.4g} (prior {prior:.4g}): fitted by benchmarks/speed_loso.py on {rows} published runs "
             "from {sources} sources (benchmarks/data/throughput.yaml, {date})").format(
        name=name, value=data.FITTED[name], prior=getattr(PRIORS, name), rows=data.N_ROWS, sources=data.N_SOURCES,
        date=data.FIT_DATE)


def constant_sources() -> dict[str, str]:
    """:data:`CONSTANT_SOURCES` in the current language (built once per language)."""
    return dict(_constant_sources(current()))


def constant_source_lines() -> tuple[str, ...]:
    """The lines of :func:`constant_sources`, in :data:`CONSTANT_SOURCES`' order (what every speed estimate
    carries): the cached tuple itself."""
    return _constant_source_lines(current())


@lru_cache(maxsize=8)
def _constant_source_lines(lang: str) -> tuple[str, ...]:
    return tuple(line for _name, line in _constant_sources(lang))


@lru_cache(maxsize=8)
def _constant_sources(lang: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, constant_source(name)) for name in CONSTANT_SOURCES)
