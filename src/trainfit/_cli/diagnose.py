"""``trainfit diagnose METRICS.jsonl [--plan plan.json] [--json]``: what went wrong in a run and how to fix it."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import print_json
from trainfit._cli.labels import SEVERITY, label
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.diagnose import Thresholds, plan_prediction, diagnose, load_metrics
from trainfit.diagnose_tokens import plan_tokens_per_step


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diagnose", help=_("diagnose a run from its per-step metrics (input-bound, loss spikes, memory, vs plan)"),
        description=_("Read the per-step metrics JSONL that TrainfitCallback writes and report findings with "
                    "code, severity, message and fix: input-bound, low-gpu-util, loss-spike, divergence, "
                    "memory-near-limit, slower-than-plan / memory-above-plan / tokens-per-step (with --plan: "
                    "measured vs predicted as ratios), checkpoint-interval. Exit code 1 when a finding is critical."))
    add_options(p, COMMAND_OPTIONS["diagnose"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_metrics = load_metrics(args.metrics)
    plan = plan_prediction(args.plan, args.pick) if args.plan else None
    tokens = plan_tokens_per_step(args.plan, args.pick) if args.plan else None
    d = diagnose(*run_metrics, plan=plan, interruptions_per_hour=args.interruptions_per_hour,
                 thresholds=Thresholds(warmup_steps=args.warmup_steps), plan_tokens=tokens)
    rc = 1 if d.worst == "critical" else 0
    if args.json:
        out = d.to_dict()
        out["metrics"] = args.metrics
        print_json(out)
        return rc
    s = d.summary
    line = _("{metrics}: steps {first}-{last} ({records} records, {launches} launch(es))").format(
        metrics=args.metrics, first=s["first_step"], last=s["last_step"], records=d.steps, launches=s["launches"])
    if s["median_step_seconds"] is not None:
        line += _(", median step {s:.3g} s").format(s=s["median_step_seconds"])
    if s["median_tokens_per_s"] is not None:
        line += _(", {n:,.0f} tokens/s").format(n=s["median_tokens_per_s"])
    print(line)
    warnings = [f for f in d.findings if f.severity != "info"]
    if not warnings:
        print("  " + _("no problems found"))
    for f in d.findings:
        severity = label(SEVERITY, f.severity)
        print(f"  {severity:<8} {f.code}: {f.message}")
        if f.fix:
            print("           " + _("fix: {fix}").format(fix=f.fix))
    return rc
