"""``check``'s step-budget rule (``step-budget``): the steps a file trains against its trainfit header's budget (tokens,
or the data's rows), and a file without packing. Split out of :mod:`trainfit.check.rules`, which runs it from
``rule_memory`` with the read-back workload."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from trainfit.check.facts import JobFacts
from trainfit.i18n import _
from trainfit.rules.types import INFO, Violation

if TYPE_CHECKING:
    from trainfit.check.readback import Readback


def budget_findings(f: JobFacts, rb: Readback) -> list[Violation]:
    """The step budget the file trains against the plan's (its header's ``budget``), and a file without packing:
    ``max_steps`` x global batch x seq_len counts ``seq_len`` data tokens per row, which holds for packed rows only."""
    out: list[Violation] = []
    wl = rb.workload
    budget = f.plan.get("budget") if isinstance(f.plan.get("budget"), dict) else {}
    tokens = budget.get("tokens")
    got = rb.tokens_trained
    rows, epochs = budget.get("rows_per_epoch"), budget.get("epochs")
    from_data = (isinstance(rows, int) and not isinstance(rows, bool) and rows > 0
                 and isinstance(epochs, (int, float)) and not isinstance(epochs, bool) and epochs > 0)
    if from_data and rb.max_steps is not None:  # plan --dataset: steps are the data's rows per global batch
        want = max(1, math.ceil(rows * epochs / wl.global_batch))
        if isinstance(budget.get("packing"), bool) and budget["packing"] != wl.packing:
            if budget["packing"]:
                msg = _("its trainfit header's data budget counts packed rows, but the file does not pack samples: "
                        "its {steps:,} steps cover a different share of the data than planned")
            else:
                msg = _("its trainfit header's data budget counts samples, but the file packs samples: its {steps:,} "
                        "steps cover a different share of the data than planned")
            out.append(Violation(
                rule="step-budget", severity=INFO, message=msg.format(steps=rb.max_steps),
                fix=_("set packing as planned, or re-plan with --packing/--no-packing and re-render")))
        elif rb.max_steps != want:
            what = (_("{rows:,} packed rows") if budget.get("packing") else _("{rows:,} samples")).format(rows=rows)
            out.append(Violation(
                rule="step-budget", severity=INFO,
                message=_("the file trains {steps:,} steps at global batch {gb}; its trainfit header's data gives "
                          "{what} x {epochs:g} epoch(s) = {want:,} steps at this batch").format(
                    steps=rb.max_steps, gb=wl.global_batch, what=what, epochs=epochs, want=want),
                fix=_("set max_steps {want}, or re-render from the plan").format(want=want)))
    elif isinstance(tokens, (int, float)) and tokens > 0 and got is not None:
        per_step = wl.global_batch * wl.seq_len
        want = max(1, math.ceil(tokens / per_step))
        if rb.max_steps != want:
            out.append(Violation(
                rule="step-budget", severity=INFO,
                message=_("the file trains {steps:,} steps x global batch {gb} x seq_len {seq} = {got:,} tokens; its "
                          "trainfit header planned {tokens:,.0f} tokens ({want:,} steps at this batch)").format(
                    steps=rb.max_steps, gb=wl.global_batch, seq=wl.seq_len, got=got, tokens=tokens, want=want),
                fix=_("set max_steps {want}, or re-render from the plan").format(want=want)))
    if not wl.packing and not from_data and rb.max_steps is not None and f.engine in ("swift", "megatron",
                                                                                       "llamafactory"):
        out.append(Violation(
            rule="step-budget", severity=INFO,
            message=_("no packing: each of the {steps:,} steps trains {gb} samples padded to at most {seq} tokens, so "
                      "on shorter samples the run trains fewer tokens than max_steps x global batch x seq_len = "
                      "{got:,}").format(steps=rb.max_steps, gb=wl.global_batch, seq=wl.seq_len, got=got),
            fix=_("turn packing on (ms-swift --packing true, LLaMA-Factory packing: true), or budget by epochs")))
    return out


__all__ = ["budget_findings"]
