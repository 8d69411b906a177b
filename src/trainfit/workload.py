"""The training request: one frozen, keyword-only dataclass validated in ``__post_init__``.

Every option of ``trainfit memory`` / ``trainfit trace`` / ``trainfit plan`` maps to one field here.
Defaults follow what ms-swift and LLaMA-Factory do out of the box (LoRA on all linear layers, gradient
checkpointing on, sdpa attention, bf16).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from trainfit.errors import WorkloadError

Method = Literal["full", "lora", "qlora", "freeze"]
Attention = Literal["sdpa", "flash", "flash3", "eager"]
Loss = Literal["standard", "fused", "half"]
Precision = Literal["bf16", "amp-bf16", "fp16", "fp8"]
Optimizer = Literal["adamw-fused", "adamw-foreach", "adamw-8bit", "paged-adamw-8bit", "sgd", "adafactor"]
Strategy = Literal["ddp", "zero1", "zero2", "zero3", "fsdp"]
Offload = Literal["none", "optimizer", "all"]
ExpertsImpl = Literal["modulelist", "eager", "grouped_mm"]

METHODS: tuple[str, ...] = ("full", "lora", "qlora", "freeze")
ATTENTIONS: tuple[str, ...] = ("sdpa", "flash", "flash3", "eager")
LOSSES: tuple[str, ...] = ("standard", "fused", "half")
PRECISIONS: tuple[str, ...] = ("bf16", "amp-bf16", "fp16", "fp8")
OPTIMIZERS: tuple[str, ...] = ("adamw-fused", "adamw-foreach", "adamw-8bit", "paged-adamw-8bit", "sgd", "adafactor")
STRATEGIES: tuple[str, ...] = ("ddp", "zero1", "zero2", "zero3", "fsdp")
OFFLOADS: tuple[str, ...] = ("none", "optimizer", "all")
EXPERTS_IMPLS: tuple[str, ...] = ("modulelist", "eager", "grouped_mm")

#: LoRA "all-linear": every nn.Linear in the decoder layers (PEFT excludes the LM head), plus, in MoE
#: layers, the router and the fused expert tensors (what PEFT 0.21 does with transformers 5; the fused
#: gate_up_proj gets rank 2r).
ALL_LINEAR = "all-linear"


def _choice(name: str, value: str, allowed) -> None:
    allowed = tuple(sorted(allowed)) if not isinstance(allowed, tuple) else allowed
    if value not in allowed:
        from trainfit.errors import did_you_mean

        sugg = did_you_mean(value, list(allowed), n=1)
        raise WorkloadError(
            f"{name} must be one of {', '.join(allowed)}; got {value!r}",
            fix=f"did you mean {sugg[0]}?" if sugg else None,
        )


def _positive(name: str, value: int, *, zero_ok: bool = False) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if zero_ok else 1):
        raise WorkloadError(f"{name} must be an integer >= {0 if zero_ok else 1}; got {value!r}")


#: The fields that decide how the job is laid out on GPUs (what `trainfit plan` searches unless pinned).
LAYOUT_FIELDS: tuple[str, ...] = ("gpus", "gpus_per_node", "strategy", "offload", "micro_batch", "grad_ckpt",
                                  "grad_accum", "tp", "pp", "ep", "cp")

_CHOICES = (("method", frozenset(METHODS)), ("attention", frozenset(ATTENTIONS)), ("loss", frozenset(LOSSES)),
            ("precision", frozenset(PRECISIONS)), ("optimizer", frozenset(OPTIMIZERS)),
            ("strategy", frozenset(STRATEGIES)), ("offload", frozenset(OFFLOADS)),
            ("experts_impl", frozenset(EXPERTS_IMPLS)))
_INT_FIELDS = ("seq_len", "micro_batch", "grad_accum", "gpus", "gpus_per_node", "tp", "pp", "ep", "cp", "lora_rank",
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
    as ``standard`` (estimate/loss_region.py ``_loss_region``)."""
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
    sequence_parallel: bool = True
    """Megatron sequence parallelism (shards norm and residual activations over ``tp``)."""
    ds_bucket_elems: int = 200_000_000
    """DeepSpeed ``reduce_bucket_size`` (and ZeRO-1/2 ``allgather_bucket_size``), elements. trainfit's
    ds_config.json writes this value for both. 2e8 is what ms-swift's zero2 preset and the Hugging Face DeepSpeed
    guide's ZeRO-2 example use (https://huggingface.co/docs/transformers/deepspeed): with ``overlap_comm`` it
    costs 4.5 x 2e8 x 2 B = 1.7 GiB instead of 8.4 GiB at DeepSpeed's own default 5e8
    (deepspeed/runtime/zero/config.py), for a few more, still large, reduce calls."""
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
            raise WorkloadError("lora_targets is empty", fix="use all-linear or a list such as q_proj,v_proj")
        if self.seq_len > 4_194_304:
            raise WorkloadError(f"seq_len {self.seq_len} is beyond any supported context", fix="use <= 4M tokens")
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            raise WorkloadError(
                f"{self.gpus} GPUs do not fill whole nodes of {self.gpus_per_node}",
                fix=f"use a multiple of {self.gpus_per_node} GPUs or set --gpus-per-node",
            )
        mp = self.tp * self.pp * self.cp
        if self.gpus % mp:
            raise WorkloadError(
                f"--gpus {self.gpus} is not divisible by tp*pp*cp = {mp}",
                fix=f"use a multiple of {mp} GPUs or smaller --tp/--pp/--cp",
            )
        if self.ep > 1 and self.dp % self.ep and (self.dp * self.tp) % self.ep:
            raise WorkloadError(
                f"--ep {self.ep} must divide the data-parallel size ({self.dp})",
                fix="choose --ep that divides --gpus / (tp*pp*cp)",
            )
        if self.offload != "none" and self.strategy not in ("zero1", "zero2", "zero3", "fsdp"):
            raise WorkloadError(
                f"offload={self.offload} needs a sharded strategy", fix="use --strategy zero2, zero3 or fsdp"
            )
        if self.offload == "all" and self.strategy not in ("zero3", "fsdp"):
            raise WorkloadError("parameter offload needs ZeRO-3 or FSDP", fix="use --strategy zero3 or --offload optimizer")
        if self.method == "qlora" and self.strategy == "zero3" and self.offload == "all":
            raise WorkloadError("QLoRA 4-bit weights cannot be offloaded by ZeRO-3", fix="use --offload optimizer")
        if self.precision == "fp16" and self.optimizer in ("adamw-8bit", "paged-adamw-8bit") and self.method == "full":
            pass  # valid (bitsandbytes supports fp32 master + 8-bit states under fp16 AMP)
        if self.ds_bucket_elems > MAX_DS_BUCKET_ELEMS:
            raise WorkloadError(f"ds_bucket_elems {self.ds_bucket_elems} is beyond any GPU's memory",
                                fix="use DeepSpeed's default 500000000 (5e8) or less")
        if not isinstance(self.packing, bool):
            raise WorkloadError(f"packing must be true or false; got {self.packing!r}")
        if not isinstance(self.ds_overlap_comm, bool):
            raise WorkloadError(f"ds_overlap_comm must be true or false; got {self.ds_overlap_comm!r}")
        if self.seq_len % self.cp:
            raise WorkloadError(f"seq_len {self.seq_len} is not divisible by --cp {self.cp}")

    # ------------------------------------------------------------------ derived
    @property
    def dp(self) -> int:
        """Data-parallel degree: GPUs / (tp * pp * cp)."""
        return self.gpus // (self.tp * self.pp * self.cp)

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
            raise WorkloadError(f"micro_batch must be a positive integer; got {micro_batch!r}")
        obj = object.__new__(Workload)
        obj.__dict__.update(self.__dict__)
        obj.__dict__["micro_batch"] = micro_batch
        if grad_accum is not None:
            obj.__dict__["grad_accum"] = int(grad_accum)
        return obj


_FIELD_NAMES = frozenset(f.name for f in fields(Workload))
DEFAULT_WORKLOAD = Workload()
