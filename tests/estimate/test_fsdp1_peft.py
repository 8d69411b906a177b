"""LoRA / QLoRA under the Hugging Face Trainer with accelerate FSDP1 (issue 26): what is communicated and which
gradients exist.

The Trainer replaces accelerate's auto-wrap policy with PEFT's ``fsdp_auto_wrap_policy`` for a PEFT model
(transformers ``Trainer._fsdp_qlora_plugin_updates``, later ``integrations/fsdp.update_fsdp_plugin_peft``). That
policy wraps every leaf module with a trainable ``weight`` (each ``lora_A`` / ``lora_B`` ``nn.Linear``) in an FSDP
unit of its own, besides the decoder layers (peft ``utils/other.py::fsdp_auto_wrap_policy``, v0.13.2:
https://github.com/huggingface/peft/blob/34d479632d63a7e29c4b75202c9eef94335ceb14/src/peft/utils/other.py). The
decoder-layer ``FlatParameter`` then holds frozen weights only (``requires_grad`` False): FSDP1 registers no
post-backward hook on it, so it is never reduce-scattered and gets no gradient (torch
``_runtime_utils._register_post_backward_hook[s]``: ``if already_registered or not flat_param.requires_grad``),
while it is still all-gathered in forward and backward (the backward needs it for the input gradients).

So the traffic per micro-batch is: all-gather of the whole base, twice, plus a reduce-scatter of the adapters only;
and the gradients on a rank are the adapters' only. The expected values are written out from the model's shape,
not read from the code under test. A model that sent the frozen base's (zero) gradients through the reduce-scatter
or kept a full-size flat gradient would fail here.
"""

from __future__ import annotations

import pytest

from trainfit.estimate.comm import Links, dp_terms
from trainfit.estimate.states import state_bytes
from trainfit.models import get_model
from trainfit.workload import Workload

ONE_NODE = Links(intra=300.0, inter=None, nodes=1, g_node=8, link_eff=0.8)
RANK = 16
# Qwen3-8B attention: hidden 4096, 32 query heads and 8 KV heads of 128, 36 layers
# (https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json). LoRA r on q, k, v, o adds r x (in + out) each.
ADAPTERS_QKVO = 36 * RANK * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096))
# the root FSDP unit (embedding, final norm, LM head: vocab 151936, untied) is gathered once per micro-batch; the
# backward does not gather it again (FSDP keeps the root unsharded between forward and backward, estimate/fsdp.py)
ROOT = 2 * 151936 * 4096 + 4096


@pytest.fixture(scope="module")
def q8():
    return get_model("Qwen3-8B")


def _wl(method: str, gpus: int = 2, grad_accum: int = 2) -> Workload:
    return Workload(seq_len=4096, micro_batch=2, grad_accum=grad_accum, gpus=gpus, gpus_per_node=8,
                    strategy="fsdp", method=method, lora_rank=RANK,
                    lora_targets="q_proj,k_proj,v_proj,o_proj", grad_ckpt=True, precision="bf16")


@pytest.mark.parametrize("gpus", [2, 8])
def test_lora_fsdp1_reduce_scatters_adapters_only(q8, gpus):
    wl = _wl("lora", gpus=gpus)
    moved = sum(t.bytes_per_gpu for t in dp_terms(q8, wl, "hf-trainer", ONE_NODE, float(ADAPTERS_QKVO)))
    base = q8.total_params * 2.0  # bf16 frozen base, gathered in forward and (but the root) again in backward
    per_micro_batch = 2 * base - ROOT * 2.0 + ADAPTERS_QKVO * 2.0  # + bf16 adapter gradients, reduce-scattered
    expected = wl.grad_accum * per_micro_batch * (gpus - 1) / gpus
    assert moved == pytest.approx(expected, rel=1e-9)
    # the frozen base's gradient is not communicated: a full-flat-parameter reduce-scatter would add the base again
    full_flat = wl.grad_accum * (3 * base) * (gpus - 1) / gpus
    assert moved < 0.7 * full_flat


def test_lora_fsdp1_communicates_less_than_full_by_the_base_gradient(q8):
    lora = sum(t.bytes_per_gpu for t in dp_terms(q8, _wl("lora"), "hf-trainer", ONE_NODE, float(ADAPTERS_QKVO)))
    full = sum(t.bytes_per_gpu for t in dp_terms(q8, _wl("full"), "hf-trainer", ONE_NODE, float(q8.total_params)))
    saved = 2 * (q8.total_params - ADAPTERS_QKVO) * 2.0 * (2 - 1) / 2  # GA 2, bf16 gradients, 2 ranks
    assert full - lora == pytest.approx(saved, rel=1e-9)


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_peft_fsdp1_keeps_adapter_gradients_only(q8, method):
    st = state_bytes(q8, _wl(method))
    # at most 4 B (fp32 adapters) per adapter element on a rank, whatever the sharding
    assert st.gradients <= ADAPTERS_QKVO * 4.0
    # a full-size flat gradient of the base would be at least its bf16 shard
    assert st.gradients < 0.01 * q8.total_params * 2.0 / 2
