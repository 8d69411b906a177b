"""Rich tables for the CLI (rendering only: every number comes from the core: ``plan``'s from the typed
:class:`~trainfit.plan.types.PlanResult`, ``memory``'s from its report's dict)."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainfit._cli.labels import METHOD, OBJECTIVE, PHASE, PRECISION_MODE, VERDICT, VERDICT_SHORT, label
from trainfit.estimate.fit import OOM_RISK_LIMIT
from trainfit.estimate.terms import TERMS
from trainfit.estimate.states import precision_mode
from trainfit.i18n import _
from trainfit.json_types import JSONObject
from trainfit.plan.parts import Ranking
from trainfit.plan.search import PlanRequest
from trainfit.plan.types import Plan, PlanResult
from trainfit.estimate.uncertainty import format_probability

#: The verdict line's wording of each verdict (codes stay English in JSON); kept for callers of the old name.
VERDICT_LABEL = VERDICT


def make_console() -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    c = Console()
    if not c.is_terminal:
        c = Console(width=140)
    return c


def print_memory(out: dict, console: Console | None = None) -> None:
    c = console or make_console()
    wl = out["workload"]
    p = out["params"]
    title = _("{model}: {method}, seq {seq_len}, micro-batch {micro_batch}, {precision}, {optimizer}, GC {gc}, "
              "{gpus} GPU(s) {strategy}").format(
        model=out["model"], method=label(METHOD, wl["method"]), seq_len=wl["seq_len"], micro_batch=wl["micro_batch"],
        precision=wl["precision"], optimizer=wl["optimizer"], gc=_("on") if wl["grad_ckpt"] else _("off"),
        gpus=wl["gpus"], strategy=wl["strategy"])
    t = Table(title=escape(title), title_justify="left")
    t.add_column(_("term"))
    t.add_column(_("GiB / GPU"), justify="right")
    t.add_column(_("share"), justify="right")
    total = out["reserved_gib"] or 1.0
    for term in TERMS:
        v = out["breakdown_gib"].get(term.key, 0.0)
        t.add_row(term.text(wl.get("loss")), f"{v:,.2f}", f"{100 * v / total:.0f}%")
    t.add_section()
    t.add_row(_("tensor peak (max_memory_allocated)"), f"{out['tensor_peak_gib']:,.2f}", "")
    t.add_row("[bold]" + _("reserved (nvidia-smi)") + "[/bold]", f"[bold]{out['reserved_gib']:,.2f}[/bold]", "")
    rng = out.get("reserved_interval_gib")
    if rng:
        t.add_row(_("reserved, p10–p90 (fit corpus)"), f"{rng['p10']:,.1f}–{rng['p90']:,.1f}", "")
    c.print(t)
    c.print(_("peak phase: [bold]{phase}[/bold]   params: total {total:,}  trainable {trainable:,}  active {active:,}   "
              "host RAM/node: {host_ram:,.0f} GiB").format(
        phase=label(PHASE, out["peak_phase"]), total=p["total"], trainable=p["trainable"], active=p["active"],
        host_ram=out["host_ram_gib"]))
    if out.get("gpu_mem_gib") is not None:
        name = out.get("gpu") or "GPU"
        colour = {"fits": "green", "tight": "yellow", "oom": "red", "unknown": "yellow"}[out["verdict"]]
        p_oom = (out.get("fit") or {}).get("oom_probability")
        fit = out.get("fit") or {}
        if out["verdict"] == "oom" and fit.get("host_verdict") == "oom" and fit.get("gpu_verdict") != "oom":
            # host RAM is what does not fit: the GPU's headroom is not the story
            line = _("[{colour}]does not fit in host RAM[/{colour}]: {need:,.0f} GiB needed per node > {have:,.0f} GiB; "
                     "on the GPU ({name}, {usable:.4g} GiB usable) it {gpu_verdict}, GPU headroom {headroom:.2f} GiB{range}")
            line = line.format(colour=colour, need=fit["host_ram_need_gib"], have=fit["host_ram_gib"], name=escape(name),
                               usable=out["gpu_mem_gib"], gpu_verdict=label(VERDICT_SHORT, fit["gpu_verdict"]),
                               headroom=out["headroom_gib"], range=_headroom_range(out))
            c.print(line + ("" if p_oom is None else _(", P(GPU OOM) {p}").format(p=_prob(p_oom))))
        else:
            line = _("[{colour}]{verdict}[/{colour}] on {name} ({usable:.4g} GiB usable): headroom {headroom:.2f} GiB{range}")
            line = line.format(colour=colour, verdict=label(VERDICT, out["verdict"]), name=escape(name),
                               usable=out["gpu_mem_gib"], headroom=out["headroom_gib"], range=_headroom_range(out))
            c.print(line + ("" if p_oom is None else
                            _(", P(OOM) {p} (from what published runs near their card's limit did; the GiB range above "
                              "is their reserved memory, which includes cache the allocator gives back before an "
                              "OOM)").format(p=_prob(p_oom))))
        for reason in out["fit"]["reasons"]:
            c.print(f"  - {escape(reason)}")
        for w in out.get("warnings", []):
            c.print(_("[yellow]warning:[/yellow] {text}").format(text=escape(w)))
        c.print(_("largest micro-batch at seq {seq_len}: {max_micro_batch}   longest seq at micro-batch {micro_batch}: "
                  "{max_seq_len:,}").format(seq_len=wl["seq_len"], max_micro_batch=out["max_micro_batch"],
                                            micro_batch=wl["micro_batch"], max_seq_len=out["max_seq_len"]))
        if out["verdict"] == "fits" and out.get("suggestions") and p_oom is not None:
            c.print(_("P(OOM) {p} is at or above the {limit} a plan may carry (`trainfit plan` would not choose these "
                      "settings when safer ones fit); these bring it under:").format(
                p=_prob(p_oom), limit=_prob(OOM_RISK_LIMIT)))
        for s in out.get("suggestions", []):
            rng = s.get("reserved_interval_gib")
            c.print(_("  try [bold]{change}[/bold]: {gib:.1f} GiB{range} ({why})").format(
                change=escape(s["change"]), gib=s["reserved_gib"],
                range=f" ({rng['p10']:.1f}–{rng['p90']:.1f})" if rng else "", why=escape(s["why"])))
    for a in out.get("assumptions", []):
        c.print(f"[dim]- {escape(a)}[/dim]")


def _headroom_range(out: dict) -> str:
    """`` (p10 a, p90 b)`` of the headroom (``headroom_interval_gib``: the card less the memory's range; written
    with commas, as either end can be negative)."""
    r = out.get("headroom_interval_gib")
    return f" (p10 {r['p10']:.1f}, p90 {r['p90']:.1f})" if r else ""


def _money(v, cur, rng: dict | None = None) -> str:
    if v is None:
        return "-"
    sym = {"CNY": "¥", "USD": "$"}.get(cur or "", (cur or "") + " ")
    return f"{sym}{v:,.0f}" + _range_line(rng)


def _short(v: float) -> str:
    """A range end in 2-3 significant figures: 163, 2.2k, 1.3M."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            x = v / div
            return f"{x:.1f}{suffix}" if x < 10 else f"{x:.0f}{suffix}"
    return f"{v:.2g}" if abs(v) < 10 else f"{v:.0f}"


def _with_range(v, rng: dict | None, fmt: str, unit: str = "") -> str:
    """``172 (140–230)``: a figure with its p10–p90 interval (docs/accuracy.md, prediction intervals), the range
    on a second line of the cell."""
    if v is None:
        return "-"
    return (_short(v) if fmt == "short" else format(v, fmt)) + unit + _range_line(rng, unit)


def _range_line(rng: dict | None, unit: str = "") -> str:
    """The p10–p90 line of a cell; a suffix both ends share is written once (2.5–3.8k), so the cell stays narrow."""
    if not rng:
        return ""
    lo, hi = _short(rng["p10"]), _short(rng["p90"])
    if lo[-1:] == hi[-1:] and lo[-1:] in ("k", "M"):
        lo = lo[:-1]
    return f"\n({lo}–{hi}{unit})"


def _prob(p: float) -> str:
    return format_probability(p)


def _age(as_of: str | None) -> str:
    """'as of 2026-12-01 (2 days old)' from an ISO date."""
    import datetime as dt

    if not as_of:
        return _("date unknown")
    try:
        days = (dt.date.today() - dt.date.fromisoformat(str(as_of)[:10])).days
    except ValueError:
        return _("as of {date}").format(date=as_of)
    return _("as of {date} ({days} days old)").format(date=as_of, days=days)


def _print_ranking(c: Console, r: Ranking | None, plans: Sequence[Plan], top: int) -> None:
    """The table's footer: the ranking basis and why, why #1 is #1 (ties), and which rows lack a price."""
    if not r:
        return
    c.print(f"[bold]{escape(r.summary)}[/bold]")
    if r.why_first:
        c.print(escape(r.why_first))
    unpriced = [i for i in r.unpriced if i < top]
    if unpriced:
        shown = min(top, len(plans))
        which = (_("no row shown has a price") if len(unpriced) == shown else
                 _("no price for {rows}").format(rows=", ".join(f"#{i + 1}" for i in unpriced)))
        providers = sorted({plans[i].provider for i in unpriced})
        how = dict(r.price_fix_by_provider)
        c.print(_("[yellow]{which}[/yellow] (cost '-'). To price them: {how}").format(
            which=which, how=escape("; ".join(f"{p}: {how.get(p, '')}" for p in providers))))


def _pct_range(rng: dict | None) -> dict | None:
    return None if rng is None else {k: 100 * v for k, v in rng.items()}


def _plan_cells(p: Plan) -> list[str]:
    """The cells of one plan row after the rank: where, layout, settings, memory, speed, time and cost, each figure
    with its p10–p90 range."""
    w = p.workload
    st = w.strategy + (f"+off:{w.offload}" if w.offload != "none" else "")
    if w.ep > 1:
        st += f" ep{w.ep}"
    if w.tp > 1:
        st += f" tp{w.tp}"
    for k, n in (("pp", w.pp), ("cp", w.cp)):  # a pinned 256-GPU TP4/PP8/EP8 layout showed as "ep8 tp4"
        if n > 1:
            st += f" {k}{n}"
    if w.ulysses > 1:
        st += f" sp{w.ulysses}"
    st += f" mb{w.micro_batch}" + (f"×ga{w.grad_accum}" if w.grad_accum > 1 else "")
    st += f" gb{w.global_batch}"
    st += " GC" if w.grad_ckpt else ""
    if p.rl is not None:
        r, cfg = p.rl, p.rl.config
        if cfg.rollout_tp and cfg.algo != "dpo":  # the engine settings plan --rl searched
            st += f" rollout-tp{cfg.rollout_tp}" + (_(" trainer-off") if cfg.trainer_offload else "")
        st += _(" {phase}-bound").format(phase=label(PHASE, r.binding_phase)) + (
            _(", KV {n} seqs").format(n=r.max_concurrent_seqs) if r.max_concurrent_seqs is not None else "")
    iv = p.intervals()
    mem = iv.get("per_gpu_gib")
    sp, tc, pl = p.speed, p.time_cost, p.placement
    return [pl.instance_type, pl.gpu, f"{pl.nodes}×{pl.gpus_per_node}", st, label(PRECISION_MODE, precision_mode(w)),
            f"{p.per_gpu_gib:.1f}/{pl.gpu_mem_gib:g}" + (f"\n({mem['p10']:.0f}–{mem['p90']:.0f})" if mem else ""),
            _with_range(sp.tokens_per_s, iv.get("tokens_per_s"), ",.0f" if sp.tokens_per_s < 10_000 else "short"),
            "-" if sp.mfu is None else _with_range(100 * sp.mfu, _pct_range(iv.get("mfu")), ".0f", "%"),
            _with_range(tc.hours, iv.get("hours"), ",.0f" if tc.hours >= 100 else ",.1f"),
            _with_range(tc.gpu_hours, iv.get("gpu_hours"), ",.0f"), _money(tc.cost, tc.currency, iv.get("cost"))]


def _si(n: float) -> str:
    """2e9 -> 2B, 5.6e5 -> 565K (three significant digits)."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.0f}"


def _print_plan_header(c: Console, req: PlanRequest) -> None:
    """The plan's first line: model, method, sequence (or the RL setup), tokens, precision, objective."""
    rl, w = req.rl, req.workload
    if rl is not None:
        c.print(_("[bold]{model}[/bold] {algo} ({framework}), {method}, prompt {prompt_len} + response {response_len}, "
                  "{generations} generations x {prompts} prompts, {steps} steps, {engine} util {util:g}, {precision}, "
                  "objective: {objective}").format(
            model=req.model.name, algo=rl.algo, framework=rl.rl_framework or _("trainfit defaults"),
            method=label(METHOD, w.method), prompt_len=rl.prompt_len, response_len=rl.response_len,
            generations=rl.num_generations, prompts=rl.rollout_batch, steps=req.steps,
            engine=rl.rollout_engine, util=rl.rollout_util, precision=w.precision,
            objective=label(OBJECTIVE, req.objective))
                + (_(", spot") if req.spot else ""))
    else:
        c.print(_("[bold]{model}[/bold] {method}, seq {seq_len}, {tokens} tokens, {precision}, objective: {objective}")
                .format(model=req.model.name, method=label(METHOD, w.method), seq_len=w.seq_len,
                        tokens=_si(req.tokens), precision=w.precision, objective=label(OBJECTIVE, req.objective))
                + (_(", spot") if req.spot else "")
                + (_(", target {target}").format(target=req.target) if req.target else "")
                + (_(", framework {framework}").format(framework=req.framework) if req.framework else ""))


def _print_row_notes(c: Console, plans: Sequence[Plan], top: int) -> None:
    """Per shown row: out-of-domain speed, P(OOM), calibration, the price's source and age, warnings."""
    for i, p in enumerate(plans[:top]):
        note = p.out_of_domain_note()
        if p.speed.speed_interval and p.speed.speed_interval.get("out_of_domain"):
            # the note itself says "outside the calibration domain (...)", in the user's language
            c.print(f"[yellow]#{i + 1}[/yellow] " + escape(note or ""))
        p_oom = p.fit.oom_probability
        if p_oom is not None and p_oom >= 0.1:
            c.print("[dim]" + _("#{n} P(OOM) {p} (calibrated on what published runs near their card's limit did: "
                                "ran or OOM)").format(n=i + 1, p=_prob(p_oom)) + "[/dim]")
        if p.speed.calibration:
            c.print("[dim]" + _("#{n} speed ({framework} engine): {calibration}").format(
                n=i + 1, framework=p.speed.framework, calibration=escape(str(p.speed.calibration))) + "[/dim]")
        tc = p.time_cost
        if tc.price_per_hour is not None:
            billing = (_("pay-as-you-go, spot pays {fraction:.0%}").format(fraction=tc.spot_price_fraction)
                       if tc.spot_price_fraction else _("pay-as-you-go"))
            c.print("[dim]" + _("#{n} price: {price:,.2f} {currency} per instance-hour ({billing}), {age}, "
                                "source: {source}").format(
                n=i + 1, price=tc.price_per_hour, currency=tc.currency or "", billing=billing,
                age=escape(_age(tc.price_as_of)), source=escape(str(tc.price_source)))
                    + "[/dim]")  # whole: a cut URL is a broken link
        for wmsg in p.warnings:
            c.print(_("[yellow]#{n} warning:[/yellow] {text}").format(n=i + 1, text=escape(wmsg)))


def print_plan(result: PlanResult, top: int = 10, console: Console | None = None) -> None:
    """``plan``'s tables from the typed result: the ranked plans, the ranking, per-row notes, region prices, the
    rejected instance types."""
    c = console or make_console()
    _print_plan_header(c, result.request)
    plans = result.plans
    data = next((p.data for p in plans if p.data is not None), None)
    if data is not None:
        c.print("[dim]" + _("{summary}; optimizer steps per plan: rows x epochs / its global batch").format(
            summary=escape(data.describe())) + "[/dim]")
    pareto = set(result.pareto)
    tied = set(() if result.ranking is None else result.ranking.ties)
    if plans:
        t = Table(title_justify="left")
        rows = [[f"{i + 1}" + ("*" if i in pareto else "") + ("≈" if i in tied else ""), *_plan_cells(p)]
                for i, p in enumerate(plans[:top])]
        for col, j in (("#", "right"), (_("instance type"), "left"), ("GPU", "left"),
                       (_("nodes×GPUs"), "right"), (_("settings"), "left"), (_("precision"), "left"),
                       ("GiB/GPU", "right"), ("tok/s", "right"), ("MFU", "right"), (_("hours"), "right"),
                       (_("GPU-h"), "right"), (_("cost"), "right")):
            t.add_column(col, justify=j, overflow="ellipsis" if col in ("#", _("nodes×GPUs")) else "fold")
        for r in rows:
            t.add_row(*r)
        c.print(t)
        c.print("[dim]" + _("(p10–p90): 80 % prediction interval from published runs predicted out of sample "
                            "(docs/accuracy.md)")
                + (_("; ≈ tied with #1: their ranges of the ranking figure overlap") if tied & set(range(top)) else "")
                + "[/dim]")
        engines = sorted({p.speed.framework for p in plans[:top] if p.speed.framework})
        if engines:
            c.print("[dim]" + _("speed model engine: {engines} (--framework; default: the --target's engine)").format(
                engines=", ".join(engines)) + "[/dim]")
        if any(i in pareto for i in range(min(top, len(plans)))):
            c.print("[dim]" + _("* on the time-vs-cost Pareto frontier (cost when every plan has a price in one "
                                "currency, else GPU-hours for all)") + "[/dim]")
        _print_ranking(c, result.ranking, plans, top)
        _print_row_notes(c, plans, top)
    else:
        c.print("[red]" + _("no instance type fits these limits") + "[/red]")
    _print_region_prices(c, result.region_prices, top)
    for note in result.notes:
        c.print(_("[yellow]note:[/yellow] {text}").format(text=escape(note)))
    if result.rejected:
        t = Table(title=_("rejected"), title_justify="left")
        t.add_column(_("instance type"))
        t.add_column(_("why"))
        t.add_column(_("fix"))
        groups: dict[tuple[str, str, str], list[str]] = {}
        for r in result.rejected:  # instance types rejected for the same reason with the same fix share one row
            groups.setdefault((r.code, r.reason, r.fix or ""), []).append(r.instance_type)
        for (code, reason, fix), types in groups.items():
            t.add_row(escape(", ".join(types)), escape(f"[{code}] {reason}"), escape(fix))
        c.print(t)


def _print_region_prices(c: Console, region_prices: Sequence[JSONObject], top: int) -> None:
    """``plan --compare-regions``: the shown plans priced in every region with a price, cheapest region first."""
    rows = [r for r in region_prices if r["plan"] < top]
    if not rows:
        return
    t = Table(title=_("the same plans priced per region (list prices; hours do not change; cheapest 3, the plan's "
                      "region and the dearest; --json lists every region)"), title_justify="left")
    for col, j in (("#", "right"), (_("instance type"), "left"), (_("region"), "left"), (_("price/h"), "right"),
                   (_("cost"), "right"), (_("as of"), "left")):
        t.add_column(col, justify=j)
    for r in rows:
        regions = r["regions"]
        if r["same_everywhere"]:
            shown = regions[:1]
        else:
            keep = {0, 1, 2, len(regions) - 1} | {k for k, g in enumerate(regions) if g["region"] == r["plan_region"]}
            shown = [g for k, g in enumerate(regions) if k in keep]
        for k, g in enumerate(shown):
            region = g["region"] + (_(" (same in all {n})").format(n=len(regions)) if r["same_everywhere"] else "")
            if g["region"] == r["plan_region"]:
                region += " (--region)"
            t.add_row(str(r["plan"] + 1) if k == 0 else "", r["instance_type"] if k == 0 else "", region,
                      f"{g['price_per_hour']:,.2f} {g['currency']}", _money(g["cost"], g["currency"], g.get("cost_interval")),
                      g["as_of"])
    c.print(t)
