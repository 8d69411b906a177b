"""Calibration check of the speed model against published H100 training throughputs.

Run: ``python benchmarks/speed_calibration.py`` (writes ``benchmarks/results/speed_calibration.json`` and
prints a markdown table for docs/speed-model.md).

Each case states whether the efficiency table was *fitted* on it (then agreement only shows the comm and
FLOPs bookkeeping is consistent) or whether it is an independent *check*. Measurements:

* torchtitan ``benchmarks/llama3_h100_202412_torchtitan.md`` (Llama 3.1 8B, H100 96 GB HBM2e at 500 W,
  8 GPUs per host on NVLink, 400 Gb/s RDMA per GPU; seq 8192 from ``llama3_8b.toml``; selective op AC).
* NVIDIA Megatron-Bridge ``docs/performance-summary.md`` 25.11, DGX-H100.
* NVIDIA NeMo 24.07 ``performance_summary.md`` (as quoted in shared/reference/qwen3-reference.md 2.4).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trainfit.estimate.speed import Hardware, estimate_speed, flops_per_token
from trainfit.models import from_hf_config, get_model
from trainfit.workload import Workload

OUT = Path(__file__).parent / "results" / "speed_calibration.json"

# H100 SXM as the sources use it: 989 dense BF16 / 1979 FP8 TFLOP/s (NVIDIA datasheet; NeMo AutoModel
# notes), NVLink 900 GB/s bidirectional -> 450 per direction, 8 x 400 Gbit/s RDMA per node = 400 GB/s.
H100 = Hardware(name="H100-SXM", gpu_class="hopper", peak_tflops=989, peak_fp8_tflops=1979, mem_gbytes_per_s=3350,
                intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=400, pcie_gbytes_per_s=63, gpus_per_node=8)

LLAMA31_8B = from_hf_config({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                             "vocab_size": 128256, "tie_word_embeddings": False}, name="Llama-3.1-8B")
LLAMA2_7B = from_hf_config({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
                            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                            "vocab_size": 32000, "tie_word_embeddings": False}, name="Llama-2-7B")

TT = "torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
MB = "Megatron-Bridge docs/performance-summary.md, 25.11, DGX-H100"
NEMO = "NeMo 24.07 performance_summary.md (qwen3-reference.md 2.4)"

CASES: list[dict] = [
    dict(case="torchtitan 8B FSDP eager, 8 GPUs", source=TT + " Table 1", role="fit", measured=5762,
         models=("Llama-3.1-8B", "Qwen3-8B"), framework="fsdp2",
         wl=dict(seq_len=8192, micro_batch=2, gpus=8, strategy="fsdp"),
         note="op-SAC recomputes ~10% (between grad_ckpt off and on)"),
    dict(case="torchtitan 8B FSDP eager, 128 GPUs", source=TT + " Table 3", role="check", measured=5605,
         models=("Llama-3.1-8B", "Qwen3-8B"), framework="fsdp2",
         wl=dict(seq_len=8192, micro_batch=2, gpus=128, strategy="fsdp"),
         note="checks the multi-node ring model: measured 128/8-GPU ratio 0.973"),
    dict(case="torchtitan 8B FSDP compile+Float8, seq 32768, full AC", source=TT + " Table 2", role="check",
         measured=3890, models=("Llama-3.1-8B", "Qwen3-8B"), framework="fsdp2",
         wl=dict(seq_len=32768, micro_batch=1, gpus=8, strategy="fsdp", precision="fp8", grad_ckpt=True),
         note="long context: attention is 30% of FLOPs; the FP8 factor was fitted on compiled runs"),
    dict(case="Megatron-Bridge LLAMA3_8B FP8, 8 GPUs", source=MB, role="fit", measured=14451,
         models=("Llama-3.1-8B", "Qwen3-8B"), framework="megatron",
         wl=dict(seq_len=8192, micro_batch=1, grad_accum=16, gpus=8, strategy="fsdp", precision="fp8",
                 grad_ckpt=False), note="fits megatron dense base x fp8 factor"),
    dict(case="NeMo LLAMA2-7B SFT FP8, 8 GPUs", source=NEMO, role="check", measured=17120,
         models=("Llama-2-7B",), framework="megatron",
         wl=dict(seq_len=4096, micro_batch=1, grad_accum=16, gpus=8, strategy="zero1", precision="fp8",
                 grad_ckpt=False),
         note="older NeMo release than the fitted Megatron-Bridge run; micro-batch/GA not stated (assumed 1/16)"),
    dict(case="NeMo LLAMA2-7B LoRA FP8, 8 GPUs", source=NEMO, role="check", measured=25206,
         models=("Llama-2-7B",), framework="megatron",
         wl=dict(seq_len=4096, micro_batch=1, grad_accum=16, gpus=8, strategy="ddp", precision="fp8",
                 grad_ckpt=False, method="lora", lora_rank=32),
         note="assumed: seq 4096 packed as the SFT row, rank 32 on all linear layers (NeMo default)"),
    dict(case="Megatron-Bridge Qwen3-30B-A3B FP8, 16 GPUs PP2 EP8", source=MB, role="fit", measured=5275,
         models=("Qwen3-30B-A3B",), framework="megatron",
         wl=dict(seq_len=4096, micro_batch=2, grad_accum=32, gpus=16, pp=2, ep=8, strategy="zero1",
                 precision="fp8", grad_ckpt=False), note="fits megatron MoE base x MoE fp8 factor"),
    dict(case="Megatron-Bridge Qwen3-235B-A22B FP8, 256 GPUs TP2 PP8 EP32", source=MB, role="fit (width slope)",
         measured=1575, models=("Qwen3-235B-A22B",), framework="megatron",
         wl=dict(seq_len=4096, micro_batch=1, grad_accum=128, gpus=256, tp=2, pp=8, ep=32, strategy="zero1",
                 precision="fp8", grad_ckpt=False),
         note="fixes the MoE expert-width slope; VP4 interleaving (4x smaller bubble) not modelled"),
]


def _model(name: str):
    return {"Llama-3.1-8B": LLAMA31_8B, "Llama-2-7B": LLAMA2_7B}.get(name) or get_model(name)


def run() -> dict:
    rows = []
    for c in CASES:
        for mname in c["models"]:
            m = _model(mname)
            wl = Workload(**c["wl"])
            variants = [("as stated", wl)]
            if c["case"].startswith("torchtitan 8B FSDP eager"):
                variants = [("grad_ckpt off", wl.with_(grad_ckpt=False)), ("grad_ckpt on", wl.with_(grad_ckpt=True))]
            for label, w in variants:
                s = estimate_speed(m, w, H100, framework=c["framework"])
                rows.append({
                    "case": c["case"], "role": c["role"], "source": c["source"], "model": mname, "variant": label,
                    "workload": {k: getattr(w, k) for k in ("method", "seq_len", "micro_batch", "grad_accum", "gpus",
                                                            "strategy", "precision", "grad_ckpt", "tp", "pp", "ep")},
                    "measured_tokens_per_s_per_gpu": c["measured"] if mname != "Qwen3-8B" else None,
                    "measured_on": "Llama-3.1-8B" if mname == "Qwen3-8B" else mname,
                    "predicted_tokens_per_s_per_gpu": round(s.tokens_per_s_per_gpu, 1),
                    "ratio_predicted_to_measured": round(s.tokens_per_s_per_gpu / c["measured"], 3),
                    "model_gflops_per_token": round(s.model_flops_per_token / 1e9, 3),
                    "mfu": round(s.mfu, 4), "efficiency": round(s.efficiency, 4),
                    "comm_seconds_exposed": round(s.comm_seconds_exposed, 4), "step_seconds": round(s.step_seconds, 4),
                    "bubble_fraction": round(s.bubble_fraction, 4), "note": c["note"],
                })
    # LoRA / SFT ratio check (NeMo), independent of the absolute level
    sft = next(r for r in rows if r["case"].startswith("NeMo LLAMA2-7B SFT"))
    lora = next(r for r in rows if r["case"].startswith("NeMo LLAMA2-7B LoRA"))
    extra = {
        "nemo_lora_over_sft": {"measured": round(25206 / 17120, 3),
                               "predicted": round(lora["predicted_tokens_per_s_per_gpu"]
                                                  / sft["predicted_tokens_per_s_per_gpu"], 3)},
        "llama2_7b_gflops_per_token": {
            "sft": round(flops_per_token(LLAMA2_7B, Workload(seq_len=4096, grad_ckpt=False)).model_flops / 1e9, 2),
            "lora_r32": round(flops_per_token(LLAMA2_7B, Workload(seq_len=4096, grad_ckpt=False, method="lora",
                                                                  lora_rank=32)).model_flops / 1e9, 2)},
        "hardware": {"name": H100.name, "peak_tflops": H100.peak_tflops, "peak_fp8_tflops": H100.peak_fp8_tflops,
                     "intra_node_gbytes_per_s": H100.intra_node_gbytes_per_s,
                     "inter_node_gbytes_per_s": H100.inter_node_gbytes_per_s},
    }
    return {"rows": rows, "extra": extra}


def markdown(res: dict) -> str:
    out = ["| case | role | model | variant | measured tok/s/GPU | predicted | ratio | GFLOP/token | MFU |",
           "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        meas = r["measured_tokens_per_s_per_gpu"]
        meas_s = f"{meas:,}" if meas else f"({r['measured_on']})"
        out.append(f"| {r['case']} | {r['role']} | {r['model']} | {r['variant']} | {meas_s} | "
                   f"{r['predicted_tokens_per_s_per_gpu']:,.0f} | {r['ratio_predicted_to_measured']:.2f} | "
                   f"{r['model_gflops_per_token']:.2f} | {r['mfu']:.3f} |")
    e = res["extra"]["nemo_lora_over_sft"]
    out.append("")
    out.append(f"NeMo LoRA/SFT tokens/s ratio: measured {e['measured']}, predicted {e['predicted']}.")
    return "\n".join(out)


def main() -> int:
    res = run()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(markdown(res))
    print(f"\nwrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
