"""Real training steps on one GPU, measured against trainfit's prediction: memory and speed, in one results file.

Run it whenever a GPU is at hand (one GPU is enough; the whole grid takes under 10 minutes, a time-budget guard
stops it before ``--budget-s``)::

    pip install -e '.[trace]'                           # torch, transformers, peft
    python benchmarks/gpu_probe.py                     # the grid on cuda:0 -> benchmarks/results/gpu_probe.json
    trainfit calibrate benchmarks/results/gpu_probe.json
    trainfit plan Qwen3-8B --tokens 1B --gpu H100      # "... calibrated on H100-SXM (hf engine), <date> ..."

    python benchmarks/gpu_probe.py --list              # the grid and trainfit's predictions, nothing run
    python benchmarks/gpu_probe.py --device cpu --out /tmp/probe.json   # the same code path on tiny models, CPU

The grid: a dense model (Qwen3-0.6B from the registry) and a small Qwen3-MoE (``MOE_PROBE``: the Qwen3-30B-A3B
layer design with 8 layers and 32 experts), each at two sequence lengths, with and without gradient
checkpointing, full fine-tuning and LoRA (16 configurations). Models are built from their config with random
weights by the real Hugging Face modeling code (``transformers``; ``peft`` for LoRA): nothing is downloaded.
Each configuration runs in a fresh process: 4 steps of forward, HF loss, backward, optimizer step and zero_grad;
the peak counters are reset after the first (warm-up) step, and the record holds

* ``torch.cuda.max_memory_allocated`` vs trainfit's ``tensor_peak_gib``,
* ``torch.cuda.max_memory_reserved`` vs trainfit's ``reserved_gib``,
* the device memory outside the caching allocator (CUDA context, cuBLAS workspaces),
* tokens/s (the fastest timed step) vs trainfit's speed model on that GPU (``hf-trainer``: one GPU, HF code;
  uncalibrated, so a probe run never measures against itself),

and ``compare``: the memory errors in percent and the measured/predicted speed ratio. ``trainfit calibrate`` folds
the speed ratios into the user's calibration overlay; the planner then says "calibrated on <GPU>, <date>".

``--device cpu`` runs the same builder, steps and bookkeeping on tiny models in-process in seconds (CI runs it,
tests/test_gpu_probe.py): memory is the tensor storage counted by trainfit's trace tracker (``reserved`` does
not exist on CPU), and the speed is not compared (a CPU is not a catalog GPU), so ``trainfit calibrate`` refuses
CPU results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "gpu_probe.json"
#: The whole run stops starting configurations after this many seconds (the issue's 10-minute limit, less the
#: time one configuration may still take).
BUDGET_S = 540.0
STEPS = 4
GIB = 2**30

#: A small Qwen3-MoE: Qwen3-30B-A3B's layer design (hidden 2048, 32 query / 4 KV heads of 128, expert FFN 768,
#: every layer MoE, normalised top-k) with 8 layers and 32 experts, top-4: ~2.2 B parameters, fits one GPU for
#: full fine-tuning. The registry's Qwen3-30B-A3B config is the source of every other field.
MOE_PROBE: dict[str, Any] = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_experts": 32, "num_experts_per_tok": 4, "num_hidden_layers": 8, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
    "tie_word_embeddings": False, "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True,
    "rope_theta": 1000000, "rms_norm_eps": 1e-06, "hidden_act": "silu", "attention_bias": False,
}
#: Tiny models of the same two architectures for ``--device cpu`` (seconds on a laptop core).
TINY_DENSE: dict[str, Any] = {
    "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
    "max_position_embeddings": 1024, "tie_word_embeddings": True, "rope_theta": 1000000, "rms_norm_eps": 1e-06,
    "hidden_act": "silu", "attention_bias": False,
}
TINY_MOE: dict[str, Any] = {**TINY_DENSE, "model_type": "qwen3_moe", "tie_word_embeddings": False,
                            "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
                            "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True}


#: ``--extended``: larger registry models after the grid (memory overheads at scale; the budget guard still holds).
EXTENDED: list[dict] = [
    {"model": "Qwen3-1.7B", "seq_len": 4096, "grad_ckpt": False, "optimizer": "adamw-foreach"},
    {"model": "Qwen3-1.7B", "seq_len": 2048, "grad_ckpt": True, "precision": "amp-bf16"},
    {"model": "Qwen3-0.6B", "seq_len": 2048, "grad_ckpt": False, "attention": "eager"},
    {"model": "Qwen3-4B", "seq_len": 4096, "grad_ckpt": True},
    {"model": "Qwen3-8B", "method": "lora", "lora_rank": 16, "seq_len": 4096, "grad_ckpt": True},
    {"model": "Qwen3-8B", "seq_len": 2048, "grad_ckpt": True},
    # transformers 5's eager experts (a loop over stacked weights) against grouped_mm above: the stacked-gradient term
    {"model": "Qwen3-MoE-probe", "hf_config": MOE_PROBE, "seq_len": 1024, "grad_ckpt": True, "experts_impl": "eager"},
    # the attention kernel at a long sequence: SDPA's own choice (cuDNN on Hopper, torch >= 2.11) against its flash
    # backend (FlashAttention-2 code): measures EngineConstants.fa2_hopper_factor on this GPU
    {"model": "Qwen3-0.6B", "seq_len": 16384, "grad_ckpt": True, "attention": "sdpa"},
    {"model": "Qwen3-0.6B", "seq_len": 16384, "grad_ckpt": True, "attention": "flash"},
]


def grid(device: str, extended: bool = False) -> list[dict]:
    """The configurations: {dense, MoE} x 2 sequence lengths x grad ckpt {off, on} x {full, LoRA}."""
    if device == "cpu":
        models: list[tuple[str, dict | None]] = [("tiny-dense", TINY_DENSE), ("tiny-moe", TINY_MOE)]
        seqs = (64, 128)
    else:
        models = [("Qwen3-0.6B", None), ("Qwen3-MoE-probe", MOE_PROBE)]
        seqs = (1024, 4096)
    out = []
    for name, cfg in models:
        for seq in seqs:
            for gc in (False, True):
                for method in ("full", "lora"):
                    c: dict[str, Any] = {"model": name, "seq_len": seq, "grad_ckpt": gc, "method": method}
                    if method == "lora":
                        c["lora_rank"] = 16
                    if cfg is not None:
                        c["hf_config"] = cfg
                    if cfg is not None and cfg.get("num_experts"):  # transformers 5: stacked experts only
                        c["experts_impl"] = "eager" if device == "cpu" else "grouped_mm"
                    out.append(c)
    return out + (list(EXTENDED) if extended and device != "cpu" else [])


def _cid(c: dict) -> str:
    return " ".join([c["model"].replace("Qwen3-", "")]
                    + [f"{k}={v}" for k, v in c.items() if k not in ("model", "hf_config")])


def shape_of(c: dict) -> Any:
    """trainfit's ModelShape of a configuration: the registry's, or built from its config (the same dict the
    Hugging Face model is built from)."""
    from trainfit.models import from_hf_config, get_model

    if c.get("hf_config"):
        return from_hf_config(c["hf_config"], name=c["model"], source="benchmarks/gpu_probe.py")
    return get_model(c["model"])


def workload_of(c: dict) -> Any:
    from trainfit.workload import Workload

    return Workload(**{k: v for k, v in c.items() if k not in ("model", "hf_config")})


def predict(c: dict, gpu: str | None) -> dict:
    """trainfit's memory (and, on a catalog GPU, speed) for configuration ``c``."""
    from trainfit.estimate.memory import estimate_memory

    shape, w = shape_of(c), workload_of(c)
    e = estimate_memory(shape, w)
    out: dict[str, Any] = {"tensor_peak_gib": e.tensor_peak_gib, "reserved_gib": e.reserved_gib,
                           "peak_phase": e.peak_phase, "gpu": gpu, "tokens_per_s": None, "framework": None}
    if gpu is not None:
        from trainfit.catalog import get_gpu
        from trainfit.estimate.speed import estimate_speed
        from trainfit.catalog.hardware import hardware_for

        sp = estimate_speed(shape, w, hardware_for(get_gpu(gpu), None), framework="hf-trainer")
        out.update({"tokens_per_s": sp.tokens_per_s_per_gpu, "framework": sp.framework, "mfu": sp.mfu})
    return out


def _build(c: dict, device: str) -> tuple[Any, Any, Any, Any, list[str]]:
    """(model, optimizer, input ids, workload, notes): the real HF model with random weights on ``device``."""
    import peft
    import torch
    import transformers

    from trainfit.trace.hf_build import default_dtype, hf_config, model_class
    from trainfit.trace.runner import _apply_method, _optimizer

    shape, w = shape_of(c), workload_of(c)
    notes: list[str] = []
    dtype = torch.float32 if w.precision == "amp-bf16" else torch.bfloat16
    cfg = hf_config(shape, attn_implementation="eager" if w.attention == "eager" else "sdpa")
    if shape.num_experts:  # what the prediction assumes (Workload.experts_impl); transformers 5 has no ModuleList
        cfg._experts_implementation = "eager" if w.experts_impl == "modulelist" else w.experts_impl
        if w.experts_impl == "modulelist":
            notes.append("experts_impl modulelist cannot run under transformers 5: ran its eager experts")
    with default_dtype(dtype), torch.device(device):
        model = model_class(shape)(cfg)
    model.tie_weights()
    model.train()
    model = _apply_method(model, shape, w, peft, notes)
    if w.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if w.method in ("lora", "qlora"):
            model.enable_input_require_grads()
    opt = _optimizer(torch, transformers, [p for p in model.parameters() if p.requires_grad], w)
    ids = torch.randint(0, shape.vocab_size, (w.micro_batch, w.seq_len), device=device)
    return model, opt, ids, w, notes


def _step(torch: Any, model: Any, opt: Any, ids: Any, w: Any, device: str) -> float:
    t0 = time.perf_counter()
    with torch.autocast(device, dtype=torch.bfloat16, enabled=w.precision == "amp-bf16"):
        out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    del out
    opt.step()
    opt.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def measure(c: dict, device: str) -> dict:
    """Run configuration ``c`` for real on ``device`` (``cuda``: in a fresh process; ``cpu``: tracked storages)."""
    import torch
    import transformers

    free_total = None
    if device == "cuda":
        assert torch.cuda.is_available()
        free_total = torch.cuda.mem_get_info()
    model, opt, ids, w, notes = _build(c, device)
    kernel = contextlib.nullcontext()
    if w.attention in ("flash", "flash3"):  # no flash-attn package needed: SDPA's flash backend is its FA2 code
        from torch.nn.attention import SDPBackend, sdpa_kernel

        kernel = sdpa_kernel(SDPBackend.FLASH_ATTENTION)
        notes.append(f"attention {w.attention}: ran torch SDPA's flash backend (FlashAttention-2 code)")
    with kernel:
        return _measure_steps(torch, transformers, model, opt, ids, w, notes, device, free_total)


def _measure_steps(torch: Any, transformers: Any, model: Any, opt: Any, ids: Any, w: Any, notes: list[str],
                   device: str, free_total: tuple[int, int] | None) -> dict:
    """Timed steps and memory of the built model (``free_total``: CUDA free and total bytes before the build)."""
    if free_total is not None:
        free0, total = free_total
    tokens = w.micro_batch * w.seq_len
    times: list[float] = []
    m: dict[str, Any] = {"device": "cpu" if device == "cpu" else torch.cuda.get_device_name(),
                         "torch": torch.__version__, "transformers": transformers.__version__, "notes": notes}
    if device == "cuda":
        times.append(_step(torch, model, opt, ids, w, device))
        torch.cuda.reset_peak_memory_stats()
        times += [_step(torch, model, opt, ids, w, device) for _ in range(STEPS - 1)]
        free1, _ = torch.cuda.mem_get_info()
        m.update({"max_allocated_gib": torch.cuda.max_memory_allocated() / GIB,
                  "max_reserved_gib": torch.cuda.max_memory_reserved() / GIB,
                  "outside_allocator_gib": ((total - free1) - torch.cuda.memory_reserved()) / GIB,
                  "device_total_gib": total / GIB, "free_before_gib": free0 / GIB})
    else:  # CPU: the trace's storage tracker counts every live tensor storage (what the CUDA allocator allocates)
        from trainfit.trace.tracker import StorageTracker

        tracker = StorageTracker(vocab_size=model.config.vocab_size, tokens=tokens)
        with tracker:
            for t in list(model.parameters()) + list(model.buffers()):
                tracker.track(t, "weights")
            times.append(_step(torch, model, opt, ids, w, device))
            tracker.begin_step()
            _step(torch, model, opt, ids, w, device)
        m.update({"max_allocated_gib": tracker.peak / GIB, "max_reserved_gib": None})
        times += [_step(torch, model, opt, ids, w, device) for _ in range(STEPS - 2)]  # timed without the tracker
    m.update({"step_seconds": times, "tokens_per_s": tokens / min(times[1:])})
    return m


def compare(pred: dict, meas: dict) -> dict:
    """Errors of the prediction: memory in percent of the measurement, speed as measured / predicted."""
    def pct(p: Any, m: Any) -> float | None:
        return None if p is None or not m else round((p - m) / m * 100, 2)

    out = {"tensor_peak_error_pct": pct(pred["tensor_peak_gib"], meas.get("max_allocated_gib")),
           "reserved_error_pct": pct(pred["reserved_gib"], meas.get("max_reserved_gib")),
           "speed_measured_over_predicted": None}
    if pred.get("tokens_per_s") and meas.get("tokens_per_s"):
        out["speed_measured_over_predicted"] = round(meas["tokens_per_s"] / pred["tokens_per_s"], 4)
    if meas.get("max_reserved_gib") and meas.get("max_allocated_gib"):
        out["reserved_over_allocated"] = round(meas["max_reserved_gib"] / meas["max_allocated_gib"], 4)
    return out


def _run_cuda(c: dict, timeout: float) -> dict:
    """One configuration in a fresh process (clean peak counters and CUDA context)."""
    try:
        r = subprocess.run([sys.executable, __file__, "--worker", json.dumps(c)], capture_output=True, text=True,
                           timeout=timeout, env=dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=""))
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if r.returncode != 0:
        return {"error": r.stderr[-2000:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _device_gpu(device: str, gpu: str | None) -> tuple[str | None, float | None]:
    """(catalog GPU the speed is predicted for, device memory in GiB) of the device at hand."""
    if device == "cpu":
        return gpu, None
    # asked in a child process: a CUDA context in this process would sit on the GPU while the workers measure
    r = subprocess.run([sys.executable, "-c", "import json, torch; ok = torch.cuda.is_available(); print(json.dumps("
                        "[torch.cuda.get_device_name(), torch.cuda.get_device_properties(0).total_memory] if ok "
                        "else None))"], capture_output=True, text=True, timeout=300)
    info = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else None
    if info is None:
        raise SystemExit("no CUDA device: nothing measured (--list shows the predictions, --device cpu runs the "
                         "same code path on tiny models)")
    from trainfit.calibrate import match_gpu

    return gpu or match_gpu(info[0]), info[1] / GIB


def run(configs: list[dict], *, device: str, gpu: str | None, budget_s: float, timeout: float, out: Path) -> dict:
    """Measure every configuration that fits, within the time budget; the results file is rewritten after each."""
    gpu, total_gib = _device_gpu(device, gpu)
    started = time.perf_counter()
    data: dict[str, Any] = {"probe": {"device": device, "gpu": gpu, "python": platform.python_version(),
                                      "budget_s": budget_s, "started": _now(), "skipped": {}},
                            "runs": {}}
    for c in configs:
        cid = _cid(c)
        left = budget_s - (time.perf_counter() - started)
        p = predict(c, gpu)
        if left < min(timeout, 20.0):
            data["probe"]["skipped"][cid] = f"time budget: {left:.0f} s left of {budget_s:.0f}"
            continue
        if total_gib is not None and p["reserved_gib"] > total_gib * 0.97:
            data["probe"]["skipped"][cid] = f"predicted {p['reserved_gib']:.1f} GiB > {total_gib:.1f} GiB"
            continue
        t0 = time.perf_counter()
        try:
            m = measure(c, "cpu") if device == "cpu" else _run_cuda(c, min(timeout, left))
        except Exception as e:  # noqa: BLE001 - one failed configuration is a record, not the end of the run
            m = {"error": f"{type(e).__name__}: {e}"[:2000]}
        rec = {"config": c, "predicted": p, "measured": m, "compare": compare(p, m) if "error" not in m else {},
               "seconds": round(time.perf_counter() - t0, 2), "date": _now()}
        data["runs"][cid] = rec
        print(cid, json.dumps(rec["compare"]), m.get("error", "")[:200], flush=True)
        data["probe"]["elapsed_s"] = round(time.perf_counter() - started, 1)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n")
    data["probe"]["elapsed_s"] = round(time.perf_counter() - started, 1)
    data["probe"]["summary"] = summary(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def summary(data: dict) -> dict:
    """Medians over the measured runs (what docs/accuracy.md quotes)."""
    runs = [r["compare"] for r in data["runs"].values() if r.get("compare")]

    def med(key: str) -> float | None:
        xs = [abs(r[key]) if key.endswith("pct") else r[key] for r in runs if r.get(key) is not None]
        return round(statistics.median(xs), 3) if xs else None

    return {"measured": len(runs), "failed": sum(1 for r in data["runs"].values() if "error" in r["measured"]),
            "median_abs_tensor_peak_error_pct": med("tensor_peak_error_pct"),
            "median_abs_reserved_error_pct": med("reserved_error_pct"),
            "median_speed_measured_over_predicted": med("speed_measured_over_predicted")}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print configurations and predictions, run nothing")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cuda (default; the grid) or cpu (tiny models, the same code path, seconds)")
    ap.add_argument("--gpu", metavar="NAME", help="catalog GPU to predict the speed for (default: the device's)")
    ap.add_argument("--extended", action="store_true", help="add larger registry models (up to Qwen3-8B) after the grid")
    ap.add_argument("--only", help="only configurations whose id contains this text")
    ap.add_argument("--max-configs", type=int, help="at most this many configurations (first of the grid)")
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help=f"time budget of the run (default {BUDGET_S:g})")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per configuration (default 240)")
    ap.add_argument("--out", type=Path, help="results file (default benchmarks/results/gpu_probe.json on cuda)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(measure(json.loads(a.worker), "cuda")))
        return 0
    configs = [c for c in grid(a.device, a.extended) if not a.only or a.only in _cid(c)][:a.max_configs]
    if a.list:
        for c in configs:
            p = predict(c, a.gpu)
            speed = f"  {p['tokens_per_s']:10,.0f} tok/s on {a.gpu}" if p["tokens_per_s"] else ""
            print(f"{_cid(c):58s} tensor peak {p['tensor_peak_gib']:8.3f} GiB  reserved {p['reserved_gib']:8.3f} GiB"
                  + speed)
        return 0
    if a.device == "cpu" and a.out is None:
        ap.error("--device cpu writes a smoke-run file: name it with --out (it is not a GPU's results)")
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        print("gpu_probe needs torch, transformers and peft (pip install 'trainfit[trace]')", file=sys.stderr)
        return 2
    data = run(configs, device=a.device, gpu=a.gpu, budget_s=a.budget_s, timeout=a.timeout, out=a.out or RESULTS)
    print(json.dumps(data["probe"]["summary"]), f"-> {a.out or RESULTS}")
    return 0 if data["probe"]["summary"]["measured"] else 1


if __name__ == "__main__":
    sys.exit(main())
