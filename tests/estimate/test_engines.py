"""Engine model of the speed estimate (estimate/engines.py) and its calibration data / LOSO harness."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest
import yaml

from trainfit.errors import WorkloadError
from trainfit.estimate import engine_assumptions, engine_terms, engines
from trainfit.estimate.speed import Hardware, estimate_speed, flops_per_token
from trainfit.models import from_hf_config, get_model
from trainfit.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "throughput.yaml"

H100 = Hardware(name="H100", gpu_class="hopper", peak_tflops=989, peak_fp8_tflops=1979, mem_gbytes_per_s=3350,
                intra_node_gbytes_per_s=450, inter_node_gbytes_per_s=400, pcie_gbytes_per_s=63)
A100 = Hardware(name="A100", gpu_class="ampere", peak_tflops=312, mem_gbytes_per_s=2039,
                intra_node_gbytes_per_s=300, inter_node_gbytes_per_s=200)


@pytest.fixture(scope="module")
def moe():
    return get_model("Qwen3-30B-A3B")


@pytest.fixture(scope="module")
def q8():
    return get_model("Qwen3-8B")


# ------------------------------------------------------------------------------------------- data
def test_calibration_set_is_large_diverse_and_sourced():
    data = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    rows, sources = data["rows"], data["sources"]
    assert len(rows) >= 25 and len(sources) >= 5
    assert len({r["id"] for r in rows}) == len(rows)
    orgs = {s["org"].split()[0] for s in sources.values()}
    assert len(orgs) >= 4  # NVIDIA, Meta, Trainy, MosaicML, Alibaba
    for s in sources.values():
        assert s["url"].startswith("https://") and s["engine_version"]
    for r in rows:
        assert r["source"] in sources and r["date"], r["id"]
        assert r["model"] in data["models"] and r["gpu"] in data["gpus"], r["id"]
        assert r["measured_tokens_per_s_per_gpu"] > 0
        assert r["engine"] in engines.FAMILY_OF
    kinds = {(get_model(r["model"]).is_moe if data["models"][r["model"]]["registry_or_config"] == "registry"
              else "num_experts" in data["models"][r["model"]]["config"]) for r in rows}
    assert kinds == {True, False}  # dense and MoE
    assert {data["gpus"][r["gpu"]]["catalog"].split("-")[0] for r in rows} >= {"H100", "A100", "A800", "H200"}


def test_fast_path_matches_estimate_speed():
    """The LOSO fit evaluates a fast copy of estimate_speed's combination; both must agree."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import speed_loso

    _, rows = speed_loso.load()
    c = engines.DEFAULT_CONSTANTS.with_(gemm_eff_native=0.5, elem_bytes_hf=20.0, gemm_eff_megatron=0.5)
    checked = 0
    for r in rows[::5] + [r for r in rows if r.raw.get("kbit_prepare")]:
        raw = r.raw
        s = estimate_speed(r.model, r.workload, r.hardware, framework=raw["engine"], virtual_pp=raw.get("vp", 1),
                           expert_tp=int(raw.get("etp", 1)), constants=c, kbit_prepare=bool(raw.get("kbit_prepare")),
                           **speed_loso.engine_kwargs(raw))
        assert speed_loso.predict(r, c) == pytest.approx(s.tokens_per_s_per_gpu, rel=1e-9), raw["id"]
        checked += 1
    assert checked >= 10


def test_fit_recovers_known_constants():
    """Rows generated from chosen constants are fitted back to them (the optimiser and loss work)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import speed_loso

    _, rows = speed_loso.load()
    truth = engines.PRIORS.with_(gemm_eff_native=0.45, elem_bytes_native=14.0)
    native = [r for r in rows if r.feat.family == "native"]
    for r in native:
        r.measured = speed_loso.predict(r, truth)
    fitted = speed_loso.fit(native, restarts=2)
    assert fitted.gemm_eff_native == pytest.approx(0.45, rel=0.05)


# ------------------------------------------------------------------------------------------- physics
def test_grouped_gemm_engines_beat_the_eager_expert_loop(moe):
    wl = Workload(seq_len=4096, micro_batch=4, grad_accum=4, gpus=8, strategy="fsdp", grad_ckpt=True)
    hf = estimate_speed(moe, wl, H100, framework="hf-trainer")
    grouped = estimate_speed(moe, wl.with_(ep=8), H100, framework="fsdp2")
    assert grouped.tokens_per_s_per_gpu > 1.5 * hf.tokens_per_s_per_gpu
    f = engines.features(moe, wl, H100, "hf-trainer", flops=flops_per_token(moe, wl))
    t = engines.compute_time(f, engines.DEFAULT_CONSTANTS)
    assert t.expert_loop_seconds > 0 and f.expert_kernel_units > 0
    g = engines.features(moe, wl.with_(ep=8), H100, "fsdp2", flops=flops_per_token(moe, wl))
    assert g.expert_kernel_units == 0


def test_issue_case_qwen3_30b_fsdp2_ep8_no_longer_a_quarter(moe):
    # NeMo AutoModel performance summary (2025-10-02): 12,040 tokens/s/GPU on 8 x H100, EP 8, BF16, AC on, its
    # benchmark's fake balanced gate (--moe-routing balanced)
    wl = Workload(seq_len=4096, micro_batch=4, grad_accum=16, gpus=8, strategy="fsdp", ep=8, grad_ckpt=True,
                  moe_routing="balanced")
    s = estimate_speed(moe, wl, H100, framework="automodel")
    assert 0.7 < s.tokens_per_s_per_gpu / 12040 < 1.3


def test_transformer_engine_grouped_gemm_slows_with_fewer_tokens_per_expert(moe):
    # TP 4 with sequence parallelism hands each EP rank a quarter of the tokens of TP 1: 16 local experts of
    # Qwen3-30B-A3B then get 1,024 instead of 4,096 rows each, and TE's grouped GEMM runs them slower per FLOP
    # (balanced routing: every rank the mean; natural routing's busiest rank is tests/estimate/test_moe_routing.py)
    wl = Workload(seq_len=4096, gpus=8, ep=8, strategy="zero1", grad_ckpt=False, moe_routing="balanced")
    c = engines.DEFAULT_CONSTANTS

    f1 = engines.features(moe, wl, H100, "megatron", flops=flops_per_token(moe, wl))
    f4 = engines.features(moe, wl.with_(tp=4, sequence_parallel=True), H100, "megatron",
                          flops=flops_per_token(moe, wl))
    assert f1.expert_tokens == pytest.approx(4096 * 8 * 8 / 128)
    assert f4.expert_tokens == pytest.approx(f1.expert_tokens / 4)

    def expert_seconds(f, half):
        t = engines.compute_time(f, c.with_(grouped_gemm_half_tokens=half))
        t0 = engines.compute_time(f.__class__(**{**f.__dict__, "expert_gemm_flops": 0.0}), c)
        return t.gemm_seconds - t0.gemm_seconds

    half = c.grouped_gemm_half_tokens
    for f in (f1, f4):  # expert GEMM time scales by (m + half) / m
        m = f.expert_tokens
        assert expert_seconds(f, half) / expert_seconds(f, 1e-9) == pytest.approx((m + half) / m, rel=1e-6)
    per_flop = [expert_seconds(f, half) / f.expert_gemm_flops for f in (f1, f4)]
    assert per_flop[1] > 1.3 * per_flop[0]
    # native grouped_mm (CUTLASS) and the Hugging Face loop keep the weight-side law only
    assert engines.features(moe, wl, H100, "fsdp2", flops=flops_per_token(moe, wl)).expert_tokens == 0
    assert engines.features(moe, wl, H100, "hf-trainer", flops=flops_per_token(moe, wl)).expert_tokens == 0


def test_stacked_expert_weights_cost_a_full_gradient_per_visited_expert(moe):
    # transformers 5 eager experts / GraniteMoE 4.x index one [E, out, in] parameter per expert: each visited
    # expert's backward writes and adds a gradient the size of the whole stacked tensor
    wl = Workload(seq_len=2048, micro_batch=2, grad_accum=3, gpus=8, strategy="zero3", grad_ckpt=True)
    fl = flops_per_token(moe, wl)
    plain = engines.features(moe, wl, H100, "hf-trainer", flops=fl)
    stacked = engines.features(moe, wl.with_(experts_impl="eager"), H100, "hf-trainer", flops=fl)
    per_layer = sum(t.total for t in moe.tensors() if t.kind == "expert") / moe.n_moe_layers
    visited = min(moe.num_experts, 2 * 2048 * moe.experts_per_token)
    want = 3 * moe.n_moe_layers * visited * engine_assumptions.STACKED_EXPERT_GRAD_PASSES * per_layer * 2
    assert plain.stacked_expert_bytes == 0 and stacked.stacked_expert_bytes == pytest.approx(want)
    c = engines.DEFAULT_CONSTANTS
    extra = engines.compute_time(stacked, c).elementwise_seconds - engines.compute_time(plain, c).elementwise_seconds
    assert extra == pytest.approx(want / (H100.mem_gbytes_per_s * 1e9 * engine_assumptions.HBM_EFFICIENCY))
    # frozen experts have no gradient; grouped-GEMM engines do not index per expert
    eager = wl.with_(experts_impl="eager")
    lora = engines.features(moe, eager.with_(method="lora"), H100, "hf-trainer", flops=fl)
    mega = engines.features(moe, eager.with_(strategy="zero1"), H100, "megatron", flops=fl)
    assert lora.stacked_expert_bytes == 0 and mega.stacked_expert_bytes == 0
    slower = estimate_speed(moe, eager, H100, framework="hf-trainer")
    assert slower.tokens_per_s_per_gpu < estimate_speed(moe, wl, H100, framework="hf-trainer").tokens_per_s_per_gpu


def test_transformers5_grouped_mm_experts_drop_the_loop(moe):
    # --experts-impl grouped_mm: no per-expert loop, host syncs or per-expert ZeRO-3 fetches, and two stacked
    # tensors per layer for the ZeRO gradient hooks instead of three linears per expert
    wl = Workload(seq_len=2048, micro_batch=2, grad_accum=3, gpus=8, strategy="zero3", grad_ckpt=True)
    fl = flops_per_token(moe, wl)
    loop = engines.features(moe, wl, H100, "deepspeed", flops=fl)
    gmm = engines.features(moe, wl.with_(experts_impl="grouped_mm"), H100, "deepspeed", flops=fl)
    assert loop.expert_kernel_units > 0 and loop.zero3_fetches > 0
    assert gmm.expert_kernel_units == 0 and gmm.stacked_expert_bytes == 0
    assert gmm.zero3_fetches == pytest.approx(3 * moe.n_moe_layers * 3)  # one stacked module per layer and pass
    no_leaf = engines.features(moe, wl.with_(experts_impl="grouped_mm"), H100, "deepspeed", flops=fl, z3_leaf_moe=False)
    assert no_leaf.zero3_fetches == gmm.zero3_fetches
    assert gmm.zero_hook_calls < loop.zero_hook_calls / 20
    assert gmm.expert_gemm_flops == pytest.approx(loop.expert_gemm_flops)
    s_loop = estimate_speed(moe, wl, H100, framework="deepspeed")
    s_gmm = estimate_speed(moe, wl.with_(experts_impl="grouped_mm"), H100, framework="deepspeed")
    assert s_gmm.tokens_per_s_per_gpu > 2 * s_loop.tokens_per_s_per_gpu
    assert any("grouped_mm" in a and "no published" in a for a in s_gmm.assumptions)
    assert any("modulelist" in a for a in s_loop.assumptions)
    # dense models and other engines ignore it
    q = get_model("Qwen3-0.6B")
    assert estimate_speed(q, wl, H100, framework="deepspeed").tokens_per_s_per_gpu == pytest.approx(
        estimate_speed(q, wl.with_(experts_impl="grouped_mm"), H100, framework="deepspeed").tokens_per_s_per_gpu)


def test_eager_attention_materialises_the_scores(q8):
    # --attention eager: full S x S score/value matmuls (twice the causal flash count) and the score matrix
    # streamed through HBM per head and layer; the memory model already counts its activations
    wl = Workload(seq_len=4096, micro_batch=2, grad_accum=2, gpus=8, strategy="zero1", grad_ckpt=True)
    fl = flops_per_token(q8, wl)
    flash = engines.features(q8, wl, H100, "deepspeed", flops=fl)
    eager = engines.features(q8, wl.with_(attention="eager"), H100, "deepspeed", flops=fl)
    assert eager.attention_flops == 0 and flash.eager_attention_flops == 0 and flash.eager_score_bytes == 0
    fwd = fl.forward_attention_flops * 2 * 4096 * 2  # causal count, per GPU step (tokens below)
    assert eager.eager_attention_flops == pytest.approx(2 * fwd * (2 + 2))  # 2 forwards (recompute) + backward
    tokens = 2 * 4096 * 2  # per GPU per step (DP 8: each GPU its own micro-batches)
    scores = tokens * 4096 * q8.num_heads * q8.n_full_attention_layers
    per_score = 2 * engine_assumptions.EAGER_SCORE_BYTES_FORWARD + engine_assumptions.EAGER_SCORE_BYTES_BACKWARD
    assert eager.eager_score_bytes == pytest.approx(scores * per_score)  # grad_ckpt: the forward runs twice
    fast = estimate_speed(q8, wl, H100, framework="deepspeed")
    slow = estimate_speed(q8, wl.with_(attention="eager"), H100, framework="deepspeed")
    assert slow.tokens_per_s_per_gpu < 0.8 * fast.tokens_per_s_per_gpu


def test_flash_attention_2_on_hopper_runs_at_the_ampere_kernel_share(q8):
    # --attention flash is FlashAttention-2 (mma.sync, no wgmma): on Hopper it runs at fa2_hopper_factor of the
    # Hopper kernels' rate (sdpa -> cuDNN, flash3); on Ampere it is the native kernel and nothing changes
    wl = Workload(seq_len=16384, micro_batch=1, grad_accum=2, gpus=8, strategy="fsdp", grad_ckpt=True)
    fl = flops_per_token(q8, wl)
    c = engines.DEFAULT_CONSTANTS
    t = {}
    for hw in (H100, A100):
        for att in ("sdpa", "flash", "flash3"):
            f = engines.features(q8, wl.with_(attention=att), hw, "fsdp2", flops=fl)
            assert f.fa2_on_hopper == (att == "flash" and hw is H100)
            t[hw.name, att] = engines.compute_time(f, c)
    assert t["H100", "flash"].attention_seconds == pytest.approx(t["H100", "sdpa"].attention_seconds
                                                                 / c.fa2_hopper_factor)
    assert t["H100", "flash3"].seconds == t["H100", "sdpa"].seconds
    assert t["A100", "flash"].seconds == t["A100", "sdpa"].seconds
    assert 0.3 < c.fa2_hopper_factor < 0.8  # fitted near the 329/631 TFLOP/s prior (pytorch/pytorch#142132)
    slow = estimate_speed(q8, wl.with_(attention="flash"), H100, framework="fsdp2")
    fast = estimate_speed(q8, wl, H100, framework="fsdp2")
    assert slow.tokens_per_s_per_gpu < 0.9 * fast.tokens_per_s_per_gpu


def test_zero3_leaf_modules_fetch_a_moe_block_once(moe):
    # ms-swift >= 3.10 and LLaMA-Factory make each MoE block a ZeRO-3 leaf module: one fetch per block and pass
    # instead of one per expert linear the loop visits (what the 2025 ms-swift benchmark rows ran)
    wl = Workload(seq_len=4096, gpus=8, strategy="zero3", grad_ckpt=True)
    fl = flops_per_token(moe, wl)
    leaf = engines.features(moe, wl, H100, "deepspeed", flops=fl)
    per_expert = engines.features(moe, wl, H100, "deepspeed", flops=fl, z3_leaf_moe=False)
    passes = 3  # forward, recompute, backward
    assert leaf.zero3_fetches == pytest.approx(moe.n_moe_layers * passes)
    visited = min(moe.num_experts, 4096 * moe.experts_per_token)
    assert per_expert.zero3_fetches == pytest.approx(moe.n_moe_layers * visited * 3 * passes)
    fast = estimate_speed(moe, wl, H100, framework="deepspeed")
    slow = estimate_speed(moe, wl, H100, framework="deepspeed", z3_leaf_moe=False)
    assert slow.tokens_per_s_per_gpu < fast.tokens_per_s_per_gpu
    assert any("leaf module" in a for a in fast.assumptions)


def test_per_expert_zero3_rows_keep_a_valid_parameter_trace():
    # The speed model times ZeRO-3 without leaf modules (z3_leaf_moe false) as per-expert fetches along a valid
    # DeepSpeed parameter trace (prefetch on; docs/speed-model.md "Trace invalidation"): true only when every expert
    # gets tokens in every micro-batch, since a changing hit set invalidates the trace and ranks that skip different
    # experts stop (benchmarks/zero3_moe_trace.py). Every such row must be Hugging Face ModuleList experts under
    # ZeRO-3 with at least 100 routed tokens per expert on average (P(an expert gets none) ~ e^-100 under balanced
    # routing); a shorter row needs a model of the invalidated trace first.
    data = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    seen = 0
    for r in data["rows"] + (data.get("excluded_rows") or []):
        if r.get("z3_leaf_moe", True):
            continue
        seen += 1
        m = data["models"][r["model"]]
        model = (get_model(r["model"]) if m["registry_or_config"] == "registry"
                 else from_hf_config(m["config"], name=r["model"]))
        assert model.is_moe, r["id"]
        assert r["engine"] in ("deepspeed", "hf-trainer") and r["strategy"] == "zero3", r["id"]
        assert r.get("experts_impl", "modulelist") == "modulelist", r["id"]
        tokens = r["mbs"] * r["seq_len"] / (r.get("cp", 1) * r.get("ulysses", 1))
        assert tokens * model.experts_per_token / model.num_experts >= 100, r["id"]
    assert seen >= 2  # the two ms-swift rows


def test_zero3_module_fetches_bound_small_short_steps_on_the_host(q8):
    # DeepSpeed ZeRO-3 fetches every module whose weight is >= 10 x hidden elements (smaller ones persist) once
    # per pass; the host time of those fetches runs alongside the GPU and bounds the step when the GPU work is short
    wl = Workload(seq_len=256, micro_batch=1, grad_accum=8, gpus=8, strategy="zero3", grad_ckpt=True)
    per_pass = 7 * q8.num_layers + 2  # q k v o gate up down per layer, embeddings and LM head; norms persist
    assert engine_terms.zero3_module_fetches(q8, wl, "hf") == 8 * 3 * per_pass
    assert engine_terms.zero3_module_fetches(q8, wl.with_(grad_ckpt=False), "hf") == 8 * 2 * per_pass
    assert engine_terms.zero3_module_fetches(q8, wl.with_(strategy="zero2"), "hf") == 0
    lora8 = engine_terms.zero3_module_fetches(q8, wl.with_(method="lora", lora_rank=8), "hf")
    lora64 = engine_terms.zero3_module_fetches(q8, wl.with_(method="lora", lora_rank=64), "hf")
    # rank 8: 8 x 4096 < 40960 elements stay resident; only the MLP adapters' 12288-wide side is fetched (gate and
    # up B, down A: 8 x 12288 = 98304)
    assert lora8 == 8 * 3 * (per_pass + 3 * q8.num_layers)
    assert lora64 == 8 * 3 * (per_pass + 2 * 7 * q8.num_layers)  # rank 64: A and B of every linear fetched
    c = engines.DEFAULT_CONSTANTS
    f3 = engines.features(q8, wl, H100, "deepspeed", flops=flops_per_token(q8, wl))
    f2 = engines.features(q8, wl.with_(strategy="zero2"), H100, "deepspeed", flops=flops_per_token(q8, wl))
    t3, t2 = engines.compute_time(f3, c), engines.compute_time(f2, c)
    assert t3.launch_bound and t3.seconds > 1.5 * t2.seconds
    assert t3.launch_seconds - t2.launch_seconds == pytest.approx(f3.zero3_module_fetches * c.zero3_host_seconds)
    long = wl.with_(seq_len=16384)  # long sequences: the GPU work hides the host's fetches
    fl = engines.features(q8, long, H100, "deepspeed", flops=flops_per_token(q8, long))
    assert not engines.compute_time(fl, c).launch_bound


def test_zero3_host_time_grows_with_the_parameters_a_fetch_gathers(moe, q8):
    # DeepSpeed's fetch, wait and release run per parameter (benchmarks/zero3_host_probe.py): a MoE block gathered
    # as one leaf module holds 3 weights per expert under transformers < 5 (gate, up, down), 2 stacked tensors
    # under transformers 5; without a leaf block every nn.Linear expert gathers its single weight
    wl = Workload(seq_len=8192, micro_batch=1, grad_accum=2, gpus=8, strategy="zero3", grad_ckpt=True)
    passes = 3  # forward, recomputed forward, backward
    assert engine_terms.zero3_extra_params(moe, wl, "hf", z3_leaf_moe=True) == (
        2 * passes * moe.n_moe_layers * 3 * moe.num_experts)
    assert engine_terms.zero3_extra_params(moe, wl, "hf", z3_leaf_moe=False) == 0
    tf5 = wl.with_(experts_impl="grouped_mm")
    assert engine_terms.zero3_extra_params(moe, tf5, "hf", z3_leaf_moe=True) == 2 * passes * moe.n_moe_layers * 2
    assert engine_terms.zero3_extra_params(moe, tf5, "hf", z3_leaf_moe=False) == 2 * passes * moe.n_moe_layers
    assert engine_terms.zero3_extra_params(q8, wl, "hf") == 0  # dense: one weight per module (biases persist)
    assert engine_terms.zero3_extra_params(moe, wl.with_(strategy="zero2"), "hf") == 0
    assert engine_terms.zero3_extra_params(moe, wl, "megatron") == 0
    c = engines.DEFAULT_CONSTANTS
    fl = flops_per_token(moe, wl)
    leaf = engines.features(moe, wl, H100, "deepspeed", flops=fl, z3_leaf_moe=True)
    stacked = engines.features(moe, tf5, H100, "deepspeed", flops=flops_per_token(moe, tf5), z3_leaf_moe=True)
    assert leaf.zero3_extra_params == engine_terms.zero3_extra_params(moe, wl, "hf", z3_leaf_moe=True)
    # the extra parameters are host time next to the per-fetch time and the kernel launches
    t = engines.compute_time(leaf, c)
    t0 = engines.compute_time(dataclasses.replace(leaf, zero3_extra_params=0.0), c)
    assert t.launch_seconds - t0.launch_seconds == pytest.approx(leaf.zero3_extra_params * c.zero3_host_param_seconds)
    # 384 expert weights per layer and pass: seconds of host time per step, far more than the stacked experts'
    assert leaf.zero3_extra_params * c.zero3_host_param_seconds > 1.0
    assert stacked.zero3_extra_params * c.zero3_host_param_seconds < 0.05


def test_zero3_fetch_latency_only_for_eager_moe(moe, q8):
    wl = Workload(seq_len=4096, gpus=8, strategy="zero3")
    f_moe = engines.features(moe, wl, H100, "deepspeed", flops=flops_per_token(moe, wl))
    f_dense = engines.features(q8, wl, H100, "deepspeed", flops=flops_per_token(q8, wl))
    assert f_moe.zero3_fetches > 0 and f_dense.zero3_fetches == 0
    z2 = engines.features(moe, wl.with_(strategy="zero2"), H100, "deepspeed", flops=flops_per_token(moe, wl))
    assert z2.zero3_fetches == 0


def test_lora_adapters_cost_more_than_their_flop_share(q8):
    wl = Workload(seq_len=4096, micro_batch=2, gpus=1, grad_ckpt=False, method="lora", lora_rank=16)
    f = engines.features(q8, wl, H100, "fsdp2", flops=flops_per_token(q8, wl))
    c = engines.DEFAULT_CONSTANTS
    t = engines.compute_time(f, c)
    no_lora = engines.compute_time(f.__class__(**{**f.__dict__, "lora_flops": 0.0}), c)
    flop_share = f.lora_flops / (f.dense_gemm_flops + f.lora_flops + f.attention_flops)
    assert (t.seconds - no_lora.seconds) / t.seconds > 2 * flop_share


def test_lora_adapter_traffic_follows_peft_op_count(q8):
    wl = Workload(seq_len=2048, gpus=1, grad_ckpt=True, method="lora", lora_rank=16)
    tokens = 2048.0
    got = engine_terms.lora_elementwise_bytes(q8, wl, "hf", tokens, forwards=2.0)
    # by hand: every decoder linear of Qwen3-8B (q, k, v, o, gate, up, down), 36 layers
    h, kv, i = q8.hidden_size, q8.num_kv_heads * q8.head_dim, q8.intermediate_size
    q_out = q8.num_heads * q8.head_dim
    dims = [(h, q_out), (h, kv), (h, kv), (q_out, h), (h, i), (h, i), (i, h)]
    a = engine_assumptions
    per_layer = sum(2 * (a.LORA_FORWARD_BYTES_PER_INPUT * di + a.LORA_FORWARD_BYTES_PER_OUTPUT * do)
                    + a.LORA_BACKWARD_BYTES_PER_INPUT * di + a.LORA_BACKWARD_BYTES_PER_OUTPUT * do for di, do in dims)
    assert got == pytest.approx(per_layer * q8.num_layers * tokens)
    # fewer targets, less traffic; full training, Megatron (fused adapters): none
    few = engine_terms.lora_elementwise_bytes(q8, wl.with_(lora_targets=("q_proj", "v_proj")), "hf", tokens, 2.0)
    assert 0 < few < got / 4
    assert engine_terms.lora_elementwise_bytes(q8, wl.with_(method="full"), "hf", tokens, 2.0) == 0.0
    assert engine_terms.lora_elementwise_bytes(q8, wl, "megatron", tokens, 2.0) == 0.0
    # the traffic weighs more on a small hidden size: its share of the step grows as the model shrinks
    small = get_model("Qwen3-0.6B")

    def share(m):
        f = engines.features(m, wl, A100, "hf-trainer", flops=flops_per_token(m, wl))
        t = engines.compute_time(f, engines.DEFAULT_CONSTANTS)
        bw = f.mem_gbytes_per_s * 1e9 * engine_assumptions.HBM_EFFICIENCY
        return f.lora_bytes / bw / t.seconds
    assert share(small) > share(q8) > 0


def test_attention_kernels_pad_the_head_dimension():
    wl = Workload(seq_len=4096, gpus=1)
    pad = engine_terms.attention_head_padding
    assert pad(128, wl.with_(attention="flash"), H100) == 1.0
    assert pad(112, wl.with_(attention="flash"), H100) == pytest.approx(128 / 112)  # MPT-30B
    assert pad(80, wl.with_(attention="flash"), A100) == pytest.approx(96 / 80)
    assert pad(80, wl.with_(attention="flash3"), H100) == pytest.approx(96 / 80)
    assert pad(112, wl, A100) == pytest.approx(128 / 112)  # SDPA's flash backend off Hopper
    assert pad(112, wl, H100) == 1.0  # cuDNN attention takes multiples of 8
    assert pad(80, wl.with_(attention="flash"), A100, triton_attention=True) == pytest.approx(128 / 80)


def test_small_gemm_penalty_scales_with_the_roofline_ridge(q8):
    """The GEMM size law's half-point is where a narrow GEMM turns memory-bound: proportional to the GPU's
    FLOP per byte, so a narrow (TP-sharded) GEMM loses less on H20 than on H100, and more in FP8."""
    c = engines.DEFAULT_CONSTANTS
    h20 = Hardware(name="H20", gpu_class="hopper", peak_tflops=148, peak_fp8_tflops=296, mem_gbytes_per_s=4000,
                   intra_node_gbytes_per_s=450)
    wl = Workload(seq_len=4096, gpus=8, tp=8, strategy="zero1", grad_ckpt=False)

    def gemm_share_of_peak(hw, w):
        f = engines.features(q8, w, hw, "megatron", flops=flops_per_token(q8, w))
        t = engines.compute_time(f, c)
        peak = (f.peak_fp8_tflops if f.fp8 else f.peak16_tflops) * 1e12
        return f.dense_gemm_flops / t.gemm_seconds / peak / engines.class_factor(
            c, "hopper", f.peak16_tflops * 1e3 / f.mem_gbytes_per_s)
    wide, narrow = wl.with_(tp=1), wl
    loss = {hw.name: gemm_share_of_peak(hw, narrow) / gemm_share_of_peak(hw, wide) for hw in (H100, h20)}
    assert loss["H20"] > loss["H100"]
    assert gemm_share_of_peak(H100, narrow.with_(precision="fp8")) / gemm_share_of_peak(
        H100, wide.with_(precision="fp8")) < loss["H100"]


def test_fp8_helps_dense_more_than_fine_grained_moe(q8, moe):
    def gain(m, ep):
        wl = Workload(seq_len=4096, gpus=8, strategy="zero1", grad_accum=8, grad_ckpt=False, ep=ep)
        return (estimate_speed(m, wl.with_(precision="fp8"), H100, framework="megatron").tokens_per_s_per_gpu
                / estimate_speed(m, wl, H100, framework="megatron").tokens_per_s_per_gpu)
    assert 1.0 < gain(moe, 8) < gain(q8, 1)


def test_compile_and_selective_recompute_move_time_the_right_way(q8):
    wl = Workload(seq_len=8192, micro_batch=2, gpus=8, strategy="fsdp", grad_ckpt=False)
    eager = estimate_speed(q8, wl, H100, framework="fsdp2")
    comp = estimate_speed(q8, wl, H100, framework="fsdp2", compiled=True)
    sac = estimate_speed(q8, wl, H100, framework="fsdp2", recompute_fraction=0.36)
    full = estimate_speed(q8, wl.with_(grad_ckpt=True), H100, framework="fsdp2")
    assert comp.tokens_per_s > eager.tokens_per_s
    assert full.tokens_per_s < sac.tokens_per_s < eager.tokens_per_s


def test_ampere_reaches_a_larger_share_of_its_lower_peak(q8):
    wl = Workload(seq_len=2048, micro_batch=4, gpus=8, strategy="fsdp")
    h, a = estimate_speed(q8, wl, H100, framework="fsdp2"), estimate_speed(q8, wl, A100, framework="fsdp2")
    assert a.mfu > h.mfu and a.tokens_per_s < h.tokens_per_s


def test_share_of_peak_follows_the_roofline_ridge(q8):
    # more HBM bandwidth per FLOP -> a larger share of the peak: H20 (148 TFLOP/s, 4 TB/s) > A100 > H100
    c = engines.DEFAULT_CONSTANTS
    h20 = Hardware(name="H20", gpu_class="hopper", peak_tflops=148, mem_gbytes_per_s=4000,
                   intra_node_gbytes_per_s=450)
    ridge = {"H100": 989e3 / 3350, "A100": 312e3 / 2039, "H20": 148e3 / 4000}
    assert engines.class_factor(c, "hopper", ridge["H100"]) == pytest.approx(1.0, rel=1e-3)
    f = {k: engines.class_factor(c, "hopper" if k != "A100" else "ampere", r) for k, r in ridge.items()}
    assert f["H20"] > f["A100"] > f["H100"]
    assert f["H20"] == pytest.approx((ridge["H100"] / ridge["H20"]) ** c.ridge_exponent)
    wl = Workload(seq_len=4096, micro_batch=1, gpus=8, tp=4, strategy="zero1")
    s20, s100 = (estimate_speed(q8, wl, hw, framework="megatron") for hw in (h20, H100))
    assert s20.mfu > s100.mfu
    # older classes keep their fixed factor, whatever the bandwidth; Ada follows the law (L40S, ridge 419, below
    # H100's share; L20, ridge 138, above it), and a GPU measured far off the law takes its measurement
    assert engines.class_factor(c, "volta", 50.0) == engine_assumptions.GPU_CLASS_FACTOR_FIXED["volta"]
    assert engines.class_factor(c, "ada", 362e3 / 864) < 1.0 < engines.class_factor(c, "ada", 119.5e3 / 864)
    l4 = engine_assumptions.MEASURED_GEMM_SHARE["L4"]
    assert engines.class_factor(c, "ada", 121e3 / 300, l4) == pytest.approx(l4 / engine_assumptions.H100_SXM_GEMM_SHARE)
    law = Hardware(name="L4-law", gpu_class="ada", peak_tflops=121, mem_gbytes_per_s=300, intra_node_gbytes_per_s=32)
    meas = Hardware(name="L4", gpu_class="ada", peak_tflops=121, mem_gbytes_per_s=300, intra_node_gbytes_per_s=32)
    wl1 = Workload(seq_len=4096, micro_batch=1, gpus=1, strategy="ddp", method="lora")
    slow, fast = (estimate_speed(q8, wl1, hw, framework="hf-trainer") for hw in (meas, law))
    assert slow.tokens_per_s < fast.tokens_per_s  # the measured share (0.52 of peak) is below the law's (0.77)


def test_interleaved_pipeline_shrinks_the_bubble(q8):
    wl = Workload(seq_len=4096, gpus=8, pp=4, grad_accum=8, strategy="zero1")
    a = estimate_speed(q8, wl, H100, framework="megatron")
    b = estimate_speed(q8, wl, H100, framework="megatron", virtual_pp=4)
    assert b.bubble_fraction == pytest.approx(3 / (32 + 3)) and a.bubble_fraction == pytest.approx(3 / (8 + 3))
    with pytest.raises(WorkloadError):
        estimate_speed(q8, wl, H100, framework="megatron", virtual_pp=0)


def test_optimizer_step_counts_clipping_and_grad_buffer_zeroing_per_engine(q8):
    """The fixed cost of one optimizer step: AdamW + the clipping norm over the optimizer's shard, PyTorch's
    unconditional clip scaling, Megatron-Core's zeroing of the whole tp/pp-local gradient buffer."""
    A = engine_assumptions
    bw = H100.mem_gbytes_per_s * 1e9 * A.HBM_EFFICIENCY
    n = float(q8.total_params)
    wl = Workload(seq_len=4096, micro_batch=1, gpus=8, tp=4, strategy="zero1")  # dp 2
    _, meg = engine_terms.optimizer_seconds(q8, wl, H100, None, [], "megatron")
    _, nat = engine_terms.optimizer_seconds(q8, wl, H100, None, [], "native")
    shard = n / 4 / 2
    assert meg == pytest.approx((shard * (A.OPTIMIZER_BYTES_PER_PARAM + A.GRAD_NORM_BYTES_PER_PARAM)
                                 + n / 4 * A.GRAD_BUFFER_ZERO_BYTES_PER_PARAM["megatron"]) / bw)
    assert nat == pytest.approx(shard * (A.OPTIMIZER_BYTES_PER_PARAM + A.GRAD_NORM_BYTES_PER_PARAM
                                         + A.CLIP_SCALE_BYTES_PER_PARAM["native"]) / bw)
    # the zeroing is not sharded by the distributed optimizer: more data-parallel ranks shrink the rest only
    _, meg_dp8 = engine_terms.optimizer_seconds(q8, wl.with_(gpus=32), H100, None, [], "megatron")
    assert meg_dp8 > meg / 4
    # a fixed cost per step: its share of the step falls as the global batch grows
    small = estimate_speed(q8, wl.with_(grad_accum=1), H100, framework="megatron")
    big = estimate_speed(q8, wl.with_(grad_accum=64), H100, framework="megatron")
    f_small, f_big = (engines.features(q8, w, H100, "megatron", flops=flops_per_token(q8, w))
                      for w in (wl.with_(grad_accum=1), wl.with_(grad_accum=64)))
    assert f_small.optimizer_seconds == pytest.approx(f_big.optimizer_seconds)
    assert small.tokens_per_s < big.tokens_per_s
    # CPU offload moves the step (and its clipping) to the host
    assert engine_terms.optimizer_seconds(q8, wl.with_(offload="optimizer", strategy="zero2"), H100, None, [],
                                          "hf")[1] == 0.0


# ------------------------------------------------------------------------------------------- bookkeeping
def test_every_constant_is_named_sourced_and_reported(q8):
    assert set(engines.CONSTANT_SOURCES) == set(engines.ALL_FIELDS)
    assert set(engines.FIT_FIELDS) | set(engines.FIXED_AT_PRIOR) == set(engines.ALL_FIELDS)
    for name in engines.FIXED_AT_PRIOR:  # not fitted: the documented prior is what every estimate uses
        assert getattr(engines.DEFAULT_CONSTANTS, name) == getattr(engines.PRIORS, name)
        assert "not fitted" in engines.CONSTANT_SOURCES[name]
    for name, line in engines.CONSTANT_SOURCES.items():
        assert line.startswith(name) and ("fitted" in line or "prior" in line)
    s = estimate_speed(q8, Workload(seq_len=4096, gpus=8, strategy="zero3"), H100, framework="deepspeed")
    text = "\n".join(s.assumptions)
    for n in ("gemm_eff_hf", "elem_bytes_hf", "gemm_half_dim", "attention_relative_native", "launch_seconds"):
        assert n in text


def test_constants_validate():
    with pytest.raises(WorkloadError):
        engines.EngineConstants(gemm_eff_hf=1.5)
    with pytest.raises(WorkloadError):
        engines.EngineConstants(launch_seconds=0)
    with pytest.raises(WorkloadError):
        engines.features(get_model("Qwen3-0.6B"), Workload(), H100, "jax", flops=None)


def test_fitted_constants_differ_from_priors_only_within_bounds():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import speed_loso

    for n in engines.FIT_FIELDS:
        lo, hi = speed_loso.LOG_BOUNDS[n]
        v = getattr(engines.DEFAULT_CONSTANTS, n)
        assert lo <= v <= hi and math.isfinite(v)


def test_megatron_without_grouped_gemm_loops_over_local_experts_and_is_slower():
    from trainfit.estimate import engines
    from trainfit.estimate.speed import flops_per_token
    from trainfit.models import get_model
    from trainfit.workload import Workload
    from trainfit.catalog.hardware import hardware_for
    from trainfit.catalog import get_gpu

    m = get_model("Qwen3-30B-A3B")
    wl = Workload(seq_len=4096, gpus=8, ep=4, strategy="zero1", grad_ckpt=False)
    hw = hardware_for(get_gpu("H100-SXM"), None)
    fl = flops_per_token(m, wl)
    grouped = engines.features(m, wl, hw, "megatron", flops=fl)
    looped = engines.features(m, wl, hw, "megatron", flops=fl, moe_grouped_gemm=False)
    assert grouped.expert_kernel_units == 0
    # 128 experts / EP 4 = 32 local experts visited per MoE layer and pass
    assert looped.expert_kernel_units == pytest.approx(grouped.moe_kernel_units * 32)
    c = engines.DEFAULT_CONSTANTS
    assert engines.compute_time(looped, c).seconds > engines.compute_time(grouped, c).seconds


def test_deepspeed_zero_hooks_count_hf_expert_linears():
    from trainfit.estimate import engines
    from trainfit.models import get_model
    from trainfit.workload import Workload

    m = get_model("Qwen3-30B-A3B")  # 48 layers x 128 experts x 3 linears = 18,432 expert tensors
    z2 = engine_terms.zero_hook_calls(m, Workload(seq_len=4096, gpus=8, strategy="zero2", grad_accum=2), "hf")
    assert z2 >= 2 * 18_432
    assert engine_terms.zero_hook_calls(m, Workload(seq_len=4096, gpus=8, strategy="ddp"), "hf") == 0
    assert engine_terms.zero_hook_calls(m, Workload(seq_len=4096, gpus=8, strategy="zero2"), "megatron") == 0


def test_described_constants_follow_the_language_each_call():
    """The assumption lines are built once per (constants, family, language): switching the language between calls
    still gives each language's lines, and a caller's list is its own."""
    from trainfit import i18n
    from trainfit.estimate import engine_describe

    c = engines.PRIORS
    with i18n.language("en"):
        en = engine_describe.describe(c, "native")
        en_sources = engine_describe.constant_sources()
    with i18n.language("zh"):
        zh = engine_describe.describe(c, "native")
        zh_sources = engine_describe.constant_sources()
    with i18n.language("en"):
        again = engine_describe.describe(c, "native")
    assert en == again and en != zh and any("\u4e00" <= ch <= "\u9fff" for ch in zh[0])
    assert en_sources.keys() == zh_sources.keys() and en_sources != zh_sources
    again.append("x")
    assert engine_describe.describe(c, "native") == en
