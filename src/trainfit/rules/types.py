"""Typed rules, violations and the job context the evaluator reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import TYPE_CHECKING

from trainfit.i18n import translate
from trainfit.json_types import YAMLValue

if TYPE_CHECKING:
    from trainfit.catalog.instances import Instance

SEVERITIES = ("error", "warning", "info")
ERROR, WARNING, INFO = SEVERITIES
_SEV_ORDER = {s: i for i, s in enumerate(SEVERITIES)}
VERDICTS = ("true", "false", "partly", "unverified")


@dataclass(frozen=True, kw_only=True)
class Rule:
    id: str
    title: str
    applies_to: tuple[str, ...]
    """fnmatch patterns over resource classes / platforms (``pai-lingjun``, ``pai-*``, ``*``)."""
    kind: str
    params: dict[str, YAMLValue] = field(default_factory=dict, hash=False, compare=False)
    severity: str
    why: str
    fix: str
    source: str
    verified: bool
    as_of: str
    claims: tuple[str, ...] = ()
    verdict: str | None = None
    plan_blocks: bool = False
    """A warning for ``check`` (e.g. a quota that can be raised) that the planner treats as a limit, so that a
    recommended plan runs without a support ticket; ``--ignore-rule`` lifts it."""

    def applies(self, *names: str | None) -> bool:
        return _applies(self.applies_to, names)

    def shown(self) -> "Rule":
        """This rule with its title, why and fix in the current language (the id stays English: a stable code)."""
        from dataclasses import replace

        return replace(self, title=translate(self.title), why=translate(self.why), fix=translate(self.fix))


@lru_cache(maxsize=1024)
def _applies(patterns: tuple[str, ...], names: tuple[str | None, ...]) -> bool:
    return any(n and fnmatchcase(n, p) for p in patterns for n in names)


@dataclass(frozen=True, kw_only=True)
class Violation:
    """One finding, of a platform rule (``rules/``), a job-level check (``check/``) or an RL lint (``rl/lint``)."""

    rule: str
    """Rule id."""
    severity: str
    """error | warning | info."""
    message: str
    fix: str
    why: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, str]:
        d = {"rule": self.rule, "severity": self.severity, "message": self.message, "fix": self.fix}
        if self.source:
            d["source"] = self.source
        return d


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """What the evaluator knows about a job. None = unknown (the related checks stay quiet)."""

    platform: str = "pai-dlc"
    """pai-dlc | tencent-tione | generic (matched against ``applies_to`` together with resource_class)."""
    resource_class: str | None = None
    """pai-public | pai-quota | pai-lingjun | ...; defaults to the instance's."""
    instance: Instance | None = None
    """A :class:`trainfit.catalog.instances.Instance` (or None)."""
    nodes: int = 1
    gpus_per_node: int | None = None
    """Defaults to the instance's gpu_count."""
    spot: bool = False
    region: str | None = None
    workspace_region: str | None = None
    storage_region: str | None = None
    vpc: bool | None = None
    storage: str | None = None
    """oss | nas | cpfs | bmcpfs."""
    job_type: str | None = None
    """DLC JobType (PyTorchJob, MPIJob...)."""
    custom_image: bool | None = None
    checkpointing: bool | None = None
    tp: int = 1
    command: str | None = None
    scripts: tuple = ()
    """(where, :class:`~trainfit.check.shell.Script`) pairs of a checked file (launch commands)."""
    resume: bool | None = None
    """The job resumes from its newest checkpoint (None = unknown)."""
    checkpoint_detail: str | None = None
    """Why checkpoints would not survive (set by ``check`` when ``checkpointing`` is False)."""
    images: tuple[str, ...] = ()
    rdma_noted: bool = False
    """The job says its custom image carries the RDMA libraries."""
    region_sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    """Where each region came from (image registry, OSS endpoint, --region...), for regions_match."""
    body_bytes: int | None = None
    """Size of the CreateJob request body."""

    @property
    def rclass(self) -> str | None:
        if self.resource_class:
            return self.resource_class
        return getattr(self.instance, "resource_class", None)

    @property
    def total_gpus(self) -> int | None:
        gpn = self.gpus_per_node if self.gpus_per_node is not None else getattr(self.instance, "gpu_count", None)
        return None if gpn is None else gpn * self.nodes
