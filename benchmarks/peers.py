"""Per-GPU training memory predicted by three peer tools for every configuration of benchmarks/grid.py.

Tools (see benchmarks/requirements-peers.txt for versions and venvs):

* **llm-analysis** 0.2.2 (closed-form weights + grads + optimizer + activations). It pins transformers<5, so it
  runs in its own venv, installed **without** its dependencies (transformers/huggingface_hub are only used to
  fetch Hub configs, which we do not need; without them it logs one warning). Only ``fire`` is needed.
* **DeepSpeed** ``estimate_zero2_model_states_mem_needs_all_cold`` / ``estimate_zero3_..._all_cold`` (model
  states only), run in the main venv (deepspeed 0.19.8 is there).
* **accelerate** ``calculate_maximum_sizes`` + ``estimate_training_usage`` (what ``accelerate estimate-memory``
  computes; the CLI itself fails offline in ``verify_on_hub``), on a meta model built from the local config
  exactly as ``accelerate.commands.estimate.create_empty_model`` does. Run in the main venv (accelerate is there).

Each tool runs in a subprocess (``--worker <tool>``, jobs as JSON on stdin), with the Python of its venv.
The grid-to-tool mapping is done here, in the main venv, from ``trainfit.workload.Workload`` (defaults filled).

Set up and run (from the repository root)::

    # llm-analysis venv (torch-free; no transformers: llm-analysis 0.2.2 requires transformers<5)
    python3 -m venv /tmp/venv-llma
    /tmp/venv-llma/bin/pip install --no-deps llm-analysis==0.2.2
    /tmp/venv-llma/bin/pip install "fire>=0.5,<0.6"
    # main venv already has deepspeed 0.19.8 and accelerate 1.16.0 (torch 2.13.0+cpu, transformers 5.24.0);
    # if not: DS_BUILD_OPS=0 .venv/bin/pip install deepspeed==0.19.8 accelerate==1.16.0 (check torch is unchanged)
    . .venv/bin/activate
    python benchmarks/peers.py                       # whole grid + Q6 sanity check -> benchmarks/results/peers.json
    python benchmarks/peers.py --llma-python /path/to/python   # another llm-analysis venv
    python benchmarks/peers.py --only 8B             # a subset: print it, write nothing
    python benchmarks/peers.py --only 8B --dry-run   # print the per-tool jobs, run nothing

It takes about 30 s on 2 cores (llm-analysis < 1 s; DeepSpeed and accelerate ~15 s each, mostly imports and
meta-model builds).

Output ``benchmarks/results/peers.json``::

    {"date", "versions": {...}, "runtime_s": {...},
     "configs": {config_id: {"llm_analysis_gib": x|null, "deepspeed_gib": x|null, "accelerate_gib": x|null,
                             "notes": [...], "details": {...}}},
     "sanity_q6": {...}}   # the numbers of shared/reference/trace-findings.md Q6, recomputed

GiB = 2**30 bytes (DeepSpeed's and accelerate's printed "GB" are GiB too). ``null`` = the tool does not apply
(the reason is in ``notes``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIGS = ROOT / "src" / "trainfit" / "models" / "data" / "qwen3_configs.json"
RESULTS = HERE / "results" / "peers.json"
LLMA_PYTHON = "/tmp/venv-llma/bin/python"
GIB = 2**30
MARK = "@@RESULT@@"

#: trace-findings.md Q6 (GiB): llm-analysis no recompute / full recompute (pure-bf16 settings, flash, GLU);
#: DeepSpeed ZeRO-2 / ZeRO-3 on 1 GPU; accelerate fp32 / fp16 "Training using Adam".
Q6 = {
    "Qwen3-0.6B": {"llm_analysis": (10.40, 6.32), "deepspeed": (11.10, 10.57), "accelerate": (11.20, 5.60)},
    "Qwen3-8B": {"llm_analysis": (80.74, 59.83), "deepspeed": (152.56, 139.63), "accelerate": (122.05, 61.03)},
    "Qwen3-30B-A3B": {"llm_analysis": (1863.31, 224.86), "deepspeed": (568.71, 512.99),
                      "accelerate": (454.96, 227.48)},
}
Q6_SEQ = 4096


def hf_config(name: str) -> dict:
    raw = json.loads(CONFIGS.read_text(encoding="utf-8"))[name]
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


# --------------------------------------------------------------------------------------------------------------
# Workers (each runs in its tool's venv; stdlib + that tool only at module level)
# --------------------------------------------------------------------------------------------------------------

def _pkg_versions(names: list[str]) -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def _worker_llm_analysis(jobs: list[dict]) -> dict:
    import logging

    from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
    from llm_analysis.config import DtypeConfig, ModelConfig, ParallelismConfig, get_gpu_config_by_name
    from llm_analysis.logger import logger

    logger.setLevel(logging.ERROR)
    results = {}
    for job in jobs:
        try:
            gpu = get_gpu_config_by_name(job["gpu_name"])
            # Memory does not depend on the GPU; a huge capacity only avoids llm-analysis's assertion
            # batch_size_per_gpu <= max_batch_size_per_gpu (it would refuse configs that do not fit an 80 GB GPU).
            gpu.mem_per_GPU_in_GB = job["gpu_mem_gb"]
            a = LLMAnalysis(ModelConfig(**job["model"]), gpu, DtypeConfig(**job["dtype"]),
                            ParallelismConfig(**job["parallel"]), flops_efficiency=1.0, hbm_memory_efficiency=1.0)
            kw = dict(job["training"])
            kw["activation_recomputation"] = ActivationRecomputation(kw["activation_recomputation"])
            kw["ds_zero"] = DSZeRO(kw["ds_zero"])
            s = a.training(**kw)
            keys = ("weight_memory_per_gpu", "gradient_memory_per_gpu", "optimizer_state_memory_per_gpu",
                    "activation_memory_per_gpu", "activation_memory_embedding_output_per_gpu",
                    "(weight+op_state+grad+act)_memory_per_gpu", "num_params_total", "num_active_params_total")
            results[job["id"]] = {"ok": True, **{k: float(s[k]) for k in keys}}
        except Exception as e:  # noqa: BLE001 - record any failure per job
            results[job["id"]] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"results": results, "versions": _pkg_versions(["llm-analysis", "fire"])}


def _meta_model(name: str, how: str):
    """``how``: ``meta`` (torch.device('meta'), tied weights really tied) or ``accelerate``/``accelerate-automodel``
    (accelerate's create_empty_model: init_empty_weights + from_config in float32; AutoModelForCausalLM, or
    AutoModel as the CLI picks for configs without ``auto_map``)."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**hf_config(name))
    if how == "meta":
        with torch.device("meta"):
            m = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
        m.tie_weights()
        return m
    from accelerate import init_empty_weights

    cls = transformers.AutoModel if how == "accelerate-automodel" else transformers.AutoModelForCausalLM
    with init_empty_weights():
        return cls.from_config(config, dtype=torch.float32)


def _worker_deepspeed(jobs: list[dict]) -> dict:
    from deepspeed.runtime.zero.stage3 import (estimate_zero3_model_states_mem_needs,
                                               estimate_zero3_model_states_mem_needs_all_cold)
    from deepspeed.runtime.zero.stage_1_and_2 import (estimate_zero2_model_states_mem_needs,
                                                      estimate_zero2_model_states_mem_needs_all_cold)

    sizes: dict[str, tuple[int, int, str]] = {}
    results = {}
    for job in jobs:
        try:
            name = job["model_name"]
            if name not in sizes:
                m = _meta_model(name, "meta")
                total = sum(p.numel() for p in m.parameters())  # dedups tied params (DeepSpeed: by data_ptr)
                # DeepSpeed's model_to_params: the module with the most direct (recurse=False) parameters
                largest, lname = 0, ""
                for n, mod in m.named_modules():
                    s = sum(p.numel() for p in mod.parameters(recurse=False))
                    if s > largest:
                        largest, lname = s, n
                sizes[name] = (int(total), int(largest), lname)
                del m
            total, largest, lname = sizes[name]
            if job.get("largest_layer_params"):
                largest, lname = int(job["largest_layer_params"]), "override"
            n_gpn, n_nodes = job["num_gpus_per_node"], job["num_nodes"]
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                if job["stage"] == 2:
                    estimate_zero2_model_states_mem_needs_all_cold(total_params=total, num_gpus_per_node=n_gpn,
                                                                   num_nodes=n_nodes)
                    _, gpu = estimate_zero2_model_states_mem_needs(total, n_gpn, n_nodes, cpu_offload=False)
                    row = "offload_optimizer=none"
                else:
                    estimate_zero3_model_states_mem_needs_all_cold(total_params=total, largest_layer_params=largest,
                                                                   num_gpus_per_node=n_gpn, num_nodes=n_nodes)
                    _, gpu, _ = estimate_zero3_model_states_mem_needs(total, largest, n_gpn, n_nodes,
                                                                      cpu_offload=False, cpu_offload_params=False,
                                                                      zero_init=True)
                    row = "offload_param=none, offload_optimizer=none, zero_init=1"
            printed = buf.getvalue()
            line = next(ln for ln in printed.splitlines() if ln.rstrip().endswith(row))
            printed_gib = float(re.findall(r"([\d.]+)GB", line)[1])  # "per CPU | per GPU | options"
            results[job["id"]] = {"ok": True, "gpu_bytes": int(gpu), "printed_gpu_gib": printed_gib,
                                  "total_params": total, "largest_layer_params": largest,
                                  "largest_layer": lname, "printed": printed}
        except Exception as e:  # noqa: BLE001
            results[job["id"]] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"results": results, "versions": _pkg_versions(["deepspeed", "torch", "transformers"])}


def _worker_accelerate(jobs: list[dict]) -> dict:
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes

    results = {}
    for job in jobs:
        try:
            m = _meta_model(job["model_name"], job["how"])
            total_size, largest = calculate_maximum_sizes(m)
            rows = {}
            for dtype in ("float32", "float16", "bfloat16"):
                usage = estimate_training_usage(total_size, dtype)
                rows[dtype] = {"components_bytes": usage, "training_bytes": max(usage.values())}  # CLI shows max
            results[job["id"]] = {"ok": True, "total_size_bytes": int(total_size),
                                  "largest_layer_bytes": int(largest[0]), "rows": rows}
            del m
        except Exception as e:  # noqa: BLE001
            results[job["id"]] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"results": results, "versions": _pkg_versions(["accelerate", "torch", "transformers"])}


WORKERS = {"llm-analysis": _worker_llm_analysis, "deepspeed": _worker_deepspeed, "accelerate": _worker_accelerate}


def _run_worker(tool: str, python: str, jobs: list[dict], timeout: float) -> tuple[dict, float]:
    t0 = time.perf_counter()
    env = dict(os.environ, PYTHONWARNINGS="ignore", DS_BUILD_OPS="0")
    p = subprocess.run([python, str(Path(__file__).resolve()), "--worker", tool], input=json.dumps(jobs),
                       capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t0
    line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith(MARK)), None)
    if line is None:
        raise RuntimeError(f"{tool} worker ({python}) exited {p.returncode} without a result:\n{p.stderr[-3000:]}")
    return json.loads(line[len(MARK):]), wall


# --------------------------------------------------------------------------------------------------------------
# Mapping grid entries to each tool (main venv)
# --------------------------------------------------------------------------------------------------------------

def workload(entry: dict) -> dict:
    """The entry's Workload with every default filled in (validated by trainfit)."""
    import dataclasses

    from trainfit.workload import Workload

    return dataclasses.asdict(Workload(**{k: v for k, v in entry.items() if k != "model"}))


def _llma_model(name: str) -> tuple[dict, list[str]]:
    c = hf_config(name)
    h, nh = c["hidden_size"], c["num_attention_heads"]
    moe = "num_experts" in c
    inter = c["moe_intermediate_size"] if moe else c["intermediate_size"]
    ffn = 1.5 * inter  # llm-analysis MLP params = 2*h*ffn: 1.5*I gives the 3*h*I of a gated (SwiGLU) MLP
    model = dict(name=name, num_layers=c["num_hidden_layers"], n_head=nh, hidden_dim=h, vocab_size=c["vocab_size"],
                 max_seq_len=c["max_position_embeddings"], num_key_value_heads=c["num_key_value_heads"],
                 ffn_embed_dim=ffn, expansion_ratio=ffn / h,
                 moe_num_experts=c.get("num_experts", 1), moe_top_k=c.get("num_experts_per_tok", 1))
    notes = [f"llm-analysis: gated MLP as ffn_embed_dim=1.5*I={ffn:g} with expansion_ratio={ffn / h:g}"]
    hd = c.get("head_dim") or h // nh
    if hd * nh != h:
        notes.append(f"llm-analysis: assumes head_dim=h/heads={h // nh} (real {hd}): q/k/v/o params and "
                     "attention activations are under-counted")
    if not c.get("tie_word_embeddings", False):
        notes.append("llm-analysis: assumes tied embeddings, the untied lm_head (V*h) is not counted")
    if moe:
        notes.append("llm-analysis MoE: per-layer MLP activations scale with num_experts*top_k without "
                     "recompute (absurdly large); router counted as h*E")
    return model, notes


def map_llm_analysis(entry: dict, w: dict) -> tuple[dict | None, list[str]]:
    if w["method"] != "full":
        return None, [f"llm-analysis: n/a for method={w['method']} (full fine-tuning only; README lists LoRA as a "
                      "TODO; no option for a frozen subset)"]
    if w["offload"] != "none" or w["cp"] != 1 or w["loss"] != "standard":
        return None, ["llm-analysis: n/a (no offload / context parallel / fused-loss option)"]
    model, notes = _llma_model(entry["model"])
    prec, opt = w["precision"], w["optimizer"]
    if prec == "bf16":
        dtype = dict(name="w16a16e16", weight_bits=16, activation_bits=16, embedding_bits=16)
        master, other, ln = 2, 2, 2
        notes.append("llm-analysis pure bf16: master_weights_dtype_bytes=2, other_op_bytes=2 (grads 2 B, "
                     "optimizer 2+2 B = the two bf16 Adam states), layernorm_dtype_bytes=2 (Q6 settings)")
    elif prec in ("amp-bf16", "fp16"):
        # weight_bits=32 is rejected ("weight_bits and activation_bits must be 4, 8, or 16"), so use the tool's own
        # mixed precision (its defaults): 16-bit weights 2 + fp32 grads 4 + fp32 master and Adam states 12 B/param.
        dtype = dict(name="w16a16e16", weight_bits=16, activation_bits=16, embedding_bits=16)
        master, other, ln = 4, None, 4
        notes.append("llm-analysis AMP: fp32 weights are rejected (weight_bits must be 4/8/16), so its default "
                     "mixed precision: 16-bit weights 2 + fp32 grads 4 + fp32 master+Adam 12 = 18 B/param (AMP "
                     "really holds 4+4+8 = 16 plus autocast's bf16 weight cache), fp32 layernorm activations")
    else:
        return None, notes + [f"llm-analysis: n/a for precision={prec}"]
    if opt == "sgd":
        if other is None:
            return None, notes + ["llm-analysis: n/a for SGD with mixed precision (fp32 master is always counted)"]
        other = -master  # optimizer bytes = master + other = 0: plain SGD (no momentum) keeps no state
        notes.append("llm-analysis SGD: other_op_bytes=-master_weights_dtype_bytes so the optimizer state is 0 "
                     "(hack; the tool assumes Adam)")
    elif opt == "adamw-foreach":
        notes.append("llm-analysis: no foreach-AdamW temporary (same as fused)")
    elif opt != "adamw-fused":
        return None, notes + [f"llm-analysis: n/a for optimizer={opt}"]
    strat = w["strategy"]
    ds_zero = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}.get(strat)
    if ds_zero is None:
        return None, notes + [f"llm-analysis: n/a for strategy={strat}"]
    dp = max(1, w["gpus"] // (w["tp"] * w["pp"]))
    if strat == "fsdp":
        notes.append(f"llm-analysis: FSDP2 full sharding as ds_zero=3 over dp_size={dp} (no all-gather/prefetch "
                     "buffers of unsharded layers)")
    if w["grad_ckpt"]:
        rc = 2
        notes.append("llm-analysis: grad_ckpt -> activation_recomputation=FULL (keeps each layer's input)")
    else:
        rc = 0
    flash = w["attention"] != "eager"
    if not flash:
        notes.append("llm-analysis eager: flash_attn=False adds 2*heads*S^2 bf16 per layer (real eager keeps "
                     "more: fp32 softmax + bf16 copy)")
    notes.append("llm-analysis: logits counted once in activation dtype (no fp32 loss copies)")
    job = dict(
        model=model, dtype=dtype, gpu_name="h100-sxm-80gb", gpu_mem_gb=1e9,
        parallel=dict(tp_size=w["tp"], pp_size=w["pp"], dp_size=dp, ep_size=w["ep"]),
        training=dict(batch_size_per_gpu=w["micro_batch"], seq_len=w["seq_len"], activation_recomputation=rc,
                      ds_zero=ds_zero, layernorm_dtype_bytes=ln, master_weights_dtype_bytes=master,
                      other_op_bytes=other, flash_attn=flash, mlp_gated_linear_units=True),
    )
    return job, notes


def map_deepspeed(entry: dict, w: dict) -> tuple[dict | None, list[str]]:
    if w["method"] != "full":
        return None, [f"deepspeed: n/a for method={w['method']} (estimator takes total params and assumes all are "
                      "trained)"]
    strat, gpus, gpn = w["strategy"], w["gpus"], w["gpus_per_node"]
    notes = ["deepspeed: model states only (params+grads+optimizer); ignores seq_len, micro_batch, GC, attention"]
    if strat in ("ddp",):
        stage, n_gpn, n_nodes = 2, 1, 1
        notes.append("deepspeed: ddp -> ZeRO-2 estimate on 1 GPU (no sharding): 2 + 18 B/param")
    elif strat in ("zero2", "zero3", "fsdp"):
        stage = 2 if strat == "zero2" else 3
        n_gpn, n_nodes = min(gpus, gpn), math.ceil(gpus / gpn)
        notes.append(f"deepspeed: {strat} -> ZeRO-{stage} estimate, {n_nodes} node(s) x {n_gpn} GPU(s), no offload, "
                     "zero_init=1" + (" (4*largest layer + 18 B/param / GPUs)" if stage == 3 else ""))
    else:
        return None, notes + [f"deepspeed: n/a for strategy={strat} (no ZeRO-1 / TP / PP estimator)"]
    if w["offload"] != "none":
        return None, notes + ["deepspeed: offload rows not mapped"]
    if w["precision"] == "bf16":
        notes.append("deepspeed: assumes 16-bit params + fp32 grads/master/Adam states; pure bf16 not representable")
    else:
        notes.append("deepspeed: its 16-bit mixed precision formula (fp32 master); AMP's fp32 params not "
                     "representable")
    if w["optimizer"] != "adamw-fused":
        notes.append(f"deepspeed: assumes Adam states (optimizer={w['optimizer']} not modelled)")
    c = hf_config(entry["model"])
    if "num_experts" in c:
        notes.append("deepspeed: largest layer = the fused experts module of transformers 5.24 "
                     "(E*3*h*I_moe params)")
    job = dict(model_name=entry["model"], stage=stage, num_gpus_per_node=n_gpn, num_nodes=n_nodes)
    return job, notes


def map_accelerate(entry: dict, w: dict) -> tuple[str | None, list[str]]:
    """Returns the estimate_training_usage dtype row to report (None = n/a)."""
    notes = ["accelerate: model states only at batch 1, the MAX of {model, grads, optimizer, step}, not their "
             "sum; ignores seq_len, micro_batch, GC, attention"]
    if w["method"] != "full":
        return None, [f"accelerate: n/a for method={w['method']} (no LoRA / frozen params)"]
    if w["strategy"] != "ddp" or w["gpus"] > 1:
        return None, notes + [f"accelerate: n/a for strategy={w['strategy']} gpus={w['gpus']} (no multi-GPU "
                              "sharding; the unsharded 1-GPU figure is in details)"]
    if w["precision"] not in ("bf16", "amp-bf16"):
        return None, notes + [f"accelerate: n/a for precision={w['precision']}"]
    notes.append("accelerate: 'bfloat16' (= its float16) mixed-precision row: max = fp32 Adam states, 8 B/param; "
                 + ("pure bf16 is not a concept there" if w["precision"] == "bf16" else "AMP with fp32 weights"))
    if hf_config(entry["model"]).get("tie_word_embeddings"):
        notes.append("accelerate: counts tied embeddings twice (init_empty_weights leaves lm_head untied)")
    if w["optimizer"] != "adamw-fused":
        notes.append(f"accelerate: assumes Adam (optimizer={w['optimizer']} not modelled)")
    notes.append("accelerate: meta model = AutoModelForCausalLM; the CLI itself would build AutoModel (no "
                 "lm_head) for Qwen3 configs, see details")
    return "bfloat16", notes


# --------------------------------------------------------------------------------------------------------------
# Orchestration
# --------------------------------------------------------------------------------------------------------------

def _q6_entries() -> list[tuple[str, dict]]:
    out = []
    for m in Q6:
        for gc in (False, True):
            e = {"model": m, "method": "full", "seq_len": Q6_SEQ, "grad_ckpt": gc}
            out.append((f"Q6 {m} S{Q6_SEQ} gc={gc}", e))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llma-python", default=LLMA_PYTHON, help=f"python of the llm-analysis venv ({LLMA_PYTHON})")
    ap.add_argument("--ds-python", default=sys.executable, help="python with deepspeed (default: this one)")
    ap.add_argument("--accelerate-python", default=sys.executable, help="python with accelerate (default: this one)")
    ap.add_argument("--only", default=None, help="only configuration ids containing this text")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per tool worker")
    ap.add_argument("--dry-run", action="store_true", help="print the jobs, run nothing, write nothing")
    ap.add_argument("--worker", default=None, choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        jobs = json.loads(sys.stdin.read())
        print(MARK + json.dumps(WORKERS[args.worker](jobs)))
        return 0

    t_start = time.perf_counter()
    sys.path.insert(0, str(HERE))
    from grid import GRID, config_id

    entries = [(config_id(e), e) for e in GRID if args.only is None or args.only in config_id(e)]
    configs: dict[str, dict] = {}
    llma_jobs, ds_jobs, acc_rows = [], [], {}
    for cid, e in entries:
        w = workload(e)
        rec = {"llm_analysis_gib": None, "deepspeed_gib": None, "accelerate_gib": None, "notes": [],
               "details": {"entry": e}}
        job, notes = map_llm_analysis(e, w)
        rec["notes"] += notes
        if job:
            llma_jobs.append({"id": cid, **job})
        job, notes = map_deepspeed(e, w)
        rec["notes"] += notes
        if job:
            ds_jobs.append({"id": cid, **job})
        if w["method"] == "full" and w["strategy"] != "ddp":  # extra: what the n/a 1-GPU tools would say
            ds_jobs.append({"id": cid + " #z2-1gpu", "model_name": e["model"], "stage": 2,
                            "num_gpus_per_node": 1, "num_nodes": 1})
        row, notes = map_accelerate(e, w)
        rec["notes"] += notes
        acc_rows[cid] = row if row else ("bfloat16" if w["method"] == "full" else None)
        rec["_acc_applies"] = row is not None
        configs[cid] = rec
    # Q6 sanity check: llm-analysis with the grid mapping; DeepSpeed Z2 and Z3 on 1 GPU; accelerate rows
    q6 = _q6_entries()
    for qid, e in q6:
        job, _ = map_llm_analysis(e, workload(e))
        llma_jobs.append({"id": qid, **job})
    for m in Q6:
        ds_jobs.append({"id": f"Q6 {m} z2", "model_name": m, "stage": 2, "num_gpus_per_node": 1, "num_nodes": 1})
        ds_jobs.append({"id": f"Q6 {m} z3", "model_name": m, "stage": 3, "num_gpus_per_node": 1, "num_nodes": 1})
        if "num_experts" in hf_config(m):  # Q6's 512.99 used the embedding (V*h) as the largest layer
            c = hf_config(m)
            ds_jobs.append({"id": f"Q6 {m} z3 largest=V*h", "model_name": m, "stage": 3, "num_gpus_per_node": 1,
                            "num_nodes": 1, "largest_layer_params": c["vocab_size"] * c["hidden_size"]})
    models = sorted({e["model"] for _, e in entries} | set(Q6))
    acc_jobs = [{"id": f"{m}|{how}", "model_name": m, "how": how}
                for m in models for how in ("accelerate", "accelerate-automodel")]
    if args.dry_run:
        print(json.dumps({"llm-analysis": llma_jobs, "deepspeed": ds_jobs, "accelerate": acc_jobs}, indent=1))
        return 0

    out_tools, versions, runtime = {}, {}, {}
    for tool, py, jobs in (("llm-analysis", args.llma_python, llma_jobs), ("deepspeed", args.ds_python, ds_jobs),
                           ("accelerate", args.accelerate_python, acc_jobs)):
        print(f"{tool}: {len(jobs)} jobs with {py} ...", end=" ", flush=True)
        try:
            res, wall = _run_worker(tool, py, jobs, args.timeout)
            out_tools[tool], versions[tool] = res["results"], res["versions"]
            runtime[tool] = round(wall, 1)
            bad = [k for k, v in res["results"].items() if not v.get("ok")]
            print(f"{wall:.1f} s, {len(bad)} failed", flush=True)
        except Exception as e:  # noqa: BLE001 - keep the other tools' results
            out_tools[tool], versions[tool] = {}, {"error": f"{type(e).__name__}: {e}"[:2000]}
            print(f"FAILED: {e}", flush=True)

    la, ds, ac = out_tools["llm-analysis"], out_tools["deepspeed"], out_tools["accelerate"]
    for cid, rec in configs.items():
        d = rec["details"]
        r = la.get(cid)
        if r and r.get("ok"):
            rec["llm_analysis_gib"] = _r(r["(weight+op_state+grad+act)_memory_per_gpu"] / GIB)
            d["llm_analysis"] = {k.replace("_per_gpu", "_gib"): _r(v / GIB) for k, v in r.items()
                                 if k.endswith("_per_gpu")}
            d["llm_analysis"]["num_params_total"] = int(r["num_params_total"])
        elif r:
            rec["notes"].append(f"llm-analysis: FAILED {r.get('error')}")
        r = ds.get(cid)
        if r and r.get("ok"):
            rec["deepspeed_gib"] = _r(r["gpu_bytes"] / GIB)
            d["deepspeed"] = {k: r[k] for k in ("printed_gpu_gib", "total_params", "largest_layer_params",
                                                "largest_layer")}
        elif r:
            rec["notes"].append(f"deepspeed: FAILED {r.get('error')}")
        r = ds.get(cid + " #z2-1gpu")
        if r and r.get("ok"):
            d.setdefault("deepspeed", {})["unsharded_zero2_1gpu_gib"] = _r(r["gpu_bytes"] / GIB)
        row = acc_rows.get(cid)
        model = d["entry"]["model"]
        r, r_cli = ac.get(f"{model}|accelerate"), ac.get(f"{model}|accelerate-automodel")
        if row and r and r.get("ok"):
            val = _r(r["rows"][row]["training_bytes"] / GIB)
            d["accelerate"] = {"row": row, "training_gib": val,
                               "float32_row_gib": _r(r["rows"]["float32"]["training_bytes"] / GIB),
                               "total_size_fp32_gib": _r(r["total_size_bytes"] / GIB),
                               "cli_automodel_training_gib": _r(r_cli["rows"][row]["training_bytes"] / GIB)
                               if r_cli and r_cli.get("ok") else None}
            if rec["_acc_applies"]:
                rec["accelerate_gib"] = val
            else:
                d["accelerate"]["unsharded_1gpu_only"] = True
        elif row and r:
            rec["notes"].append(f"accelerate: FAILED {r.get('error')}")
        del rec["_acc_applies"]

    sanity: dict[str, dict] = {}
    for m, exp in Q6.items():
        s = sanity[m] = {"seq_len": Q6_SEQ}
        got_la = [la.get(f"Q6 {m} S{Q6_SEQ} gc={gc}", {}) for gc in (False, True)]
        s["llm_analysis_no_recompute_full"] = {"q6": exp["llm_analysis"], "got": [
            _r(g["(weight+op_state+grad+act)_memory_per_gpu"] / GIB, 2) if g.get("ok") else None for g in got_la]}
        z2, z3 = ds.get(f"Q6 {m} z2", {}), ds.get(f"Q6 {m} z3", {})
        s["deepspeed_z2_z3_1gpu"] = {"q6": exp["deepspeed"], "got": [
            _r(z["gpu_bytes"] / GIB, 2) if z.get("ok") else None for z in (z2, z3)],
            "printed": [z.get("printed_gpu_gib") for z in (z2, z3)],
            "z3_largest_layer": [z3.get("largest_layer"), z3.get("largest_layer_params")]}
        zv = ds.get(f"Q6 {m} z3 largest=V*h")
        if zv and zv.get("ok"):
            s["deepspeed_z2_z3_1gpu"]["z3_with_largest_layer_V*h"] = _r(zv["gpu_bytes"] / GIB, 2)
        a = ac.get(f"{m}|accelerate", {})
        s["accelerate_fp32_fp16"] = {"q6": exp["accelerate"], "got": [
            _r(a["rows"][t]["training_bytes"] / GIB, 2) if a.get("ok") else None for t in ("float32", "float16")]}
        for v in s.values():
            if isinstance(v, dict) and "got" in v:
                v["match"] = all(g is not None and abs(g - q) <= 0.011 for g, q in zip(v["got"], v["q6"]))
        zd = s["deepspeed_z2_z3_1gpu"]
        if not zd["match"] and "z3_with_largest_layer_V*h" in zd:
            zd["match_with_largest_layer_V*h"] = all(g is not None and abs(g - q) <= 0.011 for g, q in zip(
                [zd["got"][0], zd["z3_with_largest_layer_V*h"]], zd["q6"]))
            zd["why"] = ("transformers 5.24 fuses each layer's experts into one module (E*3*h*I_moe params), which "
                         "DeepSpeed's largest-layer rule picks; Q6 used the embedding (V*h)")

    runtime["total"] = round(time.perf_counter() - t_start, 1)
    data = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions,
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "runtime_s": runtime,
        "grid_size": len(GRID),
        "configs": configs,
        "sanity_q6": sanity,
    }
    if args.only is None:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        tmp = RESULTS.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, RESULTS)
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    for cid, rec in configs.items():
        print(f"{cid:70s} LA {rec['llm_analysis_gib']!s:>9} DS {rec['deepspeed_gib']!s:>9} "
              f"ACC {rec['accelerate_gib']!s:>9}")
    print(json.dumps({"sanity_q6": sanity, "runtime_s": runtime}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
