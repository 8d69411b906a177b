"""One exception tree for trainfit.

Every error a user can cause (bad model name, bad option, unreadable config, a catalog that does not
validate) is a :class:`TrainfitError` carrying a ``message`` and an optional ``fix``. The CLI catches
``TrainfitError`` once, at its entry point, and prints both; it never shows a traceback for them.
"""

from __future__ import annotations


class TrainfitError(Exception):
    """Base class of every error trainfit raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message if not self.fix else f"{self.message} ({self.fix})"


class UnknownModelError(TrainfitError):
    """A model name that is not in the registry."""

    code = "unknown-model"


class ModelConfigError(TrainfitError):
    """A config.json that cannot be read or describes an unsupported architecture."""

    code = "bad-model-config"


class WorkloadError(TrainfitError):
    """An invalid training request (inconsistent or out-of-range options)."""

    code = "bad-workload"


class UnknownGPUError(TrainfitError):
    """A GPU name that is not in the catalog."""

    code = "unknown-gpu"


class CatalogError(TrainfitError):
    """A catalog or overlay file that does not validate."""

    code = "bad-catalog"


class NotTraceableError(TrainfitError):
    """A configuration the fake-tensor trace cannot run, with the reason."""

    code = "not-traceable"


class MissingExtraError(TrainfitError):
    """An optional dependency (extra) is not installed."""

    code = "missing-extra"


def did_you_mean(name: str, candidates: list[str] | tuple[str, ...], n: int = 3) -> list[str]:
    """Closest candidates to ``name`` (case-insensitive), best first."""
    import difflib

    lowered = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    # Substring matches help for short inputs such as "8b" or "30b".
    subs = [c for lc, c in lowered.items() if name.lower() in lc and c not in hits]
    return [lowered[h] for h in hits] + sorted(subs, key=len)[: max(0, n - len(hits))]


class WatchError(TrainfitError):
    """``trainfit watch`` cannot run the command as asked (no command, bad option, unreadable notice source)."""

    code = "watch"


class MetricsError(TrainfitError):
    """A metrics JSONL or plan JSON that ``trainfit diagnose`` cannot read."""

    code = "bad-metrics"
