"""Accuracy of `trainfit memory` against the exact fake-tensor trace of the real training code, with the
peer estimators side by side, over the grid of benchmarks/grid.py. Writes docs/accuracy.md and
benchmarks/results/memory_accuracy.json.

    python benchmarks/trace_grid.py          # traces (cached in benchmarks/results/trace_grid.json)
    python benchmarks/peers.py               # peer tools in their own venvs (benchmarks/results/peers.json)
    python benchmarks/memory_accuracy.py     # this table

The error is (estimate - trace) / trace of the tensor peak (what torch.cuda.max_memory_allocated
measures). Peers are compared on the same number, although some of them model less (see notes).
Targets (issue #3): median |error| <= 3 %, worst <= 8 %.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from grid import GRID, config_id  # noqa: E402

TARGET_MEDIAN, TARGET_WORST = 3.0, 8.0


def _pct(est: float | None, ref: float) -> float | None:
    return None if est is None else (est - ref) / ref * 100


def _fmt(v: float | None, nd: int = 2) -> str:
    return "n/a" if v is None else f"{v:,.{nd}f}"


def _fmt_err(v: float | None) -> str:
    return "" if v is None else f"{v:+.1f} %"


def main() -> int:
    from trainfit import __version__
    from trainfit.estimate.memory import estimate_memory
    from trainfit.models import get_model
    from trainfit.workload import Workload

    tg = json.loads((HERE / "results" / "trace_grid.json").read_text())
    traces = tg["configs"]
    peers_path = HERE / "results" / "peers.json"
    peers = json.loads(peers_path.read_text()) if peers_path.exists() else {"configs": {}}
    rows = []
    versions = {}
    for entry in GRID:
        cid = config_id(entry)
        t = traces.get(cid)
        kw = {k: v for k, v in entry.items() if k != "model"}
        est = estimate_memory(get_model(entry["model"]), Workload(**kw))
        row = {"id": cid, "trainfit_gib": round(est.tensor_peak_gib, 3), "trainfit_phase": est.peak_phase}
        if t and t.get("status") == "ok":
            r = t["result"]
            versions = r.get("versions", versions)
            row.update(trace_gib=r["tensor_peak_gib"], trace_phase=r["peak_phase"],
                       trace_seconds=r.get("trace_seconds"))
            row["error_pct"] = _pct(est.tensor_peak_gib, r["tensor_peak_gib"])
        else:
            row.update(trace_gib=None, status=(t or {}).get("status", "missing"),
                       reason=(t or {}).get("error", "not traced yet"))
        p = peers.get("configs", {}).get(cid, {})
        for k in ("llm_analysis_gib", "deepspeed_gib", "accelerate_gib"):
            row[k] = p.get(k)
            if row.get("trace_gib") is not None:
                row[k.replace("_gib", "_error_pct")] = _pct(p.get(k), row["trace_gib"])
        rows.append(row)

    traced = [r for r in rows if r.get("trace_gib") is not None]
    errs = [abs(r["error_pct"]) for r in traced]
    summary = {"configs": len(rows), "traced": len(traced),
               "median_abs_error_pct": round(statistics.median(errs), 3) if errs else None,
               "worst_abs_error_pct": round(max(errs), 3) if errs else None}
    for k in ("llm_analysis", "deepspeed", "accelerate"):
        e = [abs(r[f"{k}_error_pct"]) for r in traced if r.get(f"{k}_error_pct") is not None]
        summary[f"{k}_median_abs_error_pct"] = round(statistics.median(e), 1) if e else None
        summary[f"{k}_worst_abs_error_pct"] = round(max(e), 1) if e else None
        summary[f"{k}_configs"] = len(e)
    out = {"date": date.today().isoformat(), "trainfit": __version__, "versions": versions,
           "python": platform.python_version(), "summary": summary, "rows": rows,
           "peer_versions": peers.get("versions", {}), "trace_timings": tg.get("timings", {}),
           "trace_machine": tg.get("machine", {}),
           "trace_process_seconds": sorted(t.get("process_seconds") or 0 for t in traces.values())}
    (HERE / "results" / "memory_accuracy.json").write_text(json.dumps(out, indent=1) + "\n")
    from _docsections import carry_sections  # keeps the speed / fit-corpus sections other scripts write

    (ROOT / "docs" / "accuracy.md").write_text(carry_sections(render(out)))
    print(json.dumps(summary, indent=1))
    return 0


def render(out: dict) -> str:
    s = out["summary"]
    v = out["versions"]
    met = (s["median_abs_error_pct"] is not None and s["median_abs_error_pct"] <= TARGET_MEDIAN
           and s["worst_abs_error_pct"] <= TARGET_WORST)
    lines = [
        "# Accuracy of the memory model",
        "",
        f"Generated {out['date']} by `python benchmarks/memory_accuracy.py` (trainfit {out['trainfit']}, "
        f"Python {out['python']}). Reference: the exact tensor peak of the real training code traced under "
        f"fake tensors (`trainfit trace`, torch {v.get('torch', '?')}, transformers {v.get('transformers', '?')}, "
        f"peft {v.get('peft', '?')}; traces cached in benchmarks/results/trace_grid.json by "
        "`python benchmarks/trace_grid.py`). Peer tools: `python benchmarks/peers.py` "
        f"({', '.join(f'{k} {x}' for k, x in out.get('peer_versions', {}).items()) or 'not run'}).",
        "",
        "All configurations: one GPU's view, pure bf16 (params, grads and AdamW states in bf16, as the HF "
        "Trainer does with a bf16 model) unless `precision=amp-bf16`, fused AdamW unless stated, sdpa "
        "attention, micro-batch 1, gradient checkpointing as listed; `strategy=fsdp gpus=N` is FSDP2 "
        "`fully_shard` over N ranks (rank 0). GiB = 2^30 bytes; error = (estimate − trace) / trace.",
        "",
        "## Summary",
        "",
        f"* trainfit: **median |error| {s['median_abs_error_pct']:.2f} %, worst {s['worst_abs_error_pct']:.2f} %** "
        f"over {s['traced']} traced configurations (targets: median ≤ {TARGET_MEDIAN:g} %, worst ≤ "
        f"{TARGET_WORST:g} %: **{'met' if met else 'not met'}**)."
        if s["median_abs_error_pct"] is not None else "* no traced configuration yet",
    ]
    for k, name in (("llm_analysis", "llm-analysis"), ("deepspeed", "DeepSpeed estimate_zero*_cold"),
                    ("accelerate", "accelerate estimate")):
        if s.get(f"{k}_configs"):
            lines.append(f"* {name}: median |error| {s[f'{k}_median_abs_error_pct']} %, worst "
                         f"{s[f'{k}_worst_abs_error_pct']} % over the {s[f'{k}_configs']} configurations it "
                         "can express.")
    untraced = [r for r in out["rows"] if r.get("trace_gib") is None]
    if untraced:
        lines.append(f"* {len(untraced)} configuration(s) not traced: listed at the end with the reason.")
    lines += [
        "",
        "Peers model less than the trace sees: DeepSpeed's estimator counts model states only "
        "(fp32 master + Adam, 18-20 B/param, not pure bf16), accelerate reports the largest single term "
        "rather than the sum, llm-analysis has no fp32 loss tensors, no foreach temporary and no LoRA. "
        "Their errors show what a user relying on them would get, not a bug in them.",
        "",
        "## Per configuration",
        "",
        "| configuration | trace GiB | phase | trainfit GiB | error | llm-analysis | DeepSpeed | accelerate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        if r.get("trace_gib") is None:
            continue
        lines.append(
            f"| {r['id']} | {_fmt(r['trace_gib'])} | {r['trace_phase']} | {_fmt(r['trainfit_gib'])} | "
            f"{_fmt_err(r['error_pct'])} | {_fmt(r['llm_analysis_gib'])} {_fmt_err(r.get('llm_analysis_error_pct'))} | "
            f"{_fmt(r['deepspeed_gib'])} {_fmt_err(r.get('deepspeed_error_pct'))} | "
            f"{_fmt(r['accelerate_gib'])} {_fmt_err(r.get('accelerate_error_pct'))} |")
    if untraced:
        lines += ["", "## Not traced", "", "| configuration | trainfit GiB | why |", "|---|---|---|"]
        for r in untraced:
            lines.append(f"| {r['id']} | {_fmt(r['trainfit_gib'])} | {r.get('status')}: {r.get('reason')} |")
    lines += [
        "",
        "## Trace speed",
        "",
        f"Dedicated runs on this machine ({out.get('trace_machine', {}).get('cpus', '?')} CPU cores, nothing "
        "else running), `python benchmarks/trace_grid.py --timings`:",
        "",
        "| run | slowest step s | 2-step trace s | whole process s (imports included) | target per step |",
        "|---|---|---|---|---|",
    ]
    for name, t in out.get("trace_timings", {}).items():
        lines.append(f"| {name} ({t['entry'].get('seq_len')} tokens, GC {'on' if t['entry'].get('grad_ckpt') else 'off'}) "
                     f"| {t.get('max_step_seconds')} | {t.get('trace_seconds')} | {t.get('process_seconds')} | "
                     f"< {t.get('target_step_seconds'):g} s: {'met' if t.get('meets_target') else 'not met'} |")
    ps = [x for x in out.get("trace_process_seconds", []) if x]
    if ps:
        lines.append("")
        lines.append(f"Over the grid (shared CPU), one trace process took {min(ps):.0f}–{max(ps):.0f} s, "
                     f"median {statistics.median(ps):.0f} s.")
    lines += [
        "",
        "## What the grid changed in the model",
        "",
        "* Tied embeddings (0.6B, 1.7B, 4B): the embedding backward makes a second full gradient of the "
        "shared weight and AccumulateGrad adds it out of place, so the end of backward holds two more "
        "embedding-sized gradients (up to −11 % before the fix).",
        "* Freeze with gradient checkpointing: the non-reentrant checkpoint keeps the input of every layer, "
        "frozen ones included (−3.8 % before the fix).",
        "* LoRA `all-linear` on MoE: PEFT 0.21 also adapts the router and gives the fused `gate_up_proj` "
        "rank 2r (996,507,648 trainable parameters for Qwen3-30B-A3B at r=16, exactly as traced).",
        "",
        "## GPU measurements",
        "",
        "`benchmarks/gpu_probe.py` runs the same steps for real on CUDA and compares "
        "`torch.cuda.max_memory_allocated` / `max_memory_reserved` with `tensor_peak_gib` / `reserved_gib`. "
        "No GPU was available to the session that produced this page, so the overhead terms of "
        "`reserved_gib` (CUDA context, allocator slack) are still the documented assumptions of "
        "docs/memory-model.md §6.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
