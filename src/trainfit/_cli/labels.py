"""Display labels of the stable codes the CLI prints in tables (verdicts, methods, phases, severities...).

JSON output keeps the English codes (``fits``, ``oom``, ``lora``...); the tables show :func:`label` of a code, its
label in the current language (English labels are the codes themselves, or the longer wording the tables used
before there were two languages). A code without a label is shown as it is.
"""

from __future__ import annotations

from typing import Mapping

from trainfit.estimate.fit import VERDICT_WORDS
from trainfit.i18n import N_, translate

#: Memory verdicts as the verdict line reads them.
VERDICT: Mapping[str, str] = {
    "fits": N_("fits"),
    "tight": N_("tight (inside the safety margin)"),
    "oom": N_("does not fit (OOM)"),
    "unknown": N_("unknown (host RAM)"),
}
#: Memory verdicts in a word (the RL line, the GPU-side verdict of a host-RAM OOM).
VERDICT_SHORT: Mapping[str, str] = VERDICT_WORDS
#: Training methods (``--method``).
METHOD: Mapping[str, str] = {
    "full": N_("full"),
    "lora": N_("lora"),
    "qlora": N_("qlora"),
    "freeze": N_("freeze"),
}
#: Where the memory peak falls (``peak_phase``).
PHASE: Mapping[str, str] = {
    "forward": N_("forward"),
    "backward": N_("backward"),
    "optimizer": N_("optimizer"),
    "rl-rollout": N_("rl-rollout"),
    "rl-train": N_("rl-train"),
    "rl-sync": N_("rl-sync"),
    "rollout": N_("rollout"),
    "train": N_("train"),
    "sync": N_("sync"),
}
#: Severities of `check` findings and `diagnose` findings.
SEVERITY: Mapping[str, str] = {
    "error": N_("error"),
    "warning": N_("warning"),
    "info": N_("info"),
    "critical": N_("critical"),
}
#: How weights and optimizer states are held (``settings.precision_mode`` of a plan).
PRECISION_MODE: Mapping[str, str] = {
    "pure bf16": N_("pure bf16"),
    "fp32 master": N_("fp32 master"),
    "fp32 AMP": N_("fp32 AMP"),
    "fp32 adapters": N_("fp32 adapters"),
}
#: The ranking objective (``--objective``).
OBJECTIVE: Mapping[str, str] = {"cost": N_("cost"), "time": N_("time")}


def label(table: Mapping[str, str], code: object) -> str:
    """The current language's label of ``code`` in ``table`` (the code itself when it has none)."""
    text = table.get(str(code)) if code is not None else None
    return translate(text) if text else str(code)


def yes_no(value: bool) -> str:
    return translate(N_("yes")) if value else translate(N_("no"))
