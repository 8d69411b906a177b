"""``--loss half``: a cross-entropy over the LM head's 16-bit logits with no fp32 copy (Qwen v1 remote code run
without autocast, e.g. under DeepSpeed fp16). The byte counts are checked by hand, against a trace of that loss
code on CPU with trainfit's storage tracker, and through the options that use them."""

import pytest

from trainfit.errors import NotTraceableError
from trainfit.estimate.memory import (GIB, HALF_CE_BWD_BYTES, HALF_CE_FWD_BYTES, HALF_CE_SHIFT_COPY_BYTES,
                                      _loss_region, estimate_memory)
from trainfit.targets import loss_mismatch
from trainfit.models import get_model
from trainfit.workload import LOSSES, Workload

M = get_model("Qwen3-8B")
V = M.vocab_size
# DeepSpeed ZeRO-2 fp16 on one GPU, Q-LoRA, long sequence: the logits dominate (the Qwen v1 README's Q-LoRA setup)
DS_FP16 = Workload(method="qlora", lora_rank=64, seq_len=8192, strategy="zero2", precision="fp16")


def test_half_is_a_loss_choice():
    assert "half" in LOSSES
    assert Workload(loss="half").loss == "half"


@pytest.mark.parametrize("mb", [1, 2, 4])
def test_loss_region_by_hand(mb):
    wl = DS_FP16.with_(loss="half", micro_batch=mb)
    vt = V * 8192 * mb
    fwd, bwd, note = _loss_region(M, wl, 8192 * mb, head_trains=False)
    # forward: fp16 logits + fp16 log_softmax output (+ the shifted copy when the slice is not contiguous)
    assert fwd == (2 + 2 + (2 if mb > 1 else 0)) * vt
    # backward start: saved log_softmax output + nll grad + log_softmax grad, all fp16
    assert bwd == (2 + 2 + 2) * vt
    assert "half" in note


def test_half_saves_six_bytes_per_logit_at_the_backward_peak():
    std = estimate_memory(M, DS_FP16)
    half = estimate_memory(M, DS_FP16.with_(loss="half"))
    vt = V * 8192
    assert std.peak_phase == half.peak_phase == "backward"
    assert std.breakdown_gib["logits_loss"] * GIB == pytest.approx(12 * vt)
    assert half.breakdown_gib["logits_loss"] * GIB == pytest.approx(6 * vt)
    assert std.tensor_peak_gib - half.tensor_peak_gib == pytest.approx(6 * vt / GIB)
    assert any("--loss half" in a for a in half.assumptions)


@pytest.mark.parametrize("precision", ["amp-bf16", "fp16"])
def test_half_under_ddp_autocast_sizes_as_standard(precision):
    wl = Workload(method="lora", seq_len=4096, strategy="ddp", precision=precision)
    std = estimate_memory(M, wl)
    half = estimate_memory(M, wl.with_(loss="half"))
    assert half.tensor_peak_gib == pytest.approx(std.tensor_peak_gib)
    assert any("autocast" in a and "--loss half" in a for a in half.assumptions)


def test_pure_bf16_ddp_takes_the_half_loss():
    wl = Workload(method="lora", seq_len=4096)  # pure bf16, no autocast
    assert estimate_memory(M, wl.with_(loss="half")).tensor_peak_gib < estimate_memory(M, wl).tensor_peak_gib


def test_half_loss_is_not_traceable():
    from trainfit.trace import check_traceable

    with pytest.raises(NotTraceableError, match="loss half"):
        check_traceable(M, Workload(method="lora", loss="half"))


def test_render_warns_hf_targets_about_half_loss():
    half = Workload(method="lora", loss="half")
    assert loss_mismatch(["swift", "llamafactory"], half)
    assert "swift, llamafactory" in loss_mismatch(["swift", "llamafactory"], half)[0]
    assert loss_mismatch(["swift"], Workload(method="lora")) == ()
    assert loss_mismatch(["monitoring"], half) == ()


def _traced_bytes_per_logit(upcast: bool, batch: int, T: int = 2048, V: int = 1024, h: int = 16):
    """Peak bytes per logit (forward, backward) above what was live before, of Qwen v1's loss code on CPU tensors."""
    torch = pytest.importorskip("torch")
    from torch.nn import CrossEntropyLoss

    from trainfit.trace.tracker import StorageTracker

    torch.manual_seed(0)
    lm_head = torch.nn.Linear(h, V, bias=False).half().requires_grad_(False)
    x = torch.randn(batch, T, h, dtype=torch.float16, requires_grad=True)
    labels = torch.randint(0, V, (batch, T))
    tr = StorageTracker(vocab_size=V, tokens=T * batch, rounding=False)
    with tr:
        tr.phase = "forward"
        start = tr.current
        tr.begin_step()
        lm_logits = lm_head(x)
        shift_logits = lm_logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        inp = shift_logits.view(-1, shift_logits.size(-1))
        if upcast:  # what autocast's fp32 policy does to cross_entropy's input
            inp = inp.float()
        loss = CrossEntropyLoss()(inp, shift_labels.view(-1))
        del inp, shift_logits, lm_logits  # the Trainer drops the outputs before backward
        fwd = tr.peak - start
        tr.phase = "backward"  # the saved log_softmax output, born in forward, counts here too
        tr.begin_step()
        loss.backward()
        bwd = tr.peak - start
    # everything else born here is hidden-sized (a CPU matmul may copy the h x V weight: 2h/T B per logit)
    return fwd / (batch * T * V), bwd / (batch * T * V)


def test_constants_match_a_trace_of_the_qwen_v1_loss():
    fwd, bwd = _traced_bytes_per_logit(upcast=False, batch=1)
    assert fwd == pytest.approx(HALF_CE_FWD_BYTES, abs=0.1)
    assert bwd == pytest.approx(HALF_CE_BWD_BYTES, abs=0.1)
    # with two samples the shifted slice is not contiguous: .contiguous() copies it
    fwd2, bwd2 = _traced_bytes_per_logit(upcast=False, batch=2)
    assert fwd2 == pytest.approx(HALF_CE_FWD_BYTES + HALF_CE_SHIFT_COPY_BYTES, abs=0.1)
    assert bwd2 == pytest.approx(HALF_CE_BWD_BYTES, abs=0.1)
    # and the fp32 cast gives the standard loss's backward 12 B
    _, bwd32 = _traced_bytes_per_logit(upcast=True, batch=1)
    assert bwd32 == pytest.approx(12.0, abs=0.1)


def test_rl_rejects_the_half_loss():
    from trainfit.errors import WorkloadError
    from trainfit.rl import RLConfig, estimate_rl_memory

    with pytest.raises(WorkloadError, match="loss half"):
        estimate_rl_memory(M, Workload(method="lora", loss="half"), RLConfig(algo="grpo"), 80.0)
    # the same job with the standard loss is sized
    assert estimate_rl_memory(M, Workload(method="lora"), RLConfig(algo="grpo"), 80.0).peak_gib > 0
