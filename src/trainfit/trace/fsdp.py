"""FSDP2 (``torch.distributed.fsdp.fully_shard``) as rank 0 sees it, over a fake process group.

* ``init_process_group("fake", store=FakeStore(), rank=0, world_size=N)``: collectives return at once
  and move no data, which is all a memory trace needs. The 1-D device mesh is built *before*
  FakeTensorMode is entered (``DeviceMesh`` reads its rank map with ``tolist()``).
* Wrapping follows the HF accelerate / torchtitan pattern: ``fully_shard`` every decoder layer, then the
  root model (embeddings, final norm and LM head form the root group), ``reshard_after_forward=True``
  everywhere (FULL_SHARD), default prefetching.
* FSDP2 frees and re-allocates the unsharded (all-gathered) parameter buffers with
  ``storage.resize_(0)`` / ``resize_(n)``, which does not go through the dispatcher; the tracker is
  told about each resize by wrapping ``alloc_storage`` / ``free_storage``.
* Categories: sharded params, grads and optimizer states are ``weights`` / ``gradients`` /
  ``optimizer`` (the local shards, 1/N each, padded); the all-gather output buffers (the unsharded
  parameters of the groups live at the moment) count as ``weights``; all-gather inputs,
  unsharded gradients and reduce-scatter buffers are ``temporaries``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, TypedDict

from trainfit.i18n import N_, _
from trainfit.errors import NotTraceableError
from trainfit.trace.runner import _decoder_layers

if TYPE_CHECKING:
    import torch
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import MixedPrecisionPolicy
    from trainfit.trace.tracker import StorageTracker
    from trainfit.workload import Workload

NOTE = N_("fsdp: FSDP2 fully_shard per decoder layer + root, reshard_after_forward=True, fake process group, "
          "rank 0; weights include the all-gathered (unsharded) parameters live at the peak")
"""The trace note of an FSDP run (a message id: shown through ``i18n.translate``)."""

_state: dict[str, DeviceMesh] = {}


class _ShardOptions(TypedDict, total=False):
    """The keywords :func:`shard` passes to ``fully_shard``."""

    mesh: DeviceMesh
    reshard_after_forward: bool
    mp_policy: MixedPrecisionPolicy


@contextlib.contextmanager
def fake_process_group(world_size: int) -> Iterator[DeviceMesh]:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise NotTraceableError(_("a torch.distributed process group is already initialized in this process"),
                                fix=_("run each FSDP trace in a fresh process"))
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        mesh = init_device_mesh("cpu", (world_size,))
        _state["mesh"] = mesh
        yield mesh
    finally:
        _state.clear()
        dist.destroy_process_group()


def shard(model: torch.nn.Module, w: Workload) -> None:
    """fully_shard each decoder layer, then the root."""
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = _state["mesh"]
    kw: _ShardOptions = {"mesh": mesh, "reshard_after_forward": True}
    if w.precision == "amp-bf16":
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in _decoder_layers(model):
        fully_shard(layer, **kw)
    fully_shard(model, **kw)


@contextlib.contextmanager
def storage_resize_hooks(tracker: StorageTracker) -> Iterator[None]:
    from torch.distributed.fsdp._fully_shard import _fsdp_param, _fsdp_param_group

    orig_alloc, orig_free = _fsdp_param.alloc_storage, _fsdp_param.free_storage

    def alloc_storage(tensor: torch.Tensor) -> None:
        orig_alloc(tensor)
        tracker.resized(tensor)

    def free_storage(tensor: torch.Tensor) -> None:
        orig_free(tensor)
        tracker.resized(tensor)

    _fsdp_param.alloc_storage = alloc_storage
    _fsdp_param.free_storage = free_storage
    _fsdp_param_group.alloc_storage = alloc_storage
    try:
        yield
    finally:
        _fsdp_param.alloc_storage = orig_alloc
        _fsdp_param.free_storage = orig_free
        _fsdp_param_group.alloc_storage = orig_alloc


def register_unsharded(model: torch.nn.Module, tracker: StorageTracker) -> None:
    """Mark the all-gather output buffers (unsharded parameters) as weights."""
    from torch.distributed.fsdp import FSDPModule

    for m in model.modules():
        if not isinstance(m, FSDPModule):
            continue
        group = m._get_fsdp_state()._fsdp_param_group
        if group is None:
            continue
        for fp in group.fsdp_params:
            for t in getattr(fp, "all_gather_outputs", []) or []:
                if t.numel() > 0:
                    tracker.set_category(t, "weights")
