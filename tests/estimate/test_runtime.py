"""Runtime memory terms beyond the trace (estimate/runtime.py), the fit verdict and the real-world corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from trainfit.estimate.memory import estimate_memory
from trainfit.estimate.runtime import MEGATRON_MAIN_GRAD_EXTRA_BYTES, runtime_terms
from trainfit.models import get_model
from trainfit.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def test_megatron_main_grads_only_for_megatron_full_training():
    full = Workload(gpus=8, tp=2, strategy="zero1")
    (t,) = runtime_terms(full, trainable_rank_elems=1e9)
    assert t.bytes == pytest.approx(1e9 * MEGATRON_MAIN_GRAD_EXTRA_BYTES)
    assert runtime_terms(full.with_(method="lora"), trainable_rank_elems=1e9) == ()
    assert runtime_terms(Workload(gpus=8, strategy="zero1"), trainable_rank_elems=1e9) == ()  # DeepSpeed


def test_runtime_term_reaches_the_estimate():
    m = get_model("Qwen3-8B")
    wl = Workload(gpus=8, tp=2, strategy="zero1", seq_len=2048)
    est = estimate_memory(m, wl)
    assert any("main_grad" in a for a in est.assumptions)
    no_tp = estimate_memory(m, wl.with_(tp=1, gpus=4))
    assert not any("main_grad" in a for a in no_tp.assumptions)


def test_experts_shard_over_expert_data_parallel_with_expert_tp_1():
    """With EP the TP ranks hold whole experts (expert TP 1) and join the expert data-parallel group."""
    m = get_model("Qwen3-30B-A3B")
    a = estimate_memory(m, Workload(gpus=16, tp=2, ep=8, strategy="zero1", seq_len=4096))
    b = estimate_memory(m, Workload(gpus=16, tp=1, ep=8, strategy="zero1", seq_len=4096))
    # TP 2 halves attention weights but not the experts; optimizer states of experts are sharded over
    # dp*tp/ep = 2 ranks in both layouts, so the two stay within a few GiB
    assert abs(a.breakdown_gib["optimizer"] - b.breakdown_gib["optimizer"]) < 0.2 * b.breakdown_gib["optimizer"]


def test_fit_corpus_is_large_sourced_and_runs():
    data = yaml.safe_load((ROOT / "benchmarks" / "data" / "fit_reports.yaml").read_text(encoding="utf-8"))
    reps = data["reports"]
    assert len(reps) >= 30 and sum(r["outcome"] == "oom" for r in reps) >= 8
    assert len({r["id"] for r in reps}) == len(reps)
    for r in reps:
        assert r["url"].startswith("https://github.com/") and r["date"] and r["outcome"] in ("fits", "oom")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fit_corpus

    res = fit_corpus.run()
    assert res["n_reports"] == len(reps)
    assert 0 <= res["agreement_pct"] <= res["agreement_with_tight_pct"] <= 100
    # every clear-cut OOM (model states alone above the GPU) is predicted OOM
    by_id = {r["id"]: r for r in res["rows"]}
    for rid in ("openrlhf-698-llama3-8b-zero2-1gpu", "llamafactory-5553-qwen2vl-72b-4gpu", "alpaca-56-llama7b-1gpu"):
        assert by_id[rid]["verdict"] == "oom"


def test_megatron_activation_set_by_hand():
    from trainfit.estimate.runtime import megatron_layer_bytes_per_token
    from trainfit.models import from_hf_config

    # Llama-3-8B: h 4096, 32 heads x 128, 8 kv heads, I 14336:
    # attention 2h + 2*nh*hd + 2*nkv*hd, MLP 2h + 3I elements, bf16
    m = from_hf_config({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                        "vocab_size": 128256}, name="l3")
    assert megatron_layer_bytes_per_token(m, 0) == 2 * (2 * 4096 + 2 * 4096 + 2 * 1024 + 2 * 4096 + 3 * 14336)
    # used for Megatron layouts only: a TP layout saves less per token than the HF layer (SP splits it too)
    # (without overlap_comm, so that DeepSpeed's communication buffers leave the peak in backward)
    hf = estimate_memory(m, Workload(gpus=2, strategy="zero1", seq_len=4096, grad_ckpt=False, tp=1, pp=1,
                                     ds_overlap_comm=False))
    mg = estimate_memory(m, Workload(gpus=2, strategy="zero1", seq_len=4096, grad_ckpt=False, tp=2))
    assert mg.breakdown_gib["activations"] < 0.5 * hf.breakdown_gib["activations"]


# ------------------------------------------------------------------ DDP construction broadcast (PyTorch < 2.8)
def _lora_ddp(**kw) -> Workload:
    base = dict(method="lora", gpus=2, gpus_per_node=2, strategy="ddp", seq_len=256, grad_accum=8)
    base.update(kw)
    return Workload(**base)


def test_ddp_broadcast_staging_only_for_torch_ddp_across_ranks_under_record_stream():
    from trainfit.estimate.runtime import ddp_broadcast_staging_bytes
    wl = _lora_ddp()
    assert ddp_broadcast_staging_bytes(wl, 1e9, nccl_record_stream=True) == 1e9
    assert ddp_broadcast_staging_bytes(wl, 1e9, nccl_record_stream=False) == 0.0  # PyTorch >= 2.8: stashing
    assert ddp_broadcast_staging_bytes(wl.with_(gpus=1, gpus_per_node=1), 1e9, nccl_record_stream=True) == 0.0
    for other in ("zero2", "zero3", "fsdp"):  # DeepSpeed broadcasts in place; FSDP2 does not broadcast
        assert ddp_broadcast_staging_bytes(wl.with_(strategy=other), 1e9, nccl_record_stream=True) == 0.0
    # Megatron-Core's DDP broadcasts each parameter in place
    assert ddp_broadcast_staging_bytes(wl.with_(gpus=4, gpus_per_node=4, tp=2), 1e9, nccl_record_stream=True) == 0.0


def test_ddp_broadcast_staging_sets_reserved_to_twice_the_module_for_lora():
    """LoRA over DDP: the step needs little beyond the weights, so reserved is the construction's 2 x module
    (+ CUDA context + NCCL); the tensor peak (max_memory_allocated) does not change."""
    from trainfit.estimate.memory import OverheadModel
    m = get_model("Qwen3-8B")
    wl = _lora_ddp()
    ov = OverheadModel(nccl_record_stream=True)
    new = estimate_memory(m, wl, overhead=ov)
    cur = estimate_memory(m, wl)
    assert new.tensor_peak_gib == cur.tensor_peak_gib
    w = new.breakdown_gib["weights"]
    assert new.reserved_gib == pytest.approx(2 * w + ov.cuda_context_gib + ov.nccl_gib, rel=1e-9)
    assert new.reserved_gib > cur.reserved_gib + 0.8 * w
    assert sum(new.breakdown_gib.values()) == pytest.approx(new.reserved_gib)
    assert any("construction broadcast" in a for a in new.assumptions)
    assert not any("construction broadcast" in a for a in cur.assumptions)
    # one GPU: no DDP, nothing changes
    one = wl.with_(gpus=1, gpus_per_node=1)
    assert estimate_memory(m, one, overhead=ov).reserved_gib == estimate_memory(m, one).reserved_gib


def test_ddp_broadcast_staging_is_a_floor_not_added_to_the_step():
    """Full fine-tuning: the step (weights + grads + optimizer states) already needs more than 2 x weights, and the
    cached broadcast segments serve it, so reserved is unchanged."""
    from trainfit.estimate.memory import OverheadModel
    m = get_model("Qwen3-0.6B")
    wl = _lora_ddp(method="full")
    new = estimate_memory(m, wl, overhead=OverheadModel(nccl_record_stream=True))
    cur = estimate_memory(m, wl)
    assert 2 * cur.breakdown_gib["weights"] < cur.tensor_peak_gib
    assert new.reserved_gib == cur.reserved_gib


PYTORCH_2_8_RELEASED = "2025-08-06"


def _before_torch_2_8(r: dict) -> bool:
    """Whether report ``r`` ran on PyTorch < 2.8: its ``torch`` field, else a full ISO date before 2.8.0's release."""
    if r.get("torch"):
        return tuple(int(x) for x in str(r["torch"]).split(".")[:2]) < (2, 8)
    d = str(r["date"])
    return len(d) == 10 and d < PYTORCH_2_8_RELEASED


def test_fit_reports_optimizer_follows_the_stated_rule():
    """The ``optimizer`` rule of fit_reports.yaml's header: a DeepSpeed config with an optimizer section is FusedAdam;
    the Hugging Face Trainer's default ``adamw_torch`` before PyTorch 2.8 is torch's foreach AdamW."""
    data = yaml.safe_load((ROOT / "benchmarks" / "data" / "fit_reports.yaml").read_text(encoding="utf-8"))
    reps = data["reports"]
    for r in reps:
        if "optimizer" in r:
            assert r["optimizer"] in ("adamw-foreach", "adamw-fused"), r["id"]
        if r.get("optimizer") == "adamw-foreach":
            assert _before_torch_2_8(r), r["id"]
    # the HF-Trainer-based trainers whose configs set no optimizer: LLaMA-Factory's DeepSpeed examples, ms-swift 3.0
    trainer_rows = [r for r in reps if r["framework"] in ("deepspeed", "hf-trainer") and _before_torch_2_8(r)
                    and ("hiyouga/LlamaFactory" in r["url"] and r["framework"] == "deepspeed"
                         or "modelscope/ms-swift" in r["url"])]
    assert len(trainer_rows) >= 10
    assert all(r.get("optimizer") == "adamw-foreach" for r in trainer_rows), \
        [r["id"] for r in trainer_rows if r.get("optimizer") != "adamw-foreach"]
    flagperf_ds = [r for r in reps if "FlagPerf" in r["url"] and r["framework"] == "deepspeed"]
    assert flagperf_ds and all(r.get("optimizer") == "adamw-fused" for r in flagperf_ds)
