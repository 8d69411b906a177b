"""A light storage-counting ``TorchDispatchMode``.

Every tensor an ATen op returns is looked up by the identity of its untyped storage (views share one);
a new storage is counted once, rounded up to 512 bytes as the CUDA caching allocator does, and a
``weakref.finalize`` on the storage object uncounts it when the storage dies (torch keeps one Python
object per live storage, so the finalizer fires exactly when the C++ storage is freed). The same code
counts fake tensors (``FakeTensorMode``, meta storages that know their size) and real CPU tensors.

Each storage carries a category, one of the estimate's live-tensor terms (``estimate.terms.TENSOR_TERMS``), that
can change while it lives:

* ``weights``: parameters and buffers (registered before the step, or by the caller);
* ``gradients``: storages that become a ``.grad`` (post-accumulate-grad hooks reclassify them);
* ``optimizer``: optimizer state tensors (reclassified after ``step()``);
* ``activations``: born during the forward phase (saved tensors, autocast weight copies...);
* ``logits_loss``: any non-parameter storage whose tensor is ``(..., vocab)`` wide with one row per
  token: the bf16 logits, their fp32 copy, log-softmax output and its gradients;
* ``temporaries``: born during backward (activation grads, recompute under checkpointing) or the
  optimizer step (foreach/for-loop scratch tensors).

The peak of each step is recorded with the set of storages live at that moment; the breakdown uses the
categories the storages finally have, so a buffer born in backward that becomes a ``.grad`` counts as a
gradient.
"""

from __future__ import annotations

import weakref
from typing import Mapping, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from trainfit.estimate.terms import TENSOR_TERMS

PHASES = ("setup", "forward", "backward", "optimizer")
ROUND = 512


def _round(n: int) -> int:
    return (n + ROUND - 1) // ROUND * ROUND if n > 0 else 0


class StorageTracker(TorchDispatchMode):
    """Counts live storages; call :meth:`begin_step` / set :attr:`phase` from the training loop."""

    def __init__(self, *, vocab_size: int = 0, tokens: int = 0, rounding: bool = True) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.tokens = tokens
        self.rounding = rounding
        self.phase = "setup"
        self._ids: weakref.WeakKeyDictionary[torch.UntypedStorage, int] | dict[torch.UntypedStorage, int] = {}
        self._by_obj: dict[int, int] = {}
        self.size: dict[int, int] = {}  # sid -> counted bytes (live storages only)
        self.cat: dict[int, str] = {}  # sid -> category (kept after free for the peak snapshot)
        self.born: dict[int, str] = {}  # sid -> phase of birth
        self._next = 0
        self.current = 0
        self.peak = 0
        self.peak_phase = "setup"
        self.peak_live: dict[int, int] = {}
        self.step_index = -1
        self.history: list[dict] = []
        self.marks: list[tuple[str, int]] = []
        self._in_finalizer = False

    # ------------------------------------------------------------------ storage bookkeeping
    def _nbytes(self, st: torch.UntypedStorage) -> int:
        n = int(st.nbytes())
        return _round(n) if self.rounding else n

    def _sid(self, st: torch.UntypedStorage) -> int | None:
        return self._by_obj.get(id(st))

    def track(self, t: torch.Tensor, category: str | None = None) -> int | None:
        """Count ``t``'s storage (if new) and optionally set its category; returns the storage id."""
        if not isinstance(t, torch.Tensor):
            return None
        local = _local(t)
        if local is None:
            return None
        try:
            st = local.untyped_storage()
        except (NotImplementedError, RuntimeError):
            return None
        sid = self._by_obj.get(id(st))
        if sid is None:
            sid = self._next
            self._next += 1
            self._by_obj[id(st)] = sid
            n = self._nbytes(st)
            self.size[sid] = n
            self.born[sid] = self.phase
            if category is None:
                category = self._birth_category(local)
            self.cat[sid] = category
            self.current += n
            weakref.finalize(st, self._free, sid, id(st))
            self._maybe_peak()
        else:
            n = self._nbytes(st)
            old = self.size.get(sid, 0)
            if n != old:  # resized in place (resize_, out= ops)
                self.size[sid] = n
                self.current += n - old
                self._maybe_peak()
            if category is not None:
                self.cat[sid] = category
        return sid

    def set_category(self, t: torch.Tensor, category: str) -> None:
        self.track(t, category)

    def _birth_category(self, t: torch.Tensor) -> str:
        if self.phase == "setup":
            return "weights"
        if self.vocab_size and t.dim() >= 1 and t.shape[-1] == self.vocab_size and self.tokens:
            rows = t.numel() // self.vocab_size
            if self.tokens - 1 <= rows <= self.tokens:
                return "logits_loss"
        if self.phase == "forward":
            return "activations"
        return "temporaries"

    def _free(self, sid: int, obj_id: int) -> None:
        n = self.size.pop(sid, 0)
        self.current -= n
        if self._by_obj.get(obj_id) == sid:
            del self._by_obj[obj_id]

    def resized(self, t: torch.Tensor) -> None:
        """Tell the tracker a storage was resized outside the dispatcher (FSDP2's ``storage.resize_``)."""
        self.track(t)

    def _maybe_peak(self) -> None:
        if self.current > self.peak:
            self.peak = self.current
            self.peak_phase = self.phase
            self.peak_live = dict(self.size)

    # ------------------------------------------------------------------ steps
    def begin_step(self) -> None:
        if self.step_index >= 0:
            self.history.append(self.step_summary())
        self.step_index += 1
        self.peak = self.current
        self.peak_phase = self.phase
        self.peak_live = dict(self.size)
        self.marks = []

    def mark(self, label: str) -> None:
        self.marks.append((label, self.current))

    def breakdown(self, live: dict[int, int] | None = None) -> dict[str, int]:
        live = self.size if live is None else live
        out = {c: 0 for c in TENSOR_TERMS}
        for sid, n in live.items():
            out[self.cat.get(sid, "temporaries")] += n
        return out

    def step_summary(self) -> dict:
        return {"peak": self.peak, "peak_phase": self.peak_phase, "breakdown": self.breakdown(self.peak_live),
                "marks": list(self.marks)}

    # ------------------------------------------------------------------ dispatch
    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: Sequence[type], args: tuple[object, ...] = (),
                           kwargs: Mapping[str, object] | None = None) -> object:
        out = func(*args, **(kwargs or {}))
        flat, _ = tree_flatten(out)
        for t in flat:
            if isinstance(t, torch.Tensor):
                self.track(t)
        # in-place / out= ops may have resized an argument's storage
        if func._schema.is_mutable:
            flat_in, _ = tree_flatten((args, kwargs))
            for t in flat_in:
                if isinstance(t, torch.Tensor):
                    self.track(t)
        return out


def _local(t: torch.Tensor) -> torch.Tensor | None:
    """The plain tensor behind ``t`` (DTensor -> its local shard)."""
    cls = type(t).__name__
    if cls == "DTensor":
        return t._local_tensor  # type: ignore[attr-defined]
    return t
