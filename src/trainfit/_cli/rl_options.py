"""The ``memory --rl`` output: ``print_rl_memory(out)`` prints the per-phase table.

The RL options (``--rl grpo|ppo|dpo`` and the rollout settings) are :data:`trainfit.options.RL_OPTIONS`; the logic
is in :func:`trainfit.service.rl_memory_report`.
"""

from __future__ import annotations

from rich.markup import escape

from trainfit._cli.labels import METHOD, PHASE, VERDICT_SHORT, label
from trainfit.i18n import N_, _, translate

PHASE_LABELS = {"rollout": N_("rollout (engine + trainer residual)"), "train": N_("train (policy update + ref/critic)"),
                "sync": N_("weight sync (woken engine + bucket)")}


def print_rl_memory(out: dict) -> None:
    from trainfit._cli.tables import _headroom_range, make_console
    from rich.table import Table

    c = make_console()
    rl = out["rl"]
    cfg = rl["config"]
    wl = out["workload"]
    title = _("{model}: {algo} ({framework}), {method}, prompt {prompt_len} + response {response_len}, "
              "{generations} generations, {engine} tp {tp} util {util:g}, {placement}, {gpus} GPU(s) {strategy}").format(
        model=out["model"], algo=cfg["algo"], framework=cfg["rl_framework"] or _("trainfit defaults"),
        method=label(METHOD, wl["method"]), prompt_len=cfg["prompt_len"], response_len=cfg["response_len"],
        generations=cfg["num_generations"], engine=cfg["rollout_engine"], tp=cfg["rollout_tp"],
        util=cfg["rollout_util"], placement=_("colocated") if cfg["colocate"] else _("separate engine GPUs"),
        gpus=wl["gpus"], strategy=wl["strategy"])
    t = Table(title=title, title_justify="left")
    t.add_column(_("phase"))
    t.add_column(_("GiB / GPU"), justify="right")
    t.add_column(_("made of"))
    for p, phase in PHASE_LABELS.items():
        v = rl["phases_gib"][p]
        terms = ", ".join(f"{k} {x:.1f}" for k, x in rl["terms_gib"].get(p, {}).items() if x)
        mark = "[bold]" + _(" (binding)") + "[/bold]" if p == rl["binding_phase"] else ""
        t.add_row(translate(phase) + mark, f"{v:,.2f}", terms)
    c.print(t)
    if rl["kv_pool_gib"] is not None:
        linear = (_(" + {per_seq:,} B/seq linear-attention state").format(per_seq=rl["kv_fixed_bytes_per_seq"])
                  if rl["kv_fixed_bytes_per_seq"] else "")
        c.print(_("KV pool {pool:.2f} GiB/GPU = {seqs} concurrent sequences of {tokens} tokens ({per_token:,} "
                  "B/token/GPU{linear})").format(pool=rl["kv_pool_gib"], seqs=rl["max_concurrent_seqs"],
                                                 tokens=cfg["prompt_len"] + cfg["response_len"],
                                                 per_token=rl["kv_bytes_per_token"], linear=linear)
                + "   " + _("host RAM/node: {gib:,.0f} GiB").format(gib=rl["host_ram_gib"]))
    name = out.get("gpu") or "GPU"
    colour = {"fits": "green", "tight": "yellow", "unknown": "yellow"}.get(rl["verdict"], "red")
    from trainfit.estimate.uncertainty import format_probability, format_range

    prng, p_oom = rl.get("peak_interval_gib"), (rl.get("fit") or {}).get("oom_probability")
    c.print(_("[{colour}]{verdict}[/{colour}] on {name} ({mem:g} GiB), binding phase {phase}: {peak:.1f} GiB/GPU").format(
        colour=colour, verdict=label(VERDICT_SHORT, rl["verdict"]), name=name, mem=out["gpu_mem_gib"],
        phase=label(PHASE, rl["binding_phase"]), peak=rl["peak_gib"])
            + (_(" (p10–p90 {lo:.1f}–{hi:.1f}, fit corpus)").format(lo=prng["p10"], hi=prng["p90"]) if prng else "")
            + _(", headroom {headroom:.2f} GiB{range}").format(headroom=rl["headroom_gib"], range=_headroom_range(out))
            + ("" if p_oom is None else ", P(OOM) {p}".format(p=format_probability(p_oom))))
    for reason in rl["fit"].get("reasons", []):
        c.print(f"  {escape(reason)}")
    for sug in rl.get("suggestions", []):
        c.print(_("  try [bold]{change}[/bold]: {why}").format(change=escape(sug["change"]), why=escape(sug["why"])))
    if "speed" in rl:
        s = rl["speed"]
        siv = s.get("intervals") or {}  # p10-p90 of each figure, from the service (rl_report)

        def _sr(k: str) -> str:
            return format_range(siv.get(k))

        c.print(_("step {step:,.0f} s{range}: rollout {rollout:,.0f} s ({tok_s:,.0f} tok/s{tok_s_range}, {engines} "
                  "engine(s) x batch {batch}), update {update:,.0f} s, log-probs {logprob:,.0f} s").format(
            step=s["step_seconds"], range=_sr("step_seconds"), rollout=s["rollout_seconds"],
            tok_s=s["rollout_tokens_per_s"], tok_s_range=_sr("rollout_tokens_per_s"), engines=s["engines"],
            batch=s["decode_batch"], update=s["update_seconds"], logprob=s["logprob_seconds"])
                + (_(", critic {s:,.0f} s").format(s=s["critic_seconds"]) if s["critic_seconds"] else "")
                + _(", sync {s:,.1f} s").format(s=s["sync_seconds"])
                + (_(" (nodes: {node})").format(node=s["node"]) if s.get("node") else ""))
        for w in s.get("warnings", []):
            c.print(_("[yellow]warning:[/yellow] {text}").format(text=escape(w)))
    if "time" in rl:
        tiv = rl["time"].get("intervals") or {}

        def _r(k: str) -> str:
            return format_range(tiv.get(k), ",.1f")

        c.print(_("{steps} steps: {hours:,.1f} h{hours_range}, {gpu_hours:,.1f} GPU-hours{gpu_hours_range}").format(
            steps=rl["time"]["steps"], hours=rl["time"]["hours"], hours_range=_r("hours"),
            gpu_hours=rl["time"]["gpu_hours"], gpu_hours_range=_r("gpu_hours"))
                + (_(" (p10–p90; no published RL run calibrates it: the policy update's interval widened)")
                   if tiv else ""))
    for w in rl["warnings"]:
        c.print(_("[yellow]warning:[/yellow] {text}").format(text=escape(w)))
