"""GPU catalog: :func:`get_gpu` and :func:`list_gpus` over ``data/gpus.csv`` plus the user overlay.

Names resolve case-insensitively; spaces, underscores and dashes are interchangeable and the prefixes
``NVIDIA`` and ``Tesla`` are ignored, so the names ``nvidia-smi`` prints ("NVIDIA A100-SXM4-80GB",
"Tesla T4") work as they are. Bare family names resolve to the flagship variant, documented in the
``aliases`` column: ``A100`` and ``A100-80GB`` -> ``A100-80GB-SXM``; ``A100-40GB`` -> ``A100-40GB-SXM``;
``H100`` -> ``H100-SXM``; ``H800`` -> ``H800-SXM``; ``H200`` -> ``H200-SXM``; ``A800`` -> ``A800-80GB-SXM``;
``V100`` -> ``V100-32GB``. The resolved record's ``name`` says which one was picked.

Memory convention (one for all rows): ``mem_gib`` is the nominal device memory in GiB, i.e. the
datasheet's "GB" read as binary gibibytes, which is what the memory chips hold (nvidia-smi shows
81920 MiB on an A100 80GB). What CUDA lets a process use is lower: ~0.7-1 GiB less on HBM parts
(PyTorch reports ~79.2 GiB total on an A100 80GB) and 1/16 less on GDDR6 parts when ECC is on.
Callers that decide "does it fit" must keep that reserve (see docs/catalog.md).

Loading is lazy and cached; only the ``csv`` module is used (no pandas).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from trainfit.errors import UnknownGPUError, did_you_mean

_PRECISIONS = ("bf16", "fp16", "fp8")


#: Fraction of a GDDR6 GPU's memory left with ECC on (see ``GPU.usable_mem_gib``).
GDDR_ECC_USABLE = 15 / 16

@dataclass(frozen=True, kw_only=True)
class GPU:
    """One GPU model. Every number carries its unit in its name; None means not known."""

    name: str
    """Canonical name, e.g. ``A100-80GB-SXM``."""
    aliases: tuple[str, ...] = ()
    vendor: str | None = None
    arch: str | None = None
    form_factor: str | None = None
    """pcie | sxm2 | sxm4 | sxm5 | oam | other."""
    mem_gb_marketed: float | None = None
    """Memory as printed on the datasheet, in its "GB"."""
    mem_gib: float | None = None
    """Nominal device memory in GiB (2**30 bytes): the datasheet number read as GiB. Usable is lower."""
    mem_type: str | None = None
    mem_bandwidth_gbps: float | None = None
    """Peak memory bandwidth, GB/s (gigabytes)."""
    bf16_dense_tflops: float | None = None
    """Peak dense (no 2:4 sparsity) BF16 tensor TFLOP/s; None = no BF16 tensor cores or unknown."""
    fp16_dense_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    """Peak dense FP8 tensor TFLOP/s; None = no FP8 support or unknown."""
    nvlink_gbps: float | None = None
    """NVLink bandwidth per GPU, GB/s bidirectional; None = no NVLink (bridges on PCIe cards not counted)."""
    pcie_gen: int | None = None
    pai_codes: tuple[str, ...] = ()
    """Alibaba PAI GPU code names the row stands for (``GU30``...)."""
    verified: bool = False
    """True when the numbers were checked against the cited source."""
    source: str = ""
    as_of: str = ""
    """ISO date the row was compiled."""
    notes: str | None = None
    origin: str = "bundled"
    """Where the row came from: ``bundled``, ``overlay:<path>`` or ``refresh:<cache file>``."""

    @property
    def mem_bytes(self) -> int | None:
        """Nominal device memory in bytes (``mem_gib * 2**30``)."""
        return None if self.mem_gib is None else int(self.mem_gib * 2**30)

    @property
    def usable_mem_gib(self) -> float | None:
        """Memory a training process can use: GDDR6 data-center GPUs (T4, A10, L4, L20, L40) run with ECC on by
        default, which reserves 1/16 (nvidia-smi shows 15360 MiB on a T4, 23028 MiB on a 24 GB A10); HBM
        keeps ECC out of band. This is what every fit decision compares ``reserved_gib`` with."""
        if self.mem_gib is None:
            return None
        if self.mem_type and self.mem_type.upper().startswith("GDDR"):
            return self.mem_gib * GDDR_ECC_USABLE
        return self.mem_gib

    def peak_tflops(self, precision: str) -> float | None:
        """Dense peak TFLOP/s for ``bf16``, ``fp16`` or ``fp8`` (``amp-bf16`` counts as bf16); None if unknown."""
        p = precision.lower().removeprefix("amp-")
        if p not in _PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, not {precision!r}")
        return getattr(self, f"{p}_dense_tflops")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of all fields."""
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def normalize_gpu_name(name: str) -> str:
    """Lookup key: lower case, separators unified to '-', ``nvidia``/``tesla`` prefixes dropped."""
    t = re.sub(r"[\s_/]+", "-", name.strip().lower())
    t = re.sub(r"-+", "-", t).strip("-")
    for prefix in ("nvidia-", "tesla-"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    return t


def gpu_from_row(row: dict[str, Any], origin: str = "bundled") -> GPU:
    """A :class:`GPU` from a typed row (see :func:`trainfit.catalog._schema.parse_row`)."""
    kw = {f.name: row[f.name] for f in fields(GPU) if f.name in row}
    return GPU(**kw, origin=origin)


def _catalog():
    from trainfit.catalog._store import current_catalog

    return current_catalog()


def list_gpus() -> list[GPU]:
    """Every GPU in the effective catalog (bundled, refreshed, overlay), in file order."""
    return list(_catalog().gpus)


def gpu_names() -> list[str]:
    """Canonical names of :func:`list_gpus`."""
    return [g.name for g in list_gpus()]


def get_gpu(name: str) -> GPU:
    """The GPU called ``name`` (canonical name or alias, case-insensitive).

    Raises :class:`~trainfit.errors.UnknownGPUError` with "did you mean" suggestions.
    """
    if isinstance(name, GPU):  # already resolved
        return name
    cat = _catalog()
    hit = cat.gpu_index.get(normalize_gpu_name(str(name)))
    if hit is not None:
        return hit
    candidates = [g.name for g in cat.gpus] + [a for g in cat.gpus for a in g.aliases]
    sugg = did_you_mean(str(name), candidates)
    # Map alias suggestions back to canonical names, keep order, drop duplicates.
    canon: list[str] = []
    for s in sugg:
        g = cat.gpu_index.get(normalize_gpu_name(s))
        if g is not None and g.name not in canon:
            canon.append(g.name)
    raise UnknownGPUError(
        f"unknown GPU '{name}'",
        fix=("did you mean " + " or ".join(canon) + "? " if canon else "")
        + "`trainfit catalog show gpus` lists the catalog; add your own in ~/.config/trainfit/catalog.yaml",
    )
