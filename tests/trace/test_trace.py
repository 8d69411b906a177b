"""Fake-tensor trace: breakdown, known per-layer bytes, optimizer temporaries, errors, CLI."""

import json
import subprocess
import sys

import pytest

from trainfit.errors import MissingExtraError, NotTraceableError
from trainfit.trace import BREAKDOWN_KEYS, check_traceable, trace_memory
from trainfit.workload import Workload

from _trace_tiny import tiny_qwen3, tiny_qwen3_moe

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # real torch/transformers steps on the CPU (seconds each)


def _act_bytes_per_token(s):
    """Saved activations per decoder layer per token, pure bf16 sdpa, no GC (trace-findings Q7)."""
    h, nh, nkv, hd, I = s.hidden_size, s.num_heads, s.num_kv_heads, s.head_dim, s.intermediate_size
    return 16 * h + 10 * nh * hd + 10 * nkv * hd + 8 * I + 8 * nh + 4 * nkv + 8


def test_result_fields_and_breakdown_sum(dense):
    r = trace_memory(dense, Workload(seq_len=128, grad_ckpt=False))
    d = r.to_dict()
    for k in ("model", "params", "tensor_peak_gib", "peak_phase", "breakdown_gib", "trace_seconds", "versions"):
        assert k in d
    assert set(d["breakdown_gib"]) == set(BREAKDOWN_KEYS)
    assert sum(r.breakdown_gib.values()) == pytest.approx(r.tensor_peak_gib, rel=1e-9)
    assert r.peak_phase in ("forward", "backward", "optimizer")
    assert r.params == {"total": dense.total_params, "trainable": dense.total_params, "active": dense.total_params}
    assert r.breakdown_gib["weights"] * 2**30 == pytest.approx(2 * dense.total_params, rel=0.001)
    assert set(d["versions"]) == {"torch", "transformers", "peft"}
    json.dumps(d)


def test_per_layer_activations_match_formula(dense):
    S = 128
    r = trace_memory(dense, Workload(seq_len=S, grad_ckpt=False))
    mid = r.per_layer_activation_bytes[1:-1]
    assert all(v == _act_bytes_per_token(dense) * S for v in mid)
    assert r.activation_bytes_per_token_per_layer == _act_bytes_per_token(dense)


def test_checkpointing_keeps_layer_inputs_only(dense):
    S = 128
    r = trace_memory(dense, Workload(seq_len=S, grad_ckpt=True))
    assert set(r.per_layer_activation_bytes) == {2 * dense.hidden_size * S}


def test_eager_saves_more_than_sdpa(dense):
    a = trace_memory(dense, Workload(seq_len=128, grad_ckpt=False))
    b = trace_memory(dense, Workload(seq_len=128, grad_ckpt=False, attention="eager"))
    assert b.activation_bytes_per_token_per_layer > a.activation_bytes_per_token_per_layer
    flash = trace_memory(dense, Workload(seq_len=128, grad_ckpt=False, attention="flash"))
    assert flash.peak_bytes == a.peak_bytes and any("flash" in n for n in flash.notes)


def test_foreach_adamw_adds_one_param_sized_temporary():
    s = tiny_qwen3(vocab=1024)
    fused = trace_memory(s, Workload(seq_len=32, grad_ckpt=True))
    foreach = trace_memory(s, Workload(seq_len=32, grad_ckpt=True, optimizer="adamw-foreach"))
    assert foreach.peak_phase == "optimizer"
    param_bytes = 2 * s.total_params
    assert foreach.peak_bytes - fused.peak_bytes == pytest.approx(param_bytes, rel=0.02)
    assert foreach.breakdown_gib["temporaries"] * 2**30 == pytest.approx(param_bytes, rel=0.01)


def test_logits_loss_region():
    S, s = 128, tiny_qwen3(vocab=32000)
    r = trace_memory(s, Workload(seq_len=S, grad_ckpt=True))
    # peak at backward start: fp32 log-softmax output + two fp32 S x V gradients
    assert r.peak_phase == "backward"
    assert r.breakdown_gib["logits_loss"] * 2**30 == pytest.approx(3 * 4 * S * s.vocab_size, rel=0.01)


def test_lora_params_and_states(dense):
    pytest.importorskip("peft")
    r = trace_memory(dense, Workload(seq_len=64, method="lora", lora_rank=8, grad_ckpt=True))
    h, I, nh, nkv, hd, L = (dense.hidden_size, dense.intermediate_size, dense.num_heads, dense.num_kv_heads,
                            dense.head_dim, dense.num_layers)
    lin = [(h, nh * hd), (h, nkv * hd), (h, nkv * hd), (nh * hd, h), (h, I), (h, I), (I, h)]
    n_lora = L * sum(8 * (i + o) for i, o in lin)
    assert r.params["trainable"] == n_lora
    assert r.params["total"] == dense.total_params + n_lora
    # fp32 adapters (PEFT default), two fp32 AdamW states, plus one 512-byte `step` tensor per adapter matrix
    n_tensors = L * len(lin) * 2
    assert r.breakdown_gib["optimizer"] * 2**30 == pytest.approx(8 * n_lora + 512 * n_tensors, rel=1e-6)


def test_freeze_trains_last_layers(dense):
    r = trace_memory(dense, Workload(seq_len=64, method="freeze", freeze_trainable_layers=1, grad_ckpt=False))
    assert r.params["trainable"] == dense.layer_params(dense.num_layers - 1)


def test_moe_traces(moe):
    r = trace_memory(moe, Workload(seq_len=64, grad_ckpt=False))
    assert r.params["total"] == moe.total_params
    assert r.params["active"] == moe.active_params


@pytest.mark.parametrize("cfg", [
    dict(model_type="qwen2", hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=2, vocab_size=2048, tie_word_embeddings=True),
    dict(model_type="llama", hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=2, vocab_size=2048),
    dict(model_type="mistral", hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=2, head_dim=32, vocab_size=2048),
    dict(model_type="qwen2_moe", hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
         shared_expert_intermediate_size=128, num_experts=4, num_experts_per_tok=2, num_hidden_layers=2,
         num_attention_heads=4, num_key_value_heads=2, vocab_size=2048),
    dict(model_type="qwen3_next", hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
         shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2, num_hidden_layers=4,
         num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=2048, linear_num_key_heads=2,
         linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4),
])
def test_other_architectures_build_and_trace(cfg):
    from trainfit.models import from_hf_config

    shape = from_hf_config(cfg, name=f"tiny-{cfg['model_type']}")
    r = trace_memory(shape, Workload(seq_len=64, grad_ckpt=False), steps=1)
    assert r.params["total"] == shape.total_params  # the config round-trip is exact
    assert r.tensor_peak_gib > 0


@pytest.mark.parametrize("kw", [
    dict(method="qlora"),
    dict(optimizer="adamw-8bit"),
    dict(optimizer="paged-adamw-8bit"),
    dict(strategy="zero3", gpus=8),
    dict(strategy="zero2", gpus=8),
    dict(precision="fp16"),
    dict(precision="fp8"),
    dict(loss="fused"),
    dict(tp=2, gpus=2),
    dict(strategy="fsdp", gpus=8, offload="optimizer"),
])
def test_not_traceable(dense, kw):
    w = Workload(**kw)
    with pytest.raises(NotTraceableError) as ei:
        check_traceable(dense, w)
    assert ei.value.message and ei.value.fix
    with pytest.raises(NotTraceableError):
        trace_memory(dense, w)


def test_missing_torch_raises_missing_extra(dense, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtraError) as ei:
        trace_memory(dense, Workload(seq_len=64))
    assert "trainfit[trace]" in ei.value.fix


def test_core_and_trace_cli_import_no_torch():
    code = ("import sys, trainfit.cli, trainfit.trace, trainfit._cli.trace; trainfit.cli.build_parser(); "
            "bad=[m for m in ('torch','transformers','peft') if m in sys.modules]; print(bad); "
            "sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_torch_free_check_loads_no_torch():
    """check_traceable (what `trainfit trace` runs first, to say "needs torch" before importing it) and the runner
    module it lives beside import no torch: the tracker, which does, is imported inside the traced run only."""
    code = ("import sys; from trainfit.trace import check_traceable; import trainfit.trace.runner; "
            "from trainfit.models import get_model; from trainfit.workload import Workload; "
            "check_traceable(get_model('Qwen3-0.6B'), Workload()); "
            "bad=[m for m in ('torch','transformers','peft') if m in sys.modules]; print(bad); "
            "sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_cli_trace_json(tmp_path, capsys):
    from trainfit.cli import main

    cfg = dict(model_type="qwen3", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=2048,
               tie_word_embeddings=True)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    rc = main(["trace", "--config", str(p), "--seq-len", "64", "--no-grad-ckpt", "--steps", "1", "--json"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["params"]["total"] > 0
    assert d["peak_phase"] in ("forward", "backward", "optimizer")
    assert set(d["breakdown_gib"]) == set(BREAKDOWN_KEYS)


def test_cli_trace_table_and_not_traceable(tmp_path, capsys):
    from trainfit.cli import main

    cfg = dict(model_type="qwen3", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=2048)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    assert main(["trace", "--config", str(p), "--seq-len", "64", "--steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "peak allocated tensors" in out and "optimizer states" in out
    assert main(["trace", "--config", str(p), "--method", "qlora", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["code"] == "not-traceable"
