"""``trainfit check``: lint a job spec before it fails on the cluster.

:func:`check_file` reads one file (PAI-DLC CreateJob JSON, ``pai dlc job submit`` command, shell launch
script, Kubeflow PyTorchJob, SkyPilot task, DeepSpeed JSON, LLaMA-Factory YAML) and returns every
violation at once, each with a rule id, a severity, a message and a fix. Bad input (missing, huge, binary,
malformed or of unknown kind) raises one :class:`CheckInputError` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainfit.check.facts import CheckInputError, JobFacts, read_facts
from trainfit.check.rules import ERROR, INFO, CheckOptions, Violation, rl_launch_text, run_rules
from trainfit.i18n import _
from trainfit.json_types import JSONLike

if TYPE_CHECKING:
    from trainfit.dataset.stats import DatasetStats

__all__ = ["CheckInputError", "CheckOptions", "CheckResult", "Violation", "check_file"]


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    path: str
    kind: str
    violations: tuple[Violation, ...]
    notes: tuple[str, ...] = ()
    memory: dict[str, JSONLike] | None = None
    """The memory check's figures (:attr:`~trainfit.check.facts.JobFacts.memory`), None when not checked."""

    @property
    def errors(self) -> int:
        return sum(1 for v in self.violations if v.severity == ERROR)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def to_dict(self) -> dict:
        return {"file": self.path, "kind": self.kind, "ok": self.ok,
                "violations": [v.to_dict() for v in self.violations], "notes": list(self.notes),
                "memory": self.memory}


def check_facts(facts: JobFacts, options: CheckOptions | None = None) -> CheckResult:
    vs = run_rules(facts, options or CheckOptions())
    if not vs and facts.kind == "shell" and facts.engine is None and not facts.train and rl_launch_text(facts) is None:
        # a README, a zip or /etc/passwd read as a script: "no problems found" would read as "checked and fine"
        vs = [Violation(rule="no-training-command", severity=INFO,
                        message=_("no training command found (swift sft, megatron sft, torchrun, deepspeed, "
                                  "llamafactory-cli, verl ...): nothing was checked"),
                        fix=_("pass the launch script or job spec itself (e.g. job/swift_sft.sh or "
                              "job/dlc_job.json)"))]
    order = {"error": 0, "warning": 1, "info": 2}
    vs = sorted(vs, key=lambda v: order.get(v.severity, 3))
    return CheckResult(path=facts.path, kind=facts.kind, violations=tuple(vs), notes=tuple(facts.notes),
                       memory=facts.memory)


def check_file(path: str | Path, *, region: str | None = None, gpu: str | None = None,
               instance_type: str | None = None, nodes: int | None = None,
               gpus_per_node: int | None = None, dataset: DatasetStats | None = None) -> CheckResult:
    """Check one job file; see the module docstring. ``dataset``: a
    :class:`~trainfit.dataset.stats.DatasetStats` to compare the job's settings with."""
    from trainfit.catalog import current_catalog

    current_catalog()  # the catalog rules need it: an unreadable overlay or cache is an error here, not a skip
    facts = read_facts(path)
    return check_facts(facts, CheckOptions(region=region, gpu=gpu, instance_type=instance_type, nodes=nodes,
                                           gpus_per_node=gpus_per_node, dataset=dataset))
