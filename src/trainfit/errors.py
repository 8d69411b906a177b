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


class LayoutError(WorkloadError):
    """A parallel layout the engine cannot form (``workload.layout_error``): its tensor-, pipeline-, context-,
    expert- or sequence-parallel groups do not divide the GPUs or the model. A WorkloadError (same code) that
    ``check`` reports as an error: the engine refuses such a job at start."""


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


class PlanError(TrainfitError):
    """A plan request that cannot be searched (no tokens, a bad objective...)."""

    code = "bad-plan-request"


class PlanFileError(TrainfitError):
    """A plan file (``trainfit plan --json``) that cannot be read, has another schema version or another shape."""

    code = "bad-plan-file"


class CostError(TrainfitError):
    """Invalid cost inputs (negative hours, a discount outside 0-1...)."""

    code = "bad-cost"


class RenderError(TrainfitError):
    """A render request that cannot produce a consistent set of files."""

    code = "render-error"


class WriteError(TrainfitError):
    """A file trainfit would write is a link, a special file, or a file of the user's it must not overwrite."""

    code = "unsafe-write"


class CheckInputError(TrainfitError):
    """A file ``trainfit check`` cannot read: missing, too large, not text, malformed, or of unknown kind."""

    code = "bad-check-input"


class SubmitError(TrainfitError):
    """A job that cannot be submitted (bad file, refused by the service, no credentials)."""

    code = "submit-error"


class NetworkError(TrainfitError):
    """A cloud API that could not be reached in time (DNS, connection, TLS, deadline): not a quota answer."""

    code = "network-error"


class InputError(TrainfitError):
    """A value from the user or a file that fails the input gate (not finite, out of range, too deep, too big)."""

    code = "bad-input"


class DatasetError(TrainfitError):
    """A dataset or tokenizer folder that ``trainfit data`` cannot read (not a dataset, malformed rows past the
    allowed share, no chat template, a missing extra)."""

    code = "bad-dataset"


class RolloutMemoryError(TrainfitError):
    """RL sizing: the rollout engine's KV-cache pool cannot hold one full sequence (or its weights do not fit
    in the memory the engine is allowed to use)."""

    code = "rollout-kv-pool"


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
