"""``trainfit diagnose``: read the per-step metrics of a run (JSONL from TrainfitCallback) and say what is
wrong, why, and what to change; with a plan, compare measured speed and memory with the prediction.

Pure logic, no torch: :func:`load_metrics` reads the file, :func:`diagnose` returns a :class:`Diagnosis`.

Findings (code: when):

* ``input-bound``: data wait is >= 10 % (warning) or >= 20 % (critical) of step time. This, not GPU
  utilisation, is the test: utilisation counts the time any kernel runs, so it can read high while the GPU
  does little, and it cannot tell a slow input pipeline from other host overhead.
* ``low-gpu-util``: median NVML utilisation under 60 %.
* ``loss-spike``: a loss above ``spike_ratio`` x the median of the previous 20 steps.
* ``divergence``: a non-finite loss, or the last steps' median loss ``divergence_ratio`` x above the best
  rolling median seen before.
* ``memory-near-limit``: peak reserved memory >= 90 % (warning) / 95 % (critical) of the GPU's memory.
* ``plan-comparison`` (info), ``slower-than-plan``, ``memory-above-plan``: measured vs predicted
  tokens/s and reserved memory, as ratios.
* ``tokens-per-step`` (info; warning outside 0.8x-1.25x, or padding 10 points above plan): measured tokens per optimizer step vs the plan's:
  global batch x seq_len for a token budget; with ``plan --dataset`` the data's rows per step (packed rows x seq_len
  and their fill; without packing the mean sample after the cut and the stats' padding at the plan's micro-batch),
  and the padding share when the step records carry ``tokens_nonpad``.
* ``checkpoint-interval``: the save interval vs the Young/Daly optimum ``sqrt(2 * save_seconds / rate)``
  (J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974,
  https://doi.org/10.1145/361147.361115; J. T. Daly, FGCS 22(3), 2006,
  https://doi.org/10.1016/j.future.2004.11.016) for the observed save time and the interruption rate.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from trainfit.errors import MetricsError
from trainfit.i18n import _
from trainfit.json_types import JSONLike
from trainfit.service import load_plan
from trainfit.plan.cost import young_daly_interval_hours
from trainfit.diagnose_types import SEVERITIES, Finding, Thresholds, median, vals
from trainfit.diagnose_tokens import PlanTokens, tokens_findings
from trainfit.metrics_file import MetricRecord, load_metrics


#: What :func:`plan_prediction` returns: ``(tokens_per_s, reserved_gib, gpu_mem_gib[, intervals])``.
PlanPrediction: TypeAlias = (tuple[float | None, float | None, float | None]
                             | tuple[float | None, float | None, float | None, dict[str, dict[str, float]]])


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    """Everything ``trainfit diagnose`` reports."""

    steps: int
    """Step records read (after keeping the last record of a step that ran twice)."""
    summary: dict[str, str | int | float | bool | None]
    """Medians and peaks of the run."""
    plan: dict[str, JSONLike] | None
    """Predicted vs measured, when a plan was given."""
    findings: tuple[Finding, ...]
    """Worst first."""

    @property
    def worst(self) -> str | None:
        return self.findings[0].severity if self.findings else None

    def to_dict(self) -> dict[str, JSONLike]:
        return {"steps": self.steps, "summary": self.summary, "plan": self.plan,
                "findings": [f.to_dict() for f in self.findings]}


# --------------------------------------------------------------------------- input
# the metrics file is read by metrics_file.load_metrics (imported above; the CLI and the tests take it from here)


def plan_prediction(path: str | Path, pick: int = 1
                     ) -> tuple[float | None, float | None, float | None, dict[str, dict[str, float]]]:
    """``(tokens_per_s, reserved_gib, gpu_mem_gib, intervals)`` that plan ``pick`` (1 = first) of a ``trainfit plan
    --json`` file predicts, read as the typed :class:`~trainfit.plan.types.Plan` (``tokens_per_s``,
    ``per_gpu_gib``, ``gpu_mem_gib``, and ``Plan.intervals()``: the p10/p50/p90 of each, issue 26). The one place
    diagnose reads a plan; errors are PlanFileError.
    """
    plan = load_plan(path, pick)

    def pos(v: float | None) -> float | None:
        return float(v) if isinstance(v, (int, float)) and v > 0 else None

    return pos(plan.speed.tokens_per_s), pos(plan.per_gpu_gib), pos(plan.placement.gpu_mem_gib), plan.intervals()


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _timing_records(steps: list[MetricRecord], warmup: int, first_after_start: frozenset[int]) -> list[MetricRecord]:
    out = [r for i, r in enumerate(steps) if i >= warmup and r["step"] not in first_after_start]
    return out or steps


def _input_findings(timed, th: Thresholds) -> tuple[list[Finding], float | None]:
    wait, total = sum(vals(timed, "data_wait_seconds")), sum(vals(timed, "step_seconds"))
    n = max(len(vals(timed, "step_seconds")), 1)
    if total <= 0:
        return [], None
    frac = wait / total
    if frac < th.input_warn:
        return [], frac
    sev = "critical" if frac >= th.input_critical else "warning"
    return [Finding(
        code="input-bound", severity=sev,
        # the fraction is total wait / total step time, so the per-step figures beside it are the means (their
        # ratio is the fraction); medians would disagree with it whenever a few steps wait long
        message=_("{pct} of step time is spent waiting for the next batch (mean data wait {wait:.3g} s of a mean "
                  "{step:.3g} s step over {n} timed steps); the GPU idles meanwhile").format(
            pct=_pct(frac), wait=wait / n, step=total / n, n=n),
        fix=_("load data in parallel and ahead: raise dataloader_num_workers (e.g. to the CPU cores per GPU), "
              "set dataloader_pin_memory and dataloader_prefetch_factor, tokenize and pack the dataset once "
              "offline instead of on the fly, and read it from local disk/NVMe or a cache rather than remote "
              "storage"),
        data={"data_wait_fraction": round(frac, 4), "warn_at": th.input_warn, "critical_at": th.input_critical})], frac


def _util_findings(timed, th: Thresholds, input_bound: bool) -> list[Finding]:
    util = median(vals(timed, "gpu_util"))
    if util is None or util >= th.low_util:
        return []
    msg = (_("median GPU utilisation is {pct}; it is explained by the input wait above") if input_bound else
           _("median GPU utilisation is {pct}; the input pipeline is not the cause (data wait is small), so look at "
             "host overhead and communication"))
    return [Finding(
        code="low-gpu-util", severity="warning",
        message=msg.format(pct=_pct(util)),
        fix=(_("fix the input pipeline first (see input-bound); note that utilisation only says a kernel was "
               "running, MFU says how much work it did") if input_bound else
             _("raise the micro-batch (trainfit memory shows the largest that fits), cut host syncs (logging every "
               "step, .item() calls), overlap communication (bucket sizes, fewer GPUs per job for small models), "
               "or use a fused optimizer; note that utilisation only says a kernel was running, MFU says how much "
               "work it did")),
        data={"median_gpu_util": round(util, 4), "warn_below": th.low_util})]


def _loss_findings(steps, events, th: Thresholds) -> list[Finding]:
    losses = [(r["step"], r.get("loss")) for r in steps if isinstance(r.get("loss"), (int, float))]
    if not losses:
        return []
    out: list[Finding] = []
    clip = next((e.get("max_grad_norm") for e in reversed(events) if "max_grad_norm" in e), None)
    clip_fix = (_("gradients are clipped at {clip}; lower it (e.g. to 0.5) or lower the learning rate").format(clip=clip)
                if isinstance(clip, (int, float)) and clip > 0 else
                _("turn on gradient clipping (max_grad_norm=1.0)"))
    bad = [s for s, v in losses if not math.isfinite(v)]
    finite = [(s, v) for s, v in losses if math.isfinite(v)]
    if bad:
        out.append(Finding(
            code="divergence", severity="critical",
            message=_("the loss is not finite at {n} step(s), first at step {first}").format(n=len(bad), first=bad[0]),
            fix=_("resume from a checkpoint before step {first} with half the learning rate and a longer warmup; "
                  "{clip_fix}; with fp16 switch to bf16; check the batches at those steps for broken samples").format(
                first=bad[0], clip_fix=clip_fix),
            data={"nonfinite_steps": bad[:20]}))
    spikes = []
    grad = {r["step"]: r.get("grad_norm") for r in steps}
    for i in range(5, len(finite)):
        window = [v for _s, v in finite[max(0, i - 20):i]]
        med = statistics.median(window)
        s, v = finite[i]
        if med > 0 and v > th.spike_ratio * med:
            spikes.append({"step": s, "loss": round(v, 4), "median_before": round(med, 4),
                           "grad_norm": grad.get(s)})
    if spikes:
        first = spikes[0]
        out.append(Finding(
            code="loss-spike", severity="warning",
            message=_("{n} loss spike(s) above {ratio}x the median of the previous steps; first at step {step}: "
                      "{loss} vs {median}").format(n=len(spikes), ratio=th.spike_ratio, step=first["step"],
                                                   loss=first["loss"], median=first["median_before"]),
            fix=_("lower the learning rate (e.g. by half) or lengthen the warmup; {clip_fix}; look at the samples of "
                  "the spiking steps (outliers, wrong labels, very long sequences)").format(clip_fix=clip_fix),
            data={"spikes": spikes[:20], "spike_ratio": th.spike_ratio}))
    n = len(finite)
    if not bad and n >= 10:
        tail = max(5, n // 10)
        last = statistics.median([v for _s, v in finite[-tail:]])
        head = finite[:-tail]
        rolling = [statistics.median([v for _s, v in head[max(0, i - 4):i + 1]]) for i in range(4, len(head))]
        best = min(rolling) if rolling else None
        if best is not None and best > 0 and last > th.divergence_ratio * best:
            out.append(Finding(
                code="divergence", severity="critical",
                message=_("the loss rose and stayed up: median of the last {tail} steps is {last:.4g}, {ratio:.2f}x "
                          "the best earlier level {best:.4g}").format(tail=tail, last=last, ratio=last / best,
                                                                      best=best),
                fix=_("resume from the checkpoint before the rise with half the learning rate; {clip_fix}").format(
                    clip_fix=clip_fix),
                data={"last_median": round(last, 4), "best_median": round(best, 4)}))
    return out


def _memory_findings(steps, th: Thresholds, plan_gpu_mem: float | None) -> list[Finding]:
    reserved = vals(steps, "mem_reserved_gib")
    gpu_mem = median(vals(steps, "gpu_mem_gib")) or plan_gpu_mem
    if not reserved or not gpu_mem:
        return []
    peak = max(reserved)
    frac = peak / gpu_mem
    if frac < th.mem_warn:
        return []
    return [Finding(
        code="memory-near-limit", severity="critical" if frac >= th.mem_critical else "warning",
        message=_("peak reserved memory {peak:.1f} GiB is {pct} of the GPU's {gpu_mem:.1f} GiB; a longer batch or "
                  "fragmentation will run out of memory").format(peak=peak, pct=_pct(frac), gpu_mem=gpu_mem),
        fix=_("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, lower the micro-batch and raise gradient "
              "accumulation, or turn on gradient checkpointing; `trainfit memory` shows what fits"),
        data={"peak_reserved_gib": round(peak, 3), "gpu_mem_gib": round(gpu_mem, 3), "fraction": round(frac, 4)})]


def _plan_findings(timed, steps, plan, th: Thresholds, input_bound: bool):
    tps_pred, mem_pred, gpu_mem, *more = plan
    ivs = (more[0] if more else None) or {}
    tps = median(vals(timed, "tokens_per_s"))
    reserved = vals(steps, "mem_reserved_gib")
    peak = max(reserved) if reserved else None
    tps_iv, mem_iv = ivs.get("tokens_per_s"), ivs.get("per_gpu_gib")
    cmp = {"predicted_tokens_per_s": tps_pred, "measured_tokens_per_s": round(tps, 1) if tps else None,
           "speed_ratio": round(tps / tps_pred, 3) if tps and tps_pred else None,
           "predicted_tokens_per_s_interval": tps_iv,
           "predicted_reserved_gib": mem_pred, "measured_reserved_gib": round(peak, 3) if peak else None,
           "memory_ratio": round(peak / mem_pred, 3) if peak and mem_pred else None,
           "predicted_reserved_gib_interval": mem_iv,
           "gpu_mem_gib": gpu_mem}

    def _r(iv: dict | None, fmt: str) -> str:  # the prediction's p10-p90 range (Plan.intervals)
        return f" (p10-p90 {format(iv['p10'], fmt)}-{format(iv['p90'], fmt)})" if iv else ""

    parts = []
    if cmp["speed_ratio"] is not None:
        parts.append(_("speed {tps:,.0f} tokens/s measured vs {pred:,.0f} predicted{range} ({ratio:.2f}x)").format(
            tps=tps, pred=tps_pred, range=_r(tps_iv, ",.0f"), ratio=cmp["speed_ratio"]))
    if cmp["memory_ratio"] is not None:
        parts.append(_("memory {peak:.1f} GiB reserved vs {pred:.1f} predicted{range} ({ratio:.2f}x)").format(
            peak=peak, pred=mem_pred, range=_r(mem_iv, ".1f"), ratio=cmp["memory_ratio"]))
    out = [Finding(code="plan-comparison", severity="info",
                   message=_("; ").join(parts) or _("the run has no tokens/s or memory to compare with the plan"),
                   fix="" if parts else _("record tokens (include_num_input_tokens_seen) and run on a GPU"),
                   data=cmp)]
    r = cmp["speed_ratio"]
    if r is not None and r < th.slower_warn:
        out.append(Finding(
            code="slower-than-plan", severity="critical" if r < th.slower_critical else "warning",
            message=(_("the run reaches {pct} of the planned tokens/s; the input wait explains part of it")
                     if input_bound else _("the run reaches {pct} of the planned tokens/s")).format(pct=_pct(r)),
            fix=(_("compare on the plan's GPU count and settings (micro-batch, attention kernel, precision, gradient "
                   "checkpointing); fix the input pipeline first; if it persists, report the ratio so the speed "
                   "model can be calibrated") if input_bound else
                 _("compare on the plan's GPU count and settings (micro-batch, attention kernel, precision, gradient "
                   "checkpointing); if it persists, report the ratio so the speed model can be calibrated")),
            data={k: cmp[k] for k in ("speed_ratio", "predicted_tokens_per_s", "measured_tokens_per_s")}))
    m = cmp["memory_ratio"]
    if m is not None and m > th.memory_over:
        out.append(Finding(
            code="memory-above-plan", severity="warning",
            message=_("the run reserves {ratio:.2f}x the planned memory").format(ratio=m),
            fix=_("check that the run uses the plan's micro-batch, sequence length, precision and sharding; "
                  "fragmentation shows here too (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)"),
            data={k: cmp[k] for k in ("memory_ratio", "predicted_reserved_gib", "measured_reserved_gib")}))
    return out, cmp


def young_daly_interval_s(save_seconds: float, interruptions_per_hour: float) -> float:
    """Optimal seconds between checkpoints, ``sqrt(2 * C / lambda)`` (Young 1974; Daly 2006): the planner's
    :func:`trainfit.plan.cost.young_daly_interval_hours`, in seconds, for the observed save time."""
    if save_seconds <= 0 or interruptions_per_hour <= 0:
        raise MetricsError(_("save time and interruption rate must be > 0"))
    hours = young_daly_interval_hours(write_hours=save_seconds / 3600.0, interruptions_per_job_hour=interruptions_per_hour)
    return hours * 3600.0


def _checkpoint_findings(steps, timed, events, th: Thresholds, rate: float | None) -> list[Finding]:
    saves = [r for r in steps if isinstance(r.get("save_seconds"), (int, float))]
    step_s = median(vals(timed, "step_seconds"))
    if not saves:
        if rate:
            return [Finding(code="checkpoint-interval", severity="warning",
                            message=_("no checkpoint save was recorded in this run"),
                            fix=_("save periodically (save_strategy='steps', save_steps=N) so a preempted run "
                                  "resumes"),
                            data={})]
        return []
    c = statistics.median([float(r["save_seconds"]) for r in saves])
    times = [r["time_unix"] for r in saves if isinstance(r.get("time_unix"), (int, float))]
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    save_steps = next((e.get("save_steps") for e in reversed(events) if isinstance(e.get("save_steps"), int)), None)
    if gaps:
        interval = statistics.median(gaps)
    elif save_steps and step_s:
        interval = save_steps * step_s
    else:
        interval = None
    data: dict[str, float | None] = {"save_seconds": round(c, 3), "interval_seconds": round(interval, 1) if interval else None,
                            "interruptions_per_hour": rate}
    overhead = c / interval if interval else None
    if rate is None:
        msg = _("a checkpoint save takes {save:.3g} s").format(save=c)
        if overhead is not None:
            msg = _("a checkpoint save takes {save:.3g} s, every {interval:.3g} s ({pct} of the time)").format(
                save=c, interval=interval, pct=_pct(overhead))
        return [Finding(code="checkpoint-interval", severity="info", message=msg,
                        fix=_("pass --interruptions-per-hour (e.g. your spot interruption rate) to get the optimal "
                              "interval"),
                        data=data)]
    opt = young_daly_interval_s(c, rate)
    data["optimal_interval_seconds"] = round(opt, 1)
    opt_steps = max(1, round(opt / step_s)) if step_s else None
    data["optimal_save_steps"] = opt_steps
    lam = rate / 3600.0
    waste = (lambda t: c / t + lam * t / 2)  # save overhead + expected lost work per unit time (first order)
    data["optimal_waste_fraction"] = round(waste(opt), 4)
    if interval is None:
        return [Finding(code="checkpoint-interval", severity="info",
                        message=_("save {save:.3g} s; optimal interval {opt:.3g} s for {rate} interruptions/hour").format(
                            save=c, opt=opt, rate=rate),
                        fix=_("save every ~{n} steps").format(n=opt_steps) if opt_steps else "", data=data)]
    data["waste_fraction"] = round(waste(interval), 4)
    ratio = interval / opt
    if 1 / th.interval_off <= ratio <= th.interval_off:
        return [Finding(code="checkpoint-interval", severity="info",
                        message=_("saving every {interval:.3g} s is close to the optimal {opt:.3g} s (save {save:.3g} "
                                  "s, {rate} interruptions/hour)").format(interval=interval, opt=opt, save=c,
                                                                         rate=rate), fix="", data=data)]
    return [Finding(
        code="checkpoint-interval", severity="warning",
        message=(_("saving every {interval:.3g} s is too rare: the optimum for a {save:.3g} s save and {rate} "
                   "interruptions/hour is {opt:.3g} s; expected loss {waste} of the time vs {opt_waste}") if ratio > 1
                 else _("saving every {interval:.3g} s is too often: the optimum for a {save:.3g} s save and {rate} "
                        "interruptions/hour is {opt:.3g} s; expected loss {waste} of the time vs {opt_waste}")).format(
            interval=interval, save=c, rate=rate, opt=opt, waste=_pct(data["waste_fraction"]),
            opt_waste=_pct(data["optimal_waste_fraction"])),
        fix=(_("set save_steps to about {n}").format(n=opt_steps) if opt_steps
             else _("save every ~{opt:.0f} s").format(opt=opt)), data=data)]


def diagnose(events: list[MetricRecord], steps: list[MetricRecord], first_after_start: frozenset[int] = frozenset(), *,
             plan: PlanPrediction | None = None,
             interruptions_per_hour: float | None = None, thresholds: Thresholds | None = None,
             plan_tokens: PlanTokens | None = None) -> Diagnosis:
    """Findings for one run (``events, steps, first_after_start``: :func:`load_metrics`'s :class:`Metrics`; the steps
    right after a start are left out of the timings); ``plan`` is what :func:`plan_prediction` returns (``(tokens_per_s, reserved_gib,
    gpu_mem_gib[, intervals])``: a tuple without the intervals compares without ranges), ``plan_tokens`` what
    :func:`trainfit.diagnose_tokens.plan_tokens_per_step` returns."""
    th = thresholds or Thresholds()
    if interruptions_per_hour is not None and not interruptions_per_hour > 0:
        raise MetricsError(_("--interruptions-per-hour must be > 0; got {value}").format(value=interruptions_per_hour))
    timed = _timing_records(steps, th.warmup_steps, first_after_start)
    findings: list[Finding] = []
    inp, frac = _input_findings(timed, th)
    findings += inp
    findings += _util_findings(timed, th, bool(inp))
    findings += _loss_findings(steps, events, th)
    findings += _memory_findings(steps, th, plan[2] if plan else None)
    cmp = None
    if plan is not None:
        pf, cmp = _plan_findings(timed, steps, plan, th, bool(inp))
        findings += pf
    if plan_tokens is not None:
        tf, tcmp = tokens_findings(timed, plan_tokens, th)
        findings += tf
        cmp = {**(cmp or {}), "tokens_per_step": tcmp}
    findings += _checkpoint_findings(steps, timed, events, th, interruptions_per_hour)
    order = {s: i for i, s in enumerate(reversed(SEVERITIES))}
    findings.sort(key=lambda f: order[f.severity])
    summary = {
        "first_step": steps[0]["step"], "last_step": steps[-1]["step"],
        "median_step_seconds": median(vals(timed, "step_seconds")),
        "data_wait_fraction": round(frac, 4) if frac is not None else None,
        "median_tokens_per_s": median(vals(timed, "tokens_per_s")),
        "median_mfu": median(vals(timed, "mfu")),
        "median_gpu_util": median(vals(timed, "gpu_util")),
        "peak_reserved_gib": max(vals(steps, "mem_reserved_gib"), default=None),
        "gpu_mem_gib": median(vals(steps, "gpu_mem_gib")),
        "last_loss": next((r["loss"] for r in reversed(steps) if isinstance(r.get("loss"), (int, float))), None),
        "launches": sum(1 for e in events if e.get("event") == "start"),
    }
    return Diagnosis(steps=len(steps), summary=summary, plan=cmp, findings=tuple(findings))
