"""Fitting one node layout: which candidate workloads of ``plan.search._configs`` fit GPU memory (with the largest
micro-batch) and host RAM. The planner then times the survivors and keeps the best by its objective.

One survivor per expert-parallel size: candidates are ordered by strategy, fastest first, which holds among
strategies of one parallel layout, but not across expert-parallel sizes (expert parallelism within a node's NVLink
is several times faster than FSDP for a MoE model; across nodes its all-to-all can be slower than both), so each
expert-parallel size keeps its first fit and the speed model decides between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainfit.catalog.instances import Instance
from trainfit.estimate.fit import OOM_RISK_LIMIT, host_ram_verdict
from trainfit.estimate.memory import MemoryEstimate, estimate_memory
from trainfit.estimate.uncertainty import share_at_oom_probability
from trainfit.models.shapes import ModelShape
from trainfit.plan.request import NearestMiss, PlanRequest
from trainfit.workload import Workload

MAX_MICRO_BATCH = 16

_LEAN_ORDER = {("ddp", "none"): 0, ("zero1", "none"): 1, ("zero2", "none"): 2, ("fsdp", "none"): 3,
               ("zero3", "none"): 4, ("zero1", "optimizer"): 5, ("zero2", "optimizer"): 5, ("zero3", "optimizer"): 6,
               ("fsdp", "optimizer"): 6, ("zero3", "all"): 7, ("fsdp", "all"): 7}


def _families(configs: list[Workload]) -> list[list[Workload]]:
    """Candidates split by optimizer-state semantics: DeepSpeed ZeRO vs the rest (DDP, FSDP)."""
    zero = [w for w in configs if w.strategy.startswith("zero")]
    other = [w for w in configs if not w.strategy.startswith("zero")]
    return [f for f in (zero, other) if f]


def _leanness(w: Workload) -> tuple:
    """Order candidates by how little memory they need (more sharding, offload, GC, expert parallelism)."""
    return (_LEAN_ORDER.get((w.strategy, w.offload), 0), w.grad_ckpt, w.ep)


@dataclass(frozen=True)
class Limit:
    """What a layout's settings must stay within: ``reserved_gib`` at most ``gib`` plus ``releasable_share`` x the
    cache the allocator frees before failing (``releasable_cache_gib``, which ``oom_probability`` counts as room),
    and never above ``cap_gib``. The verdict's margin is ``Limit(gib=usable x (1 - margin))``; the planner's risk
    limit is :meth:`below_oom_risk`."""

    gib: float
    releasable_share: float = 0.0
    cap_gib: float = math.inf

    @classmethod
    def below_oom_risk(cls, usable_gib: float, cap_gib: float) -> "Limit":
        """The settings whose P(OOM) stays below ``estimate.fit.OOM_RISK_LIMIT`` on a card with ``usable_gib``,
        never above ``cap_gib`` (the verdict's margin, so nothing admitted is ``tight``)."""
        share = share_at_oom_probability(OOM_RISK_LIMIT)
        return cls(gib=usable_gib * share, releasable_share=share, cap_gib=cap_gib)

    def admits(self, est: MemoryEstimate) -> bool:
        return est.reserved_gib <= min(self.cap_gib, self.gib + self.releasable_share * est.releasable_cache_gib)


def fit_micro_batch(model: ModelShape, wl: Workload, limit: Limit, cap: int) -> tuple[Workload, MemoryEstimate] | None:
    """The largest micro-batch <= cap that fits (None if even 1 does not)."""
    est = estimate_memory(model, wl)
    if not limit.admits(est):
        return None
    best = (wl, est)
    b = 2
    while b <= cap:
        w2 = wl._with_batch(b)
        e2 = estimate_memory(model, w2)
        if not limit.admits(e2):
            break
        best = (w2, e2)
        b *= 2
    return best


def _fit_one(req: PlanRequest, wl: Workload, limit: Limit, miss: NearestMiss,
             inst: Instance) -> tuple[Workload, MemoryEstimate] | None:
    """``wl`` with the largest micro-batch that fits GPU memory and host RAM (and the global batch), or None."""
    model = req.model
    gb = req.target_global_batch
    cap = req.pins.get("micro_batch", MAX_MICRO_BATCH)
    if gb:
        cap = min(cap, max(1, gb // wl.dp))
    if "micro_batch" in req.pins:
        wl = wl.with_(micro_batch=req.pins["micro_batch"])
        est = estimate_memory(model, wl)
        fitted = (wl, est) if limit.admits(est) else None
    else:
        fitted = fit_micro_batch(model, wl, limit, cap)
    if fitted is None:
        e1 = estimate_memory(model, wl._with_batch(req.pins.get("micro_batch", 1)))
        if e1.reserved_gib < miss.need_gib:
            miss.need_gib, miss.need_wl = e1.reserved_gib, wl
        return None
    wl, est = fitted
    if host_ram_verdict(est.host_ram_gib, inst.ram_gib, wl.gpus_per_node)[0] in ("tight", "oom"):
        miss.host = (est.host_ram_gib, inst.ram_gib)
        miss.host_wl = wl
        return None
    if gb:
        return _accumulate(req, wl, est, gb, limit)
    return wl, est


def _accumulate(req: PlanRequest, wl: Workload, est: MemoryEstimate, gb: int,
                limit: Limit) -> tuple[Workload, MemoryEstimate] | None:
    """``wl`` with the gradient accumulation that reaches ``gb`` samples per step. Accumulating keeps the gradients
    alive through the forward passes (``estimate/memory.py``), so where that no longer fits the micro-batch halves
    (more accumulation). Where even micro-batch 1 does not fit: None for a pinned ``--global-batch``; for the
    planner's own target the layout keeps accumulation 1 (its smallest global batch that fits)."""
    mb = wl.micro_batch
    while True:
        ga = max(1, math.ceil(gb / (mb * wl.dp)))
        if ga == wl.grad_accum and mb == wl.micro_batch:
            return wl, est
        w2 = wl._with_batch(mb, ga)
        e2 = estimate_memory(req.model, w2)
        if limit.admits(e2):
            return w2, e2
        if mb == 1 or "micro_batch" in req.pins:
            return None if req.global_batch else (wl, est)  # fit_layout prefers a candidate that reaches gb
        mb //= 2



def fit_layout(req: PlanRequest, configs: list[Workload], limit: Limit, miss: NearestMiss,
               inst: Instance) -> list[tuple[Workload, MemoryEstimate]]:
    """Per expert-parallel size, the first candidate of one layout (strategies fastest first) that fits GPU memory
    (``limit``) with its largest micro-batch and host RAM; empty when none does."""
    model = req.model
    if not configs:
        return []
    # the least memory-hungry candidate of each family first (DeepSpeed ZeRO keeps fp32 master weights and states,
    # FSDP/DDP under pure bf16 do not, so neither family is always leaner): if none fits, nothing on this layout will
    leans = [max(fam, key=_leanness) for fam in _families(configs)]
    e_lean, lean = min(((estimate_memory(model, w._with_batch(req.pins.get("micro_batch", 1))), w) for w in leans),
                       key=lambda x: x[0].reserved_gib)
    if not limit.admits(e_lean):
        if e_lean.reserved_gib < miss.need_gib:
            miss.need_gib, miss.need_wl = e_lean.reserved_gib, lean
        return []
    found: dict[int, tuple[Workload, MemoryEstimate]] = {}
    fallback: dict[int, tuple[Workload, MemoryEstimate]] = {}  # fits, but without the accumulation the target needs
    eps = {w.ep for w in configs}
    for wl in configs:
        if wl.ep in found:
            continue
        got = _fit_one(req, wl, limit, miss, inst)
        if got is not None:
            if got[0].global_batch >= (req.target_global_batch or 0):
                found[wl.ep] = got
            else:
                fallback.setdefault(wl.ep, got)
            if len(found) == len(eps):
                break
    return list(found.values()) + [v for ep, v in fallback.items() if ep not in found]
