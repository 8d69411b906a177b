"""The memory terms, once: one :class:`Term` descriptor per term of a per-GPU memory breakdown.

A term's ``key`` is its name in the JSON (``breakdown_gib``), its labels are gettext message ids (English in the
code, Chinese in ``locale/zh_CN/parts/estimate.po``) shown in the current language or in a given one. The estimator
(:mod:`trainfit.estimate.memory`), the trace (:mod:`trainfit.trace`), the CLI tables (``_cli/tables.py``,
``_cli/trace.py``) and the web page (``GET /api/terms``, :func:`trainfit.web.labels.terms`) read them here; nothing
else lists the terms or their labels. :class:`MemoryTerms` is the bytes of the tensor terms at one moment of the
training step, as the estimator's phase walk builds them.

This module imports nothing of trainfit but :mod:`trainfit.i18n`: every layer may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

from trainfit import i18n
from trainfit.i18n import N_

__all__ = ["MemoryTerms", "TENSOR_TERMS", "TERMS", "TERMS_BY_KEY", "Term", "term_label"]


@dataclass(frozen=True, kw_only=True)
class Term:
    """One term of the per-GPU memory breakdown."""

    key: str
    """The name in the JSON (``breakdown_gib``) and of the :class:`MemoryTerms` field."""
    label: str
    """Message id of the full label (the CLI's memory and trace tables)."""
    short_label: str
    """Message id of the short label (the web page's bar and legend)."""
    colour: str
    """The web page's colour of the term (CSS)."""
    in_tensor_peak: bool = True
    """Part of the live tensors (``tensor_peak_gib``, what ``max_memory_allocated`` and the trace count); False: only
    in ``reserved_gib`` (the overhead)."""
    loss_labels: tuple[tuple[str, str], ...] = ()
    """``(Workload.loss, message id)``: the full label where that loss makes the default one wrong."""
    unit: str = "GiB"
    """Unit of the term's value in ``breakdown_gib`` (per GPU, on the worst rank)."""

    def text(self, loss: str | None = None) -> str:
        """The full label in the current language (the one for ``loss`` where it has its own)."""
        return i18n.translate(dict(self.loss_labels).get(loss or "", self.label))

    def page_entry(self, lang: str) -> dict[str, str]:
        """What the web page draws the term with: key, short label in ``lang``, unit, colour."""
        return {"key": self.key, "label": i18n.gettext_in(lang, self.short_label), "unit": self.unit,
                "colour": self.colour}


#: Every term, in the order of the tables, the JSON breakdown and the page's bar.
TERMS: tuple[Term, ...] = (
    Term(key="weights", label=N_("weights"), short_label=N_("weights"), colour="#3465a4"),
    Term(key="gradients", label=N_("gradients"), short_label=N_("gradients"), colour="#73a33f"),
    Term(key="optimizer", label=N_("optimizer states (+fp32 master)"), short_label=N_("optimizer"),
         colour="#c17d11"),
    Term(key="activations", label=N_("activations (saved for backward)"), short_label=N_("activations"),
         colour="#75507b"),
    # the default label says fp32: not what --loss half / fused keep
    Term(key="logits_loss", label=N_("logits + loss (fp32)"), short_label=N_("logits & loss"), colour="#cc0000",
         loss_labels=(("half", N_("logits + loss (16-bit)")), ("fused", N_("logits + loss (chunked, fused)")))),
    Term(key="temporaries", label=N_("temporaries (step, buckets, gathers)"), short_label=N_("temporaries"),
         colour="#4e9a9a"),
    Term(key="overhead", label=N_("overhead (CUDA context, allocator)"), short_label=N_("overhead (CUDA, allocator)"),
         colour="#888a85", in_tensor_peak=False),
)
TERMS_BY_KEY: Mapping[str, Term] = {t.key: t for t in TERMS}
#: The keys of the live-tensor terms (the estimate's peak, the trace's breakdown), in order.
TENSOR_TERMS: tuple[str, ...] = tuple(t.key for t in TERMS if t.in_tensor_peak)


def term_label(key: str, loss: str | None = None) -> str:
    """The full label of term ``key`` in the current language (the key itself for an unknown term, e.g. an RL
    plan's terms)."""
    term = TERMS_BY_KEY.get(key)
    return term.text(loss) if term else key


@dataclass(frozen=True, slots=True)
class MemoryTerms:
    """Bytes of each tensor term at one moment of the training step (on the worst rank), and its phase. The
    fields after ``phase`` are :data:`TENSOR_TERMS`, in order."""

    phase: str
    """forward | backward | optimizer."""
    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits_loss: float
    temporaries: float

    @property
    def total(self) -> float:
        """All live tensor bytes of the moment (``sum`` in term order, as every figure built on it was)."""
        return sum((self.weights, self.gradients, self.optimizer, self.activations, self.logits_loss,
                    self.temporaries))

    def items(self) -> Iterator[tuple[str, float]]:
        """``(key, bytes)`` of each tensor term, in order."""
        return zip(TENSOR_TERMS, (self.weights, self.gradients, self.optimizer, self.activations, self.logits_loss,
                                  self.temporaries))

    def plus_gradients(self, extra: float) -> MemoryTerms:
        """The same moment with ``extra`` bytes more counted as gradients (runtime buffers alive the whole step)."""
        return MemoryTerms(self.phase, self.weights, self.gradients + extra, self.optimizer, self.activations,
                           self.logits_loss, self.temporaries)
