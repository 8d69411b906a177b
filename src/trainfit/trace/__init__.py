"""Trace the real training step (transformers + PEFT + torch) under FakeTensorMode and count memory.

``trace_memory(model, workload)`` builds the Hugging Face model from the shape on a fake "cpu" device,
runs ``steps`` full training steps (forward, HF loss, backward, optimizer step, zero_grad) with a
storage-counting dispatch mode, and returns the peak of the last step with its breakdown. No weights,
no GPU and almost no RAM are needed; see ``docs/trace.md``.

torch, transformers and peft are imported inside the traced run only (:mod:`trainfit.trace.runner` imports none at
its top), so importing ``trainfit.trace`` stays light.
"""

from __future__ import annotations

from typing import Callable

from trainfit.models.shapes import ModelShape
from trainfit.trace.result import BREAKDOWN_KEYS, TraceResult
from trainfit.trace.runner import check_traceable, run_trace
from trainfit.workload import Workload

__all__ = ["BREAKDOWN_KEYS", "TraceResult", "check_traceable", "trace_memory"]

Progress = Callable[[str, int, int], None]
"""``progress(description, completed, total)``; called at each phase of each step."""


def trace_memory(model: ModelShape, workload: Workload, *, steps: int = 2,
                 progress: Progress | None = None) -> TraceResult:
    """Trace ``steps`` training steps of ``model`` (a :class:`~trainfit.models.ModelShape`) under
    ``workload`` (a :class:`~trainfit.workload.Workload`) and return the last step's peak.

    Raises :class:`~trainfit.errors.NotTraceableError` for configurations the fake trace cannot run
    (QLoRA, 8-bit optimizers, DeepSpeed ZeRO, fp16/fp8, fused loss, tp/pp/ep/cp > 1...) and
    :class:`~trainfit.errors.MissingExtraError` when torch/transformers/peft are not installed.
    """
    return run_trace(model, workload, steps=steps, progress=progress, fake=True)
