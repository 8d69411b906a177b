"""Real training steps on a CUDA GPU, measured against trainfit's prediction.

For each configuration that fits the GPU at hand (random weights, built from the registry config; no
download), runs 3 full steps (forward, HF loss, backward, optimizer step, zero_grad) with the real
transformers / peft / torch code, resets the peak counters after step 1, and records:

* ``torch.cuda.max_memory_allocated`` vs trainfit ``tensor_peak_gib``,
* ``torch.cuda.max_memory_reserved`` vs the tensor peak plus allocator slack,
* the process's device memory outside the caching allocator (CUDA context, cuBLAS workspaces):
  ``(total - free) - memory_reserved`` from ``torch.cuda.mem_get_info``,
* step time (tokens/s) vs trainfit's speed model for that GPU.

Results go to benchmarks/results/gpu_probe.json; docs/accuracy.md quotes them and docs/memory-model.md §6
uses them to set the overhead terms (CUDA context, allocator slack). ``trainfit calibrate
benchmarks/results/gpu_probe.json`` folds the measured tokens/s into the user's speed calibration.

    python benchmarks/gpu_probe.py --list          # the configurations and trainfit's predictions (no GPU)
    python benchmarks/gpu_probe.py                 # run all that fit (needs CUDA and the trace extra)
    python benchmarks/gpu_probe.py --only 8B --timeout 500
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "gpu_probe.json"

#: (model, Workload fields). Chosen to cover the terms: states only, activations, loss region, LoRA fp32
#: copies, eager scores, the foreach temporary, AMP.
CONFIGS: list[dict] = [
    {"model": "Qwen3-0.6B", "seq_len": 2048, "grad_ckpt": False},
    {"model": "Qwen3-0.6B", "seq_len": 4096, "grad_ckpt": True},
    {"model": "Qwen3-0.6B", "seq_len": 2048, "grad_ckpt": False, "attention": "eager"},
    {"model": "Qwen3-1.7B", "seq_len": 4096, "grad_ckpt": False, "optimizer": "adamw-foreach"},
    {"model": "Qwen3-1.7B", "seq_len": 2048, "grad_ckpt": True, "precision": "amp-bf16"},
    {"model": "Qwen3-4B", "seq_len": 4096, "grad_ckpt": True},
    {"model": "Qwen3-8B", "method": "lora", "lora_rank": 16, "seq_len": 4096, "grad_ckpt": True},
    {"model": "Qwen3-8B", "method": "lora", "lora_rank": 16, "seq_len": 4096, "grad_ckpt": False},
    {"model": "Qwen3-8B", "seq_len": 2048, "grad_ckpt": True},
    {"model": "Qwen3-8B", "seq_len": 4096, "grad_ckpt": False},
    {"model": "Qwen3-14B", "method": "lora", "lora_rank": 16, "seq_len": 2048, "grad_ckpt": True},
]


def _cid(c: dict) -> str:
    return " ".join([c["model"].replace("Qwen3-", "")] + [f"{k}={v}" for k, v in c.items() if k != "model"])


def predict(c: dict) -> dict:
    from trainfit.estimate.memory import estimate_memory
    from trainfit.models import get_model
    from trainfit.workload import Workload

    kw = {k: v for k, v in c.items() if k != "model"}
    e = estimate_memory(get_model(c["model"]), Workload(**kw))
    return {"tensor_peak_gib": round(e.tensor_peak_gib, 3), "reserved_gib": round(e.reserved_gib, 3),
            "peak_phase": e.peak_phase}


def _worker(c: dict) -> dict:
    """One configuration, for real, in this (fresh) process."""
    import torch

    from trainfit.models import get_model
    from trainfit.trace.hf_build import hf_config, model_class
    from trainfit.trace.runner import _apply_method, _optimizer
    from trainfit.workload import Workload

    assert torch.cuda.is_available()
    shape = get_model(c["model"])
    w = Workload(**{k: v for k, v in c.items() if k != "model"})
    free0, total = torch.cuda.mem_get_info()
    amp = w.precision == "amp-bf16"
    dtype = torch.float32 if amp else torch.bfloat16
    cfg = hf_config(shape, attn_implementation="eager" if w.attention == "eager" else "sdpa")
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device("cuda"):
            model = model_class(shape)(cfg)
    finally:
        torch.set_default_dtype(old)
    model.tie_weights()
    model.train()
    import peft
    import transformers

    notes: list[str] = []
    model = _apply_method(model, shape, w, peft, notes)
    if w.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if w.method in ("lora", "qlora"):
            model.enable_input_require_grads()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = _optimizer(torch, transformers, params, w)
    ids = torch.randint(0, shape.vocab_size, (w.micro_batch, w.seq_len), device="cuda")
    times = []
    for step in range(3):
        if step == 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        del out
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    free1, _ = torch.cuda.mem_get_info()
    gib = 2**30
    return {
        "device": torch.cuda.get_device_name(), "device_total_gib": round(total / gib, 3),
        "max_allocated_gib": round(torch.cuda.max_memory_allocated() / gib, 3),
        "max_reserved_gib": round(torch.cuda.max_memory_reserved() / gib, 3),
        "outside_allocator_gib": round(((total - free1) - torch.cuda.memory_reserved()) / gib, 3),
        "free_before_gib": round(free0 / gib, 3),
        "step_seconds": [round(t, 3) for t in times],
        "tokens_per_s": round(w.micro_batch * w.seq_len / min(times[1:]), 1),
        "torch": torch.__version__, "transformers": transformers.__version__, "notes": notes,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print configurations and predictions, run nothing")
    ap.add_argument("--only", help="only configurations whose id contains this text")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per configuration")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(_worker(json.loads(a.worker))))
        return 0
    configs = [c for c in CONFIGS if not a.only or a.only in _cid(c)]
    if a.list:
        for c in configs:
            p = predict(c)
            print(f"{_cid(c):70s} tensor peak {p['tensor_peak_gib']:8.2f} GiB  reserved {p['reserved_gib']:8.2f} GiB")
        return 0
    try:
        import torch
    except ImportError:
        print("gpu_probe needs torch (pip install 'trainfit[trace]') and a CUDA GPU", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA device: nothing measured (use --list for the predictions)", file=sys.stderr)
        return 2
    total_gib = torch.cuda.mem_get_info()[1] / 2**30
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": {}}
    for c in configs:
        p = predict(c)
        cid = _cid(c)
        if p["reserved_gib"] > total_gib * 0.97:
            print(f"skip {cid}: predicted {p['reserved_gib']:.1f} GiB > {total_gib:.1f}")
            continue
        t0 = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, __file__, "--worker", json.dumps(c)], capture_output=True,
                               text=True, timeout=a.timeout, env=dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=""))
            ok = r.returncode == 0
            m = json.loads(r.stdout.strip().splitlines()[-1]) if ok else {"error": r.stderr[-2000:]}
        except subprocess.TimeoutExpired:
            m = {"error": f"timeout after {a.timeout} s"}
        rec = {"config": c, "predicted": p, "measured": m, "seconds": round(time.perf_counter() - t0, 1),
               "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if "max_allocated_gib" in m:
            rec["tensor_peak_error_pct"] = round((p["tensor_peak_gib"] - m["max_allocated_gib"])
                                                 / m["max_allocated_gib"] * 100, 2)
            rec["reserved_vs_allocated"] = round(m["max_reserved_gib"] / m["max_allocated_gib"], 4)
        data["runs"][cid] = rec
        print(cid, json.dumps({k: rec.get(k) for k in ("tensor_peak_error_pct", "reserved_vs_allocated")}),
              m.get("error", "")[:200])
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
