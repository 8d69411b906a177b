"""The training request: one frozen, keyword-only dataclass validated in ``__post_init__``.

Every option of ``trainfit memory`` / ``trainfit trace`` / ``trainfit plan`` maps to one field here.
Defaults follow what ms-swift and LLaMA-Factory do out of the box (LoRA on all linear layers, gradient
checkpointing on, sdpa attention, bf16).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from trainfit.errors import LayoutError, WorkloadError, did_you_mean
from trainfit.i18n import _

Method = Literal["full", "lora", "qlora", "freeze"]
Attention = Literal["sdpa", "flash", "flash3", "eager"]
Loss = Literal["standard", "fused", "half", "shift-copy"]
Precision = Literal["bf16", "amp-bf16", "fp16", "fp8"]
Optimizer = Literal["adamw-fused", "adamw-foreach", "adamw-8bit", "paged-adamw-8bit", "sgd", "adafactor"]
Strategy = Literal["ddp", "zero1", "zero2", "zero3", "fsdp"]
Offload = Literal["none", "optimizer", "all"]
ExpertsImpl = Literal["modulelist", "eager", "grouped_mm"]

METHODS: tuple[str, ...] = ("full", "lora", "qlora", "freeze")
ATTENTIONS: tuple[str, ...] = ("sdpa", "flash", "flash3", "eager")
LOSSES: tuple[str, ...] = ("standard", "fused", "half", "shift-copy")
PRECISIONS: tuple[str, ...] = ("bf16", "amp-bf16", "fp16", "fp8")
OPTIMIZERS: tuple[str, ...] = ("adamw-fused", "adamw-foreach", "adamw-8bit", "paged-adamw-8bit", "sgd", "adafactor")
STRATEGIES: tuple[str, ...] = ("ddp", "zero1", "zero2", "zero3", "fsdp")
OFFLOADS: tuple[str, ...] = ("none", "optimizer", "all")
EXPERTS_IMPLS: tuple[str, ...] = ("modulelist", "eager", "grouped_mm")
MOE_ROUTINGS: tuple[str, ...] = ("natural", "balanced")
#: Largest max/mean expert-parallel load factor ``--moe-routing`` accepts.
MAX_MOE_IMBALANCE = 64.0

NATURAL_ROUTING_IMBALANCE = 1.7
"""Assumption: under natural routing (a learned router with the usual auxiliary load-balancing loss, dropless, no
forced balancing) the most-loaded expert-parallel rank of a MoE layer receives this many times the mean number of
routed tokens, and the other ranks wait for it at the combine all-to-all. Source: Megatron-MoE-ModelZoo's Qwen3
long-context table (NVIDIA, Megatron-Core, Qwen3-235B-A22B on 256 H100, TP4/PP8/VPP4/EP8, DeepEP) prints every
run twice, forced balance and dropless: 295 vs 237 TFLOP/s at 16k tokens, 335/277 at 32k (CP2), 368/320 at 64k
(CP4), 389/357 at 128k (CP8) (https://github.com/yanring/Megatron-MoE-ModelZoo/blob/c1ad0b5c89f425d60febddc38e7f741a16f08bd1/best_practice/Qwen3/readme.md).
In trainfit's model of the 16k layout the load-scaled part of the step (routed-expert GEMMs, their element-wise
traffic and the EP all-to-all) needs a factor of 1.7 to give the x1.245; the same factor then gives x1.19, x1.12
and x1.08 for the 32k-128k runs (published x1.21, x1.15, x1.09) and x1.22 for XTuner's capacity sweep on 256 H800
(TP4/EP8/PP8: capacity factor 1, no expert above the mean, 50.81 s per step; 5, in effect dropless, 66.34 s: x1.31,
https://github.com/InternLM/xtuner/blob/79f213643ba0b84147fb06c20f9538a0f01db459/docs/en/benchmark/megatron_moe_benchmark.md).
``tests/estimate/test_moe_routing.py`` recomputes these. Published Megatron-Core benchmarks force the balance
(``--moe-router-force-load-balancing``; Megatron-Bridge's performance summary: "we force-balance the token
distribution among experts")."""

#: LoRA "all-linear": every nn.Linear in the decoder layers (PEFT excludes the LM head), plus, in MoE
#: layers, the router and the fused expert tensors (what PEFT 0.21 does with transformers 5; the fused
#: gate_up_proj gets rank 2r).
ALL_LINEAR = "all-linear"


def _choice(name: str, value: str, allowed) -> None:
    allowed = tuple(sorted(allowed)) if not isinstance(allowed, tuple) else allowed
    if value not in allowed:
        sugg = did_you_mean(value, list(allowed), n=1)
        raise WorkloadError(
            _("{name} must be one of {allowed}; got {value!r}").format(name=name, allowed=", ".join(allowed),
                                                                         value=value),
            fix=_("did you mean {s}?").format(s=sugg[0]) if sugg else None,
        )


def _moe_routing_factor(value: object) -> float:
    """The max/mean load factor of a ``moe_routing`` value (``natural``, ``balanced`` or a number >= 1)."""
    if value == "natural":
        return NATURAL_ROUTING_IMBALANCE
    if value == "balanced":
        return 1.0
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        f = float("nan")
    if not 1.0 <= f <= MAX_MOE_IMBALANCE:  # also NaN
        raise WorkloadError(_("moe_routing must be natural, balanced or a max/mean load factor from 1 to {hi:g}; "
                              "got {value!r}").format(hi=MAX_MOE_IMBALANCE, value=value),
                            fix=_("use --moe-routing natural (a learned router), balanced (forced balance) or e.g. 1.3"))
    return f


def routing_imbalance(wl: "Workload", model: object | None = None) -> float:
    """Tokens of the most-loaded expert-parallel rank over the mean: 1.0 without expert parallelism or for a dense
    ``model``, else what ``Workload.moe_routing`` says (the one place time and memory read it from)."""
    if wl.ep <= 1 or (model is not None and not getattr(model, "is_moe", False)):
        return 1.0
    return _moe_routing_factor(wl.moe_routing)


def _positive(name: str, value: int, *, zero_ok: bool = False) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if zero_ok else 1):
        raise WorkloadError(_("{name} must be an integer >= {low}; got {value!r}").format(
            name=name, low=0 if zero_ok else 1, value=value))


#: Megatron-Core's process groups (``initialize_model_parallel`` in megatron/core/parallel_state.py,
#: https://github.com/NVIDIA/Megatron-LM/blob/00caa53af30912914981c86f39db123961678bbd/megatron/core/parallel_state.py)
#: and the layer asserts cited in :func:`layout_error`.
MEGATRON_PARALLEL_STATE_URL = ("https://github.com/NVIDIA/Megatron-LM/blob/00caa53af30912914981c86f39db123961678bbd/"
                               "megatron/core/parallel_state.py")


def _divisors(n: int, limit: int | None = None) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0 and (limit is None or limit % d == 0)]


def _ulysses_error(wl: "Workload", model: object | None) -> WorkloadError | None:
    """DeepSpeed-Ulysses (``ulysses`` > 1): Hugging Face / DeepSpeed engines without Megatron parallelism, whole GPUs
    and tokens per rank, and (with the model) whole heads per rank: DeepSpeed's ``DistributedAttention`` all-to-all
    scatters the head dimension over the group (``num_heads % sp == 0``); key/value heads that do not divide are
    repeated up to the group size (ms-swift's Ulysses, which needs ``sp % num_kv_heads == 0`` then)."""
    u = getattr(wl, "ulysses", 1)  # callers may pass a namespace of a job file's fields
    if u <= 1:
        return None
    if max(wl.tp, wl.pp, wl.cp, wl.ep) > 1:
        return WorkloadError(
            _("--ulysses {u} (DeepSpeed-Ulysses) runs in Hugging Face / DeepSpeed engines, not with Megatron's "
              "tp/pp/cp/ep").format(u=u),
            fix=_("use --ulysses 1 with Megatron layouts (their sequence split is --cp), or tp/pp/cp/ep 1"))
    if wl.gpus % u:
        return WorkloadError(_("--gpus {g} is not divisible by --ulysses {u}").format(g=wl.gpus, u=u),
                             fix=_("use a multiple of {u} GPUs").format(u=u))
    if wl.seq_len % u:
        return WorkloadError(_("seq_len {s} is not divisible by --ulysses {u}").format(s=wl.seq_len, u=u),
                             fix=_("use a --seq-len that is a multiple of {u}").format(u=u))
    heads = getattr(model, "num_heads", 0) if model is not None else 0
    kv = getattr(model, "num_kv_heads", 0) if model is not None else 0
    if heads and heads % u:
        ok = [d for d in _divisors(heads) if 1 < d <= 64]
        return WorkloadError(
            _("--ulysses {u} does not divide the model's {n} attention heads (Ulysses gives each rank whole heads)")
            .format(u=u, n=heads), fix=_("use --ulysses {ok}").format(ok=", ".join(map(str, ok)) or "1"))
    if kv and kv % u and u % kv:
        return WorkloadError(
            _("--ulysses {u} neither divides nor is a multiple of the model's {n} key/value heads").format(u=u, n=kv),
            fix=_("use a --ulysses that divides {n} or is a multiple of it").format(n=kv))
    return None


def layout_error(wl: "Workload", model: object | None = None, *, expert_tp: int = 1) -> LayoutError | None:
    """The one rule for how a job's GPUs form tensor-, pipeline-, context- and expert-parallel groups: ``None``
    when the layout is valid, else the error that names the first broken condition and its cause. ``Workload``
    calls it without a model (the group arithmetic); :func:`trainfit.estimate.memory.estimate_memory` (so
    ``memory``, ``plan``, ``render`` and ``check``) and the planner's candidate search call it with the model (the
    shape conditions).

    Megatron-Core, ``initialize_model_parallel`` (:data:`MEGATRON_PARALLEL_STATE_URL`):
    - the dense layers use ``world = tp x cp x dp x pp`` ("world_size is not divisible by tp*pp*cp");
    - the expert layers re-split the same ranks as ``etp x ep x edp x pp``: the expert-parallel group is drawn from
      the tensor-, context- and data-parallel ranks of one pipeline stage together ("MoE parallel folding"), so
      with expert tensor parallelism 1 (what trainfit's Megatron writers set and its memory and speed models
      size) ``ep`` must divide ``tp x cp x dp = gpus / pp``, not ``dp``; the expert data-parallel size is
      ``gpus / (pp x ep)``;
    - ``seq_len`` splits over ``cp`` ranks.
    With the model: ``num_experts % ep == 0`` (``BaseMoELayer``, megatron/core/transformer/moe/moe_layer.py), the
    attention heads and the key/value heads divide over ``tp`` (``divide(num_query_groups, tp)`` in
    megatron/core/transformer/attention.py; every tensor-parallel engine shards whole heads), and a pipeline has no
    more stages than the model has layers. ``expert_tp``: a job file's ``expert_tensor_parallel_size`` (check reads it;
    trainfit's own layouts use 1): the expert split is then ``expert_tp x ep x edp x pp``, so ``expert_tp x ep`` must
    divide ``gpus / pp``."""
    err = _layout_error(wl, model, expert_tp)
    return None if err is None else LayoutError(err.message, fix=err.fix)


def _layout_error(wl: "Workload", model: object | None, expert_tp: int) -> WorkloadError | None:
    """:func:`layout_error`'s conditions in order, the first broken one as a WorkloadError."""
    mp = wl.tp * wl.pp * wl.cp
    if wl.gpus % mp:
        return WorkloadError(_("--gpus {gpus} is not divisible by tp*pp*cp = {mp}").format(gpus=wl.gpus, mp=mp),
                             fix=_("use a multiple of {mp} GPUs or smaller --tp/--pp/--cp").format(mp=mp))
    stage = wl.gpus // wl.pp  # tp x cp x dp: the ranks of one pipeline stage
    experts = getattr(model, "num_experts", 0) or 0
    if wl.ep > 1 and experts and experts % wl.ep:
        ok = _divisors(stage, experts)
        return WorkloadError(_("--ep {ep} does not divide the model's {experts} experts (each expert-parallel rank "
                               "holds num_experts / ep whole experts)").format(ep=wl.ep, experts=experts),
                             fix=(_("use --ep {values}").format(values=", ".join(map(str, ok[:6]))) if ok
                                  else _("use --ep 1")))
    if wl.ep > 1 and expert_tp > 1 and stage % (wl.ep * expert_tp):
        return WorkloadError(
            _("--ep {ep} with expert tensor parallelism {expert_tp} needs {need} GPUs per pipeline stage to split "
              "the experts, the stage has {stage} (tp x cp x dp): Megatron-Core refuses it at start (world size not "
              "divisible by expert_tensor_parallel x expert_model_parallel x pipeline size)").format(
                ep=wl.ep, expert_tp=expert_tp, need=wl.ep * expert_tp, stage=stage),
            fix=_("set expert_tensor_parallel_size 1 (whole experts per rank) or a smaller "
                  "expert_model_parallel_size"))
    if wl.ep > 1 and stage % wl.ep:
        ok = _divisors(stage, getattr(model, "num_experts", None) or None)
        return WorkloadError(
            _("--ep {ep} must divide the GPUs of one pipeline stage (tp x cp x dp = {tp} x {cp} x {dp} = {stage}): "
              "Megatron-Core forms expert-parallel groups from the tensor-, context- and data-parallel ranks of a "
              "stage (expert tensor parallelism 1)").format(ep=wl.ep, tp=wl.tp, cp=wl.cp,
                                                           dp=stage // (wl.tp * wl.cp), stage=stage),
            fix=(_("use --ep {values} or more GPUs").format(values=", ".join(map(str, ok[:6]))) if ok
                 else _("use --ep 1 or more GPUs")))
    if wl.seq_len % wl.cp:
        return WorkloadError(_("seq_len {seq_len} is not divisible by --cp {cp}").format(seq_len=wl.seq_len, cp=wl.cp),
                             fix=_("use a --seq-len that is a multiple of {cp}").format(cp=wl.cp))
    err = _ulysses_error(wl, model)
    if err is not None or model is None:
        return err
    for kv, n in ((False, getattr(model, "num_heads", 0)), (True, getattr(model, "num_kv_heads", 0))):
        if wl.tp > 1 and n and n % wl.tp:
            ok = [d for d in _divisors(n) if d <= 8]
            msg = (_("--tp {tp} does not divide the model's {n} key/value heads (tensor parallelism splits whole "
                     "heads over its ranks)") if kv else
                   _("--tp {tp} does not divide the model's {n} attention heads (tensor parallelism splits whole "
                     "heads over its ranks)"))
            return WorkloadError(msg.format(tp=wl.tp, n=n),
                                 fix=(_("use --tp {values}").format(values=", ".join(map(str, ok))) if ok
                                      else _("use --tp 1")))
    layers = getattr(model, "num_layers", 0)
    if layers and wl.pp > layers:
        return WorkloadError(_("--pp {pp} is more pipeline stages than the model's {layers} layers").format(
                                 pp=wl.pp, layers=layers),
                             fix=_("use --pp {layers} or fewer").format(layers=layers))
    return None


def check_layout(wl: "Workload", model: object) -> None:
    """Raise :func:`layout_error` of ``wl`` on ``model``, if any."""
    err = layout_error(wl, model)
    if err is not None:
        raise err


#: The fields that decide how the job is laid out on GPUs (what `trainfit plan` searches unless pinned).
LAYOUT_FIELDS: tuple[str, ...] = ("gpus", "gpus_per_node", "strategy", "offload", "micro_batch", "grad_ckpt",
                                  "grad_accum", "tp", "pp", "ep", "cp")

_CHOICES = (("method", frozenset(METHODS)), ("attention", frozenset(ATTENTIONS)), ("loss", frozenset(LOSSES)),
            ("precision", frozenset(PRECISIONS)), ("optimizer", frozenset(OPTIMIZERS)),
            ("strategy", frozenset(STRATEGIES)), ("offload", frozenset(OFFLOADS)),
            ("experts_impl", frozenset(EXPERTS_IMPLS)))
_INT_FIELDS = ("seq_len", "micro_batch", "grad_accum", "gpus", "gpus_per_node", "tp", "pp", "ep", "cp", "ulysses", "lora_rank",
               "lora_alpha", "freeze_trainable_layers", "ds_bucket_elems")
#: Largest DeepSpeed bucket accepted (elements): 1e11 x 2 bytes is beyond any GPU's memory.
MAX_DS_BUCKET_ELEMS = 100_000_000_000


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One training configuration, per GPU and for the whole job."""

    method: Method = "full"
    """``full`` (all parameters), ``lora`` (PEFT adapters on a bf16 base), ``qlora`` (adapters on a 4-bit
    NF4 base, bitsandbytes), ``freeze`` (train only the last ``freeze_trainable_layers`` layers)."""
    lora_rank: int = 8
    lora_alpha: int = 32
    lora_targets: tuple[str, ...] = (ALL_LINEAR,)
    """Module names to adapt (``q_proj``, ``v_proj``...) or ``all-linear``."""
    freeze_trainable_layers: int = 2
    """For ``freeze``: how many of the last decoder layers train (LLaMA-Factory's default is 2)."""
    seq_len: int = 2048
    """Tokens per sample (packed or padded to this length)."""
    packing: bool = True
    """Samples packed into rows of ``seq_len`` tokens (ms-swift ``--packing true``, LLaMA-Factory ``packing`` /
    ``neat_packing``): every row the job trains holds ``seq_len`` data tokens, so the step budget
    ``tokens / (global batch x seq_len)`` is the number of optimizer steps that train ``tokens`` tokens. Off
    (``--no-packing``), each row is one sample padded to the batch's longest: memory is sized at ``seq_len`` (the
    worst case), and on data whose samples average ``L < seq_len`` tokens that many steps train only
    ``L / seq_len`` of the planned tokens. Memory and speed are sized the same either way."""
    micro_batch: int = 1
    """Samples per GPU per forward/backward."""
    grad_accum: int = 1
    """Micro-batches accumulated before each optimizer step."""
    grad_ckpt: bool = True
    """Gradient (activation) checkpointing of every decoder layer (non-reentrant, as HF does)."""
    attention: Attention = "sdpa"
    """Attention kernel: ``sdpa`` (the engine's default: PyTorch SDPA, cuDNN attention on Hopper with torch >=
    2.11; TransformerEngine fused attention under Megatron), ``flash`` (FlashAttention-2), ``flash3``
    (FlashAttention-3, Hopper only) or ``eager`` (materialised ``S x S`` scores). Memory counts the first three
    the same; speed times FlashAttention-2 on Hopper slower (``EngineConstants.fa2_hopper_factor``)."""
    experts_impl: ExpertsImpl = "modulelist"
    """How Hugging Face code runs MoE experts (the hf-trainer and deepspeed engines; the speed model):
    ``modulelist``: transformers < 5, one ``nn.Linear`` per expert in a Python loop (every published HF-MoE run
    in trainfit's calibration set); ``eager``: transformers >= 5 with ``experts_implementation="eager"``, a loop
    over stacked expert weights; ``grouped_mm``: transformers >= 5's default, ``torch._grouped_mm`` without a
    loop (ms-swift ``--experts_impl grouped_mm``)."""
    loss: Loss = "standard"
    """``standard``: HF loss (fp32 logits); ``fused``: chunked linear cross-entropy (Liger), no full logits;
    ``half``: the model's own cross-entropy over the LM head's 16-bit logits with no fp32 copy: remote code whose
    forward calls ``CrossEntropyLoss`` on the LM head output without ``.float()`` (Qwen v1's ``QWenLMHeadModel``,
    https://huggingface.co/Qwen/Qwen-7B-Chat/blob/main/modeling_qwen.py) run without autocast (DeepSpeed fp16/bf16,
    pure bf16). Under autocast (``amp-bf16``/``fp16`` with ``ddp``) cross_entropy runs in fp32 and ``half`` sizes
    as ``standard`` (estimate/loss_region.py ``_loss_region``). ``shift-copy``: the Hugging Face loss of transformers
    < 4.49, whose ``ForCausalLMLoss`` (and, before 4.46, each model's forward) shifted the fp32 logits with
    ``logits[..., :-1, :].contiguous()``: with more than one sample per micro-batch, one more fp32 copy of all logits
    alive through the cross-entropy (removed
    by https://github.com/huggingface/transformers/pull/35646, merged 2025-01-13, first released in 4.49.0)."""
    precision: Precision = "bf16"
    """``bf16``: pure bf16 params, grads and optimizer states; ``amp-bf16``: fp32 params with autocast;
    ``fp16``: fp32 master params with fp16 autocast; ``fp8``: fp8 matmuls with bf16 weights, fp32 master."""
    optimizer: Optimizer = "adamw-fused"
    gpus: int = 1
    """GPUs in the job (all nodes)."""
    gpus_per_node: int = 8
    strategy: Strategy = "ddp"
    """How data parallelism holds model states: ``ddp`` (replicated), DeepSpeed ``zero1|zero2|zero3``,
    or PyTorch ``fsdp`` (FSDP2 full sharding)."""
    offload: Offload = "none"
    """DeepSpeed/FSDP CPU offload: of the optimizer states, or of optimizer states and parameters."""
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    ulysses: int = 1
    """DeepSpeed-Ulysses sequence parallelism (ms-swift / LLaMA-Factory ``--sequence_parallel_size``, DeepSpeed's
    ``DistributedAttention``): each sequence's tokens split over this many ranks, which exchange q, k, v and the
    attention output by all-to-all so that each rank attends the whole sequence with ``1/ulysses`` of the heads.
    Hugging Face / DeepSpeed engines only (Megatron layouts use ``cp``); the batch is split over
    ``gpus / (tp pp cp ulysses)`` ranks, ZeRO/FSDP shard over all of them."""
    sequence_parallel: bool = True
    """Megatron sequence parallelism (shards norm and residual activations over ``tp``)."""
    ds_bucket_elems: int = 200_000_000
    """DeepSpeed ``reduce_bucket_size`` (and ZeRO-1/2 ``allgather_bucket_size``), elements. trainfit's
    ds_config.json writes this value for both. 2e8 is what ms-swift's zero2 preset and the Hugging Face DeepSpeed
    guide's ZeRO-2 example use (https://huggingface.co/docs/transformers/deepspeed): with ``overlap_comm`` it
    costs 4.5 x 2e8 x 2 B = 1.7 GiB instead of 8.4 GiB at DeepSpeed's own default 5e8
    (deepspeed/runtime/zero/config.py), for a few more, still large, reduce calls."""
    moe_routing: str = "natural"
    """How tokens spread over the expert-parallel ranks of a MoE layer (``--moe-routing``; only with ``ep > 1``):
    ``natural`` (a learned router, dropless: the most-loaded rank gets :data:`NATURAL_ROUTING_IMBALANCE` x the mean),
    ``balanced`` (every rank the mean: Megatron-Core ``--moe-router-force-load-balancing``, what published MoE
    benchmarks run), or the max/mean factor itself (``"1.2"``). :func:`routing_imbalance` turns it into the factor
    that the speed model (expert GEMMs, routed element-wise traffic, the EP all-to-all) and the memory model (the
    routed-token activations of the most-loaded rank) apply."""
    ds_overlap_comm: bool = True
    """DeepSpeed ``overlap_comm`` (trainfit's ds_config.json writes it): with ZeRO-1/2 the gradient reduction
    overlaps backward at the cost of larger communication buffers (estimate/states.py ``ds_comm_buffer_bytes``)."""

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES:
            if getattr(self, name) not in allowed:
                _choice(name, getattr(self, name), allowed)
        for n in _INT_FIELDS:
            v = getattr(self, n)
            if type(v) is not int or v < 1:
                _positive(n, v)
        if isinstance(self.lora_targets, str):
            object.__setattr__(self, "lora_targets", tuple(t.strip() for t in self.lora_targets.split(",") if t.strip()))
        if not self.lora_targets:
            raise WorkloadError(_("lora_targets is empty"), fix=_("use all-linear or a list such as q_proj,v_proj"))
        if self.seq_len > 4_194_304:
            raise WorkloadError(_("seq_len {seq_len} is beyond any supported context").format(seq_len=self.seq_len),
                                fix=_("use <= 4M tokens"))
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            raise WorkloadError(
                _("{gpus} GPUs do not fill whole nodes of {gpus_per_node}").format(gpus=self.gpus,
                                                                                   gpus_per_node=self.gpus_per_node),
                fix=_("use a multiple of {gpus_per_node} GPUs or set --gpus-per-node").format(
                    gpus_per_node=self.gpus_per_node),
            )
        _moe_routing_factor(self.moe_routing)
        err = layout_error(self)
        if err is not None:
            raise err
        if self.offload != "none" and self.strategy not in ("zero1", "zero2", "zero3", "fsdp"):
            raise WorkloadError(
                _("offload={offload} needs a sharded strategy").format(offload=self.offload),
                fix=_("use --strategy zero2, zero3 or fsdp")
            )
        if self.offload == "all" and self.strategy not in ("zero3", "fsdp"):
            raise WorkloadError(_("parameter offload needs ZeRO-3 or FSDP"),
                                fix=_("use --strategy zero3 or --offload optimizer"))
        if self.method == "qlora" and self.strategy == "zero3" and self.offload == "all":
            raise WorkloadError(_("QLoRA 4-bit weights cannot be offloaded by ZeRO-3"), fix=_("use --offload optimizer"))
        if self.precision == "fp16" and self.optimizer in ("adamw-8bit", "paged-adamw-8bit") and self.method == "full":
            pass  # valid (bitsandbytes supports fp32 master + 8-bit states under fp16 AMP)
        if self.ds_bucket_elems > MAX_DS_BUCKET_ELEMS:
            raise WorkloadError(_("ds_bucket_elems {elems} is beyond any GPU's memory").format(elems=self.ds_bucket_elems),
                                fix=_("use DeepSpeed's default 500000000 (5e8) or less"))
        if not isinstance(self.packing, bool):
            raise WorkloadError(_("packing must be true or false; got {value!r}").format(value=self.packing))
        if not isinstance(self.ds_overlap_comm, bool):
            raise WorkloadError(_("ds_overlap_comm must be true or false; got {value!r}").format(
                value=self.ds_overlap_comm))

    # ------------------------------------------------------------------ derived
    @property
    def dp(self) -> int:
        """Data-parallel degree (ranks that read different samples): GPUs / (tp * pp * cp * ulysses)."""
        return self.gpus // (self.tp * self.pp * self.cp * self.ulysses)

    @property
    def seq_shards(self) -> int:
        """Ranks one sequence's tokens are split over: context parallelism x DeepSpeed-Ulysses."""
        return self.cp * self.ulysses

    @property
    def gpus_on_node(self) -> int:
        """GPUs the job uses on one node (``gpus`` when the job is smaller than a node)."""
        return min(self.gpus, self.gpus_per_node)

    @property
    def nodes(self) -> int:
        return max(1, -(-self.gpus // self.gpus_per_node))

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.seq_len * self.micro_batch

    @property
    def global_batch(self) -> int:
        """Samples per optimizer step over the whole job."""
        return self.micro_batch * self.grad_accum * self.dp

    @property
    def uses_megatron(self) -> bool:
        return max(self.tp, self.pp, self.ep, self.cp) > 1

    def to_dict(self) -> dict:
        """JSON-ready fields (``lora_targets`` as a list)."""
        d = dict(self.__dict__)
        d["lora_targets"] = list(self.lora_targets)
        return d

    def with_(self, **changes: object) -> "Workload":
        """A copy with some fields changed (validated again). Faster than ``dataclasses.replace``."""
        unknown = set(changes) - _FIELD_NAMES
        if unknown:
            raise TypeError(f"Workload has no field(s) {sorted(unknown)}")
        obj = object.__new__(Workload)
        obj.__dict__.update(self.__dict__)
        obj.__dict__.update(changes)
        obj.__post_init__()
        return obj

    def _with_batch(self, micro_batch: int, grad_accum: int | None = None) -> "Workload":
        """Internal fast copy with another micro-batch / accumulation (positive ints; no other field changes,
        so the rest of the validation still holds)."""
        if type(micro_batch) is not int or micro_batch < 1 or (grad_accum is not None and grad_accum < 1):
            raise WorkloadError(_("micro_batch must be a positive integer; got {value!r}").format(value=micro_batch))
        obj = object.__new__(Workload)
        obj.__dict__.update(self.__dict__)
        obj.__dict__["micro_batch"] = micro_batch
        if grad_accum is not None:
            obj.__dict__["grad_accum"] = int(grad_accum)
        return obj


_FIELD_NAMES = frozenset(f.name for f in fields(Workload))
DEFAULT_WORKLOAD = Workload()


def default_framework(workload: Workload) -> str:
    """Framework profile implied by the workload: Megatron for tp/pp/ep/cp > 1, DeepSpeed for ZeRO,
    else the HF Trainer (DDP, or FSDP through accelerate). The speed model's default engine, and the one ms-swift
    runs for the layout (:mod:`trainfit.targets`)."""
    if workload.uses_megatron:
        return "megatron"
    if workload.strategy.startswith("zero"):
        return "deepspeed"
    return "hf-trainer"
