"""What every module of ``check`` reads besides the job's facts: the options ``check`` was given and the job's
placement as the catalog and the launcher state it. Below the rules (:mod:`.rules`) and the read-back of the
training settings (:mod:`.readback`), which both use it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainfit.catalog.instances import list_instances
from trainfit.jobspec.facts import JobFacts
from trainfit.jobspec.shell import is_torchrun
from typing import TYPE_CHECKING
from trainfit.json_types import JSON

if TYPE_CHECKING:
    from trainfit.dataset.stats import DatasetStats
    from trainfit.catalog.instances import Instance


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    region: str | None = None
    gpu: str | None = None
    instance_type: str | None = None
    nodes: int | None = None
    """Nodes the job runs on, when the file does not say."""
    gpus_per_node: int | None = None
    dataset: DatasetStats | None = None
    """``check --dataset``: the :class:`~trainfit.dataset.stats.DatasetStats` the job's settings are compared with."""


def catalog_instance(name: str):
    """(catalog row or None, all names). A catalog or overlay that cannot be read raises: check never skips its
    catalog rules silently."""
    rows = list_instances()
    hit = next((r for r in rows if r.instance_type.lower() == name.strip().lower()), None)
    return hit, [r.instance_type for r in rows]


def first_instance(names: list[JSON]) -> Instance | None:
    """The catalog record of the first of ``names`` (in the caller's order of preference) the catalog knows."""
    for it in names:
        if isinstance(it, str) and it:
            inst, _names = catalog_instance(it)
            if inst is not None:
                return inst
    return None


def gpus_per_node(f: JobFacts) -> int | None:
    if f.gpus_per_node:
        return f.gpus_per_node
    for it in f.instance_types:
        hit, _names = catalog_instance(it)
        if hit is not None and hit.gpu_count:
            return hit.gpu_count
    v = f.header.get("gpus_per_node")
    if v:
        return int(v)
    for _where, s in f.scripts:
        for cmd in s.commands:
            if is_torchrun(cmd):
                v = cmd.flags().get("nproc_per_node") or cmd.flags().get("nproc-per-node")
                if v and v.isdecimal():
                    return int(v)
        v = s.assignments.get("NPROC_PER_NODE")
        if v and v.isdecimal():
            return int(v)
    return None


def rl_launch_text(f: JobFacts) -> str | None:
    """The text of the job's RL launch script (verl ``main_ppo`` or ``swift rlhf``), or None."""
    for _where, s in f.scripts:
        if "verl.trainer.main_ppo" in s.text or re.search(r"\bswift\s+rlhf\b", s.text):
            return s.text
    return None
