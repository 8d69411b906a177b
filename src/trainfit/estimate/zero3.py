"""DeepSpeed ZeRO-3: the optimizer step's sub-group temporaries and what they do to the caching allocator.

Part of the per-GPU memory model (estimate/states.py sizes the model states with :func:`step_temp_bytes`,
estimate/memory.py adds :func:`step_segment_reserve_bytes` to ``reserved_gib``). Read from DeepSpeed's
``deepspeed/runtime/zero/stage3.py`` and ``partition_parameters.py`` at v0.11.1 (FlagPerf's release) and v0.15.4
(the release of December 2024, when ms-swift 3.0's figures were published); the code paths below are the same in
v0.9.5 - v0.16.4 (https://github.com/deepspeedai/DeepSpeed/blob/v0.15.4/deepspeed/runtime/zero/stage3.py).

* **Sub-groups are counted in partition elements.** ``_create_fp16_sub_groups`` walks a parameter group in
  model order, adding each parameter's ``partition_numel()`` (its share on this rank), and closes a sub-group as
  soon as the running sum reaches ``sub_group_size`` (default and usual 1e9): the largest sub-group holds at
  least 1e9 of the rank's elements whenever the rank holds more than that (:func:`largest_sub_group_elems`).
* **The step converts one sub-group at a time.** ``_prepare_fp32_grad_for_sub_group`` flattens the sub-group's
  16-bit gradient partitions into a new tensor and casts it to fp32 (``flatten(...).to(fp32)``: 2 + 4 bytes per
  element alive together), the optimizer steps on it, ``_release_sub_group`` frees it. With PyTorch's foreach
  AdamW (the Hugging Face Trainer's ``adamw_torch`` when the DeepSpeed config has no ``optimizer``), the step
  adds ``_foreach_sqrt(exp_avg_sq)``, another fp32 tensor of the sub-group (torch/optim/adamw.py
  ``_multi_tensor_adamw``); DeepSpeed's FusedAdam has no such temporary (:func:`step_temp_bytes`).
* **A gradient larger than the reduce bucket is held whole** (:func:`reduce_transient_bytes`). The gradient hook
  (``reduce_independent_p_g_buckets_and_remove_grads``) first reduces what the bucket holds when the new gradient
  would overflow it, then ``__add_grad_to_ipg_bucket`` copies the gradient into the flat bucket buffer only when
  ``elements_in_ipg_bucket + param.grad.numel() <= reduce_bucket_size``; a larger one keeps autograd's full,
  unsharded 16-bit tensor as ``param.grad`` and waits alone in the bucket until the next gradient's hook (or
  ``independent_gradient_partition_epilogue`` after the last one) reduces it. With ``reduce_scatter`` (default true)
  ``__avg_scatter_grads`` calls ``reduce_scatter_coalesced`` (deepspeed/runtime/comm/coalesced_collectives.py), which
  reduces a single tensor in its own storage when its size divides by the data-parallel world size and otherwise
  ``torch.cat``-s its chunks and padding into a new flat buffer: a second full copy, alive until ``partition_grads``
  has copied this rank's partition into the flat gradient buffer and set ``param.grad = None``. The communication
  dtype is the training dtype unless the config sets ``communication_data_type`` (engine.py), so no cast copy.
  With ms-swift's and LLaMA-Factory's ``reduce_bucket_size: auto`` (hidden_size^2 elements) and DeepSpeed's default
  5e8, the embedding and LM head of Qwen/Llama models (V x h, 2-5e8 elements) are such gradients: the LM head's is
  computed at the start of backward while the 16-bit gradient of the logits is alive, the embedding's is the last of
  backward, reduced in the epilogue. Decoder weights above the bucket (the MLP projections under ``auto``) are
  held the same way one at a time, smaller than the embedding's and inside the sweep's transients.
  https://github.com/deepspeedai/DeepSpeed/blob/v0.15.4/deepspeed/runtime/zero/stage3.py (lines 1254-1322, 1368-1395),
  https://github.com/deepspeedai/DeepSpeed/blob/v0.15.4/deepspeed/runtime/comm/coalesced_collectives.py.
* **A single rank gathers nothing.** With one rank in the partition group, ``all_gather_coalesced`` returns
  ``_no_gather_coalesced``: the parameter becomes a view of its own partition (partition_parameters.py), so no
  gathered copies exist (``gathered_weights_apply``).
* **Step segments** (:func:`step_segment_reserve_bytes`): PyTorch's caching allocator serves a request from one
  free cached block at least as large, never from several, and keeps freed segments cached until
  ``empty_cache`` or a failed cudaMalloc; blocks belong to the stream they were allocated on
  (https://pytorch.org/docs/stable/notes/cuda.html#memory-management; ``get_free_block`` / ``release_cached_blocks``
  in c10/cuda/CUDACachingAllocator.cpp). ZeRO-3 gathers parameters on its own all-gather stream
  (``fetch_sub_module`` in partitioned_param_coordinator.py allocates them inside
  ``get_accelerator().stream(self.__allgather_stream)``), so the step on the compute stream cannot use those
  segments; and the sub-group's fp32 gradient is one tensor of ~4 GB, larger than any activation block, so
  unless the loss region's fp32 logits blocks are as large it takes new segments while the backward's cached
  activation blocks stay reserved. ``max_memory_reserved`` and nvidia-smi then see the resident states plus the
  backward's transient blocks plus the step's temporaries: more than the tensor peak, which only one of them
  reaches at a time. Cached memory, not live tensors: the allocator releases it and retries before it raises OOM.
* **When the allocator can give that cache back** (the rule ``estimate.fit.decide_fit`` applies to
  ``MemoryEstimate.releasable_cache_gib``). When cudaMalloc fails, PyTorch's caching allocator first returns the
  blocks whose recorded-stream events have completed (``synchronize_and_free_events``: ``record_stream`` delays
  reuse, not release), then frees cached blocks "that are not split" and retries, first one of sufficient size, then
  all of them, on every stream (the header comment, ``release_available_cached_blocks`` and
  ``release_cached_blocks`` of c10/cuda/CUDACachingAllocator.cpp,
  https://github.com/pytorch/pytorch/blob/001074d25084fdb87a799823e395a50f5ec044d3/c10/cuda/CUDACachingAllocator.cpp).
  A block is unsplit when its whole segment is free: freed neighbours merge back, and one live tensor pins its
  segment (``expandable_segments``, off by default, would unmap free pages inside a used segment as well). So a
  cached block can be given back exactly when no live tensor shares its segment. At the ZeRO-3 step that holds for
  the backward's blocks: every forward/backward tensor has been freed (DeepSpeed keeps the gradient partitions in
  the flat buffer allocated when the engine is built, the reduce bucket likewise; the persistent small parameters
  are under 1 MiB, the small pool), and the all-gather stream's segments hold only gathered parameters, released by
  the end of backward. The rule: the step's separate segments are releasable (``tight``, not ``oom``, when only
  they take the reserve over the card). Cache is *not* releasable while tensors of mixed lifetimes share its
  segments, i.e. inside forward and backward: that fragmentation is what ``OverheadModel.allocator_slack_fraction``
  stands for, and it is counted as needed memory. LLaMA-Factory issue 2744 shows it (a ZeRO-3 run with offload
  on a 24 GB card failed to allocate 2.32 GiB with "9.80 GiB reserved by PyTorch but unallocated",
  https://github.com/hiyouga/LlamaFactory/issues/2744); DeepSpeed's stage-3 warning "pytorch allocator cache flushes
  since last step" (``num_alloc_retries``) shows the release and retry working at the step, at a speed cost. In the
  corpus, swift-full-32b-zero3 ran at the card's capacity where only this release makes it fit, and
  llamafactory-5977 (8 x RTX 3090) OOMed with a live need of 23.3 of 23.68 GiB: tight, within the memory model's
  error, not a case of cache that could not be released (benchmarks/data/fit_reports.yaml).
"""

from __future__ import annotations

from trainfit.models.shapes import ModelShape

#: DeepSpeed ZeRO-3 ``sub_group_size`` default, 1e9 elements (deepspeed/runtime/zero/config.py; also the value
#: of the ms-swift, LLaMA-Factory, Qwen and FlagPerf ZeRO-3 configs), counted in partition elements of the rank.
DS_SUB_GROUP_SIZE = 1_000_000_000
#: Bytes per element of the sub-group while ``flatten(grads).to(fp32)`` runs: the flat 16-bit copy + its fp32 cast.
FLATTEN_CAST_BYTES = 2.0 + 4.0
#: fp32 gradient of the sub-group (4 B) + foreach AdamW's ``_foreach_sqrt(exp_avg_sq)`` (4 B).
FOREACH_STEP_BYTES = 4.0 + 4.0


def largest_sub_group_elems(m: ModelShape, part: dict[str, tuple[float, frozenset[int]]]) -> float:
    """Elements of the largest optimizer sub-group on the rank. ``part`` maps a trainable tensor's name to (its
    partition elements on this rank per copy, the decoder layers whose copy trains); the walk goes in model
    order (embedding, layer by layer, then the other global tensors) and closes a sub-group when it reaches
    :data:`DS_SUB_GROUP_SIZE` (``_create_fp16_sub_groups``). Biases and norms, which the Hugging Face Trainer
    puts in a second parameter group, are walked with the rest: they are too small to matter."""
    order: list[float] = []
    globals_ = [t for t in m.tensors() if t.layer_type == "global"]
    order += [part[t.name][0] for t in globals_ if t.kind == "embedding" and t.name in part]
    for i in range(m.num_layers):
        order += [part[t.name][0] for t in m.layer_tensors(i) if t.name in part and i in part[t.name][1]]
    order += [part[t.name][0] for t in globals_ if t.kind != "embedding" and t.name in part]
    total = sum(order)
    if total <= DS_SUB_GROUP_SIZE:
        return total
    largest = cur = 0.0
    for n in order:
        cur += n
        if cur >= DS_SUB_GROUP_SIZE:
            largest, cur = max(largest, cur), 0.0
    return max(largest, cur)


def step_temp_bytes(sub_group_elems: float, optimizer: str) -> float:
    """Peak temporaries of one ZeRO-3 optimizer sub-group step (bytes): the flatten + fp32 cast of its
    gradients, or with foreach AdamW the fp32 gradient plus the square-root temporary, whichever is larger."""
    per = max(FLATTEN_CAST_BYTES, FOREACH_STEP_BYTES if optimizer == "adamw-foreach" else 0.0)
    return per * sub_group_elems


def reduce_transient_bytes(grad_elems: float, bucket_elems: float, dp_ranks: int, grad_bytes: float) -> float:
    """Bytes a ZeRO-3 gradient of ``grad_elems`` elements (unsharded, ``grad_bytes`` per element) holds outside the
    reduce bucket while it is reduced (module docstring): 0 when it fits in a bucket of ``bucket_elems`` (it is
    copied into the persistent flat buffer), else the gradient itself, plus ``reduce_scatter_coalesced``'s padded
    flat copy when its size does not divide by the ``dp_ranks`` of the partition group."""
    if grad_elems <= bucket_elems:
        return 0.0
    n = int(grad_elems)
    held = n * grad_bytes
    if n % max(1, dp_ranks):
        held += -(-n // dp_ranks) * dp_ranks * grad_bytes  # torch.cat of the chunks + padding
    return held


def gathered_weights_apply(dp_ranks: int) -> bool:
    """Whether ZeRO-3 gathers parameters at all: not with one rank in the partition group."""
    return dp_ranks > 1


def largest_compute_block_bytes(m: ModelShape, *, tokens: float, tp: int, act_divisor: float,
                                loss_bytes_per_logit: float) -> float:
    """Largest single tensor of the forward / backward on the compute stream (bytes): the loss region's largest
    logits-sized tensor (``loss_bytes_per_logit`` x V x T: 4 for the fp32 copy of the standard loss, 2 for a
    16-bit loss, 0 for a chunked one), else the widest activation (the MLP intermediate in 16 bits or the hidden
    state in fp32)."""
    inter = max(m.intermediate_size, m.moe_intermediate_size * m.experts_per_token,
                m.shared_expert_intermediate_size)
    act = max(2.0 * inter, 4.0 * m.hidden_size) * tokens / act_divisor
    return max(act, loss_bytes_per_logit * m.vocab_size * tokens / tp)


def step_segment_reserve_bytes(*, gathered: float, transient: float, step_temp: float, step_block: float,
                               largest_block: float, allgather_stream: bool = True) -> float:
    """Bytes ``reserved`` holds above the tensor peak because the ZeRO-3 step's temporaries cannot reuse the
    backward's cached blocks (module docstring). ``gathered``: the all-gather stream's gathered layers;
    ``transient``: the compute stream's largest forward/backward transient (activations, loss, buckets);
    ``step_temp``: the step's temporaries; ``step_block``: its largest single tensor (the fp32 gradient of the
    sub-group); ``largest_block``: the largest single compute-stream block of forward/backward;
    ``allgather_stream``: gathered parameters live on their own stream (``overlap_comm``, DeepSpeed's stage-3
    default; without it ``DeepSpeedZeRoOffload`` gathers on the default stream, parameter_offload.py).

    The tensor peak counts max(gathered + transient, step_temp) above the resident states. If the step's largest
    tensor fits in a cached compute-stream block, the compute stream's cache holds max(transient, step_temp) and
    only the all-gather segments stay apart: reserve = gathered + max(transient, step_temp). Otherwise the
    step takes new segments: reserve = gathered + transient + step_temp. Returned: reserve - tensor peak."""
    if min(gathered + transient, step_temp) <= 0:
        return 0.0
    peak = max(gathered + transient, step_temp)
    if step_block <= largest_block:
        return (gathered + max(transient, step_temp) - peak) if allgather_stream else 0.0
    return gathered + transient + step_temp - peak
