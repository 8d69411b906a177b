"""Tensor parallelism without Megatron-Core and without sequence parallelism (Hugging Face / accelerate's ``tp_plan``):
the LM head is ``colwise_rep``, its output gathered on every TP rank, so each rank holds all logits and the whole
loss; Megatron-Core's vocab-parallel cross entropy, and TP with sequence parallelism (torchtitan's loss-parallel
plan), split them over ``tp``. Issue 26: HF TP runs without SP OOMed where trainfit predicted about half the card."""

import pytest

from trainfit.estimate.loss_region import _loss_region, logits_divisor
from trainfit.estimate.memory import GIB, estimate_memory
from trainfit.models import get_model
from trainfit.workload import Workload

M = get_model("Qwen3-8B")
V, T = M.vocab_size, 8192
HF_TP = Workload(method="full", gpus=8, tp=2, strategy="fsdp", seq_len=T, sequence_parallel=False)


def test_who_splits_the_logits():
    assert logits_divisor(HF_TP) == 1.0
    assert logits_divisor(HF_TP.with_(sequence_parallel=True)) == 2.0
    assert logits_divisor(HF_TP.with_(strategy="zero1")) == 2.0  # Megatron-Core: vocab-parallel, SP or not
    assert logits_divisor(HF_TP.with_(tp=1, gpus=8)) == 1.0


def test_hf_tp_without_sp_holds_all_logits_on_each_rank():
    fwd, bwd, _ = _loss_region(M, HF_TP, T, head_trains=True)
    assert (fwd, bwd) == (10 * V * T, 12 * V * T)
    fwd_sp, bwd_sp, _ = _loss_region(M, HF_TP.with_(sequence_parallel=True), T, head_trains=True)
    assert (fwd_sp, bwd_sp) == (10 * V * T / 2, 12 * V * T / 2)
    est = estimate_memory(M, HF_TP)
    sp = estimate_memory(M, HF_TP.with_(sequence_parallel=True))
    assert est.breakdown_gib["logits_loss"] * GIB == pytest.approx(12 * V * T)
    assert est.tensor_peak_gib - sp.tensor_peak_gib >= 6 * V * T / GIB - 0.01
    # Megatron-Core without SP keeps its vocab-parallel 6 B per logit over tp
    meg_fwd, _, _ = _loss_region(M, HF_TP.with_(strategy="zero1"), T, head_trains=True)
    assert meg_fwd == 6 * V * T / 2


def _acts(wl: Workload) -> float:
    return estimate_memory(M, wl.with_(grad_ckpt=False, attention="flash", seq_len=4096)).breakdown_gib["activations"]


def test_hf_tp_without_sp_splits_heads_and_mlp_width_but_replicates_width_h():
    """transformers' tp_plan (colwise q/k/v, gate/up; rowwise o/down): a rank runs 1/tp of the heads and of the MLP
    width; the layer input, norms and residual stream stay whole on every TP rank."""
    from trainfit.estimate.activation_profile import act_profile, cached_act_profile, tp_local_shape

    one = _acts(HF_TP.with_(tp=1))
    two, four = _acts(HF_TP), _acts(HF_TP.with_(tp=4))
    assert one > two > four
    assert two > one / 2 and four > one / 4  # the replicated width-h tensors do not shrink
    # with sequence parallelism every saved tensor is split over tp
    assert _acts(HF_TP.with_(sequence_parallel=True)) == pytest.approx(one / 2, rel=1e-6)
    loc = tp_local_shape(M, 4)
    assert (loc.num_heads, loc.intermediate_size, loc.hidden_size) == (M.num_heads // 4, M.intermediate_size // 4,
                                                                     M.hidden_size)
    # the cached profile is the uncached one (the cache key carries the engine's layer: HF here, not Megatron-Core)
    wl = HF_TP.with_(grad_ckpt=False, attention="flash")
    assert cached_act_profile(M, wl) == act_profile(M, wl)


def test_megatron_without_sp_replicates_only_the_width_h_tensors():
    """Megatron-Core without sequence parallelism: sbh(10 + 24/t) (Korthikanti et al. 2022, eq. 2): between the
    sequence-parallel split and no split at all."""
    from trainfit.estimate.activation_profile import cached_act_profile
    from trainfit.estimate.runtime import megatron_layer_bytes_per_token

    meg = HF_TP.with_(strategy="zero1", grad_ckpt=False, attention="flash")
    full = megatron_layer_bytes_per_token(M, 0)
    sp = cached_act_profile(M, meg.with_(sequence_parallel=True)).per_token[0]
    no_sp = cached_act_profile(M, meg).per_token[0]
    assert sp == pytest.approx(full / 2) and sp < no_sp < full
    assert no_sp == pytest.approx(megatron_layer_bytes_per_token(M, 0, tp=2))
    assert _acts(meg.with_(sequence_parallel=True)) < _acts(meg)
    h, I = M.hidden_size, M.intermediate_size
    replicated = 2.0 * 4 * h
    assert megatron_layer_bytes_per_token(M, 0, tp=2) == pytest.approx(
        replicated + (megatron_layer_bytes_per_token(M, 0) - replicated) / 2)
