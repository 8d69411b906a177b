"""Rich tables for the CLI (rendering only: every number comes from the core's result dicts)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

TERM_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer states (+fp32 master)",
    "activations": "activations (saved for backward)",
    "logits_loss": "logits + loss (fp32)",
    "temporaries": "temporaries (step, buckets, gathers)",
    "overhead": "overhead (CUDA context, allocator)",
}


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
    for k, label in TERM_LABELS.items():
        v = out["breakdown_gib"].get(k, 0.0)
        t.add_row(label, f"{v:,.2f}", f"{100 * v / total:.0f}%")
    t.add_section()
    t.add_row("tensor peak (max_memory_allocated)", f"{out['tensor_peak_gib']:,.2f}", "")
    t.add_row("[bold]reserved (nvidia-smi)[/bold]", f"[bold]{out['reserved_gib']:,.2f}[/bold]", "")
    c.print(t)
    c.print(f"peak phase: [bold]{out['peak_phase']}[/bold]   "
            f"params: total {p['total']:,}  trainable {p['trainable']:,}  active {p['active']:,}   "
            f"host RAM/node: {out['host_ram_gib']:,.0f} GiB")
    if out.get("gpu_mem_gib") is not None:
        name = out.get("gpu") or "GPU"
        if out["fits"]:
            c.print(f"[green]fits[/green] on {name} ({out['gpu_mem_gib']:g} GiB): headroom "
                    f"{out['headroom_gib']:.2f} GiB")
        else:
            c.print(f"[red]does not fit[/red] on {name} ({out['gpu_mem_gib']:g} GiB): needs "
                    f"{out['reserved_gib']:.1f} GiB/GPU > {out['gpu_mem_gib']:g}")
        c.print(f"largest micro-batch at seq {wl['seq_len']}: {out['max_micro_batch']}   "
                f"longest seq at micro-batch {wl['micro_batch']}: {out['max_seq_len']:,}")
        for s in out.get("suggestions", []):
            c.print(f"  try [bold]{s['change']}[/bold]: {s['reserved_gib']:.1f} GiB ({s['why']})")
    for a in out.get("assumptions", []):
        c.print(f"[dim]- {a}[/dim]")
