"""Instance catalog: machines you can rent (or own) with their GPUs, links, regions and prices.

Data: ``data/instances.csv`` (only instance type names read in official Alibaba/Tencent SDKs or documents;
prices left empty where nothing was published), then any ``trainfit catalog refresh`` cache, then the user
overlay. A row is keyed by ``(provider, resource_class, instance_type)``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Mapping

from trainfit.catalog._current import current_catalog
from trainfit.catalog.gpus import get_gpu, is_model
from trainfit.errors import CatalogError, did_you_mean, InputError, TrainfitError
from trainfit.i18n import _
from trainfit.json_types import JSONLike

if TYPE_CHECKING:
    from trainfit.catalog._schema import Cell


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One instance type (a node). None means not known; prices are never guessed."""

    provider: str
    """alibaba | tencent | generic | private."""
    resource_class: str
    """pai-public | pai-quota | pai-lingjun | pai-eas | ecs | tencent-tione | generic | private."""
    instance_type: str
    """The provider's exact spec name (``ecs.gn7i-c8g1.2xlarge``)."""
    gpu: str | None = None
    """Canonical GPU name in the GPU catalog; None = the GPU model is not documented."""
    gpu_count: int | None = None
    """GPUs per node."""
    vcpu: int | None = None
    ram_gib: float | None = None
    """Host memory, GiB."""
    intra_node_link: str | None = None
    """nvlink | pcie | none (how the GPUs of one node talk)."""
    inter_node: str | None = None
    """rdma | tcp | none (how nodes talk)."""
    inter_node_gbit_per_s: float | None = None
    """Network bandwidth per node, Gbit/s (bits)."""
    regions: tuple[str, ...] = ()
    """Region ids where it was seen; empty = not documented (not "nowhere")."""
    price_per_hour: float | None = None
    """List price per node-hour in ``currency``; None = no published price."""
    currency: str | None = None
    spot_discount: float | None = None
    """Fraction of the list price paid on spot (0.3 = pay 30%); None = unknown."""
    verified: bool = False
    source: str = ""
    as_of: str = ""
    notes: str | None = None
    origin: str = "bundled"
    """``bundled``, ``overlay:<path>`` or ``refresh:<cache file>``."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.provider, self.resource_class, self.instance_type)

    @property
    def gpu_spec(self):
        """The :class:`~trainfit.catalog.gpus.GPU` record of :attr:`gpu`, or None when unknown."""
        if not self.gpu:
            return None
        return get_gpu(self.gpu)

    @property
    def spot_price_per_hour(self) -> float | None:
        """``price_per_hour * spot_discount`` when both are known."""
        if self.price_per_hour is None or self.spot_discount is None:
            return None
        return self.price_per_hour * self.spot_discount

    def to_dict(self) -> dict[str, JSONLike]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def instance_from_row(row: Mapping[str, Cell], origin: str = "bundled") -> Instance:
    kw = {f.name: row[f.name] for f in fields(Instance) if f.name in row}
    return Instance(**kw, origin=origin)


def list_instances(*, provider: str | None = None, resource_class: str | None = None,
                   gpu: str | None = None) -> list[Instance]:
    """Instances of the effective catalog, filtered by provider, resource class and/or GPU name."""
    rows = list(current_catalog().instances)
    if provider:
        rows = [r for r in rows if r.provider == provider.lower()]
    if resource_class:
        rows = [r for r in rows if r.resource_class == resource_class.lower()]
    if gpu:
        want = get_gpu(gpu).name
        rows = [r for r in rows if r.gpu == want]
    return rows


def get_instance(instance_type: str, *, provider: str | None = None,
                 resource_class: str | None = None) -> Instance:
    """The instance called ``instance_type`` (exact spec name, case-insensitive).

    When the same name exists in several resource classes, pass ``resource_class`` (or ``provider``);
    otherwise :class:`~trainfit.errors.CatalogError` lists the choices.
    """
    rows = list_instances(provider=provider, resource_class=resource_class)
    hits = [r for r in rows if r.instance_type.lower() == instance_type.strip().lower()]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        classes = ", ".join(f"{h.provider}/{h.resource_class}" for h in hits)
        raise CatalogError(_("instance type '{name}' exists in several resource classes: {classes}").format(
            name=instance_type, classes=classes), fix=_("pass resource_class (e.g. pai-public or pai-lingjun)"))
    sugg = did_you_mean(instance_type, [r.instance_type for r in rows])
    how = _("`trainfit catalog show instances` lists the catalog; `trainfit catalog refresh --provider pai` fetches "
            "live PAI specs; private types go in ~/.config/trainfit/catalog.yaml")
    raise CatalogError(
        _("unknown instance type '{name}'").format(name=instance_type),
        fix=_("did you mean {names}? {how}").format(names=_(" or ").join(sugg), how=how) if sugg else how,
    )


def gpu_on_instance(inst: Instance, gpu: str | None) -> str | None:
    """The GPU a job on ``inst`` runs on: the instance's own GPU, or ``gpu`` where no public source names the
    instance's GPU model (a Lingjun code such as GU108, or a part known only by its memory) and ``gpu`` is a model
    with that memory. A ``gpu`` that names another GPU than the instance has, or another code, is an error: it
    would size the job for a GPU the instance does not have."""
    if not gpu or not inst.gpu:
        return gpu or inst.gpu
    try:
        own = get_gpu(inst.gpu)
    except TrainfitError:
        return gpu
    want = get_gpu(gpu)
    if want.name == own.name:
        return gpu
    # the user says what the console shows for a GPU no public source names: a code without memory (GU108), or one
    # known only by its memory (gn8v's 96 GB part) when the named model has that memory. A code is never a model.
    if is_model(want) and not is_model(own) and own.mem_gib in (None, want.mem_gib):
        return gpu
    raise InputError(_("--gpu {gpu} contradicts --instance-type {name}, whose GPU is {own}").format(
        gpu=gpu, name=inst.instance_type, own=inst.gpu),
        fix=_("drop --gpu (the instance type says {own}) or pick an instance type with {gpu} (`trainfit catalog show "
              "instances`)").format(own=inst.gpu, gpu=gpu))
