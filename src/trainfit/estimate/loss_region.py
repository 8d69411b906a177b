"""The logits and loss region of the step: what the LM head output and the cross-entropy keep at the forward peak
and at the start of backward, per loss implementation (``Workload.loss``) and engine. Part of the per-GPU memory
model (estimate/memory.py walks the step; formulas and sources in docs/memory-model.md)."""

from __future__ import annotations

import math

from trainfit.i18n import _
from trainfit.estimate.activation_profile import autocast
from trainfit.estimate.runtime import megatron_core
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload


#: transformers' tensor-parallel plan of the causal-LM head: ``_tp_plan = {"lm_head": "colwise_rep"}``, a column
#: split whose output is gathered (replicated) on every TP rank, so each rank holds all logits and runs the whole loss
#: (https://github.com/huggingface/transformers/blob/000c33fdfde12e1ffafbfcdb3c926df5727a00b6/src/transformers/models/qwen3/modeling_qwen3.py,
#: ``Qwen3ForCausalLM``; the same in every decoder model of transformers).
HF_TP_LM_HEAD_PLAN = "colwise_rep"


def logits_divisor(wl: Workload) -> float:
    """How many ranks share the logits: ``tp`` with a vocab-parallel loss (Megatron-Core's layouts, and tensor
    parallelism with sequence parallelism, as torchtitan's loss-parallel plan), 1 for tensor parallelism without
    sequence parallelism outside Megatron-Core: Hugging Face / accelerate's ``tp_plan`` gathers the LM head's output
    on every rank (:data:`HF_TP_LM_HEAD_PLAN`)."""
    if wl.tp > 1 and not megatron_core(wl) and not wl.sequence_parallel:
        return 1.0
    return float(wl.tp)


def _loss_region(m: ModelShape, wl: Workload, T: float, head_trains: bool) -> tuple[float, float, str | None]:
    """(forward peak, backward-start bytes, assumption or None) of the logits and loss."""
    V, h = m.vocab_size, m.hidden_size
    vt = V * T / logits_divisor(wl)
    if megatron_core(wl):
        return _megatron_loss_region(vt)
    if wl.loss == "half" and not autocast(wl):
        return _half_loss_region(vt, wl.micro_batch)
    if wl.loss == "shift-copy":
        return _shift_copy_loss_region(vt, wl.micro_batch)
    if wl.loss in ("standard", "half"):
        loss_fwd_peak = 10 * vt  # bf16 logits + fp32 copy + log_softmax output
        loss_bwd_peak = 12 * vt  # saved log_softmax output + nll grad + log_softmax grad (fp32)
        # https://pytorch.org/docs/2.0/amp.html#cuda-ops-that-can-autocast-to-float32 lists cross_entropy
        note = _("--loss half under autocast: cross_entropy is on autocast's fp32 list, so the loss runs on an "
                 "fp32 copy of the logits (sized as --loss standard)") if wl.loss == "half" else None
        return loss_fwd_peak, loss_bwd_peak, note
    inc = math.ceil(V / h)
    chunk = 2 ** math.ceil(math.log2(max(1, math.ceil(T / inc))))
    lm_grad = (V * h * 2.0 / wl.tp) if head_trains else 0.0
    loss_saved = 2 * h * T + lm_grad  # grad_input (and grad_weight) computed in forward
    loss_fwd_peak = loss_saved + chunk * V * (2 + 4 + 4)
    loss_bwd_peak = loss_saved
    note = _("fused loss: chunked linear cross-entropy (Liger), {chunk}-token chunks; not traced").format(chunk=chunk)
    return loss_fwd_peak, loss_bwd_peak, note


#: Bytes per logit element of Megatron-Core's vocab-parallel cross entropy (fused or not, same tensors):
#: forward keeps the bf16 logits while ``.float()`` makes the fp32 copy that max-subtract, exp and the
#: softmax normalisation then overwrite in place (2 + 4); backward turns the saved fp32 softmax into the
#: gradient in place and casts it to bf16 for the output layer (4 + 2).
#: https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/tensor_parallel/cross_entropy.py
MEGATRON_CE_FWD_BYTES = 6.0
MEGATRON_CE_BWD_BYTES = 6.0


#: Bytes per logit element of a cross-entropy over the LM head's 16-bit output with no fp32 copy (``--loss half``):
#: Qwen (v1)'s ``QWenLMHeadModel.forward`` calls ``CrossEntropyLoss`` on ``lm_logits[..., :-1, :].contiguous()``
#: without ``.float()`` (https://huggingface.co/Qwen/Qwen-7B-Chat/blob/main/modeling_qwen.py, the same in every
#: Qwen v1 checkpoint), and without autocast log_softmax keeps the input dtype. Forward: the 16-bit logits and the
#: 16-bit log_softmax output (2 + 2); the shift copies the logits only when the slice is not contiguous, i.e. with
#: more than one sample per micro-batch (+2). Backward: the saved log_softmax output, the nll gradient and the
#: log_softmax gradient, all 16-bit (2 + 2 + 2). Traced on CPU with trainfit's storage tracker over that loss code:
#: 4.0 and 6.0 B per logit at one sample per micro-batch, against 10 and 12 with the fp32 cast autocast inserts.
HALF_CE_FWD_BYTES = 4.0
HALF_CE_SHIFT_COPY_BYTES = 2.0
HALF_CE_BWD_BYTES = 6.0


#: Bytes per logit element of the Hugging Face loss before transformers 4.49 (``--loss shift-copy``). transformers
#: 4.46-4.48's ``ForCausalLMLoss`` (src/transformers/loss/loss_utils.py) ran ``logits = logits.float()`` and then
#: ``shift_logits = logits[..., :-1, :].contiguous()``: with more than one sample per micro-batch the slice is not
#: contiguous, so ``.contiguous()`` copies all fp32 logits while the upcast stays referenced by the local ``logits``
#: until the function returns (with one sample, packed or not, the slice of a [1, T, V] tensor is contiguous and
#: nothing is copied: the standard loss's 10 B). Forward with the copy: the model output's bf16 logits, the fp32
#: upcast, its shifted fp32 copy and the log_softmax output (2 + 4 + 4 + 4).
#: Backward starts after the Trainer drops the outputs: log_softmax's saved output, the incoming and the outgoing
#: gradient (4 + 4 + 4), then the slice's backward (a zero-filled full-size fp32 gradient, 4 + 4) and the cast to
#: bf16 (4 + 2), never above 12. Before 4.46 each model's forward did the same after ``logits = logits.float()``,
#: which drops the bf16 logits (2 B less, the shift copy stays). transformers PR 35646 (merged 2025-01-13, first in
#: 4.49.0) pads the labels instead of slicing the logits: https://github.com/huggingface/transformers/pull/35646.
SHIFT_COPY_CE_FWD_BYTES = 14.0
SHIFT_COPY_CE_BWD_BYTES = 12.0


def _shift_copy_loss_region(vt: float, micro_batch: int) -> tuple[float, float, str]:
    """(forward peak, backward-start bytes, note) of the pre-4.49 Hugging Face loss over ``vt`` logits on the rank."""
    if micro_batch == 1:
        return (10 * vt, SHIFT_COPY_CE_BWD_BYTES * vt,
                _("--loss shift-copy with one sample per micro-batch: the shifted slice is contiguous, no copy (sized "
                  "as --loss standard)"))
    return (SHIFT_COPY_CE_FWD_BYTES * vt, SHIFT_COPY_CE_BWD_BYTES * vt,
            _("--loss shift-copy: transformers < 4.49 shifts the fp32 logits with .contiguous(), one more fp32 copy "
              "of all logits in the forward with more than one sample per micro-batch (transformers PR 35646)"))


def _half_loss_region(vt: float, micro_batch: int) -> tuple[float, float, str]:
    """(forward peak, backward-start bytes, note) of a 16-bit cross-entropy over ``vt`` logits on the rank."""
    fwd = HALF_CE_FWD_BYTES + (HALF_CE_SHIFT_COPY_BYTES if micro_batch > 1 else 0.0)
    return (fwd * vt, HALF_CE_BWD_BYTES * vt,
            _("--loss half: cross-entropy over the 16-bit logits, no fp32 copy (e.g. Qwen v1 remote code without "
              "autocast)"))


def _megatron_loss_region(vt: float) -> tuple[float, float, str]:
    """(forward peak, backward-start bytes, note) of Megatron-Core's loss over ``vt`` logits on the rank."""
    return (MEGATRON_CE_FWD_BYTES * vt, MEGATRON_CE_BWD_BYTES * vt,
            _("Megatron-Core vocab-parallel cross entropy: bf16 logits + one fp32 copy worked in place"))


def largest_loss_block_bytes_per_logit(wl: Workload) -> float:
    """Bytes per logit element of the largest single tensor the loss region allocates: the fp32 copy of the logits
    (standard loss, or ``half`` under autocast), the 16-bit logits (``half`` without autocast), none for a chunked
    (fused) loss, whose chunks never hold all logits."""
    if megatron_core(wl) or wl.loss in ("standard", "shift-copy") or (wl.loss == "half" and autocast(wl)):
        return 4.0
    return 2.0 if wl.loss == "half" else 0.0
