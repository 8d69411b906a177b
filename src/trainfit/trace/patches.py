"""Workarounds that make the real transformers/PEFT code take, under fake tensors, the path it takes on
real tensors. Each is a context manager that restores what it changed.

1. ``unpacked_sequences``: transformers' ``is_tracing(t)`` is True for FakeTensors, so
   ``masking_utils.find_packed_sequence_indices`` cannot check that the batch is unpacked and returns a
   packed-sequence mask; the model then builds a (B,1,S,S) mask and SDPA drops ``enable_gqa`` and
   ``repeat_kv``s K/V to every head (+2.82 GiB for Qwen3-8B at 4096 tokens). The patch returns ``None``
   (no packing) for fake inputs, which is what a real unpacked batch gives.
2. ``peft_fake_moves``: ``Module.to()`` always uses ``swap_tensors`` for FakeTensor parameters and the
   swap fails because the fake Parameter has a weakref; a failed swap between tensors with identical
   metadata becomes a no-op, a dtype-changing one falls back to ``param.data = new`` (what
   ``Module._apply`` did before swap_tensors), and PEFT's ``_move_adapter_to_device_of_base_layer``
   re-assigns Parameters.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    import torch
    from peft.tuners.tuners_utils import BaseTunerLayer


def _is_fake(t: torch.Tensor | None) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


@contextlib.contextmanager
def unpacked_sequences() -> Iterator[None]:
    from transformers import masking_utils

    orig = masking_utils.find_packed_sequence_indices

    def find_packed_sequence_indices(position_ids: torch.Tensor) -> torch.Tensor | None:
        if _is_fake(position_ids):
            return None  # unpacked batches only (trainfit traces one sequence per sample)
        return orig(position_ids)

    masking_utils.find_packed_sequence_indices = find_packed_sequence_indices
    try:
        yield
    finally:
        masking_utils.find_packed_sequence_indices = orig


@contextlib.contextmanager
def peft_fake_moves() -> Iterator[None]:
    import torch
    import torch.utils

    orig_swap = torch.utils.swap_tensors

    def swap_tensors(t1: torch.Tensor, t2: torch.Tensor) -> None:
        try:
            return orig_swap(t1, t2)
        except RuntimeError:
            if not (_is_fake(t1) or _is_fake(t2)):
                raise
            if t1.shape == t2.shape and t1.dtype == t2.dtype and t1.device == t2.device:
                return None  # same metadata: nothing to move under fake tensors
            # A dtype-changing .to() (PEFT's expert ParamWrapper): the pre-swap_tensors behaviour of
            # Module._apply, set_data, gives the same result.
            with torch.no_grad():
                t1.data = t2
            return None

    patched: list[tuple[ModuleType | type, str, Callable[..., None]]] = [(torch.utils, "swap_tensors", orig_swap)]
    torch.utils.swap_tensors = swap_tensors
    import torch.nn.modules.module as mm

    if getattr(mm.torch.utils, "swap_tensors", None) is not swap_tensors:  # pragma: no cover - same module
        patched.append((mm.torch.utils, "swap_tensors", mm.torch.utils.swap_tensors))
        mm.torch.utils.swap_tensors = swap_tensors
    try:
        from peft.tuners import tuners_utils

        base = tuners_utils.BaseTunerLayer
        orig_move = base._move_adapter_to_device_of_base_layer

        def _move_adapter_to_device_of_base_layer(self: BaseTunerLayer, adapter_name: str,
                                                  device: torch.device | None = None) -> None:
            try:
                return orig_move(self, adapter_name, device)
            except RuntimeError:
                pass
            # Fallback: re-assign each adapter Parameter (fake tensors all live on fake "cpu" already).
            for attr in self.adapter_layer_names + self.other_param_names:
                sub = getattr(self, attr, None)
                if not isinstance(sub, (torch.nn.ModuleDict, torch.nn.ParameterDict)) or adapter_name not in sub:
                    continue
                mod = sub[adapter_name]
                if isinstance(mod, torch.nn.Module):
                    for name, p in list(mod.named_parameters(recurse=False)):
                        mod._parameters[name] = p
            return None

        base._move_adapter_to_device_of_base_layer = _move_adapter_to_device_of_base_layer
        patched.append((base, "_move_adapter_to_device_of_base_layer", orig_move))
    except ImportError:  # pragma: no cover - peft missing: LoRA raises later
        pass
    try:
        yield
    finally:
        for obj, name, orig in reversed(patched):
            setattr(obj, name, orig)
