"""Rich tables for the CLI (rendering only: every number comes from the core's result dicts)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainfit.estimate.memory import TERM_LABELS

VERDICT_LABEL = {"fits": "fits", "tight": "tight (inside the safety margin)", "oom": "does not fit (OOM)",
                 "unknown": "unknown (host RAM)"}


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
    title = (f"{out['model']}: {wl['method']}, seq {wl['seq_len']}, micro-batch {wl['micro_batch']}, "
             f"{wl['precision']}, {wl['optimizer']}, GC {'on' if wl['grad_ckpt'] else 'off'}, "
             f"{wl['gpus']} GPU(s) {wl['strategy']}")
    t = Table(title=title, title_justify="left")
    t.add_column("term")
    t.add_column("GiB / GPU", justify="right")
    t.add_column("share", justify="right")
    total = out["reserved_gib"] or 1.0
    loss_label = {"half": "logits + loss (16-bit)", "fused": "logits + loss (chunked, fused)"}.get(wl.get("loss"))
    for k, label in TERM_LABELS.items():
        if k == "logits_loss" and loss_label:  # the default label says fp32: not what --loss half/fused keep
            label = loss_label
        v = out["breakdown_gib"].get(k, 0.0)
        t.add_row(label, f"{v:,.2f}", f"{100 * v / total:.0f}%")
    t.add_section()
    t.add_row("tensor peak (max_memory_allocated)", f"{out['tensor_peak_gib']:,.2f}", "")
    t.add_row("[bold]reserved (nvidia-smi)[/bold]", f"[bold]{out['reserved_gib']:,.2f}[/bold]", "")
    rng = out.get("reserved_interval_gib")
    if rng:
        t.add_row("reserved, p10–p90 (fit corpus)", f"{rng['p10']:,.1f}–{rng['p90']:,.1f}", "")
    c.print(t)
    c.print(f"peak phase: [bold]{out['peak_phase']}[/bold]   "
            f"params: total {p['total']:,}  trainable {p['trainable']:,}  active {p['active']:,}   "
            f"host RAM/node: {out['host_ram_gib']:,.0f} GiB")
    if out.get("gpu_mem_gib") is not None:
        name = out.get("gpu") or "GPU"
        colour = {"fits": "green", "tight": "yellow", "oom": "red", "unknown": "yellow"}[out["verdict"]]
        p_oom = (out.get("fit") or {}).get("oom_probability")
        fit = out.get("fit") or {}
        if out["verdict"] == "oom" and fit.get("host_verdict") == "oom" and fit.get("gpu_verdict") != "oom":
            # host RAM is what does not fit: the GPU's headroom is not the story
            c.print(f"[{colour}]does not fit in host RAM[/{colour}]: {fit['host_ram_need_gib']:,.0f} GiB needed per "
                    f"node > {fit['host_ram_gib']:,.0f} GiB; on the GPU ({name}, {out['gpu_mem_gib']:.4g} GiB usable) "
                    f"it {fit['gpu_verdict']}, GPU headroom {out['headroom_gib']:.2f} GiB"
                    + ("" if p_oom is None else f", P(GPU OOM) {_prob(p_oom)}"))
        else:
            c.print(f"[{colour}]{VERDICT_LABEL[out['verdict']]}[/{colour}] on {name} ({out['gpu_mem_gib']:.4g} GiB "
                    f"usable): headroom {out['headroom_gib']:.2f} GiB"
                    + ("" if p_oom is None else f", P(OOM) {_prob(p_oom)} (from what published runs near their "
                                                 "card's limit did; the GiB range above is their reserved memory, "
                                                 "which includes cache the allocator gives back before an OOM)"))
        for reason in out["fit"]["reasons"]:
            c.print(f"  - {escape(reason)}")
        for w in out.get("warnings", []):
            c.print(f"[yellow]warning:[/yellow] {escape(w)}")
        c.print(f"largest micro-batch at seq {wl['seq_len']}: {out['max_micro_batch']}   "
                f"longest seq at micro-batch {wl['micro_batch']}: {out['max_seq_len']:,}")
        for s in out.get("suggestions", []):
            rng = s.get("reserved_interval_gib")
            c.print(f"  try [bold]{s['change']}[/bold]: {s['reserved_gib']:.1f} GiB"
                    + (f" ({rng['p10']:.1f}–{rng['p90']:.1f})" if rng else "") + f" ({s['why']})")
    for a in out.get("assumptions", []):
        c.print(f"[dim]- {escape(a)}[/dim]")


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


def interval_lines(iv: dict | None) -> list[str]:
    """The speed interval's provenance for a footnote, flagged when outside the calibration domain."""
    if not iv:
        return []
    return [("outside the calibration domain: " if iv.get("out_of_domain") else "") + str(iv.get("note") or "")]


def _prob(p: float) -> str:
    from trainfit.estimate.uncertainty import format_probability

    return format_probability(p)


def _age(as_of: str | None) -> str:
    """'as of 2026-12-01 (2 days old)' from an ISO date."""
    import datetime as dt

    if not as_of:
        return "date unknown"
    try:
        days = (dt.date.today() - dt.date.fromisoformat(str(as_of)[:10])).days
    except ValueError:
        return f"as of {as_of}"
    return f"as of {as_of} ({days} days old)"


def _print_ranking(c: Console, r: dict | None, plans: list, top: int) -> None:
    """The table's footer: the ranking basis and why, why #1 is #1 (ties), and which rows lack a price."""
    if not r:
        return
    c.print(f"[bold]{escape(r['summary'])}[/bold]")
    if r.get("why_first"):
        c.print(escape(r["why_first"]))
    unpriced = [i for i in r.get("unpriced", []) if i < top]
    if unpriced:
        shown = min(top, len(plans))
        which = ("no row shown has a price" if len(unpriced) == shown else
                 "no price for " + ", ".join(f"#{i + 1}" for i in unpriced))
        providers = sorted({plans[i]["provider"] for i in unpriced})
        how = r.get("price_fix_by_provider") or {}
        c.print(f"[yellow]{which}[/yellow] (cost '-'). To price them: "
                + escape("; ".join(f"{p}: {how.get(p, '')}" for p in providers)))


def _pct_range(rng: dict | None) -> dict | None:
    return None if rng is None else {k: 100 * v for k, v in rng.items()}


def _plan_cells(p: dict) -> list[str]:
    """The cells of one plan row after the rank: where, layout, settings, memory, speed, time and cost, each figure
    with its p10–p90 range."""
    s = p["settings"]
    st = s["strategy"] + (f"+off:{s['offload']}" if s["offload"] != "none" else "")
    if s["ep"] > 1:
        st += f" ep{s['ep']}"
    if s["tp"] > 1:
        st += f" tp{s['tp']}"
    for k in ("pp", "cp"):  # a pinned 256-GPU TP4/PP8/EP8 layout showed as "ep8 tp4"
        if s.get(k, 1) > 1:
            st += f" {k}{s[k]}"
    if s.get("ulysses", 1) > 1:
        st += f" sp{s['ulysses']}"
    st += f" mb{s['micro_batch']}" + (f"×ga{s['grad_accum']}" if s["grad_accum"] > 1 else "")
    st += f" gb{s['global_batch']}" if "global_batch" in s else ""
    st += " GC" if s["grad_ckpt"] else ""
    if p.get("rl"):
        r = p["rl"]
        if r.get("rollout_tp") and r.get("algo") != "dpo":  # the engine settings plan --rl searched
            st += f" rollout-tp{r['rollout_tp']}" + (" trainer-off" if r.get("trainer_offload") else "")
        st += f" {r['binding_phase']}-bound" + (f", KV {r['max_concurrent_seqs']} seqs"
                                                 if r.get("max_concurrent_seqs") is not None else "")
    iv = p.get("intervals") or {}
    mem = iv.get("per_gpu_gib")
    return [p["instance_type"], p["gpu"], f"{p['nodes']}×{p['gpus_per_node']}", st, s.get("precision_mode", s["precision"]),
            f"{p['per_gpu_gib']:.1f}/{p['gpu_mem_gib']:g}" + (f"\n({mem['p10']:.0f}–{mem['p90']:.0f})" if mem else ""),
            _with_range(p["tokens_per_s"], iv.get("tokens_per_s"), ",.0f" if p["tokens_per_s"] < 10_000 else "short"),
            "-" if p["mfu"] is None else _with_range(100 * p["mfu"], _pct_range(iv.get("mfu")), ".0f", "%"),
            _with_range(p["hours"], iv.get("hours"), ",.0f" if p["hours"] >= 100 else ",.1f"),
            _with_range(p["gpu_hours"], iv.get("gpu_hours"), ",.0f"), _money(p["cost"], p["currency"], iv.get("cost"))]


def _si(n: float) -> str:
    """2e9 -> 2B, 5.6e5 -> 565K (three significant digits)."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.0f}"


def print_plan(out: dict, top: int = 10, console: Console | None = None) -> None:
    c = console or make_console()
    w = out["workload"]
    rl = w.get("rl")
    if rl:
        c.print(f"[bold]{w['model']}[/bold] {rl['algo']} ({rl.get('rl_framework') or 'trainfit defaults'}), "
                f"{w['method']}, prompt {rl['prompt_len']} + response {rl['response_len']}, "
                f"{rl['num_generations']} generations x {rl['rollout_batch']} prompts, {w.get('steps')} steps, "
                f"{rl['rollout_engine']} util {rl['rollout_util']:g}, {w['precision']}, objective: {w['objective']}"
                + (", spot" if w.get("spot") else ""))
    else:
        c.print(f"[bold]{w['model']}[/bold] {w['method']}, seq {w['seq_len']}, {_si(w['tokens'])} tokens, "
                f"{w['precision']}, objective: {w['objective']}" + (", spot" if w.get("spot") else "")
                + (f", target {w['target']}" if w.get("target") else "")
                + (f", framework {w['framework']}" if w.get("framework") else ""))
    plans = out["plans"]
    data = next((p["data"] for p in plans if p.get("data")), None)
    if data:
        c.print(f"[dim]{escape(data['summary'])}; optimizer steps per plan: rows x epochs / its global batch[/dim]")
    pareto = set(out.get("pareto", []))
    tied = set(out.get("ties", []))
    if plans:
        t = Table(title_justify="left")
        rows = [[f"{i + 1}" + ("*" if i in pareto else "") + ("≈" if i in tied else ""), *_plan_cells(p)]
                for i, p in enumerate(plans[:top])]
        for col, j in (("#", "right"), ("instance type", "left"), ("GPU", "left"),
                                      ("nodes×GPUs", "right"), ("settings", "left"), ("precision", "left"),
                                      ("GiB/GPU", "right"), ("tok/s", "right"), ("MFU", "right"), ("hours", "right"),
                                      ("GPU-h", "right"), ("cost", "right")):
            t.add_column(col, justify=j, overflow="ellipsis" if col in ("#", "nodes×GPUs") else "fold")
        for r in rows:
            t.add_row(*r)
        c.print(t)
        c.print("[dim](p10–p90): 80 % prediction interval from published runs predicted out of sample "
                "(docs/accuracy.md)" + ("; ≈ tied with #1: their ranges of the ranking figure overlap"
                                        if tied & set(range(top)) else "")
                + "[/dim]")
        engines = sorted({p["framework"] for p in plans[:top] if p.get("framework")})
        if engines:
            c.print(f"[dim]speed model engine: {', '.join(engines)} (--framework; default: the --target's engine)"
                    "[/dim]")
        if any(i in pareto for i in range(min(top, len(plans)))):
            c.print("[dim]* on the time-vs-cost Pareto frontier (cost when every plan has a price in one currency, "
                    "else GPU-hours for all)[/dim]")
        _print_ranking(c, out.get("ranking"), plans, top)
        for i, p in enumerate(plans[:top]):
            siv = p.get("speed_interval")
            if siv and siv.get("out_of_domain"):
                note = str(siv.get("note") or "").removeprefix("outside the calibration domain").lstrip(" :")
                c.print(f"[yellow]#{i + 1} outside the calibration domain:[/yellow] {escape(note)}")
            if p.get("oom_probability") is not None and p["oom_probability"] >= 0.1:
                c.print(f"[dim]#{i + 1} P(OOM) {_prob(p['oom_probability'])} (calibrated on what published runs "
                        "near their card's limit did: ran or OOM)[/dim]")
            if p.get("calibration"):
                c.print(f"[dim]#{i + 1} speed ({p['framework']} engine): {p['calibration']}[/dim]")
            if p.get("price_per_hour") is not None:
                c.print(f"[dim]#{i + 1} price: {p['price_per_hour']:,.2f} {p.get('currency') or ''} per instance-hour "
                        f"(pay-as-you-go{', spot pays ' + format(p['spot_price_fraction'], '.0%') if p.get('spot_price_fraction') else ''}"
                        f"), {escape(_age(p.get('price_as_of')))}, source: {escape(str(p.get('price_source')))}[/dim]")  # whole: a cut URL is a broken link
            for wmsg in p.get("warnings", []):
                c.print(f"[yellow]#{i + 1} warning:[/yellow] {escape(wmsg)}")
    else:
        c.print("[red]no instance type fits these limits[/red]")
    _print_region_prices(c, out, top)
    for note in out.get("notes", []):
        c.print(f"[yellow]note:[/yellow] {escape(note)}")
    if out["rejected"]:
        t = Table(title="rejected", title_justify="left")
        t.add_column("instance type")
        t.add_column("why")
        t.add_column("fix")
        groups: dict[tuple[str, str, str], list[str]] = {}
        for r in out["rejected"]:  # instance types rejected for the same reason with the same fix share one row
            groups.setdefault((r["code"], r["reason"], r.get("fix") or ""), []).append(r["instance_type"])
        for (code, reason, fix), types in groups.items():
            t.add_row(escape(", ".join(types)), escape(f"[{code}] {reason}"), escape(fix))
        c.print(t)


def _print_region_prices(c: Console, out: dict, top: int) -> None:
    """``plan --compare-regions``: the shown plans priced in every region with a price, cheapest region first."""
    rows = [r for r in out.get("region_prices", []) if r["plan"] < top]
    if not rows:
        return
    t = Table(title="the same plans priced per region (list prices; hours do not change; cheapest 3, the plan's "
                    "region and the dearest; --json lists every region)", title_justify="left")
    for col, j in (("#", "right"), ("instance type", "left"), ("region", "left"), ("price/h", "right"),
                   ("cost", "right"), ("as of", "left")):
        t.add_column(col, justify=j)
    for r in rows:
        regions = r["regions"]
        if r["same_everywhere"]:
            shown = regions[:1]
        else:
            keep = {0, 1, 2, len(regions) - 1} | {k for k, g in enumerate(regions) if g["region"] == r["plan_region"]}
            shown = [g for k, g in enumerate(regions) if k in keep]
        for k, g in enumerate(shown):
            region = g["region"] + (f" (same in all {len(regions)})" if r["same_everywhere"] else "")
            if g["region"] == r["plan_region"]:
                region += " (--region)"
            t.add_row(str(r["plan"] + 1) if k == 0 else "", r["instance_type"] if k == 0 else "", region,
                      f"{g['price_per_hour']:,.2f} {g['currency']}", _money(g["cost"], g["currency"]), g["as_of"])
    c.print(t)
