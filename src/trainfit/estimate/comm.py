"""Communication terms of one optimizer step, per GPU: ring collectives of data parallelism (DDP, ZeRO, FSDP),
tensor-parallel all-reduces, expert-parallel all-to-all, context-parallel KV exchange, pipeline
point-to-point (CPU-offload PCIe traffic and QLoRA dequantize traffic: ``estimate/host_traffic.py``).
Formulas and overlap assumptions: ``estimate/speed.py``'s module docstring and ``docs/speed-model.md``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainfit.estimate.hardware import Hardware
from trainfit.i18n import _
from trainfit.estimate.params import QLORA_BYTES_PER_PARAM, gathered_param_bytes  # noqa: F401 (re-exported)
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload, routing_imbalance
from trainfit.estimate.fsdp import (FSDP2_FRAMEWORKS, FSDP2_REDUCE_BYTES, FSDP_EDGE_FRAMEWORKS, FSDP_STEADY_OVERLAP,
                                  fsdp_forward_share, fsdp_volumes)
from trainfit.estimate.params import lora_targeted

TCP_FALLBACK_GBYTES_PER_S = 25 / 8
"""Assumption used when a multi-node job has no inter-node bandwidth: one 25 Gbit/s VPC NIC per node."""

OVERLAP: dict[str, float] = {
    "ddp": 0.7,
    "zero1": 0.5,
    "zero2": 0.7,
    "zero3": 0.8,
    "fsdp": 0.8,
}
"""Assumption: fraction of data-parallel traffic that runs concurrently with compute. DDP buckets its
all-reduce during backward (the last bucket is exposed); ZeRO-1 all-gathers updated parameters after the
optimizer step (not overlapped); ZeRO-2 reduce-scatters during backward (``overlap_comm``); ZeRO-3/FSDP
prefetch the next layer's all-gather. Hidden traffic never exceeds the step's compute time."""

EP_OVERLAP = 0.5
"""Assumption: half the expert-parallel all-to-all runs under compute (Megatron-Core overlaps the
dispatch/combine of one micro-batch with another's compute, ``overlap_moe_expert_parallel_comm``; without
it nothing hides). Without this, the Qwen3 MoE calibration cases are predicted 10-30% slower."""

CP_OVERLAP = 0.8
"""No longer used for context parallelism (kept for callers that import it): the KV ring now hides only behind
the attention kernels (``cp_term``, ``hidden_seconds``)."""



def ring_seconds(bytes_: float, n: int, gbytes_per_s: float, efficiency: float) -> float:
    """One ring all-gather or reduce-scatter of a ``bytes_`` buffer over ``n`` ranks:
    each rank sends ``bytes_ * (n-1)/n`` (an all-reduce is two of these)."""
    if n <= 1 or bytes_ <= 0:
        return 0.0
    return bytes_ * (n - 1) / n / (gbytes_per_s * 1e9 * efficiency)


def pipeline_bubble_fraction(pp: int, micro_batches: int) -> float:
    """Idle fraction of a 1F1B / GPipe schedule: ``(pp-1) / (m + pp - 1)`` (Narayanan et al. 2021, eq. 1:
    bubble time / ideal time = ``(p-1)/m``, so bubble / total = ``(p-1)/(m+p-1)``)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / (micro_batches + pp - 1)


@dataclass(frozen=True, kw_only=True)
class CommTerm:
    """One communication term per optimizer step, per GPU."""

    name: str
    seconds: float
    overlap: float
    """Fraction that may hide behind compute (0 = always exposed)."""
    link: str
    """``intra`` (NVLink/PCIe in a node), ``inter`` (network), ``pcie`` (host) or ``cpu``."""
    bytes_per_gpu: float
    attention_share: float = 0.0
    """> 0: the term can hide only behind the attention kernels, at most this share of their time (the
    context-parallel KV ring, ``cp_term``); 0: behind any compute (``overlap`` of it)."""
    window: float = 1.0
    """Share of the step's compute the term can run under: 1 for traffic spread over every micro-batch, ``1/m``
    (:func:`dp_window`) for traffic that starts only in the last of ``m`` micro-batches."""


def dp_window(strategy: str, micro_batches: int) -> float:
    """Share of a step's compute that once-per-step data-parallel traffic can hide behind. Gradient accumulation
    skips the gradient all-reduce / reduce-scatter on every micro-batch but the last: Megatron-Core runs the first
    ``m - 1`` micro-batches under ``no_sync_func`` and lets ``overlap_grad_reduce`` launch bucket reductions only
    during the last one (``forward_backward_no_pipelining``, megatron/core/pipeline_parallel/schedules.py,
    https://github.com/NVIDIA/Megatron-LM/blob/d98e8a64ddf34856e74b24714e3bedb2f5a39553/megatron/core/pipeline_parallel/schedules.py#L814),
    as PyTorch DDP's ``no_sync`` under accelerate's ``accumulate`` and DeepSpeed's reduction at the accumulation
    boundary do. So DDP's all-reduce and ZeRO-1's reduce-scatter + all-gather (one per step, ``dp_terms``) hide
    behind at most ``1/m`` of the compute; ZeRO-2/3 and FSDP reduce on every micro-batch (their volume already
    scales with ``m``): window 1."""
    if strategy in ("ddp", "zero1"):
        return 1.0 / max(1, micro_batches)
    return 1.0


def hidden_seconds(terms: Iterable[tuple[float, ...]], compute_s: float, attention_s: float) -> float:
    """Communication hidden behind compute, from ``(seconds, overlap, attention_share[, window])`` per term: each
    term hides ``overlap`` of itself, an attention-bound term (``attention_share`` > 0) at most ``attention_share``
    of the attention time, a term with a ``window`` < 1 at most that share of the compute time; all together never
    more than the compute time. ``estimate_speed`` and the LOSO fit's fast path (benchmarks/speed_loso.py) both
    call this."""
    hide = 0.0
    for term in terms:
        secs, overlap, share = term[0], term[1], term[2]
        window = term[3] if len(term) > 3 else 1.0
        h = secs * overlap
        if share > 0:
            h = min(h, attention_s * share)
        if window < 1.0:
            h = min(h, compute_s * window)
        hide += h
    return min(hide, compute_s)


def data_parallel_group(wl: Workload) -> int:
    """Ranks over which gradients are reduced and ZeRO / distributed-optimizer / FSDP states are sharded: the
    data-parallel ranks times the ranks that split one sequence (context parallelism x DeepSpeed-Ulysses). Context
    and sequence-parallel ranks hold the same weights and each computes gradients from its own tokens, so the engines
    reduce and shard over data x context ranks, not over the data ranks alone:
    Megatron-Core's DDP and distributed optimizer use the ``dp_cp`` group
    (``parallel_state.get_data_parallel_group(with_context_parallel=True)``; ``self.dp_cp_group`` for the gradient
    buffers, scaling and broadcast in megatron/core/distributed/distributed_data_parallel.py,
    https://github.com/NVIDIA/Megatron-LM/blob/d98e8a64ddf34856e74b24714e3bedb2f5a39553/megatron/core/distributed/distributed_data_parallel.py
    and ``'dp_cp'`` in megatron/core/process_groups_config.py at the same commit); torchtitan applies FSDP2 over the
    ``dp_shard_cp`` mesh dimension (``apply_fsdp(model, world_mesh[("dp_shard_cp",)])``,
    https://github.com/pytorch/torchtitan/blob/81c1243395b46ce693a0681cfe1bb20e9b9433fb/torchtitan/models/llama3/infra/parallelize.py);
    DeepSpeed-Ulysses shards ZeRO over the data x sequence-parallel ranks. The memory model (``states.py``), the
    data-parallel traffic (:func:`dp_terms`), the optimizer step (``engine_terms.optimizer_seconds``) and CPU
    offload (:func:`offload_term`) all take the group from here. ``Workload.dp`` stays the number of ranks that read
    different samples (tokens per step)."""
    return wl.dp * wl.seq_shards


def _param_split(model: ModelShape) -> tuple[float, float]:
    """(non-expert params, routed-expert params) of the whole model."""
    expert = float(sum(t.total for t in model.tensors() if t.kind == "expert"))
    return model.total_params - expert, expert


@dataclass(frozen=True, kw_only=True)
class Links:
    """The links of one job's topology: per-direction bandwidths (GB/s) and the ring placement rule."""

    intra: float
    """Per-GPU bandwidth to the other GPUs of the node."""
    inter: float | None
    """Per-node network bandwidth (None: unknown, single node)."""
    nodes: int
    g_node: int
    """GPUs per node the workload uses."""
    link_eff: float
    """Fraction of the link bandwidth ring collectives reach."""

    def ring(self, group: int, stride: int) -> tuple[float, str]:
        """Bandwidth of a ring of ``group`` ranks spaced ``stride`` apart (Megatron order: tp, cp, dp, pp)."""
        if self.nodes > 1 and group * stride > self.g_node:
            return min(self.intra, self.inter or self.intra), "inter"
        return self.intra, "intra"


def links_for(wl: Workload, hw: Hardware, warnings: list[str]) -> Links:
    """The job's links; a multi-node job reports the hardware's notes and, without an inter-node bandwidth,
    assumes :data:`TCP_FALLBACK_GBYTES_PER_S` (appended to ``warnings``)."""
    nodes = wl.nodes
    inter = hw.inter_node_gbytes_per_s
    if nodes > 1:
        warnings.extend(hw.notes)
    if nodes > 1 and inter is None:
        inter = TCP_FALLBACK_GBYTES_PER_S
        warnings.append(_("multi-node job without an inter-node bandwidth: assumed one 25 Gbit/s NIC per node"))
    return Links(intra=hw.intra_node_gbytes_per_s, inter=inter, nodes=nodes, g_node=wl.gpus_per_node,
                 link_eff=hw.link_efficiency)


def dp_terms(model: ModelShape, wl: Workload, framework: str, links: Links, trainable: float,
             expert_tp: int = 1) -> list[CommTerm]:
    """Data parallel (ZeRO / FSDP / DDP) traffic; experts replicate over dp/ep, so they get their own term."""
    terms: list[CommTerm] = []
    m = wl.grad_accum
    mp = wl.tp * wl.pp
    dense_p, expert_p = _param_split(model)
    base_bytes = gathered_param_bytes(model, wl)
    train_param_bytes = 4.0 if wl.precision == "amp-bf16" else 2.0  # trained weights are never 4-bit
    # gradients travel in the weight dtype, except fp32 master weights (amp-bf16) and torchtitan-style FSDP2,
    # whose config default ``mixed_precision_reduce = "float32"`` reduce-scatters in fp32
    grad_bytes = FSDP2_REDUCE_BYTES if (wl.precision == "amp-bf16" or framework in FSDP2_FRAMEWORKS) else 2.0
    dp = data_parallel_group(wl)  # data x context (x Ulysses) ranks reduce gradients and shard states
    # experts with expert TP 1 (as the memory model, estimate/states.py): TP ranks hold whole experts, so the
    # expert data-parallel group is dp * tp / ep and an expert's weights are split by pp * ep only; with expert
    # TP e (``expert_tp``), dp * tp / (ep * e) and pp * ep * e
    edp = max(1, dp * wl.tp // (wl.ep * expert_tp)) if wl.ep > 1 else dp
    for label, frac, group in (("dense", dense_p / model.total_params, dp),
                               ("expert", expert_p / model.total_params, edp)):
        if frac <= 0 or group <= 1:
            continue
        shard_div = (wl.pp * wl.ep * expert_tp) if label == "expert" and wl.ep > 1 else mp
        pbytes = base_bytes * frac / shard_div
        gbytes = trainable * frac * grad_bytes / shard_div
        # Megatron rank order tp-cp-dp-pp: the data x context group is the ranks tp apart
        bw, where = links.ring(group, wl.ep * expert_tp if label == "expert" and wl.ep > 1 else wl.tp)
        s = wl.strategy
        if s in ("ddp", "zero1"):
            vol = 2 * gbytes  # all-reduce (ddp) = reduce-scatter + all-gather (zero1), once per step
            if s == "zero1":
                vol = gbytes + trainable * frac * train_param_bytes / shard_div
        elif s == "zero2":
            vol = m * gbytes + trainable * frac * train_param_bytes / shard_div
        else:  # zero3 / fsdp: per micro-batch all-gather fwd + bwd, reduce-scatter grads
            bwd_frac = 1.0
            if wl.method == "freeze":
                bwd_frac = trainable / model.total_params
            if s == "fsdp" and framework in FSDP_EDGE_FRAMEWORKS:
                fwd, bwd, edge = fsdp_volumes(model, wl, framework, label, pbytes, gbytes, bwd_frac)
                f_share = fsdp_forward_share(model, wl)
                for name, v, overlap, window in (
                        (f"dp-fsdp-{label}-fwd", fwd, FSDP_STEADY_OVERLAP, f_share),
                        (f"dp-fsdp-{label}-bwd", bwd, FSDP_STEADY_OVERLAP, 1.0 - f_share),
                        (f"dp-fsdp-{label}-edge", edge, 0.0, 1.0)):
                    terms.append(CommTerm(name=name, seconds=ring_seconds(v, group, bw, links.link_eff),
                                          overlap=overlap, link=where, bytes_per_gpu=v * (group - 1) / group,
                                          window=window))
                continue
            vol = m * (pbytes * (1 + bwd_frac) + gbytes)
        secs = ring_seconds(vol, group, bw, links.link_eff)
        terms.append(CommTerm(name=f"dp-{s}-{label}", seconds=secs, overlap=OVERLAP[s], link=where,
                              bytes_per_gpu=vol * (group - 1) / group, window=dp_window(s, m)))
    return terms


ACT_BYTES = 2.0
"""bf16 activations."""

NCCL_RING_BASE_LATENCY_US = 8.4
NCCL_RING_STEP_LATENCY_US: dict[str, float] = {"intra": 3.4, "inter": 14.0}
"""NCCL's own latency model of a ring collective with the Simple protocol (the one it picks for messages of
megabytes): a base latency plus one hop latency per ring step, ``n - 1`` steps for an all-gather or reduce-scatter,
``2(n - 1)`` for an all-reduce; per hop 3.4 us over NVLink, 14 us over the network
(``ncclTunerConstantsDefaults`` baseLatencies / hwLatencies and ``ncclTopoTuneModel`` in src/graph/tuning.cc,
https://github.com/NVIDIA/nccl/blob/5067397c2676d5aed50042fc39e5c8ee96eb0027/src/graph/tuning.cc)."""


def ring_latency_seconds(n: int, steps_per_rank: int, where: str) -> float:
    """Latency of one ring collective over ``n`` ranks that takes ``steps_per_rank x (n - 1)`` steps (1 for an
    all-gather or reduce-scatter, 2 for an all-reduce), NCCL's model (:data:`NCCL_RING_BASE_LATENCY_US`). It is
    what a collective costs beyond its bytes: small messages (tensor parallelism at micro-batch 1 and short
    sequences) are latency-bound."""
    if n <= 1:
        return 0.0
    hop = NCCL_RING_STEP_LATENCY_US["inter" if where == "inter" else "intra"]
    return (NCCL_RING_BASE_LATENCY_US + steps_per_rank * (n - 1) * hop) * 1e-6


MEGATRON_LAYERS_PY = ("https://github.com/NVIDIA/Megatron-LM/blob/d98e8a64ddf34856e74b24714e3bedb2f5a39553/"
                      "megatron/core/tensor_parallel/layers.py")


def tp_collectives(wl: Workload, regather: bool = True) -> tuple[float, float, int]:
    """(launches, ring units, steps per rank) of the tensor-parallel collectives of one layer per micro-batch;
    a ring unit is one all-gather or reduce-scatter of the layer's ``tokens x hidden`` activation (an all-reduce
    is two). A layer has two column-parallel linears (QKV, FC1) and two row-parallel ones (output projection,
    FC2). Without sequence parallelism: one all-reduce after each row-parallel linear forward and one of the
    column-parallel input gradient backward (``allreduce_dgrad``): 2 launches of 2 units per pass, steps 2.
    With sequence parallelism (Megatron-Core ``LinearWithGradAccumulationAndAsyncCommunication`` and
    ``mappings.py``, ``MEGATRON_LAYERS_PY``; TransformerEngine's Linear / LayerNormLinear do the same): forward an
    all-gather before each column-parallel linear and a reduce-scatter after each row-parallel one (4 launches);
    backward the all-gather of the row-parallel output gradient (``_ReduceScatterToSequenceParallelRegion``'s
    backward), the column-parallel input gathered again for its weight gradient (the forward keeps only the local
    shard) and the reduce-scatter of its input gradient: 6 launches; each one unit, steps 1. ``regather`` False is
    PyTorch's DTensor tensor parallelism (``SequenceParallel`` / ``ColwiseParallel`` plans, NeMo AutoModel,
    torchtitan): autograd keeps the gathered input, so the backward has 4 launches. A recomputed forward repeats
    the forward's collectives. Every launch pays NCCL's base latency, so sequence parallelism's latency
    is twice the all-reduce's per pass although the bytes of the forward are the same."""
    recompute = 1 if wl.grad_ckpt else 0
    if wl.sequence_parallel:
        launches = 4 + (6 if regather else 4) + 4 * recompute
        return float(launches), float(launches), 1
    launches = 2 + 2 + 2 * recompute
    return float(launches), 2.0 * launches, 2


MEGATRON_LORA_GROUP: dict[str, tuple[str, bool]] = {
    "q_proj": ("linear_qkv", True), "k_proj": ("linear_qkv", True), "v_proj": ("linear_qkv", True),
    "o_proj": ("linear_proj", False), "gate_proj": ("linear_fc1", True), "up_proj": ("linear_fc1", True),
    "down_proj": ("linear_fc2", False),
}
"""Hugging Face module name -> (the Megatron-Core linear that holds it, column-parallel?): Megatron fuses q, k, v
into ``linear_qkv`` and gate, up into ``linear_fc1``; LoRA adapts the fused linear once."""

SWIFT_MEGATRON_LORA_PY = ("https://github.com/modelscope/ms-swift/blob/b6af05674945e6fae3cca8fc02698bbd97cef6d9/"
                          "swift/megatron/tuners/lora.py")


def megatron_lora_linears(model: ModelShape, wl: Workload) -> tuple[float, float]:
    """(column-parallel, row-parallel) Megatron-Core linears with a LoRA adapter, summed over the layers (routed
    experts excluded: expert TP 1 gives their adapters no TP collective)."""
    if wl.method not in ("lora", "qlora"):
        return 0.0, 0.0
    groups: dict[tuple[str, str], tuple[float, bool]] = {}
    for t in model.tensors():
        if t.kind != "linear" or t.module not in MEGATRON_LORA_GROUP or not lora_targeted(t, wl.lora_targets):
            continue
        name, column = MEGATRON_LORA_GROUP[t.module]
        key = (name, "shared" if ".shared_expert." in t.name else "")
        groups[key] = (max(groups.get(key, (0.0, column))[0], float(t.count)), column)
    col = sum(n for n, c in groups.values() if c)
    row = sum(n for n, c in groups.values() if not c)
    return col, row


def lora_tp_collectives(wl: Workload) -> tuple[tuple[float, float], int]:
    """((launches per column-parallel adapter, per row-parallel adapter) per micro-batch, steps per rank) of the
    adapters' own tensor-parallel collectives in Megatron (ms-swift's ``LoraParallelLinear``,
    ``SWIFT_MEGATRON_LORA_PY``): a column-parallel base gets ``lora_A`` = ``TELinear`` (no parallelism) and
    ``lora_B`` = ``TEColumnParallelLinear``; a row-parallel base ``lora_A`` = ``TERowParallelLinear`` and
    ``lora_B`` = ``TELinear``. With sequence parallelism ``lora_B`` all-gathers its ``r``-wide input forward and,
    backward, gathers it again and reduce-scatters its input gradient (1 + 2); ``lora_A`` of a row-parallel base
    reduce-scatters its output forward and all-gathers the gradient backward (1 + 1); recompute repeats the
    forward's. Without: ``lora_B``'s input-gradient all-reduce backward, ``lora_A``'s output all-reduce forward
    (and in recompute). Messages are ``tokens x r``: latency-bound."""
    recompute = 1 if wl.grad_ckpt else 0
    if wl.sequence_parallel:
        return (1.0 + 2.0 + recompute, 1.0 + 1.0 + recompute), 1
    return (1.0, 1.0 + recompute), 2


def tp_term(model: ModelShape, wl: Workload, links: Links, framework: str = "megatron") -> CommTerm | None:
    """Tensor parallel: the per-layer collectives of :func:`tp_collectives` on every micro-batch; each costs its
    bytes and NCCL's ring latency (:func:`ring_latency_seconds`), which decides small messages (micro-batch 1,
    short sequences). Megatron-Core gathers the column-parallel input again in backward, other engines do not.
    Megatron LoRA adds its adapters' own collectives (:func:`lora_tp_collectives`)."""
    if wl.tp <= 1:
        return None
    tokens_mb = wl.micro_batch * wl.seq_len / wl.cp
    layers_per_stage = model.num_layers / wl.pp
    buf = tokens_mb * model.hidden_size * ACT_BYTES
    launches, units, steps = tp_collectives(wl, regather=framework == "megatron")
    bw, where = links.ring(wl.tp, 1)
    m = wl.grad_accum
    per_layer = units * ring_seconds(buf, wl.tp, bw, links.link_eff) + launches * ring_latency_seconds(wl.tp, steps, where)
    secs = m * layers_per_stage * per_layer
    moved = m * layers_per_stage * units * buf * (wl.tp - 1) / wl.tp
    if framework == "megatron":
        col, row = megatron_lora_linears(model, wl)
        if col or row:
            (k_col, k_row), lsteps = lora_tp_collectives(wl)
            n = (col * k_col + row * k_row) / wl.pp  # per micro-batch on this stage
            lbuf = tokens_mb * wl.lora_rank * ACT_BYTES
            units_per = 1 if lsteps == 1 else 2
            secs += m * n * (units_per * ring_seconds(lbuf, wl.tp, bw, links.link_eff)
                             + ring_latency_seconds(wl.tp, lsteps, where))
            moved += m * n * units_per * lbuf * (wl.tp - 1) / wl.tp
    return CommTerm(name="tp-allreduce", seconds=secs, overlap=0.0, link=where, bytes_per_gpu=moved)


def ep_term(model: ModelShape, wl: Workload, links: Links, expert_tp: int = 1) -> CommTerm | None:
    """Expert parallel: dispatch + combine per MoE layer forward and backward (+ recompute).

    Expert tensor parallelism is 1 (what the memory model assumes: with ``ep > 1`` experts are sharded by EP
    only, and what the Megatron writers set, ``--expert_tensor_parallel_size 1``): Megatron-Core then orders
    expert ranks ``etp-ep-dp-pp``, so an EP group is ``ep`` consecutive ranks and stays inside a node when
    ``ep <= GPUs per node`` whatever the attention TP (Megatron-MoE-ModelZoo lists TP2/EP8 as "intra-node
    EP"). With sequence parallelism each TP rank dispatches its own ``1/tp`` of the tokens. ``expert_tp`` > 1
    (Megatron-Core's default when unset, and ms-swift's before 3.9) spaces the EP ranks ``expert_tp`` apart.
    Routing imbalance (``workload.routing_imbalance``): the most-loaded rank receives (dispatch) and sends back
    (combine) that many times the mean tokens, and the all-to-all ends when it has."""
    if not (wl.ep > 1 and model.is_moe):
        return None
    g_node, intra, inter, link_eff = links.g_node, links.intra, links.inter, links.link_eff
    tokens_mb = wl.micro_batch * wl.seq_len / wl.cp
    moe_layers = model.n_moe_layers / wl.pp
    send = tokens_mb / wl.tp * model.experts_per_token * model.hidden_size * ACT_BYTES * routing_imbalance(wl, model)
    n_a2a = moe_layers * (4 + (2 if wl.grad_ckpt else 0))
    g_in = min(wl.ep, max(1, g_node // expert_tp))  # EP ranks are expert_tp apart (consecutive with expert TP 1)
    t_intra = send * (g_in - 1) / wl.ep / (intra * 1e9 * link_eff)
    t_inter = 0.0
    where = "intra"
    if links.nodes > 1 and wl.ep * expert_tp > g_node:
        # every GPU of the node sends its off-node share through the node's NICs
        t_inter = g_node * send * (wl.ep - g_in) / wl.ep / ((inter or intra) * 1e9 * link_eff)
        where = "inter"
    m = wl.grad_accum
    secs = m * n_a2a * max(t_intra, t_inter)
    return CommTerm(name="ep-alltoall", seconds=secs, overlap=EP_OVERLAP, link=where,
                    bytes_per_gpu=m * n_a2a * send * (wl.ep - 1) / wl.ep)


def cp_term(model: ModelShape, wl: Workload, links: Links) -> CommTerm | None:
    """Context parallel: ring exchange of K,V per full-attention layer (fwd), K,V + dK,dV (bwd).

    Megatron-Core's context parallelism runs TransformerEngine's P2P ring attention
    (``AttnFuncWithCPAndKVP2P``, transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py):
    each layer-pass takes ``cp`` steps; at each step a rank runs flash attention on the KV block it holds while it
    sends that block on and receives the next one, so ``cp - 1`` transfers each hide behind one step's attention.
    Megatron always uses the load-balanced split (``get_batch_on_this_cp_rank``: the sequence in ``2 x cp`` chunks,
    rank ``r`` holding chunks ``r`` and ``2cp-1-r``), which gives every step the same causal work, so the ring
    hides behind at most ``(cp-1)/cp`` of the attention time (``attention_share``), none of it behind the GEMMs: a
    step's transfer is waited for before the next step, inside the attention layer. The exposed part is
    ``max(0, ring - attention x (cp-1)/cp)`` (``hidden_seconds``). A ring that leaves the node shares the node's
    NICs with the node's other ``tp`` rings, which step at the same time (issue 26)."""
    if wl.cp <= 1:
        return None
    tokens_mb = wl.micro_batch * wl.seq_len / wl.cp
    kv = 2 * tokens_mb * model.num_kv_heads * model.head_dim * ACT_BYTES / wl.tp
    n_full = model.n_full_attention_layers / wl.pp
    per_layer = kv * (wl.cp - 1) * (3 + (1 if wl.grad_ckpt else 0))
    bw, where = links.ring(wl.cp, wl.tp)
    if where == "inter":
        # unlike one data-parallel collective striped over all NICs, each of the node's tp context-parallel rings
        # (ranks tp apart, Megatron order tp-cp-dp-pp) sends its own KV block off the node at every step, at the
        # same time: they share the node's NICs
        bw = min(links.intra, (links.inter or links.intra) / max(1, min(wl.tp, links.g_node)))
    m = wl.grad_accum
    secs = m * n_full * per_layer / (bw * 1e9 * links.link_eff)
    return CommTerm(name="cp-kv", seconds=secs, overlap=1.0, link=where, bytes_per_gpu=m * n_full * per_layer,
                    attention_share=(wl.cp - 1) / wl.cp)


def ulysses_term(model: ModelShape, wl: Workload, links: Links) -> CommTerm | None:
    """DeepSpeed-Ulysses: four all-to-alls per full-attention layer and pass over the ``ulysses`` group (q, k, v from
    sequence-sharded to head-sharded before the attention, the output back after it; DeepSpeed's
    ``DistributedAttention``, https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/sequence/layer.py, and
    the DeepSpeed-Ulysses paper, https://arxiv.org/abs/2309.14509, section 3), the same four for the gradients in
    backward and again for a recomputed forward. Each rank holds ``mb x seq / ulysses`` tokens and sends
    ``(u - 1) / u`` of each tensor: q and the output ``nh x hd`` wide, k and v ``nkv x hd`` (key/value heads fewer
    than the group are repeated up to it first). Ranks are consecutive: the group stays in a node when it fits.
    Synchronous inside the attention layer, before and after the kernel: nothing hides it (overlap 0)."""
    u = wl.ulysses
    if u <= 1 or not model.n_full_attention_layers:
        return None
    tokens = wl.micro_batch * wl.seq_len / u
    kv_heads = max(model.num_kv_heads, u) if model.num_kv_heads < u else model.num_kv_heads
    width = (2 * model.num_heads + 2 * kv_heads) * model.head_dim * ACT_BYTES  # q, o and k, v per token
    passes = 2 + (1 if wl.grad_ckpt else 0)
    per_step = wl.grad_accum * model.n_full_attention_layers * passes * tokens * width * (u - 1) / u
    bw, where = links.ring(u, 1)
    if where == "inter":  # every GPU of a node sends its off-node share through the node's NICs
        bw = bw / max(1, min(links.g_node, u))
    secs = per_step / (bw * 1e9 * links.link_eff)
    return CommTerm(name="ulysses-alltoall", seconds=secs, overlap=0.0, link=where, bytes_per_gpu=per_step)


def pp_term(model: ModelShape, wl: Workload, links: Links, virtual_pp: int = 1) -> CommTerm | None:
    """Pipeline point-to-point: activations forward, their gradients backward, per micro-batch and model
    chunk, each its bytes plus the latency of one NCCL step; the interleaved schedule sends ``virtual_pp`` times
    as many messages (Narayanan et al. 2021, section 2.2.2: "the amount of communication also increases by v"; https://arxiv.org/abs/2104.04473)."""
    if wl.pp <= 1:
        return None
    tokens_mb = wl.micro_batch * wl.seq_len / wl.cp
    buf = tokens_mb * model.hidden_size * ACT_BYTES / (wl.tp if wl.sequence_parallel else 1)
    stage_gpus = wl.gpus // wl.pp
    where = "inter" if links.nodes > 1 and stage_gpus >= links.g_node else "intra"
    bw = min(links.intra, links.inter or links.intra) if where == "inter" else links.intra
    m = wl.grad_accum
    sends = m * 2 * virtual_pp
    # each send is one NCCL point-to-point step: NCCL's base latency plus one hop (ring_latency_seconds of 2 ranks)
    secs = sends * (buf / (bw * 1e9 * links.link_eff) + ring_latency_seconds(2, 1, where))
    return CommTerm(name="pp-p2p", seconds=secs, overlap=0.0, link=where, bytes_per_gpu=sends * buf)


def comm_terms(model: ModelShape, wl: Workload, framework: str, links: Links, trainable: float,
               virtual_pp: int = 1, expert_tp: int = 1) -> list[CommTerm]:
    """All GPU-to-GPU terms in report order: data parallel (dense, expert), TP, EP, CP, PP."""
    terms = dp_terms(model, wl, framework, links, trainable, expert_tp)
    for term in (tp_term(model, wl, links, framework), ep_term(model, wl, links, expert_tp), cp_term(model, wl, links),
                 ulysses_term(model, wl, links), pp_term(model, wl, links, virtual_pp)):
        if term is not None:
            terms.append(term)
    return terms
