"""Fit answers: does a workload fit a GPU of a given memory, how much room is left, the largest
micro-batch and sequence length that fit, and the cheapest settings changes that would make it fit.

"Fits" compares ``reserved_gib`` (what the GPU really needs, overhead included) with the GPU memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainfit.errors import WorkloadError
from trainfit.estimate.memory import MemoryEstimate, OverheadModel, DEFAULT_OVERHEAD, estimate_memory
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload

#: Longest sequence searched (tokens); the model's own context limit is reported separately.
MAX_SEQ_SEARCH = 1 << 20
MAX_MB_SEARCH = 4096


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """One settings change and what it does to memory."""

    change: str
    """Human-readable change, e.g. ``--strategy zero3``."""
    options: dict
    """The Workload fields it changes."""
    reserved_gib: float
    fits: bool
    why: str
    """What it costs (speed, quality) — the reason it is ranked where it is."""

    def to_dict(self) -> dict:
        return {"change": self.change, "options": self.options, "reserved_gib": round(self.reserved_gib, 2),
                "fits": self.fits, "why": self.why}


@dataclass(frozen=True, kw_only=True)
class FitAnswer:
    gpu_mem_gib: float
    fits: bool
    headroom_gib: float
    """GPU memory minus reserved memory (negative when it does not fit)."""
    max_micro_batch: int
    """Largest micro-batch that fits at this sequence length (0 = not even 1)."""
    max_seq_len: int
    """Longest sequence (multiple of 128) that fits at this micro-batch (0 = none)."""
    suggestions: tuple[Suggestion, ...] = field(default=())
    """When it does not fit: changes that make it fit, cheapest (least slowdown) first."""

    def to_dict(self) -> dict:
        return {"gpu_mem_gib": self.gpu_mem_gib, "fits": self.fits, "headroom_gib": round(self.headroom_gib, 2),
                "max_micro_batch": self.max_micro_batch, "max_seq_len": self.max_seq_len,
                "suggestions": [s.to_dict() for s in self.suggestions]}


def _reserved(m: ModelShape, wl: Workload, ov: OverheadModel) -> float:
    return estimate_memory(m, wl, overhead=ov).reserved_gib


def _largest(lo: int, hi: int, ok) -> int:
    """Largest x in [lo, hi] with ok(x) True, assuming ok is monotone decreasing; lo-1 if none."""
    if not ok(lo):
        return lo - 1
    # exponential search then bisection
    step = lo
    good = lo
    while True:
        nxt = min(hi, good + step)
        if nxt == good or not ok(nxt):
            bad = nxt if nxt != good else hi + 1
            break
        good = nxt
        step *= 2
    while bad - good > 1:
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def max_micro_batch(m: ModelShape, wl: Workload, gpu_mem_gib: float, ov: OverheadModel = DEFAULT_OVERHEAD) -> int:
    return max(0, _largest(1, MAX_MB_SEARCH, lambda b: _reserved(m, wl.with_(micro_batch=b), ov) <= gpu_mem_gib))


def max_seq_len(m: ModelShape, wl: Workload, gpu_mem_gib: float, ov: OverheadModel = DEFAULT_OVERHEAD) -> int:
    unit = 128 * wl.cp

    def ok(k: int) -> bool:
        try:
            w = wl.with_(seq_len=k * unit)
        except WorkloadError:
            return False
        return _reserved(m, w, ov) <= gpu_mem_gib

    return max(0, _largest(1, MAX_SEQ_SEARCH // unit, ok)) * unit


def _candidates(m: ModelShape, wl: Workload) -> list[tuple[str, dict, str]]:
    """Settings changes, ordered from least to most costly for speed or quality."""
    c: list[tuple[str, dict, str]] = []
    if wl.optimizer == "adamw-foreach":
        c.append(("--optimizer adamw-fused", {"optimizer": "adamw-fused"}, "same math, no step temporary"))
    if wl.loss == "standard":
        c.append(("--loss fused", {"loss": "fused"}, "no full fp32 logits; needs Liger kernels"))
    if wl.micro_batch > 1:
        mb = 1
        ga = wl.grad_accum * wl.micro_batch
        c.append((f"--micro-batch {mb} --grad-accum {ga}", {"micro_batch": mb, "grad_accum": ga},
                  "same global batch, less GPU efficiency"))
    if not wl.grad_ckpt:
        c.append(("--grad-ckpt", {"grad_ckpt": True}, "one extra forward (~+33% compute)"))
    if wl.attention == "eager":
        c.append(("--attention sdpa", {"attention": "sdpa"}, "faster and no S x S scores"))
    if wl.gpus > 1:
        order = ["zero1", "zero2", "fsdp", "zero3"]
        cur = order.index(wl.strategy) if wl.strategy in order else -1
        for s in order[cur + 1:]:
            c.append((f"--strategy {s}", {"strategy": s}, "shards model states; more communication"))
    if wl.optimizer in ("adamw-fused", "adamw-foreach") and wl.strategy not in ("zero1", "zero2", "zero3"):
        c.append(("--optimizer adamw-8bit", {"optimizer": "adamw-8bit"}, "8-bit Adam states (bitsandbytes)"))
    if wl.gpus > 1 and wl.offload == "none":
        strat = wl.strategy if wl.strategy in ("zero2", "zero3", "fsdp") else "zero2"
        c.append((f"--strategy {strat} --offload optimizer", {"strategy": strat, "offload": "optimizer"},
                  "optimizer step on the CPU (often 1.5-3x slower)"))
        c.append(("--strategy zero3 --offload all", {"strategy": "zero3", "offload": "all"},
                  "parameters and optimizer in host RAM (slowest)"))
    elif wl.gpus == 1 and wl.offload == "none":
        c.append(("--strategy zero2 --offload optimizer", {"strategy": "zero2", "offload": "optimizer"},
                  "DeepSpeed ZeRO-Offload on one GPU; optimizer step on the CPU"))
        c.append(("--strategy zero3 --offload all", {"strategy": "zero3", "offload": "all"},
                  "ZeRO-Infinity style: parameters and optimizer in host RAM (slowest)"))
    if wl.method in ("full", "freeze"):
        c.append(("--method lora", {"method": "lora"}, "trains adapters only (different quality)"))
    if wl.method in ("full", "freeze", "lora"):
        c.append(("--method qlora", {"method": "qlora"}, "4-bit base weights (slower, lower precision)"))
    if wl.seq_len > 512:
        c.append((f"--seq-len {wl.seq_len // 2}", {"seq_len": wl.seq_len // 2}, "shorter samples"))
    for k in (2, 4, 8, 16, 32, 64):
        g = wl.gpus * k
        gpn = min(max(wl.gpus_per_node, 1), 8)
        if g > 8 and g % gpn:
            continue
        c.append((f"--gpus {g} --strategy zero3", {"gpus": g, "strategy": "zero3", "gpus_per_node": min(g, gpn) if g <= 8 else gpn},
                  "more GPUs, ZeRO-3 sharding"))
    return c


def fit_answer(m: ModelShape, wl: Workload, gpu_mem_gib: float, *, estimate: MemoryEstimate | None = None,
               overhead: OverheadModel = DEFAULT_OVERHEAD, max_suggestions: int = 3) -> FitAnswer:
    """Fit of ``wl`` on a GPU with ``gpu_mem_gib`` of memory (see module docstring)."""
    if gpu_mem_gib <= 0:
        raise WorkloadError(f"GPU memory must be positive, got {gpu_mem_gib}")
    est = estimate or estimate_memory(m, wl, overhead=overhead)
    fits = est.reserved_gib <= gpu_mem_gib
    sugg: list[Suggestion] = []
    if not fits:
        for label, opts, why in _candidates(m, wl):
            try:
                w2 = wl.with_(**opts)
            except WorkloadError:
                continue
            r = _reserved(m, w2, overhead)
            if r <= gpu_mem_gib:
                sugg.append(Suggestion(change=label, options=opts, reserved_gib=r, fits=True, why=why))
                if len(sugg) >= max_suggestions:
                    break
    return FitAnswer(
        gpu_mem_gib=gpu_mem_gib, fits=fits, headroom_gib=gpu_mem_gib - est.reserved_gib,
        max_micro_batch=max_micro_batch(m, wl, gpu_mem_gib, overhead),
        max_seq_len=max_seq_len(m, wl, gpu_mem_gib, overhead), suggestions=tuple(sugg),
    )
