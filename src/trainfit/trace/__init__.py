"""Trace the real training step (transformers + PEFT + torch) under FakeTensorMode and count memory.

``trace_memory(model, workload)`` builds the Hugging Face model from the shape on a fake "cpu" device,
runs ``steps`` full training steps (forward, HF loss, backward, optimizer step, zero_grad) with a
storage-counting dispatch mode, and returns the peak of the last step with its breakdown. No weights,
no GPU and almost no RAM are needed; see ``docs/trace.md``.

This module imports torch/transformers/peft lazily (inside :func:`trace_memory`), so importing
``trainfit.trace`` stays light.
"""

from __future__ import annotations

from typing import Callable

from trainfit.trace.result import BREAKDOWN_KEYS, TraceResult

__all__ = ["BREAKDOWN_KEYS", "TraceResult", "check_traceable", "trace_memory"]

Progress = Callable[[str, int, int], None]
"""``progress(description, completed, total)``; called at each phase of each step."""


def check_traceable(model, workload) -> None:  # type: ignore[no-untyped-def]
    """Raise :class:`~trainfit.errors.NotTraceableError` for what the trace cannot run (no torch needed)."""
    from trainfit.trace.runner import check_traceable as _check

    _check(model, workload)


def trace_memory(model, workload, *, steps: int = 2, progress: Progress | None = None) -> TraceResult:  # type: ignore[no-untyped-def]
    """Trace ``steps`` training steps of ``model`` (a :class:`~trainfit.models.ModelShape`) under
    ``workload`` (a :class:`~trainfit.workload.Workload`) and return the last step's peak.

    Raises :class:`~trainfit.errors.NotTraceableError` for configurations the fake trace cannot run
    (QLoRA, 8-bit optimizers, DeepSpeed ZeRO, fp16/fp8, fused loss, tp/pp/ep/cp > 1...) and
    :class:`~trainfit.errors.MissingExtraError` when torch/transformers/peft are not installed.
    """
    from trainfit.trace.runner import run_trace

    return run_trace(model, workload, steps=steps, progress=progress, fake=True)
