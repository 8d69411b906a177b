"""RL options (``--rl grpo|ppo|dpo`` and the rollout settings) and their ``memory`` output.

The options are defined once in :data:`trainfit.options.RL_OPTIONS`; ``add_rl_options(parser)`` attaches them
to a command; ``rl_config_from_args(args)`` builds the :class:`~trainfit.rl.RLConfig` (framework defaults fill
what the user did not set);
``print_rl_memory(out)`` prints the per-phase table. The logic is in :func:`trainfit.service.rl_memory_report`.
"""

from __future__ import annotations

import argparse

from trainfit.options import RL_OPTIONS, add_options, rl_config_from_values
from trainfit.rl.config import RLConfig


def add_rl_options(p: argparse.ArgumentParser) -> None:
    """The RL options of :data:`trainfit.options.RL_OPTIONS` (the table the web API validates with too)."""
    add_options(p, RL_OPTIONS)


def rl_config_from_args(args: argparse.Namespace) -> RLConfig | None:
    """The RLConfig of the command line, or None without ``--rl``."""
    return rl_config_from_values(vars(args))


PHASE_LABELS = {"rollout": "rollout (engine + trainer residual)", "train": "train (policy update + ref/critic)",
                "sync": "weight sync (woken engine + bucket)"}


def print_rl_memory(out: dict) -> None:
    from trainfit._cli.tables import make_console
    from rich.table import Table

    c = make_console()
    rl = out["rl"]
    cfg = rl["config"]
    wl = out["workload"]
    title = (f"{out['model']}: {cfg['algo']} ({cfg['rl_framework'] or 'trainfit defaults'}), {wl['method']}, "
             f"prompt {cfg['prompt_len']} + response {cfg['response_len']}, {cfg['num_generations']} generations, "
             f"{cfg['rollout_engine']} tp {cfg['rollout_tp']} util {cfg['rollout_util']:g}, "
             f"{'colocated' if cfg['colocate'] else 'separate engine GPUs'}, {wl['gpus']} GPU(s) {wl['strategy']}")
    t = Table(title=title, title_justify="left")
    t.add_column("phase")
    t.add_column("GiB / GPU", justify="right")
    t.add_column("made of")
    for p, label in PHASE_LABELS.items():
        v = rl["phases_gib"][p]
        terms = ", ".join(f"{k} {x:.1f}" for k, x in rl["terms_gib"].get(p, {}).items() if x)
        mark = " [bold](binding)[/bold]" if p == rl["binding_phase"] else ""
        t.add_row(label + mark, f"{v:,.2f}", terms)
    c.print(t)
    if rl["kv_pool_gib"] is not None:
        c.print(f"KV pool {rl['kv_pool_gib']:.2f} GiB/GPU = {rl['max_concurrent_seqs']} concurrent sequences of "
                f"{cfg['prompt_len'] + cfg['response_len']} tokens ({rl['kv_bytes_per_token']:,} B/token/GPU"
                + (f" + {rl['kv_fixed_bytes_per_seq']:,} B/seq linear-attention state" if rl["kv_fixed_bytes_per_seq"]
                   else "") + f")   host RAM/node: {rl['host_ram_gib']:,.0f} GiB")
    name = out.get("gpu") or "GPU"
    colour = {"fits": "green", "tight": "yellow", "unknown": "yellow"}.get(rl["verdict"], "red")
    from trainfit.estimate.uncertainty import format_probability

    prng, p_oom = rl.get("peak_interval_gib"), (rl.get("fit") or {}).get("oom_probability")
    c.print(f"[{colour}]{rl['verdict']}[/{colour}] on {name} ({out['gpu_mem_gib']:g} GiB), binding phase "
            f"{rl['binding_phase']}: {rl['peak_gib']:.1f} GiB/GPU"
            + (f" (p10–p90 {prng['p10']:.1f}–{prng['p90']:.1f}, fit corpus)" if prng else "")
            + f", headroom {rl['headroom_gib']:.2f} GiB"
            + ("" if p_oom is None else f", P(OOM) {format_probability(p_oom)}"))
    for reason in rl["fit"].get("reasons", []):
        c.print(f"  {reason}")
    if "speed" in rl:
        s = rl["speed"]
        siv = s.get("interval")  # step time moves against the speed: its p10 is the speed's p90
        srng = f" ({s['step_seconds'] / siv['p90']:,.0f}–{s['step_seconds'] / siv['p10']:,.0f})" if siv else ""
        c.print(f"step {s['step_seconds']:,.0f} s{srng}: rollout {s['rollout_seconds']:,.0f} s "
                f"({s['rollout_tokens_per_s']:,.0f} tok/s, {s['engines']} engine(s) x batch {s['decode_batch']}), "
                f"update {s['update_seconds']:,.0f} s, log-probs {s['logprob_seconds']:,.0f} s"
                + (f", critic {s['critic_seconds']:,.0f} s" if s["critic_seconds"] else "")
                + f", sync {s['sync_seconds']:,.1f} s"
                + (f" (nodes: {s['node']})" if s.get("node") else ""))
        for w in s.get("warnings", []):
            c.print(f"[yellow]warning:[/yellow] {w}")
    if "time" in rl:
        tiv = rl["time"].get("intervals") or {}

        def _r(k: str) -> str:
            return f" ({tiv[k]['p10']:,.1f}–{tiv[k]['p90']:,.1f})" if tiv.get(k) else ""

        c.print(f"{rl['time']['steps']} steps: {rl['time']['hours']:,.1f} h{_r('hours')}, "
                f"{rl['time']['gpu_hours']:,.1f} GPU-hours{_r('gpu_hours')}"
                + (" (p10–p90; no published RL run calibrates it: the policy update's interval widened)"
                   if tiv else ""))
    for w in rl["warnings"]:
        c.print(f"[yellow]warning:[/yellow] {w}")
