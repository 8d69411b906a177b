"""``trainfit trace MODEL [options]``: run the real training step under fake tensors and count memory.

torch/transformers/peft are imported inside :func:`run` only (through ``trainfit.trace``).
"""

from __future__ import annotations

import argparse

from trainfit._cli.common import (add_json_option, add_model_argument, add_workload_options, model_from_args,
                                  print_json, workload_from_args)
from trainfit.estimate.memory import TERM_LABELS



def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "trace",
        help="trace the real HF training step under fake tensors (needs trainfit[trace])",
        description=(
            "Build the Hugging Face model from its config on a fake device (no weights, no GPU), run full "
            "training steps (forward, HF loss, backward, optimizer step) and report the peak of allocated "
            "tensor memory of the last step with its breakdown. Needs: pip install 'trainfit[trace]'."
        ),
    )
    add_model_argument(p)
    add_workload_options(p)
    add_json_option(p)
    p.add_argument("--steps", type=int, default=2, help="training steps to trace; the last is reported (default 2)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainfit.errors import WorkloadError
    from trainfit.trace import check_traceable, trace_memory

    shape = model_from_args(args)
    w = workload_from_args(args)
    if args.steps < 1:
        raise WorkloadError(f"--steps must be >= 1; got {args.steps}")
    check_traceable(shape, w)  # fail fast, before importing torch
    if args.json:
        result = trace_memory(shape, w, steps=args.steps)
        print_json(result.to_dict())
        return 0

    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as prog:
        task = prog.add_task("importing torch / transformers", total=None)

        def progress(desc: str, completed: int, total: int) -> None:
            prog.update(task, description=desc, completed=completed, total=total)

        result = trace_memory(shape, w, steps=args.steps, progress=progress)
    _render(result)
    return 0


def _render(r) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console
    from rich.table import Table

    con = Console()
    w = r.workload
    title = (f"{r.model}: {w['method']}, seq {w['seq_len']} x mb {w['micro_batch']}, "
             f"{'GC' if w['grad_ckpt'] else 'no GC'}, {w['attention']}, {w['precision']}, {w['optimizer']}")
    if w["strategy"] == "fsdp" and w["gpus"] > 1:
        title += f", FSDP2 x{w['gpus']} (rank 0)"
    t = Table(title=title, title_justify="left")
    t.add_column("at the peak", style="bold")
    t.add_column("GiB", justify="right")
    t.add_column("share", justify="right")
    peak = r.tensor_peak_gib or 1.0
    for k, v in r.breakdown_gib.items():
        t.add_row(TERM_LABELS.get(k, k), f"{v:.2f}", f"{100 * v / peak:.0f}%")
    t.add_row("[bold]peak allocated tensors[/bold]", f"[bold]{r.tensor_peak_gib:.2f}[/bold]", "", end_section=True)
    con.print(t)
    p = r.params
    con.print(f"peak phase: [bold]{r.peak_phase}[/bold] (step {r.steps} of {r.steps}); "
              f"params: {p['total']:,} total, {p['trainable']:,} trainable, {p['active']:,} active")
    per_tok = r.activation_bytes_per_token_per_layer
    if per_tok is not None:
        con.print(f"activations per decoder layer: {per_tok:,.0f} bytes/token (median over layers)")
    con.print(f"traced in {r.trace_seconds:.1f} s; torch {r.versions.get('torch')}, "
              f"transformers {r.versions.get('transformers')}, peft {r.versions.get('peft')}")
    for n in r.notes:
        con.print(f"[dim]note: {n}[/dim]")
    con.print("[dim]Allocated tensor bytes only (like torch.cuda.max_memory_allocated): add the CUDA context "
              "and allocator reserve for nvidia-smi numbers.[/dim]")
