"""Which parameters train, and how many elements each rank holds.

Pure functions over :class:`ModelShape` tensors and a :class:`Workload`. Every count is a sum over real
tensors (see ``models/shapes.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainfit.models.shapes import ModelShape, ParamTensor
from trainfit.workload import ALL_LINEAR, Workload

QLORA_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
"""NF4 with double quantization: 4 bits + 0.127 bits of quantization constants per parameter (QLoRA,
Dettmers et al. 2023, section 3 'Double Quantization') = 0.516 bytes."""


def gathered_param_bytes(model: ModelShape, wl: Workload) -> float:
    """Bytes of the (whole) model's weights as data parallelism gathers them (fp32 under amp-bf16, 16-bit else;
    QLoRA's 4-bit linears at :data:`QLORA_BYTES_PER_PARAM`): what ZeRO-3 / FSDP all-gather, CPU offload fetches
    and FSDP2 copies out (``comm``, ``host_traffic``, ``fsdp``)."""
    per = 4.0 if wl.precision == "amp-bf16" else 2.0
    if wl.method == "qlora":
        q = sum(t.total for t in model.tensors() if t.kind == "linear")
        return q * QLORA_BYTES_PER_PARAM + (model.total_params - q) * per
    return model.total_params * per


@dataclass(frozen=True, kw_only=True)
class ParamCounts:
    """Parameter counts of one model under one method (elements, not bytes)."""

    total: int
    """All parameters of the base model."""
    trainable: int
    """Parameters that get gradients and optimizer states (LoRA: adapter elements only)."""
    active: int
    """Parameters touched per token (MoE: top-k routed experts)."""
    embedding: int
    """Input embedding + untied LM head."""
    largest_tensor: int
    """Elements of the largest single tensor (fused MoE experts count as one)."""
    lora_adapter: int = 0
    """LoRA adapter elements (0 unless method is lora/qlora)."""

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, "trainable": self.trainable, "active": self.active,
                "embedding": self.embedding, "largest_tensor": self.largest_tensor, "lora_adapter": self.lora_adapter}


def lora_targeted(t: ParamTensor, targets: tuple[str, ...]) -> bool:
    """Whether LoRA adapts tensor ``t``.

    ``all-linear`` follows PEFT (0.21 with transformers 5): every ``nn.Linear`` inside the decoder layers
    (not the LM head), the MoE router, and the fused expert tensors (PEFT wraps them as parameters).
    Named targets match the module name (``q_proj``), ``experts`` matches both fused expert tensors.
    """
    if t.kind not in ("linear", "expert", "router"):
        return False
    if ALL_LINEAR in targets:
        # PEFT 0.21 leaves the shared expert's three linears alone (its 1-wide gate is adapted): observed
        # on Qwen3-Next with transformers 5.24 (adapter shapes listed by get_peft_model)
        return not (t.kind == "linear" and ".shared_expert." in t.name)
    return t.module in targets or (t.kind == "expert" and "experts" in targets)


def lora_adapter_shapes(t: ParamTensor, rank: int) -> tuple[int, int]:
    """(in_features, out_features) of the adapted weight; experts adapt ``E`` slices of it."""
    if t.kind == "expert":
        _, a, b = t.shape  # (E, out, in) as transformers stores gate_up_proj (E, 2I, h)
        return b, a
    out_f, in_f = t.shape[0], t.shape[1]
    return in_f, out_f


def lora_rank_of(t: ParamTensor, rank: int) -> int:
    """PEFT doubles the rank of the fused ``gate_up_proj`` experts (its rank_pattern for gate and up)."""
    return 2 * rank if (t.kind == "expert" and t.module == "gate_up_proj") else rank


def lora_params_of(t: ParamTensor, rank: int) -> int:
    """Adapter elements on all copies of ``t``: ``r * (in + out)`` per adapted matrix (per expert); checked
    against PEFT 0.21's adapter shapes (experts: A ``(r*E, in)``, B ``(out, r*E)``, 2r for gate_up_proj)."""
    in_f, out_f = lora_adapter_shapes(t, rank)
    per = lora_rank_of(t, rank) * (in_f + out_f) * (t.experts or 1)
    return per * t.count


def freeze_trainable_layer_ids(model: ModelShape, wl: Workload) -> range:
    n = min(wl.freeze_trainable_layers, model.num_layers)
    return range(model.num_layers - n, model.num_layers)


def count_params(model: ModelShape, wl: Workload) -> ParamCounts:
    """Total / trainable / active counts for ``wl.method``."""
    total = model.total_params
    lora = 0
    if wl.method == "full":
        trainable = total
    elif wl.method in ("lora", "qlora"):
        lora = sum(lora_params_of(t, wl.lora_rank) for t in model.tensors() if lora_targeted(t, wl.lora_targets))
        trainable = lora
    else:  # freeze
        ids = freeze_trainable_layer_ids(model, wl)
        trainable = sum(model.layer_params(i) for i in ids)
    return ParamCounts(total=total, trainable=trainable, active=model.active_params,
                       embedding=model.embedding_params, largest_tensor=model.largest_tensor_params,
                       lora_adapter=lora)
