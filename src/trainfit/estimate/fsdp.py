"""PyTorch FSDP as the speed model times it (issue 26): which collectives of a per-layer ``fully_shard`` wrap are
exposed, how much each micro-batch gathers, and FSDP2's copies around its collectives on the compute stream.
``comm.dp_terms`` turns the volumes into ring terms; ``engines.features`` adds the copies to the HBM traffic.
Formulas and sources: ``docs/speed-model.md`` section 3.2."""

from __future__ import annotations

from trainfit.estimate.params import gathered_param_bytes
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload
from trainfit.estimate.flops import flops_per_token

PYTORCH_FSDP2_COLLECTIVES_PY = ("https://github.com/pytorch/pytorch/blob/8fc2039decebd92b15b38296df8bf9aa13275be0/"
                                "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py")
PYTORCH_FSDP2_PARAM_GROUP_PY = ("https://github.com/pytorch/pytorch/blob/62a45b6f4461ee49783ff548ea11285d696c2ef3/"
                                "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py")
PYTORCH_FSDP2_STATE_PY = ("https://github.com/pytorch/pytorch/blob/1fd469d0c96ead7343898aa01db036dbbe4c46db/"
                          "torch/distributed/fsdp/_fully_shard/_fsdp_state.py")
TORCHTITAN_PARALLELIZE_PY = ("https://github.com/pytorch/torchtitan/blob/81c1243395b46ce693a0681cfe1bb20e9b9433fb/"
                             "torchtitan/models/llama3/infra/parallelize.py")

FSDP2_FRAMEWORKS: tuple[str, ...] = ("fsdp2", "automodel")
"""Frameworks that shard with PyTorch FSDP2 (``fully_shard``): torchtitan-style engines and NeMo AutoModel."""

FSDP2_REDUCE_BYTES = 4.0
"""Bytes per gradient element of FSDP2's reduce-scatter: torchtitan's ``mixed_precision_reduce`` defaults to
float32, passed as ``MixedPrecisionPolicy(reduce_dtype=...)`` (``apply_fsdp`` in ``TORCHTITAN_PARALLELIZE_PY``)."""


def fsdp_param_layout(model: ModelShape) -> tuple[float, float, float]:
    """(root params, dense decoder-layer params, routed-expert params) of the whole model. FSDP wraps each decoder
    layer with ``fully_shard`` and the whole model last: the root group holds what is outside the layers
    (embedding, final norm, LM head), ``apply_fsdp`` in ``TORCHTITAN_PARALLELIZE_PY``."""
    root = float(sum(t.total for t in model.tensors() if t.layer_type == "global" and t.kind != "expert"))
    expert = float(sum(t.total for t in model.tensors() if t.kind == "expert"))
    return root, float(model.total_params) - root - expert, expert


def fsdp2_layer_gather_passes(model: ModelShape, wl: Workload, bwd_frac: float) -> float:
    """All-gathers per micro-batch of an average decoder layer under FSDP2 as torchtitan applies it: one in
    forward and, with ``reshard_after_forward=True``, one again in backward, except the last layer, which
    torchtitan's default policy keeps gathered (``int(layer_id) < len(model.layers) - 1``), and under pipeline
    parallelism, where it reshards none (``TORCHTITAN_PARALLELIZE_PY``). The root group is gathered once:
    FSDP2 never reshards the root after forward (``_lazy_init`` in ``PYTORCH_FSDP2_STATE_PY``)."""
    if wl.pp > 1:
        return 1.0
    layers = max(1, model.num_layers)
    return 1.0 + bwd_frac * (layers - 1) / layers


def fsdp2_copy_bytes(model: ModelShape, wl: Workload, framework: str, trainable: float) -> float:
    """HBM bytes per step of FSDP2's copies around its collectives that run on the compute stream (memory-bound
    kernels proportional to parameter bytes, not to tokens), ``PYTORCH_FSDP2_COLLECTIVES_PY``:

    * all-gather copy-out: after each all-gather, ``foreach_all_gather_copy_out`` runs ``split_with_sizes_copy``
      from the flat all-gather output into each parameter's unsharded tensor (read + write the gathered bytes)
      on the current stream (``wait_for_unshard`` in ``PYTORCH_FSDP2_PARAM_GROUP_PY``), per gather of
      :func:`fsdp2_layer_gather_passes`;
    * reduce-scatter copy-in: ``foreach_reduce`` copies the unsharded gradients (parameter dtype, ``chunk_cat``)
      into the reduce-scatter input of ``reduce_dtype`` (:data:`FSDP2_REDUCE_BYTES`) on the current stream before
      the reduce-scatter stream waits on it, every micro-batch.

    The copy-in of the all-gather (cast of the fp32 shard, ``all_gather_copy_in``) touches only the local shard,
    ``1/N`` of these bytes, on its own stream: not counted. FSDP1 (FlatParameter) gathers into the flat
    parameter itself and has no copy-out: 0 unless ``framework`` is an FSDP2 one (:data:`FSDP2_FRAMEWORKS`)."""
    if wl.strategy != "fsdp" or framework not in FSDP2_FRAMEWORKS:
        return 0.0
    total = float(model.total_params)
    root, dense, expert = fsdp_param_layout(model)
    gather_b = gathered_param_bytes(model, wl) / total  # bytes per gathered element (fp32 for amp-bf16, 4-bit QLoRA base)
    grad_b = 4.0 if wl.precision == "amp-bf16" else 2.0  # unsharded gradients are in the parameter dtype
    bwd_frac = trainable / total if wl.method == "freeze" else 1.0
    mp = wl.tp * wl.pp
    local_root = root / mp
    local_layers = dense / mp + expert / (wl.pp * wl.ep)
    gathered = local_root + local_layers * fsdp2_layer_gather_passes(model, wl, bwd_frac)
    local_trainable = trainable * ((root + dense) / total / mp + expert / total / (wl.pp * wl.ep))
    per_micro_batch = 2.0 * gather_b * gathered + local_trainable * (grad_b + FSDP2_REDUCE_BYTES)
    return wl.grad_accum * per_micro_batch


FSDP_EDGE_FRAMEWORKS: tuple[str, ...] = FSDP2_FRAMEWORKS + ("hf-trainer",)
"""Frameworks whose ``fsdp`` strategy is PyTorch FSDP wrapped per decoder layer plus a root (FSDP2's
``fully_shard``; FSDP1 through accelerate's transformer auto-wrap for ``hf-trainer``), timed by :func:`fsdp_volumes`.
Megatron-Core's own FSDP keeps the generic ``zero3``/``fsdp`` volume and overlap."""

FSDP_STEADY_OVERLAP = 1.0
"""Share of FSDP's per-layer traffic between the edges that may run under compute (never more than the compute
time, ``hidden_seconds``): every all-gather but the first runs on its own stream ahead of its use (forward: issued
at the layer's pre-forward while the GPU still runs the previous layer; backward: prefetched one layer ahead,
``_backward_prefetch`` / ``pre_backward`` in ``PYTORCH_FSDP2_PARAM_GROUP_PY``), and reduce-scatters run on the
reduce-scatter stream; only the edges wait (:func:`fsdp_volumes`)."""


def fsdp_forward_share(model: ModelShape, wl: Workload) -> float:
    """Share of a step's executed FLOPs in the forward passes (recompute belongs to the backward): the window
    FSDP's forward all-gathers can hide behind; the backward's all-gathers and reduce-scatters get the rest. A layer's
    forward all-gather can only overlap forward compute, so a collective heavier than its phase's compute is
    exposed even when the step as a whole would have room for it."""
    fl = flops_per_token(model, wl)
    return fl.forward_flops / fl.hardware_flops if fl.hardware_flops else 1.0 / 3.0


def fsdp_volumes(model: ModelShape, wl: Workload, framework: str, label: str, pbytes: float, gbytes: float,
                 bwd_frac: float) -> tuple[float, float, float]:
    """(forward steady, backward steady, edge) data-parallel bytes per step of PyTorch FSDP wrapped per decoder layer plus the root, for the
    ``dense`` or ``expert`` parameters (``pbytes`` gathered, ``gbytes`` reduced per micro-batch). Per micro-batch:

    * the root group (embedding, final norm, LM head) is gathered once: FSDP2 and FSDP1 never reshard the root
      after forward (``_lazy_init`` in ``PYTORCH_FSDP2_STATE_PY``; FSDP1's ``_post_forward_reshard`` skips the root);
    * each layer is gathered in forward and again in backward (``reshard_after_forward=True``), except, for FSDP2
      engines, the last layer (torchtitan's default policy) and every layer under pipeline parallelism
      (:func:`fsdp2_layer_gather_passes`); FSDP1 regathers the last layer at its pre-backward, with nothing ahead
      of it to hide behind (edge);
    * gradients are reduce-scattered once.

    The edges are exposed, whatever the compute: the root pre-forward makes the all-gather streams wait for the
    previous compute (``_root_pre_forward``) and the root's and first layer's all-gathers are waited for at once
    (``pre_forward`` -> ``wait_for_unshard``) with only the embedding lookup between them; at the end of backward
    the root post-backward callback waits for the last reduce-scatters (``_root_post_backward_final_callback``:
    ``current_stream().wait_event(reduce_scatter_state.event)``), the first layer's and the root's, which only
    the embedding backward separates. The rest is steady traffic (:data:`FSDP_STEADY_OVERLAP`), forward and
    backward apart (:func:`fsdp_forward_share`)."""
    m = wl.grad_accum
    root, dense, expert = fsdp_param_layout(model)
    if label == "expert":
        root_share, layer_share = 0.0, 1.0 / max(1, model.n_moe_layers)
    else:
        root_share = root / (root + dense)
        layer_share = (1.0 - root_share) / max(1, model.num_layers)
    if framework in FSDP2_FRAMEWORKS:
        regather = fsdp2_layer_gather_passes(model, wl, bwd_frac) - 1.0  # share of layer bytes gathered again
        bwd_gather, bwd_edge = pbytes * (1.0 - root_share) * regather, 0.0
    else:
        bwd_gather = pbytes * (1.0 - root_share) * bwd_frac
        bwd_edge = pbytes * layer_share * bwd_frac
    edge_share = root_share + layer_share
    edge = pbytes * edge_share + bwd_edge + gbytes * edge_share
    fwd = pbytes * (1.0 - edge_share)
    bwd = (bwd_gather - bwd_edge) + gbytes * (1.0 - edge_share)
    return m * fwd, m * bwd, m * edge
