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
from typing import TYPE_CHECKING, Mapping

from trainfit.errors import UnknownGPUError, did_you_mean
from trainfit.i18n import _
from trainfit.json_types import JSONLike

if TYPE_CHECKING:
    from trainfit.catalog._schema import Cell

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
    speed_from: str | None = None
    """For a GPU known only by its memory (the provider does not publish the model): the GPU whose speed figures are
    assumed where this row's are empty (see :func:`assume_speed`)."""
    assumed: tuple[str, ...] = ()
    """Fields filled from ``speed_from`` (not from this row's source); empty = every figure is the row's own."""
    mem_from_user: bool = False
    """True when ``mem_gib`` is the user's (``plan --gpu-mem``), not the catalog's."""

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

    def to_dict(self) -> dict[str, JSONLike]:
        """Plain JSON-able dict of all fields."""
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


#: Fields :func:`assume_speed` may fill: what the speed model reads, never the memory that sizes the job.
SPEED_FIELDS = ("arch", "bf16_dense_tflops", "fp16_dense_tflops", "fp8_dense_tflops", "nvlink_gbps", "pcie_gen",
                "mem_bandwidth_gbps")

#: The named class whose speed figures are assumed for a GPU the user sized with ``plan --gpu-mem`` when its row
#: names no ``speed_from``: H20 (the 96 GB Hopper part Alibaba's own Qwen3 recipes are written for, the slowest
#: Hopper in the catalog, so the assumption does not flatter the plan). Stated in every plan that uses it.
DEFAULT_SPEED_FROM = "H20"


def assume_speed(gpu: GPU, speed_from: "str | GPU | None" = None) -> GPU:
    """``gpu`` with its empty speed fields (:data:`SPEED_FIELDS`) taken from ``speed_from`` (a name or a record;
    default: the row's own ``speed_from``); the names of the fields taken are in ``assumed``. Memory is never
    taken. Unchanged when no class is named or nothing is missing."""
    from dataclasses import replace

    src_ref = speed_from or gpu.speed_from
    if not src_ref:
        return gpu
    src = src_ref if isinstance(src_ref, GPU) else get_gpu(src_ref)
    filled = {f: getattr(src, f) for f in SPEED_FIELDS
              if getattr(gpu, f) in (None, "") and getattr(src, f) not in (None, "")}
    if not filled:
        return gpu
    return replace(gpu, **filled, speed_from=src.name, assumed=tuple(dict.fromkeys(gpu.assumed + tuple(filled))))


def sized_gpu(gpu: GPU, user_mem_gib: float | None = None) -> GPU:
    """The GPU record a plan sizes and times: ``gpu`` with ``user_mem_gib`` as its memory when the catalog has none
    (``--gpu-mem`` for a code such as GU108, said by :func:`assumed_note`) and then speed figures assumed from its
    ``speed_from`` (else :data:`DEFAULT_SPEED_FROM`). A code whose memory a source states but no compute figure
    (GU30) is left as it is: nothing was asked of the user, so nothing is assumed for it. Used by ``plan``,
    ``memory`` and ``render`` without a plan file, so all size and time a code the same way."""
    from dataclasses import replace

    if gpu.mem_gib is None and user_mem_gib is not None:
        gpu = replace(gpu, mem_gib=float(user_mem_gib), mem_gb_marketed=None, mem_from_user=True,
                      origin="option:--gpu-mem")
        if gpu.bf16_dense_tflops is None and gpu.fp16_dense_tflops is None:
            gpu = assume_speed(gpu, gpu.speed_from or DEFAULT_SPEED_FROM)
    return gpu


def is_model(gpu: GPU) -> bool:
    """True for a GPU model with its own published figures (A100-80GB-SXM, H20), False for a cloud code name (GU108,
    GU30) or a GPU known only by its memory (:attr:`GPU.assumed`): only a model may stand for a row whose GPU the
    provider does not publish."""
    return gpu.mem_gib is not None and not gpu.pai_codes and not gpu.assumed and not gpu.mem_from_user


def assumed_note(gpu: GPU) -> str | None:
    """The one sentence every command prints for a GPU whose speed figures are assumed or whose memory is the
    user's; None when all figures are the catalog's own."""
    parts = []
    if gpu.mem_from_user:
        parts.append(_("memory of {gpu} ({gib:g} GiB per GPU) is from --gpu-mem, not from a public source").format(
            gpu=gpu.name, gib=gpu.mem_gib))
    if gpu.assumed:
        parts.append(_("{gpu}'s model is not published: sized by its memory, speed figures ({fields}) assumed from "
                       "{source}; pass --gpu NAME with the model your console shows to plan it as that GPU").format(
            gpu=gpu.name, fields=", ".join(gpu.assumed), source=gpu.speed_from))
    return "; ".join(parts) or None


def normalize_gpu_name(name: str) -> str:
    """Lookup key: lower case, separators unified to '-', ``nvidia``/``tesla`` prefixes dropped."""
    t = re.sub(r"[\s_/]+", "-", name.strip().lower())
    t = re.sub(r"-+", "-", t).strip("-")
    for prefix in ("nvidia-", "tesla-"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    return t


def gpu_from_row(row: Mapping[str, Cell], origin: str = "bundled") -> GPU:
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
    how = _("`trainfit catalog show gpus` lists the catalog; add your own in ~/.config/trainfit/catalog.yaml")
    raise UnknownGPUError(
        _("unknown GPU '{name}'").format(name=name),
        fix=_("did you mean {names}? {how}").format(names=_(" or ").join(canon), how=how) if canon else how,
    )
