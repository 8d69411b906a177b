"""``diagnose``'s tokens-per-step comparison: what an optimizer step of the plan processes (a token budget, or the
rows of ``plan --dataset``) against what the run's step records measured (finding ``tokens-per-step``). Split out of
:mod:`trainfit.diagnose`, which runs it with the other findings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypedDict

from trainfit.diagnose import Finding, Thresholds, _median, _vals
from trainfit.i18n import _
from trainfit.metrics_file import MetricRecord
from trainfit.service import load_plan


class PlanTokens(TypedDict):
    """What an optimizer step of a plan processes (:func:`plan_tokens_per_step`)."""

    basis: str
    processed: float | None
    data: float
    padding_share: float | None


def plan_tokens_per_step(path: str | Path, pick: int = 1) -> PlanTokens | None:
    """What an optimizer step of plan ``pick`` processes (None for an RL plan):

    * ``processed``: tokens the GPUs run per step, padding included; ``data``: the data tokens among them;
    * ``padding_share``: 1 - data / processed (None when the plan cannot say: a token budget without stats).

    A ``--tokens`` plan assumes packed rows of ``seq_len`` data tokens: global batch x seq_len. A ``--dataset``
    plan knows its rows: packed, global batch x seq_len of which the packing fill is data; not packed, global batch
    samples of the data's mean length after the cut, padded to each micro-batch's longest (the stats' padding share
    at the plan's micro-batch)."""
    plan = load_plan(path, pick)
    if plan.rl is not None:
        return None
    wl = plan.workload
    gb = wl.global_batch
    data = plan.data
    if data is None:
        n = float(gb * wl.seq_len)
        return {"basis": _("global batch x seq_len (a token budget: packed rows assumed full)"), "processed": n,
                "data": n, "padding_share": None}
    if data.packing:
        eff = data.packing_efficiency if data.packing_efficiency is not None else 1.0
        n = float(gb * data.seq_len)
        return {"basis": _("{rows} packed rows of {seq_len:,} tokens, {eff:.1%} filled (the data's stats)").format(
                    rows=gb, seq_len=data.seq_len, eff=eff),
                "processed": n, "data": n * eff, "padding_share": 1.0 - eff}
    real = gb * data.data_tokens_per_epoch / data.rows_per_epoch
    waste = data.padding_at(wl.micro_batch)
    return {"basis": _("{rows} samples of {mean:,.0f} tokens on average (the data's stats), padded at micro-batch "
                       "{mb}").format(rows=gb, mean=real / gb, mb=wl.micro_batch),
            "processed": real / (1.0 - waste) if waste is not None else None,
            "data": real, "padding_share": waste}


# --------------------------------------------------------------------------- analysis


def tokens_findings(timed: list[MetricRecord], expect: PlanTokens, th: Thresholds
                    ) -> tuple[list[Finding], dict[str, float | str | None]]:
    """Measured tokens per step vs :func:`plan_tokens_per_step`. The step records' ``tokens`` come from the
    Trainer's ``num_input_tokens_seen``, which counts padding or not depending on the Trainer's setting, so the
    measured figure is compared with both the plan's processed and data tokens and the nearer decides."""
    got = _median(_vals(timed, "tokens"))
    nonpad = _median(_vals(timed, "tokens_nonpad"))
    cmp: dict[str, float | str | None] = {"basis": expect["basis"], "planned_tokens_per_step": expect["processed"],
                           "planned_data_tokens_per_step": round(expect["data"], 1),
                           "planned_padding_share": expect["padding_share"],
                           "measured_tokens_per_step": got, "measured_padding_share": None, "tokens_ratio": None}
    if not got:
        return [Finding(code="tokens-per-step", severity="info",
                        message=_("the run records no tokens per step to compare with the plan's ({basis})").format(
                            basis=expect["basis"]),
                        fix=_("record tokens (TrainfitCallback with include_num_input_tokens_seen, or "
                              "tokens_per_step=)"),
                        data=cmp)], cmp
    ratios = [got / x for x in (expect["processed"], expect["data"]) if x]
    r = min(ratios, key=lambda x: abs(math.log(x)))
    cmp["tokens_ratio"] = round(r, 3)
    if nonpad and got >= nonpad:
        cmp["measured_padding_share"] = round(1.0 - nonpad / got, 4)
    if expect["processed"] and expect["processed"] != expect["data"]:
        msg = _("{got:,.0f} tokens per step measured vs {data:,.0f} data tokens ({processed:,.0f} with padding) "
                "planned ({basis}): {ratio:.2f}x").format(got=got, data=expect["data"], processed=expect["processed"],
                                                          basis=expect["basis"], ratio=r)
    else:
        msg = _("{got:,.0f} tokens per step measured vs {data:,.0f} data tokens planned ({basis}): {ratio:.2f}x").format(
            got=got, data=expect["data"], basis=expect["basis"], ratio=r)
    if cmp["measured_padding_share"] is not None:
        msg += (_("; padding {share:.0%} of the tokens vs {planned:.0%} planned").format(
                    share=cmp["measured_padding_share"], planned=expect["padding_share"])
                if expect["padding_share"] is not None else
                _("; padding {share:.0%} of the tokens").format(share=cmp["measured_padding_share"]))
    off = not (1 / th.tokens_off <= r <= th.tokens_off)
    pad_off = (cmp["measured_padding_share"] is not None and expect["padding_share"] is not None
               and cmp["measured_padding_share"] - expect["padding_share"] > 0.10)
    if not off and not pad_off:
        return [Finding(code="tokens-per-step", severity="info", message=msg, fix="", data=cmp)], cmp
    return [Finding(
        code="tokens-per-step", severity="warning", message=msg,
        fix=_("the run's global batch, cut-off or packing differs from the plan's, so its steps and hours do too: "
              "check per-device batch x accumulation x GPUs, max_length / cutoff_len and packing against the plan "
              "(`trainfit check FILE --dataset STATS`), or re-plan"),
        data=cmp)], cmp


__all__ = ["plan_tokens_per_step", "tokens_findings"]
