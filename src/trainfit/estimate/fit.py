"""The one fit decision, and the answers built on it: does a workload fit a GPU (and its node's host RAM), how
much room is left, the largest micro-batch and sequence length that fit, and the cheapest settings changes that
would make it fit.

:func:`decide_fit` is the only place that turns memory numbers into a verdict; ``memory``, ``plan``,
``render``, ``check``, ``submit`` and the web page all call it:

* ``fits``: ``reserved_gib`` <= usable GPU memory x (1 - margin), and host RAM known and sufficient (or small
  enough that any GPU server has it, :data:`HOST_RAM_FLOOR_GIB_PER_GPU`);
* ``tight``: inside the safety margin (usable x (1 - margin) < reserved <= usable), or host RAM within 90-100 %,
  or a reserve above usable memory that only its releasable cache (``MemoryEstimate.releasable_cache_gib``: cached
  blocks the caching allocator frees and retries with before it fails; when cache is releasable, from PyTorch's
  allocator: estimate/zero3.py) takes over it;
* ``oom``: more than the GPU's usable memory without that cache, or more host RAM than the node has;
* ``unknown``: the GPU part fits but the node's host RAM is unknown and the job needs more than the floor.

``reserved_gib`` is what the GPU really needs (tensor peak plus allocator and CUDA/NCCL overhead); usable
memory is the GPU record's ``usable_mem_gib`` (ECC on GDDR6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainfit.errors import WorkloadError
from trainfit.i18n import N_, _
from trainfit.estimate.memory import MemoryEstimate, OverheadModel, DEFAULT_OVERHEAD, estimate_memory
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload
from trainfit.estimate.uncertainty import memory_range, oom_probability, share_at_oom_probability

#: Fraction of usable GPU memory kept free (allocator spikes, NCCL growth, version drift): inside it a job is
#: ``tight``. A documented assumption; a 138.7/140 GiB job that OOMed in a published report (1 % headroom)
#: sits inside it.
SAFETY_MARGIN_DEFAULT = 0.05
#: The risk a recommendation may carry: ``plan`` prefers settings whose calibrated P(OOM)
#: (:attr:`FitDecision.oom_probability`) is below it and ranks the others last, and ``memory`` suggests changes
#: for a job that fits by the margin but not by it. One in five: a job that may die at its first long batch one time
#: in five is not advice to rent a node on, while the memory model's own spread (p10-p90 about 1.0-1.4x) makes a
#: much lower limit cost checkpointing or offload on runs that would fit. The verdict does not use it.
OOM_RISK_LIMIT = 0.2
#: Fraction of host RAM the job may use (the OS, data loaders and page cache need the rest).
HOST_RAM_USABLE = 0.9
#: Host RAM per GPU that any GPU server has (the smallest GPU instances in the catalog carry 15-30 GiB for one
#: GPU): a job needing less than this per GPU of a node with unknown RAM is not held up as ``unknown``.
HOST_RAM_FLOOR_GIB_PER_GPU = 8.0
VERDICTS = ("fits", "tight", "oom", "unknown")
#: Each verdict in a word, as a message id (JSON keeps the code; what a user reads is ``translate`` of this).
VERDICT_WORDS = {"fits": N_("fits"), "tight": N_("tight"), "oom": N_("oom"), "unknown": N_("unknown")}
_ORDER = {"fits": 0, "unknown": 1, "tight": 2, "oom": 3}


@dataclass(frozen=True, kw_only=True)
class FitDecision:
    """The verdict of one workload on one GPU (and node), with the numbers behind it."""

    verdict: str
    """fits | tight | oom | unknown (see module docstring)."""
    gpu_verdict: str
    """fits | tight | oom for GPU memory alone."""
    host_verdict: str
    """fits | tight | oom | unknown for the node's host RAM."""
    reserved_gib: float
    usable_gib: float
    """GPU memory a process can use (after ECC on GDDR6)."""
    margin: float
    headroom_gib: float
    """``usable_gib - reserved_gib`` (negative when it does not fit)."""
    host_ram_need_gib: float
    """Host RAM the job needs per node."""
    host_ram_gib: float | None
    """Host RAM of the node; None = unknown."""
    reasons: tuple[str, ...] = ()
    """One line per part that is not ``fits``."""
    oom_probability: float | None = None
    """Calibrated probability that the job needs more GPU memory than ``usable_gib`` (plus the releasable cache),
    from the spread of measured / predicted memory over the fit corpus's calibration reports
    (:func:`trainfit.estimate.uncertainty.oom_probability`); None in plan files written before it existed."""

    @property
    def fits(self) -> bool:
        return self.verdict == "fits"

    @property
    def binding(self) -> str | None:
        """``gpu`` or ``host``: the part that decided a verdict other than fits."""
        if self.verdict == "fits":
            return None
        return "gpu" if _ORDER[self.gpu_verdict] >= _ORDER[self.host_verdict] else "host"

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "gpu_verdict": self.gpu_verdict, "host_verdict": self.host_verdict,
                "reserved_gib": self.reserved_gib, "usable_gib": self.usable_gib, "margin": self.margin,
                "headroom_gib": self.headroom_gib, "host_ram_need_gib": self.host_ram_need_gib,
                "host_ram_gib": self.host_ram_gib, "reasons": list(self.reasons),
                "oom_probability": self.oom_probability}

    @classmethod
    def from_dict(cls, d: dict) -> "FitDecision":
        p = d.get("oom_probability")
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0):
            raise ValueError("oom_probability must be a probability (a number from 0 to 1) or null")
        return cls(**{**d, "reasons": tuple(d.get("reasons") or ())})


def host_ram_verdict(need_gib: float, host_ram_gib: float | None, gpus_per_node: int = 1) -> tuple[str, str | None]:
    """(fits | tight | oom | unknown, reason or None) for a node's host RAM: the host part of :func:`decide_fit`."""
    if host_ram_gib is None:
        if need_gib <= HOST_RAM_FLOOR_GIB_PER_GPU * max(1, gpus_per_node):
            return "fits", None
        return "unknown", _("needs ~{need_gib:,.0f} GiB host RAM per node; the node's RAM is unknown (pass "
                            "--host-ram or an instance type whose RAM the catalog knows)").format(need_gib=need_gib)
    if need_gib > host_ram_gib:
        return "oom", _("needs {need_gib:,.0f} GiB host RAM per node > {host_ram_gib:g} GiB").format(
            need_gib=need_gib, host_ram_gib=host_ram_gib)
    if need_gib > host_ram_gib * HOST_RAM_USABLE:
        return "tight", _("needs {need_gib:,.0f} GiB host RAM per node: over {usable:.0%} of {host_ram_gib:g} "
                          "GiB").format(need_gib=need_gib, usable=HOST_RAM_USABLE, host_ram_gib=host_ram_gib)
    return "fits", None


def decide_fit(est: MemoryEstimate, *, usable_gib: float, gpus_per_node: int = 1, host_ram_gib: float | None = None,
               margin: float = SAFETY_MARGIN_DEFAULT) -> FitDecision:
    """The verdict for a memory estimate on a GPU with ``usable_gib`` and a node with ``host_ram_gib``."""
    if not usable_gib > 0:
        raise WorkloadError(_("GPU memory must be positive, got {usable_gib}").format(usable_gib=usable_gib))
    if not 0 <= margin < 0.5:
        raise WorkloadError(_("the safety margin must be in [0, 0.5), got {margin}").format(margin=margin))
    r = est.reserved_gib
    reasons: list[str] = []
    if r - est.releasable_cache_gib > usable_gib:
        gv = "oom"
        reasons.append(_("needs {r:.1f} GiB per GPU > {usable_gib:.4g} GiB usable").format(r=r, usable_gib=usable_gib))
    elif r > usable_gib:
        gv = "tight"
        reasons.append(_("reserves {r:.1f} GiB per GPU > {usable_gib:.4g} GiB usable, {cache_gib:.1f} GiB of it "
                         "cached blocks the allocator frees and retries with before failing: at the limit").format(
                           r=r, usable_gib=usable_gib, cache_gib=est.releasable_cache_gib))
    elif r > usable_gib * (1 - margin):
        gv = "tight"
        reasons.append(_("needs {r:.1f} GiB per GPU: inside the {margin:.0%} safety margin of {usable_gib:.4g} GiB "
                         "(allocator spikes can push it over)").format(r=r, margin=margin, usable_gib=usable_gib))
    else:
        gv = "fits"
    need = est.host_ram_gib
    hv, host_reason = host_ram_verdict(need, host_ram_gib, gpus_per_node)
    if host_reason:
        reasons.append(host_reason)
    verdict = max((gv, hv), key=lambda v: _ORDER[v])
    return FitDecision(verdict=verdict, gpu_verdict=gv, host_verdict=hv, reserved_gib=r, usable_gib=usable_gib,
                       margin=margin, headroom_gib=usable_gib - r, host_ram_need_gib=need, host_ram_gib=host_ram_gib,
                       reasons=tuple(reasons), oom_probability=_oom_probability(est, usable_gib))


def _oom_probability(est: MemoryEstimate, usable_gib: float) -> float | None:
    """The calibrated P(OOM) of :func:`decide_fit` (None when the interval data file is missing)."""
    try:
        return oom_probability(est.reserved_gib, usable_gib, est.releasable_cache_gib)
    except (OSError, KeyError, ValueError):
        return None


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
                "reserved_interval_gib": memory_range(self.reserved_gib), "fits": self.fits, "why": self.why}


@dataclass(frozen=True, kw_only=True)
class FitAnswer:
    decision: FitDecision
    """The one verdict (:func:`decide_fit`)."""
    max_micro_batch: int
    """Largest micro-batch whose GPU verdict is ``fits`` at this sequence length (0 = not even 1)."""
    max_seq_len: int
    """Longest sequence (multiple of 128) whose GPU verdict is ``fits`` at this micro-batch (0 = none)."""
    suggestions: tuple[Suggestion, ...] = field(default=())
    """When it does not fit: changes that make it fit, cheapest (least slowdown) first."""

    @property
    def fits(self) -> bool:
        return self.decision.fits

    def to_dict(self) -> dict:
        return {**self.decision.to_dict(), "max_micro_batch": self.max_micro_batch, "max_seq_len": self.max_seq_len,
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


def _limit(usable_gib: float, margin: float) -> float:
    return usable_gib * (1 - margin)


def max_micro_batch(m: ModelShape, wl: Workload, usable_gib: float, ov: OverheadModel = DEFAULT_OVERHEAD, *,
                    margin: float = SAFETY_MARGIN_DEFAULT) -> int:
    lim = _limit(usable_gib, margin)
    return max(0, _largest(1, MAX_MB_SEARCH, lambda b: _reserved(m, wl.with_(micro_batch=b), ov) <= lim))


def max_seq_len(m: ModelShape, wl: Workload, usable_gib: float, ov: OverheadModel = DEFAULT_OVERHEAD, *,
                margin: float = SAFETY_MARGIN_DEFAULT) -> int:
    unit = 128 * wl.cp
    lim = _limit(usable_gib, margin)

    def ok(k: int) -> bool:
        try:
            w = wl.with_(seq_len=k * unit)
        except WorkloadError:
            return False
        return _reserved(m, w, ov) <= lim

    return max(0, _largest(1, MAX_SEQ_SEARCH // unit, ok)) * unit


def _candidates(m: ModelShape, wl: Workload) -> list[tuple[str, dict, str]]:
    """Settings changes, ordered from least to most costly for speed or quality."""
    c: list[tuple[str, dict, str]] = []
    if wl.optimizer == "adamw-foreach":
        c.append(("--optimizer adamw-fused", {"optimizer": "adamw-fused"}, _("same math, no step temporary")))
    if wl.loss == "standard":
        c.append(("--loss fused", {"loss": "fused"}, _("no full fp32 logits; needs Liger kernels")))
    if wl.micro_batch > 1:
        mb = 1
        ga = wl.grad_accum * wl.micro_batch
        c.append((f"--micro-batch {mb} --grad-accum {ga}", {"micro_batch": mb, "grad_accum": ga},
                  _("same global batch, less GPU efficiency")))
    if not wl.grad_ckpt:
        c.append(("--grad-ckpt", {"grad_ckpt": True}, _("one extra forward (~+33% compute)")))
    if wl.attention == "eager":
        c.append(("--attention sdpa", {"attention": "sdpa"}, _("faster and no S x S scores")))
    if wl.gpus > 1:
        order = ["zero1", "zero2", "fsdp", "zero3"]
        cur = order.index(wl.strategy) if wl.strategy in order else -1
        for s in order[cur + 1:]:
            c.append((f"--strategy {s}", {"strategy": s}, _("shards model states; more communication")))
    if wl.optimizer in ("adamw-fused", "adamw-foreach") and wl.strategy not in ("zero1", "zero2", "zero3"):
        c.append(("--optimizer adamw-8bit", {"optimizer": "adamw-8bit"}, _("8-bit Adam states (bitsandbytes)")))
    if wl.gpus > 1 and wl.offload == "none":
        strat = wl.strategy if wl.strategy in ("zero2", "zero3", "fsdp") else "zero2"
        c.append((f"--strategy {strat} --offload optimizer", {"strategy": strat, "offload": "optimizer"},
                  _("optimizer step on the CPU (often 1.5-3x slower)")))
        c.append(("--strategy zero3 --offload all", {"strategy": "zero3", "offload": "all"},
                  _("parameters and optimizer in host RAM (slowest)")))
    elif wl.gpus == 1 and wl.offload == "none":
        c.append(("--strategy zero2 --offload optimizer", {"strategy": "zero2", "offload": "optimizer"},
                  _("DeepSpeed ZeRO-Offload on one GPU; optimizer step on the CPU")))
        c.append(("--strategy zero3 --offload all", {"strategy": "zero3", "offload": "all"},
                  _("ZeRO-Infinity style: parameters and optimizer in host RAM (slowest)")))
    if wl.method in ("full", "freeze"):
        c.append(("--method lora", {"method": "lora"}, _("trains adapters only (different quality)")))
    if wl.method in ("full", "freeze", "lora"):
        c.append(("--method qlora", {"method": "qlora"}, _("4-bit base weights (slower, lower precision)")))
    if wl.seq_len > 512:
        c.append((f"--seq-len {wl.seq_len // 2}", {"seq_len": wl.seq_len // 2}, _("shorter samples")))
    for k in (2, 4, 8, 16, 32, 64):
        g = wl.gpus * k
        gpn = min(max(wl.gpus_per_node, 1), 8)
        if g > 8 and g % gpn:
            continue
        c.append((f"--gpus {g} --strategy zero3", {"gpus": g, "strategy": "zero3", "gpus_per_node": min(g, gpn) if g <= 8 else gpn},
                  _("more GPUs, ZeRO-3 sharding")))
    return c


def _semantics_note(m: ModelShape, wl: Workload, opts: dict, ov: OverheadModel) -> str:
    """A hint that moves between DeepSpeed ZeRO (always fp32 master weights and states) and FSDP/DDP under pure
    bf16 (bf16 states) changes the optimizer's precision, not only the sharding: say so, with the number."""
    new = opts.get("strategy", wl.strategy)
    ds_old, ds_new = wl.strategy.startswith("zero"), new.startswith("zero")
    if ds_old == ds_new or wl.precision != "bf16" or wl.method not in ("full", "freeze"):
        return ""
    if ds_old and not ds_new:
        try:
            amp = _reserved(m, wl.with_(**opts, precision="amp-bf16"), ov)
        except WorkloadError:
            return ""
        return _("; note: {new} here means pure-bf16 weights and optimizer states (DeepSpeed ZeRO keeps fp32 master "
                 "weights and states); with --precision amp-bf16 it needs {amp:.1f} GiB").format(new=new, amp=amp)
    return _("; note: DeepSpeed ZeRO keeps fp32 master weights and optimizer states even under bf16")


def fit_answer(m: ModelShape, wl: Workload, usable_gib: float, *, estimate: MemoryEstimate | None = None,
               overhead: OverheadModel = DEFAULT_OVERHEAD, max_suggestions: int = 3, host_ram_gib: float | None = None,
               margin: float = SAFETY_MARGIN_DEFAULT) -> FitAnswer:
    """Fit of ``wl`` on a GPU with ``usable_gib`` of usable memory (see module docstring)."""
    est = estimate or estimate_memory(m, wl, overhead=overhead)
    decision = decide_fit(est, usable_gib=usable_gib, gpus_per_node=wl.gpus_on_node,
                          host_ram_gib=host_ram_gib, margin=margin)
    sugg: list[Suggestion] = []
    risky = decision.gpu_verdict == "fits" and (decision.oom_probability or 0.0) >= OOM_RISK_LIMIT
    if decision.gpu_verdict != "fits" or risky:
        lim = _limit(usable_gib, margin)
        if risky:  # fits by the margin, not by the risk limit: what brings P(OOM) under it
            lim = min(lim, usable_gib * share_at_oom_probability(OOM_RISK_LIMIT))
        for label, opts, why in _candidates(m, wl):
            try:
                w2 = wl.with_(**opts)
            except WorkloadError:
                continue
            r = _reserved(m, w2, overhead)
            if r <= lim:
                why = why + _semantics_note(m, wl, opts, overhead)
                sugg.append(Suggestion(change=label, options=opts, reserved_gib=r, fits=True, why=why))
                if len(sugg) >= max_suggestions:
                    break
    return FitAnswer(decision=decision, max_micro_batch=max_micro_batch(m, wl, usable_gib, overhead, margin=margin),
                     max_seq_len=max_seq_len(m, wl, usable_gib, overhead, margin=margin), suggestions=tuple(sugg))
