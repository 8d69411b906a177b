"""Runtime memory beyond what a fake-tensor trace of the Hugging Face training step sees.

``estimate/memory.py`` reproduces the exact tensor peak of the traced HF code. Real jobs run under engines
that allocate more, or differently; this module lists those terms (``runtime_terms``) and memory.py adds
them to every phase. The verdict stays :func:`trainfit.estimate.fit.decide_fit`. Checked on the real-world corpus of
``benchmarks/fit_corpus.py`` (``docs/accuracy.md``, "Real-world fit corpus"); none of these terms applies
to the single-GPU HF configurations of the trace grid, so ``benchmarks/memory_accuracy.py`` is unchanged.

Terms:

* **Megatron fp32 main gradients.** Megatron-Core accumulates and all-reduces gradients of bf16 models in
  fp32 (``accumulate_allreduce_grads_in_fp32`` is forced on for ``--bf16``; the DDP wrapper keeps a
  contiguous fp32 ``main_grad`` buffer of every local parameter, not sharded by the distributed
  optimizer). memory.py counts bf16 gradients; the extra 2 bytes per local trainable parameter are added
  for Megatron layouts (tp/pp/ep/cp > 1, ``Workload.uses_megatron``) when the weights train (full/freeze).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainfit.workload import Workload

MEGATRON_MAIN_GRAD_EXTRA_BYTES = 2.0
"""fp32 ``main_grad`` (4 B) minus the bf16 gradient (2 B) memory.py already counts, per local parameter."""


@dataclass(frozen=True, kw_only=True)
class RuntimeTerm:
    """One runtime allocation that the trace does not see (bytes on the worst rank)."""

    name: str
    bytes: float
    phase: str
    """Phases it is alive in: ``all`` (whole step) or ``backward+optimizer``."""
    note: str


def runtime_terms(wl: Workload, *, trainable_rank_elems: float) -> tuple[RuntimeTerm, ...]:
    """Extra allocations of the engine implied by ``wl`` (``trainable_rank_elems``: trainable elements this
    rank computes gradients for, after tensor/expert/pipeline sharding, before ZeRO sharding)."""
    out: list[RuntimeTerm] = []
    if wl.uses_megatron and wl.method in ("full", "freeze") and wl.strategy in ("ddp", "zero1"):
        out.append(RuntimeTerm(
            name="megatron-fp32-main-grad", bytes=trainable_rank_elems * MEGATRON_MAIN_GRAD_EXTRA_BYTES,
            phase="all",
            note="Megatron-Core keeps fp32 main_grad buffers of every local parameter (bf16 training forces "
                 "accumulate_allreduce_grads_in_fp32); +2 B/param over the bf16 gradients counted"))
    return tuple(out)
