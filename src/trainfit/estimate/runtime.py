"""Runtime memory beyond what a fake-tensor trace of the Hugging Face training step sees.

``estimate/memory.py`` reproduces the exact tensor peak of the traced HF code. Real jobs run under engines
that allocate more, or differently; this module lists those terms (``runtime_terms``) and memory.py adds
them to every phase. The verdict stays :func:`trainfit.estimate.fit.decide_fit`. Checked on the real-world corpus of
``benchmarks/fit_corpus.py`` (``docs/accuracy.md``, "Real-world fit corpus"); none of these terms applies
to the single-GPU HF configurations of the trace grid, so ``benchmarks/memory_accuracy.py`` is unchanged.

Terms:

* **Megatron-Core activations.** For Megatron layouts the saved activations per token and layer are those
  TransformerEngine keeps (:func:`megatron_layer_bytes_per_token`), not the Hugging Face layer's (about 30 %
  fewer for a Llama-style layer: the fused SwiGLU recomputes its activation, norms keep no fp32 copies).
* **Megatron fp32 main gradients.** Megatron-Core accumulates and all-reduces gradients of bf16 models in
  fp32 (``accumulate_allreduce_grads_in_fp32`` is forced on for ``--bf16``; the DDP wrapper keeps a
  contiguous fp32 ``main_grad`` buffer of every local parameter, not sharded by the distributed
  optimizer). memory.py counts bf16 gradients; the extra 2 bytes per local trainable parameter are added
  for Megatron layouts (tp/pp/ep/cp > 1, ``Workload.uses_megatron``) when the weights train (full/freeze).
* **Megatron-Core model states and loss** (:func:`megatron_core`, used by estimate/states.py and memory.py):
  fp32 master + moments also without the distributed optimizer, no DeepSpeed buckets or fp32 gradient copy,
  main_grad on the GPU under optimizer CPU offload, vocab-parallel cross entropy at 6 B per logit.
* **NCCL communicators** (:func:`nccl_communicators`): how many communicators' buffers ``reserved_gib``
  carries (``OverheadModel.nccl_gib`` each).
* **DDP construction broadcast under recordStream** (:func:`ddp_broadcast_staging_bytes`): with PyTorch
  releases before 2.8, the caching allocator cannot reuse the flat copies DDP broadcasts the model through
  until the GPU has finished them, so ``max_memory_reserved`` reaches about twice the module's bytes when
  DDP wraps it. Only with ``OverheadModel.nccl_record_stream`` (off by default: current PyTorch).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainfit.i18n import _
from trainfit.workload import Workload

def megatron_layer_bytes_per_token(m, i: int, tp: int = 1, imbalance: float = 1.0) -> float:
    """Activation bytes Megatron-Core (TransformerEngine, flash attention, bf16) saves for backward per token
    of decoder layer ``i`` without recomputation (before the sequence-parallel split).

    Attention: the LayerNormLinear input and normalised output (2h), Q/K/V for the flash-attention backward
    (nh*hd + 2*nkv*hd), the attention output that is also the output projection's input (nh*hd). Dense MLP:
    LayerNormLinear input and output (2h), fc1 output gate+up (2I; TE's fused SwiGLU recomputes the activation
    in backward), fc2 input (I). MoE MLP: 2h, router logits in fp32 (2E elements), and per routed copy the
    dispatched token, fc1 output, fc2 input and the combine input: k*(2h + 3*I_e); shared expert as a dense MLP.
    Elements x 2 bytes. ``imbalance``: the most-loaded expert-parallel rank's routed tokens over the mean
    (``workload.routing_imbalance``): its routed copies scale by it. The Hugging Face layer (what memory.py traces) also keeps the SiLU output and the
    gate*up product, norm fp32 intermediates and the router's one-hot masks: ~45 % more for Llama-3-8B.

    ``tp`` > 1: tensor parallelism *without* sequence parallelism. The column-parallel outputs (Q/K/V, the
    attention output, fc1's output and fc2's input) hold ``1/tp`` of the heads or of the intermediate width on each
    rank, while the LayerNormLinear inputs and outputs of width h are replicated: Korthikanti et al. 2022, eq. 2,
    sbh(10 + 24/t + ...) (https://arxiv.org/abs/2205.05198). The routed experts' share is left whole (their
    layout is expert parallelism's, not tensor parallelism's). With sequence parallelism (``tp`` = 1 here) the
    caller divides everything by tp.
    """
    h, nh, hd, nkv = m.hidden_size, m.num_heads, m.head_dim, m.num_kv_heads
    attn = 2 * h + (2 * nh * hd + 2 * nkv * hd) / tp
    if m.is_moe_layer(i):
        k, Ie, E = m.experts_per_token, m.moe_intermediate_size, m.num_experts
        mlp = 2 * h + 2 * E + k * (2 * h + 3 * Ie) * imbalance
        if m.shared_expert_intermediate_size:
            mlp += 3 * m.shared_expert_intermediate_size / tp
    else:
        mlp = 2 * h + 3 * m.intermediate_size / tp
    return 2.0 * (attn + mlp)


def megatron_core(wl: Workload) -> bool:
    """Whether ``wl`` is a Megatron-Core job that holds its own model states: a model-parallel layout
    (``Workload.uses_megatron``) with Megatron's DDP (``ddp``) or its distributed optimizer (``zero1``).
    Megatron-Core then keeps bf16 parameters, one contiguous fp32 ``main_grad`` buffer, fp32 master
    parameters and fp32 Adam moments, whatever the data-parallel sharding (``megatron/training/
    theoretical_memory_usage.py``: 18 bytes per parameter, or 6 + 12/dp with the distributed optimizer:
    https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/theoretical_memory_usage.py).
    Gradients are reduced in place in that buffer (its buckets are views), and the distributed optimizer
    steps on views of it, so there is no separate reduce bucket and no fp32 copy of the gradient partition
    (``megatron/core/distributed/param_and_grad_buffer.py``, ``megatron/core/optimizer/distrib_optimizer.py``)."""
    return wl.uses_megatron and wl.strategy in ("ddp", "zero1")


def nccl_communicators(wl: Workload) -> int:
    """NCCL communicators a rank of ``wl`` creates and uses during training (each holds its own GPU
    buffers; PyTorch creates a process group's communicator at its first collective).

    Data-parallel engines (DDP, DeepSpeed ZeRO, FSDP) use the one world group. Megatron-Core layouts
    (``Workload.uses_megatron``) use one communicator per parallel group that carries traffic
    (megatron/core/parallel_state.py): data parallel (gradient reduce-scatter / parameter all-gather of the
    distributed optimizer; counted once), tensor parallel, pipeline parallel (point-to-point),
    context parallel, the model-parallel group (tp x pp: gradient-norm and found-inf all-reduce), and with
    expert parallelism the expert group (all-to-all) and, when it has more than one rank, the expert
    data-parallel group."""
    if wl.gpus <= 1:
        return 0
    if not wl.uses_megatron:
        return 1
    n = 1 if wl.dp > 1 else 0
    n += (wl.tp > 1) + (wl.pp > 1) + (wl.cp > 1) + (wl.tp * wl.pp > 1)
    if wl.ep > 1:
        n += 1 + (wl.dp * wl.tp // wl.ep > 1)
    return max(1, n)


TORCH_NCCL_STASHING_RELEASE = (2, 8)
"""First PyTorch release whose ProcessGroupNCCL no longer calls ``recordStream`` on collective buffers but keeps
them alive by CPU-side stashing until ``work.wait()``: https://github.com/pytorch/pytorch/pull/148590 (kept out
of 2.7, https://github.com/pytorch/pytorch/pull/150352; TORCH_NCCL_AVOID_RECORD_STREAMS then ignored,
https://github.com/pytorch/pytorch/pull/194701)."""


def ddp_broadcast_staging_bytes(wl: Workload, module_bytes: float, *, nccl_record_stream: bool) -> float:
    """Caching-allocator bytes that PyTorch DDP's construction leaves reserved on a rank of ``wl`` whose
    module (parameters + buffers) holds ``module_bytes``: reserved, never allocated at once, so
    ``max_memory_reserved`` and nvidia-smi see it and ``max_memory_allocated`` does not.

    ``DistributedDataParallel.__init__`` broadcasts every parameter and buffer from rank 0, frozen ones
    included (``_sync_module_states`` in torch/distributed/utils.py), through ``broadcast_coalesced``
    (torch/csrc/distributed/c10d/comm.cpp): each 250 MiB bucket is flattened into a new tensor, broadcast,
    copied back and freed, at most two in flight; ``finish()`` waits on the GPU stream, not on the host.
    Before :data:`TORCH_NCCL_STASHING_RELEASE`, ProcessGroupNCCL records the NCCL stream on the flat tensor
    (``recordStream``, ProcessGroupNCCL.cpp ``collective``), and the caching allocator hands a freed block
    with recorded stream uses back only when an event on that stream has completed (``insert_events`` /
    ``process_events`` in c10/cuda/CUDACachingAllocator.cpp). The host enqueues all buckets long before the
    GPU has broadcast them, so every bucket gets a fresh segment: reserved memory grows by the module's bytes
    ("recordStream prevents the allocator from repurposing allocations passed to collectives until those
    collectives finish from the host's perspective", https://github.com/pytorch/pytorch/pull/76861).
    ``benchmarks/ddp_broadcast_probe.py`` shows the copies on CPU (gloo): 252 of a 256 MiB module of frozen
    layers flattened. The segments stay cached afterwards and serve later allocations, so the step's own peak is not added
    to it: reserved = max(step, module + this). It is not an OOM cause: before failing, the allocator
    synchronises pending events and frees those blocks (``release_cached_blocks``).

    Zero when ``nccl_record_stream`` is off, for one process, for DeepSpeed (``_broadcast_model`` broadcasts
    each parameter in place) and FSDP2, and for Megatron-Core (its DDP broadcasts parameters in place)."""
    if not nccl_record_stream or wl.strategy != "ddp" or wl.dp <= 1 or wl.uses_megatron:
        return 0.0
    return float(module_bytes)


MEGATRON_MAIN_GRAD_EXTRA_BYTES = 2.0
"""fp32 ``main_grad`` (4 B) minus the bf16 gradient (2 B) memory.py already counts, per local parameter."""


@dataclass(frozen=True, kw_only=True)
class RuntimeTerm:
    """One runtime allocation that the trace does not see (bytes on the worst rank)."""

    name: str
    bytes: float
    phase: str
    """Phases it is alive in: ``all`` (whole step) or ``backward+optimizer``."""
    note: str


def runtime_terms(wl: Workload, *, trainable_rank_elems: float) -> tuple[RuntimeTerm, ...]:
    """Extra allocations of the engine implied by ``wl`` (``trainable_rank_elems``: trainable elements this
    rank computes gradients for, after tensor/expert/pipeline sharding, before ZeRO sharding)."""
    out: list[RuntimeTerm] = []
    if megatron_core(wl) and wl.method in ("full", "freeze"):
        out.append(RuntimeTerm(
            name="megatron-fp32-main-grad", bytes=trainable_rank_elems * MEGATRON_MAIN_GRAD_EXTRA_BYTES,
            phase="all",
            note=_("Megatron-Core keeps fp32 main_grad buffers of every local parameter (bf16 training forces "
                   "accumulate_allreduce_grads_in_fp32); +2 B/param over the bf16 gradients counted")))
    return tuple(out)
