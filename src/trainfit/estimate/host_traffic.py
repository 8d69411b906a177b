"""Traffic of one optimizer step that is not a collective between GPUs: CPU-offload PCIe transfers (with the CPU
optimizer step) and QLoRA's dequantize reads and writes in GPU memory. Formulas and overlap assumptions:
``estimate/speed.py``'s module docstring and ``docs/speed-model.md``."""

from __future__ import annotations

from trainfit.estimate.comm import CommTerm, Links, data_parallel_group
from trainfit.estimate.params import QLORA_BYTES_PER_PARAM, gathered_param_bytes
from trainfit.estimate.hardware import Hardware
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload

OFFLOAD_OVERLAP = 0.5
"""Assumption: half the offload PCIe traffic overlaps backward (ZeRO-Offload streams gradients as buckets
fill; the parameter upload after the CPU step is exposed)."""

QLORA_DEQUANT_BYTES_PER_PARAM = QLORA_BYTES_PER_PARAM + 2.0
"""Dequantizing one 4-bit weight reads 0.516 bytes and writes a 2-byte bf16 copy (bitsandbytes
dequantizes the whole weight before the matmul)."""


def offload_term(model: ModelShape, wl: Workload, hw: Hardware, links: Links, trainable: float,
                 assumptions: list[str]) -> tuple[CommTerm | None, float]:
    """CPU offload: (PCIe traffic term or None, CPU optimizer seconds per step, not overlapped)."""
    if not (wl.offload != "none" and wl.strategy in ("zero1", "zero2", "zero3", "fsdp")):
        return None, 0.0
    m = wl.grad_accum
    mp = wl.tp * wl.pp
    dp = data_parallel_group(wl)
    shard = trainable / max(1, dp) / mp
    grad_trips = m if wl.strategy in ("zero2", "zero3", "fsdp") else 1
    vol = shard * 2.0 * grad_trips + shard * 2.0  # bf16 grads down, bf16 params up
    if wl.offload == "all":
        vol += m * 2 * (gathered_param_bytes(model, wl) / max(1, dp) / mp)  # parameter shard fetched for fwd and bwd
    secs = vol / (hw.pcie_gbytes_per_s * 1e9 * links.link_eff)
    term = CommTerm(name=f"offload-{wl.offload}-pcie", seconds=secs, overlap=OFFLOAD_OVERLAP, link="pcie",
                    bytes_per_gpu=vol)
    node_params = shard * min(links.g_node, wl.gpus)
    cpu_s = node_params / hw.cpu_adam_params_per_s
    assumptions.append(_("CPU Adam at {rate:.3g} params/s per node, not overlapped").format(rate=hw.cpu_adam_params_per_s))
    return term, cpu_s


KBIT_CAST_BYTES_PER_ELEM = 6.0
"""One dtype cast of one activation element between fp32 and bf16: read 4 bytes and write 2, or read 2 and write
4 (an element-wise kernel, memory-bound)."""


def kbit_cast_elements_per_token(model: ModelShape, wl: Workload) -> float:
    """Activation elements per token that bitsandbytes' ``Linear4bit.forward`` casts when its input is fp32: the
    input to the compute dtype (``x.to(self.compute_dtype)``) and the bf16 output back to the input's dtype
    (``out.to(inp_dtype)``), once per 4-bit linear module and token on this rank. The input of every 4-bit linear
    is fp32 once the norms hold fp32 weights (an RMSNorm returns ``weight * x.to(input_dtype)``, fp32 when the
    weight is), except the attention output projection (``o_proj`` / ``out_proj``), whose input comes out of the
    bf16 attention kernel. A fused ``gate_up`` tensor is two modules in Hugging Face code (each casts the same
    input); routed experts see ``experts_per_token`` copies of each token."""
    e = 0.0
    for t in model.tensors():
        if t.layer_type == "global" or t.kind not in ("linear", "expert"):
            continue
        if "o_proj" in t.name or "out_proj" in t.name:
            continue
        n_out, n_in = t.shape[-2], t.shape[-1]
        per = (2 if "gate_up" in t.name else 1) * n_in + n_out
        if t.kind == "expert":
            per *= max(1, model.experts_per_token)
        e += per * t.count
    return e / (wl.tp * wl.pp)


def dequant_seconds(model: ModelShape, wl: Workload, hw: Hardware, warnings: list[str],
                    assumptions: list[str], kbit_prepare: bool = False) -> float:
    """QLoRA memory traffic per step outside the matmuls (memory-bound): the dequantize of every 4-bit weight
    in forward, backward (+ recompute) per micro-batch, and with ``kbit_prepare`` (see :func:`kbit_cast_seconds`)
    the fp32 <-> bf16 activation casts around every 4-bit linear."""
    if wl.method != "qlora":
        return 0.0
    if not hw.mem_gbytes_per_s:
        warnings.append(_("GPU memory bandwidth unknown: QLoRA dequantize time not counted"))
        return 0.0
    mp = wl.tp * wl.pp
    # routed experts too: the memory model holds them in NF4 (states.py), and bitsandbytes' replacement swaps every
    # nn.Linear but the LM head, the ModuleList experts of transformers < 5 included; each expert that gets tokens
    # dequantizes its whole weight per pass
    q = sum(t.total for t in model.tensors() if t.kind in ("linear", "expert")) / mp
    assumptions.append(_("QLoRA dequantizes every 4-bit linear weight once per forward, backward and recompute"))
    return wl.grad_accum * (2 + (1 if wl.grad_ckpt else 0)) * q * QLORA_DEQUANT_BYTES_PER_PARAM / (
        hw.mem_gbytes_per_s * 1e9) + kbit_cast_seconds(model, wl, hw, assumptions, kbit_prepare)


def kbit_cast_seconds(model: ModelShape, wl: Workload, hw: Hardware, assumptions: list[str],
                      kbit_prepare: bool) -> float:
    """fp32 activation casts of a QLoRA run whose trainer called PEFT's ``prepare_model_for_kbit_training``.

    That function casts every 16-bit parameter that is not a ``Params4bit`` to fp32 (peft
    ``src/peft/utils/other.py``, v0.13.2:
    https://github.com/huggingface/peft/blob/431c0e2d5ca56fa512dc4c96876c4145bb538f62/src/peft/utils/other.py).
    TRL's ``SFTTrainer`` calls it on a 4-bit model whose ``Params4bit`` sit on the GPU (not sharded QLoRA under
    FSDP / ZeRO-3) and, with ``bf16``, then ``peft_module_casting_to_bf16``, which puts the embedding and LM head
    back to bf16 and keeps every module with ``norm`` in its name in fp32 (trl ``trl/trainer/sft_trainer.py`` and
    ``trl/trainer/utils.py`` at v0.13.0,
    https://github.com/huggingface/trl/blob/8d4cc9427d58f5f9ee8c405c7f111fa38032b3e8/trl/trainer/sft_trainer.py;
    TRL 0.22 and later no longer call either; LLaMA-Factory's ``upcast_layernorm`` is off by default and ms-swift
    does not call it). The fp32 norms make the inputs of the 4-bit linears fp32, and bitsandbytes'
    ``Linear4bit.forward`` casts each input to the compute dtype and each output back to fp32
    (https://github.com/bitsandbytes-foundation/bitsandbytes/blob/005a63c2badadd7fb2c45a4b67c1dcbabb72b297/bitsandbytes/nn/modules.py,
    ``Linear4bit.forward``: ``x.to(self.compute_dtype)`` ... ``.to(inp_dtype)``). fms-acceleration's bitsandbytes plugin warns of exactly this
    slowdown for single-GPU runs that leave the preparation to SFTTrainer
    (https://github.com/foundation-model-stack/fms-acceleration/blob/24bdadb228e2d55bc0c69deec034b86a73da6917/plugins/accelerated-peft/src/fms_acceleration_peft/framework_plugin_bnb.py).
    Traffic: :data:`KBIT_CAST_BYTES_PER_ELEM` per cast element in the forward, again for the gradient's cast back in
    the backward, and again in the recompute; DeepSpeed casts the whole module to 16 bits after the preparation and
    FSDP / ZeRO-3 QLoRA skips it, so only ``ddp`` runs pay it. The element-wise norm, activation and residual
    kernels that then run in fp32 are not counted (a lower bound)."""
    if not (kbit_prepare and wl.method == "qlora" and wl.strategy == "ddp") or not hw.mem_gbytes_per_s:
        return 0.0
    assumptions.append(_("QLoRA with PEFT's prepare_model_for_kbit_training (TRL SFTTrainer < 0.22): fp32 norms, "
                         "every 4-bit linear casts its fp32 input to bf16 and its output back to fp32"))
    tokens = wl.grad_accum * wl.micro_batch * wl.seq_len
    passes = 2 + (1 if wl.grad_ckpt else 0)
    return (tokens * passes * kbit_cast_elements_per_token(model, wl) * KBIT_CAST_BYTES_PER_ELEM
            / (hw.mem_gbytes_per_s * 1e9))
