"""The result of one trace (no torch import here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainfit.json_types import JSONLike

from trainfit.estimate.terms import TENSOR_TERMS

GIB = 1024**3

#: The terms a trace counts: the estimate's live-tensor terms (estimate/terms.py), the keys of ``breakdown_gib``.
BREAKDOWN_KEYS = TENSOR_TERMS


@dataclass(frozen=True, kw_only=True)
class TraceResult:
    """Peak allocated tensor memory of the steady-state training step, as traced.

    All byte counts are per GPU (rank 0 for FSDP), 512-byte rounded like the CUDA caching allocator,
    and cover tensors only: no CUDA context, allocator reserve/fragmentation, cuBLAS/NCCL workspaces.
    """

    model: str
    workload: dict[str, JSONLike]
    tensor_peak_gib: float
    """Peak of live tensor bytes during the last traced step."""
    peak_bytes: int
    peak_phase: str
    """``forward``, ``backward`` or ``optimizer`` (the phase running when the peak was reached)."""
    breakdown_gib: dict[str, float]
    """What was live at the peak, by term (:data:`BREAKDOWN_KEYS`)."""
    params: dict[str, int]
    """``total``, ``trainable`` and ``active`` (per token; MoE counts top-k experts) parameters."""
    trace_seconds: float
    """Wall time of the trace (model build + steps), imports excluded."""
    steps: int = 2
    step_peaks_gib: tuple[float, ...] = ()
    """Peak of each traced step (the result is the last one)."""
    step_seconds: tuple[float, ...] = ()
    """Wall time of each traced step."""
    per_layer_activation_bytes: tuple[int, ...] | None = None
    """Live-bytes growth across each decoder layer in the forward of the last step (saved activations
    plus the layer's output; under checkpointing only the checkpoint input)."""
    versions: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    fake: bool = True
    """True: traced under FakeTensorMode (no real compute); False: a real CPU run (tests)."""

    @property
    def activation_bytes_per_token_per_layer(self) -> float | None:
        """Median per-layer activation growth (interior layers) divided by tokens per micro-batch."""
        if not self.per_layer_activation_bytes:
            return None
        vals = list(self.per_layer_activation_bytes)
        if len(vals) >= 3:  # the first and last layers carry the embedding output / final hidden state
            vals = vals[1:-1]
        vals.sort()
        med = vals[(len(vals) - 1) // 2]
        tokens = int(self.workload.get("seq_len", 1)) * int(self.workload.get("micro_batch", 1))
        return med / max(1, tokens)

    def to_dict(self) -> dict[str, JSONLike]:
        """JSON with the keys of ``trainfit memory --json`` (model, params, tensor_peak_gib, peak_phase,
        breakdown_gib) plus the trace's own."""
        return {
            "model": self.model,
            "workload": dict(self.workload),
            "params": dict(self.params),
            "tensor_peak_gib": round(self.tensor_peak_gib, 4),
            "peak_phase": self.peak_phase,
            "breakdown_gib": {k: round(v, 4) for k, v in self.breakdown_gib.items()},
            "peak_bytes": self.peak_bytes,
            "trace_seconds": round(self.trace_seconds, 2),
            "steps": self.steps,
            "step_peaks_gib": [round(x, 4) for x in self.step_peaks_gib],
            "step_seconds": [round(x, 2) for x in self.step_seconds],
            "per_layer_activation_bytes": list(self.per_layer_activation_bytes)
            if self.per_layer_activation_bytes is not None else None,
            "activation_bytes_per_token_per_layer": self.activation_bytes_per_token_per_layer,
            "versions": dict(self.versions),
            "notes": list(self.notes),
            "source": "trace" if self.fake else "real-cpu",
        }
