"""``--loss shift-copy``: the Hugging Face loss before transformers 4.49 (PR 35646), which shifted the fp32 logits with
``.contiguous()``: with more than one sample per micro-batch one more fp32 copy of all logits in the forward (4 x V x
T bytes; with one sample the slice is contiguous and nothing is copied). Checked by hand, against a trace of that loss
pattern on CPU with trainfit's storage tracker, and through check's read-back."""

import pytest

from trainfit.estimate.loss_region import (SHIFT_COPY_CE_BWD_BYTES, SHIFT_COPY_CE_FWD_BYTES, _loss_region,
                                           largest_loss_block_bytes_per_logit)
from trainfit.estimate.memory import GIB, estimate_memory
from trainfit.models import get_model
from trainfit.workload import LOSSES, Workload

M = get_model("Qwen3-8B")
V = M.vocab_size
LONG = Workload(method="full", seq_len=16384, micro_batch=2, strategy="zero3", gpus=8, grad_ckpt=True)
T2 = 16384 * 2  # tokens per micro-batch


def test_shift_copy_is_a_loss_choice():
    assert "shift-copy" in LOSSES
    assert Workload(loss="shift-copy").loss == "shift-copy"


def test_loss_region_by_hand():
    T = T2
    fwd, bwd, note = _loss_region(M, LONG.with_(loss="shift-copy"), T, head_trains=True)
    std_fwd, std_bwd, _ = _loss_region(M, LONG, T, head_trains=True)
    # one more fp32 copy of every logit in the forward; the backward never holds more than the standard loss's 12 B
    assert fwd - std_fwd == 4 * V * T
    assert bwd == std_bwd == 12 * V * T
    assert "shift-copy" in note
    # one sample per micro-batch: the slice is contiguous, no copy
    one = LONG.with_(loss="shift-copy", micro_batch=1, seq_len=T)
    assert _loss_region(M, one, T, head_trains=True)[0] == _loss_region(M, one.with_(loss="standard"), T, True)[0]
    assert largest_loss_block_bytes_per_logit(LONG.with_(loss="shift-copy")) == 4.0


def test_the_copy_moves_a_long_sequence_run_by_its_size():
    std = estimate_memory(M, LONG)
    old = estimate_memory(M, LONG.with_(loss="shift-copy"))
    vt = V * T2
    # the standard loss peaks at the start of backward (12 B per logit); the copy moves the peak into the forward
    assert std.peak_phase == "backward" and std.breakdown_gib["logits_loss"] * GIB == pytest.approx(12 * vt)
    assert old.peak_phase == "forward" and old.breakdown_gib["logits_loss"] * GIB == pytest.approx(14 * vt)
    assert old.tensor_peak_gib - std.tensor_peak_gib >= 2 * vt / GIB - 0.01
    assert any("shift-copy" in a for a in old.assumptions)
    # a chunked loss holds no full logits at all
    assert estimate_memory(M, LONG.with_(loss="fused")).tensor_peak_gib < std.tensor_peak_gib


def _traced_bytes_per_logit(shift_copy: bool, batch: int = 2, T: int = 1024, Vs: int = 1024, h: int = 16):
    """Peak bytes per logit (forward, backward) above what was live before, of the Hugging Face causal-LM loss on CPU:
    the model output's bf16 logits kept by the output object, the loss upcast to fp32, and either the pre-4.49 shift
    (slice the logits, make them contiguous) or the 4.49+ one (pad the labels)."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from trainfit.trace.tracker import StorageTracker

    torch.manual_seed(0)
    lm_head = torch.nn.Linear(h, Vs, bias=False).bfloat16().requires_grad_(False)
    x = torch.randn(batch, T, h, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, Vs, (batch, T))
    tr = StorageTracker(vocab_size=Vs, tokens=T * batch, rounding=False)
    with tr:
        tr.phase = "forward"
        start = tr.current
        tr.begin_step()
        out_logits = lm_head(x)  # held by the model output until the Trainer drops it
        up = out_logits.float()
        if shift_copy:
            flat = up[..., :-1, :].contiguous().view(-1, Vs)
            tgt = labels[..., 1:].contiguous().view(-1)
        else:
            flat = up.view(-1, Vs)
            tgt = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous().view(-1)
        loss = F.cross_entropy(flat, tgt, ignore_index=-100)
        fwd = tr.peak - start
        del flat, up, out_logits
        tr.phase = "backward"
        tr.begin_step()
        loss.backward()
        bwd = tr.peak - start
    return fwd / (batch * T * Vs), bwd / (batch * T * Vs)


def test_constants_match_a_trace_of_the_loss_pattern():
    fwd, bwd = _traced_bytes_per_logit(shift_copy=True)
    assert fwd == pytest.approx(SHIFT_COPY_CE_FWD_BYTES, abs=0.15)
    assert bwd == pytest.approx(SHIFT_COPY_CE_BWD_BYTES, abs=0.15)
    fwd_new, bwd_new = _traced_bytes_per_logit(shift_copy=False)
    assert fwd - fwd_new == pytest.approx(4.0, abs=0.15)  # the copy is the whole difference
    assert bwd_new == pytest.approx(12.0, abs=0.15)
    # one sample: no copy, the standard loss's 10 B
    assert _traced_bytes_per_logit(shift_copy=True, batch=1)[0] == pytest.approx(10.0, abs=0.15)


def test_check_keeps_the_planned_shift_copy(tmp_path):
    """A rendered file cannot say which transformers runs it: check reads it back with the plan's loss."""
    from trainfit.check import check_file
    from trainfit.launch import RenderOptions
    from trainfit.service import plan_for, render_plan, write_rendered

    wl = Workload(method="lora", seq_len=8192, micro_batch=2, loss="shift-copy", strategy="zero2", gpus=8)
    p = plan_for(M, wl, instance_type="generic-8xH100", tokens=1e8)
    write_rendered(render_plan(p, RenderOptions(checkpoint_uri="oss://bkt/ckpt/"), "swift"), tmp_path)
    r = check_file(tmp_path / "swift_sft.sh")
    assert not [v for v in r.violations if v.rule == "settings-differ-from-plan"], [v.message for v in r.violations]
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    rb = read_workload(read_facts(tmp_path / "swift_sft.sh"), CheckOptions())
    assert rb.workload.loss == "shift-copy"
    assert abs(rb.estimate.reserved_gib - p.memory.reserved_gib) <= 0.01


def test_shift_copy_is_not_traceable():
    from trainfit.errors import NotTraceableError
    from trainfit.trace import check_traceable

    with pytest.raises(NotTraceableError, match="shift-copy"):
        check_traceable(M, Workload(method="lora", loss="shift-copy", micro_batch=2))
