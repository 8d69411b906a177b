"""Exact model shapes and parameter counts.

A :class:`ModelShape` holds the architecture fields of a decoder-only transformer as a Hugging Face
``config.json`` states them. :meth:`ModelShape.tensors` lists every parameter tensor the Hugging Face
modeling code creates (name pattern, shape, how many layers repeat it, what kind it is), so that every
count below is a sum over real tensors, never a rule of thumb:

* dense layer: q/k/v/o projections (+ biases for Qwen2), q_norm/k_norm over ``head_dim`` (Qwen3),
  SwiGLU = three matrices (gate, up, down), two RMSNorms;
* MoE layer (Qwen3-MoE, Qwen2-MoE, Qwen3-Next): router ``E x h``, experts stored fused as
  ``gate_up_proj (E, 2I, h)`` and ``down_proj (E, h, I)`` as transformers 5 does, optional shared expert
  and its 1-wide gate;
* Qwen3-Next linear-attention layers (Gated DeltaNet): ``in_proj_qkvz``, ``in_proj_ba``, depthwise conv,
  ``dt_bias``, ``A_log``, gated RMSNorm over the value head dim, ``out_proj``; its full-attention layers
  have a 2x wide ``q_proj`` (output gate);
* embedding ``V x h`` and an LM head ``V x h`` unless ``tie_word_embeddings``.

Sources: transformers 5.24 ``modeling_qwen3.py``, ``modeling_qwen3_moe.py``, ``modeling_qwen3_next.py``,
``modeling_qwen2.py``, ``modeling_llama.py``; checked against the published counts in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from trainfit.errors import ModelConfigError
from trainfit.i18n import _

Arch = Literal["dense", "moe", "next"]

#: Kinds of parameter tensors. ``linear`` tensors are nn.Linear weights (what LoRA "all-linear" adapts).
TensorKind = Literal["embedding", "lm_head", "linear", "expert", "router", "norm", "bias", "other"]


@dataclass(frozen=True, kw_only=True)
class ParamTensor:
    """One parameter tensor of the model (or one per layer, ``count`` times)."""

    name: str
    """Module path pattern, e.g. ``layers.*.self_attn.q_proj.weight``."""
    shape: tuple[int, ...]
    """Shape as the modeling code creates it (out, in) for linears."""
    count: int
    """How many copies exist in the model (number of layers that carry it; 1 for global tensors)."""
    kind: TensorKind
    """What the tensor is; decides LoRA targets, what ``freeze`` trains and what counts as embedding."""
    layer_type: str = "global"
    """``global`` for tensors outside the decoder layers, else the layer type (``full_attention``,
    ``linear_attention``)."""
    module: str = ""
    """Short module name (``q_proj``, ``gate_up_proj``...) used to match LoRA target modules."""
    experts: int = 0
    """For fused expert tensors, the number of experts in the leading dimension (else 0)."""

    @property
    def numel(self) -> int:
        """Elements of one copy."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def total(self) -> int:
        """Elements of all copies."""
        return self.numel * self.count


#: Documented ranges of every size field of a model (docs/security.md): far above any real model, low enough
#: that a hostile config (``num_hidden_layers: 1e9``, zero heads) is one clear error, not a hang or a crash.
SHAPE_LIMITS: dict[str, tuple[int, int]] = {
    "num_layers": (1, 1000),
    "hidden_size": (1, 1_000_000),
    "intermediate_size": (0, 10_000_000),
    "num_heads": (1, 65_536),
    "num_kv_heads": (1, 65_536),
    "head_dim": (1, 65_536),
    "vocab_size": (1, 10_000_000),
    "max_position_embeddings": (0, 2**31),
    "num_experts": (0, 4096),
    "experts_per_token": (0, 4096),
    "moe_intermediate_size": (0, 10_000_000),
    "shared_expert_intermediate_size": (0, 10_000_000),
    "linear_num_key_heads": (0, 65_536),
    "linear_num_value_heads": (0, 65_536),
    "linear_key_head_dim": (0, 65_536),
    "linear_value_head_dim": (0, 65_536),
    "linear_conv_kernel_dim": (0, 1024),
}


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    """Architecture of one decoder-only model, as its Hugging Face config states it.

    All fields are validated in ``__post_init__``; use :func:`trainfit.models.from_hf_config` to build
    one from a config dict.
    """

    name: str
    """Display name (the Hugging Face repo name without the org, e.g. ``Qwen3-8B``)."""
    model_type: str
    """Hugging Face ``model_type`` (qwen3, qwen3_moe, qwen3_next, qwen2, qwen2_moe, llama, mistral)."""
    hidden_size: int
    intermediate_size: int
    """Dense MLP width (unused by MoE layers)."""
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    qk_norm: bool = True
    """Qwen3 family: RMSNorm over head_dim on q and k."""
    attention_bias: bool = False
    """Bias on q/k/v (Qwen2); o_proj has a bias only when ``o_bias``."""
    o_bias: bool = False
    mlp_bias: bool = False
    max_position_embeddings: int = 0
    # MoE
    num_experts: int = 0
    """Routed experts per MoE layer (0 = dense model)."""
    experts_per_token: int = 0
    """Top-k routed experts per token."""
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    """Width of the always-active shared expert (0 = none)."""
    shared_expert_gate: bool = False
    """A 1-wide sigmoid gate on the shared expert (Qwen2-MoE, Qwen3-Next)."""
    moe_layers: tuple[int, ...] = ()
    """Indices of layers whose MLP is MoE (empty for dense models)."""
    # Qwen3-Next (hybrid linear attention)
    layer_types: tuple[str, ...] = ()
    """Per layer ``full_attention`` or ``linear_attention``; empty = all full attention."""
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 0
    attn_output_gate: bool = False
    """Qwen3-Next full attention: q_proj is 2x wide and its second half gates the output."""
    source: str = ""
    """Where the config came from (URL or path)."""
    params_official: str = ""
    """Published parameter statement, when known."""
    _tensors: tuple[ParamTensor, ...] = field(default=(), repr=False, compare=False)
    _moe_set: frozenset = field(default=frozenset(), repr=False, compare=False)
    _layer_params: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _layer_tensors: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for fname in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "vocab_size"):
            v = getattr(self, fname)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ModelConfigError(_("{name}: {field} must be a positive integer, got {value!r}").format(
                    name=self.name, field=fname, value=v))
        for fname, (lo, hi) in SHAPE_LIMITS.items():
            v = getattr(self, fname)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise ModelConfigError(_("{name!r}: {field} must be an integer in [{lo}, {hi:,}], got {value}").format(
                                           name=str(self.name)[:80], field=fname, lo=lo, hi=hi, value=str(v)[:40]),
                                       fix=_("pass a real Hugging Face config.json"))
        for fname in ("moe_layers", "layer_types"):
            if len(getattr(self, fname)) > SHAPE_LIMITS["num_layers"][1]:
                raise ModelConfigError(_("{field} has more entries than any supported model").format(field=fname))
        if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.num_layers for i in self.moe_layers):
            raise ModelConfigError(_("{name!r}: moe_layers must be layer indices in [0, {n})").format(
                name=str(self.name)[:80], n=self.num_layers))
        if any(t not in ("full_attention", "linear_attention") for t in self.layer_types):
            raise ModelConfigError(_("{name!r}: layer_types entries must be full_attention or linear_attention").format(
                name=str(self.name)[:80]))
        if self.num_heads % self.num_kv_heads:
            raise ModelConfigError(
                _("{name}: num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})").format(
                    name=self.name, heads=self.num_heads, kv_heads=self.num_kv_heads)
            )
        if self.num_experts:
            if not 0 < self.experts_per_token <= self.num_experts:
                raise ModelConfigError(_("{name}: num_experts_per_tok must be in 1..{n}").format(
                    name=self.name, n=self.num_experts))
            if self.moe_intermediate_size <= 0:
                raise ModelConfigError(_("{name}: moe_intermediate_size must be positive").format(name=self.name))
        elif self.intermediate_size <= 0:
            raise ModelConfigError(_("{name}: intermediate_size must be positive").format(name=self.name))
        if self.layer_types and len(self.layer_types) != self.num_layers:
            raise ModelConfigError(
                _("{name}: layer_types has {n} entries for {layers} layers").format(
                    name=self.name, n=len(self.layer_types), layers=self.num_layers)
            )
        if "linear_attention" in self.layer_types and min(
            self.linear_num_key_heads, self.linear_num_value_heads, self.linear_key_head_dim,
            self.linear_value_head_dim, self.linear_conv_kernel_dim,
        ) <= 0:
            raise ModelConfigError(_("{name}: linear attention layers need the linear_* fields").format(name=self.name))
        object.__setattr__(self, "_moe_set", frozenset(self.moe_layers) if self.num_experts else frozenset())
        object.__setattr__(self, "_tensors", tuple(self._build_tensors()))
        kinds: dict[tuple[str, bool], tuple[ParamTensor, ...]] = {}
        for i in range(self.num_layers):
            k = (self.layer_type(i), self.is_moe_layer(i))
            if k not in kinds:
                kinds[k] = tuple(t for t in self._tensors if self.holds(t, i))
        object.__setattr__(self, "_layer_tensors", kinds)
        object.__setattr__(self, "_layer_params", tuple(
            sum(t.numel for t in self.layer_tensors(i)) for i in range(self.num_layers)))

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        """Every public field (JSON-ready); :func:`model_from_dict` rebuilds the same shape."""
        from dataclasses import fields as _fields

        out = {}
        for f in _fields(self):
            if f.name.startswith("_"):
                continue
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    # ------------------------------------------------------------------ structure
    @property
    def arch(self) -> Arch:
        if "linear_attention" in self.layer_types:
            return "next"
        return "moe" if self.num_experts else "dense"

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def layer_type(self, i: int) -> str:
        return self.layer_types[i] if self.layer_types else "full_attention"

    def is_moe_layer(self, i: int) -> bool:
        return i in self._moe_set

    @property
    def n_full_attention_layers(self) -> int:
        return sum(1 for i in range(self.num_layers) if self.layer_type(i) == "full_attention")

    @property
    def n_linear_attention_layers(self) -> int:
        return self.num_layers - self.n_full_attention_layers

    @property
    def n_moe_layers(self) -> int:
        return len(self.moe_layers) if self.num_experts else 0

    def _build_tensors(self) -> list[ParamTensor]:
        h, V = self.hidden_size, self.vocab_size
        nh, nkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        out: list[ParamTensor] = [ParamTensor(name="embed_tokens.weight", shape=(V, h), count=1,
                                              kind="embedding", module="embed_tokens")]
        n_full = self.n_full_attention_layers
        n_lin = self.n_linear_attention_layers
        n_moe = self.n_moe_layers
        n_dense = self.num_layers - n_moe
        L = self.num_layers

        def add(name: str, shape: tuple[int, ...], count: int, kind: TensorKind, module: str,
                layer_type: str = "full_attention", experts: int = 0) -> None:
            if count > 0:
                out.append(ParamTensor(name=name, shape=shape, count=count, kind=kind, module=module,
                                       layer_type=layer_type, experts=experts))

        # full attention
        qw = nh * hd * (2 if self.attn_output_gate else 1)
        add("layers.*.self_attn.q_proj.weight", (qw, h), n_full, "linear", "q_proj")
        add("layers.*.self_attn.k_proj.weight", (nkv * hd, h), n_full, "linear", "k_proj")
        add("layers.*.self_attn.v_proj.weight", (nkv * hd, h), n_full, "linear", "v_proj")
        add("layers.*.self_attn.o_proj.weight", (h, nh * hd), n_full, "linear", "o_proj")
        if self.attention_bias:
            add("layers.*.self_attn.q_proj.bias", (qw,), n_full, "bias", "q_proj")
            add("layers.*.self_attn.k_proj.bias", (nkv * hd,), n_full, "bias", "k_proj")
            add("layers.*.self_attn.v_proj.bias", (nkv * hd,), n_full, "bias", "v_proj")
        if self.o_bias:
            add("layers.*.self_attn.o_proj.bias", (h,), n_full, "bias", "o_proj")
        if self.qk_norm:
            add("layers.*.self_attn.q_norm.weight", (hd,), n_full, "norm", "q_norm")
            add("layers.*.self_attn.k_norm.weight", (hd,), n_full, "norm", "k_norm")
        # Gated DeltaNet (Qwen3-Next linear attention)
        if n_lin:
            kd = self.linear_num_key_heads * self.linear_key_head_dim
            vd = self.linear_num_value_heads * self.linear_value_head_dim
            nv = self.linear_num_value_heads
            conv = 2 * kd + vd
            lt = "linear_attention"
            add("layers.*.linear_attn.in_proj_qkvz.weight", (2 * kd + 2 * vd, h), n_lin, "linear", "in_proj_qkvz", lt)
            add("layers.*.linear_attn.in_proj_ba.weight", (2 * nv, h), n_lin, "linear", "in_proj_ba", lt)
            add("layers.*.linear_attn.conv1d.weight", (conv, 1, self.linear_conv_kernel_dim), n_lin, "other",
                "conv1d", lt)
            add("layers.*.linear_attn.dt_bias", (nv,), n_lin, "other", "dt_bias", lt)
            add("layers.*.linear_attn.A_log", (nv,), n_lin, "other", "A_log", lt)
            add("layers.*.linear_attn.norm.weight", (self.linear_value_head_dim,), n_lin, "norm", "norm", lt)
            add("layers.*.linear_attn.out_proj.weight", (h, vd), n_lin, "linear", "out_proj", lt)
        # MLPs
        I = self.intermediate_size
        add("layers.*.mlp.gate_proj.weight", (I, h), n_dense, "linear", "gate_proj", "any")
        add("layers.*.mlp.up_proj.weight", (I, h), n_dense, "linear", "up_proj", "any")
        add("layers.*.mlp.down_proj.weight", (h, I), n_dense, "linear", "down_proj", "any")
        if self.mlp_bias:
            add("layers.*.mlp.gate_proj.bias", (I,), n_dense, "bias", "gate_proj", "any")
            add("layers.*.mlp.up_proj.bias", (I,), n_dense, "bias", "up_proj", "any")
            add("layers.*.mlp.down_proj.bias", (h,), n_dense, "bias", "down_proj", "any")
        if n_moe:
            E, Im = self.num_experts, self.moe_intermediate_size
            add("layers.*.mlp.gate.weight", (E, h), n_moe, "router", "gate", "any")
            add("layers.*.mlp.experts.gate_up_proj", (E, 2 * Im, h), n_moe, "expert", "gate_up_proj", "any", E)
            add("layers.*.mlp.experts.down_proj", (E, h, Im), n_moe, "expert", "down_proj", "any", E)
            Is = self.shared_expert_intermediate_size
            if Is:
                add("layers.*.mlp.shared_expert.gate_proj.weight", (Is, h), n_moe, "linear", "gate_proj", "any")
                add("layers.*.mlp.shared_expert.up_proj.weight", (Is, h), n_moe, "linear", "up_proj", "any")
                add("layers.*.mlp.shared_expert.down_proj.weight", (h, Is), n_moe, "linear", "down_proj", "any")
            if self.shared_expert_gate:
                add("layers.*.mlp.shared_expert_gate.weight", (1, h), n_moe, "linear", "shared_expert_gate", "any")
        add("layers.*.input_layernorm.weight", (h,), L, "norm", "input_layernorm", "any")
        add("layers.*.post_attention_layernorm.weight", (h,), L, "norm", "post_attention_layernorm", "any")
        out.append(ParamTensor(name="norm.weight", shape=(h,), count=1, kind="norm", module="norm"))
        if not self.tie_word_embeddings:
            out.append(ParamTensor(name="lm_head.weight", shape=(V, h), count=1, kind="lm_head", module="lm_head"))
        return out

    def tensors(self) -> tuple[ParamTensor, ...]:
        """Every parameter tensor (tied embeddings are listed once, as the model holds them)."""
        return self._tensors

    # ------------------------------------------------------------------ counts
    @property
    def total_params(self) -> int:
        """All parameters (``sum(p.numel() for p in model.parameters())``)."""
        return sum(t.total for t in self._tensors)

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the untied LM head."""
        return sum(t.total for t in self._tensors if t.kind in ("embedding", "lm_head"))

    @property
    def non_embedding_params(self) -> int:
        return self.total_params - self.embedding_params

    @property
    def active_params(self) -> int:
        """Parameters that touch one token: routed experts count ``top_k`` of ``E``."""
        n = 0
        for t in self._tensors:
            if t.kind == "expert":
                n += t.total // t.experts * self.experts_per_token
            else:
                n += t.total
        return n

    @property
    def largest_tensor_params(self) -> int:
        """Elements of the largest single parameter tensor (fused experts count as one tensor)."""
        return max(t.numel for t in self._tensors)

    @property
    def largest_tensor_name(self) -> str:
        return max(self._tensors, key=lambda t: t.numel).name

    def holds(self, t: ParamTensor, i: int) -> bool:
        """Whether decoder layer ``i`` has a copy of per-layer tensor ``t`` (dense MLP tensors sit only in
        dense layers, router/experts/shared expert only in MoE layers, attention by layer type)."""
        if t.layer_type == "global" or t.layer_type not in ("any", self.layer_type(i)):
            return False
        moe = self.is_moe_layer(i)
        if t.kind in ("linear", "bias") and ".mlp." in t.name and ".shared_expert" not in t.name:
            return not moe  # dense MLP
        if t.kind in ("expert", "router") or ".shared_expert" in t.name:
            return moe
        return True

    def layer_tensors(self, i: int) -> tuple[ParamTensor, ...]:
        """The parameter tensors one copy of which sits in decoder layer ``i``."""
        return self._layer_tensors[(self.layer_type(i), self.is_moe_layer(i))]

    def layer_params(self, i: int) -> int:
        """Parameters of decoder layer ``i``."""
        return self._layer_params[i]

    @property
    def max_layer_params(self) -> int:
        return max(self._layer_params)


def model_from_dict(d: dict) -> ModelShape:
    """The :class:`ModelShape` of :meth:`ModelShape.to_dict` (validated like any other)."""
    from dataclasses import fields as _fields

    if not isinstance(d, dict):
        raise ModelConfigError(_("a model must be an object of ModelShape fields"))
    names = {f.name for f in _fields(ModelShape) if not f.name.startswith("_")}
    unknown = set(d) - names
    if unknown:
        raise ModelConfigError(_("unknown model field(s) {fields}").format(fields=sorted(unknown)[:5]))
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()}
    try:
        return ModelShape(**kw)
    except TypeError as e:
        raise ModelConfigError(_("the model fields do not make a model: {error}").format(error=e)) from None
