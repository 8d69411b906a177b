"""``trainfit trace MODEL [options]``: run the real training step under fake tensors and count memory.

torch/transformers/peft are imported inside :func:`run` only (through ``trainfit.trace``).
"""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import model_from_args, print_json
from trainfit._cli.labels import METHOD, PHASE, label
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.estimate.terms import term_label
from trainfit.i18n import _
from trainfit.options import workload_from_values
from trainfit.trace.result import TraceResult
from trainfit.errors import WorkloadError
from trainfit.trace import check_traceable, trace_memory



def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "trace",
        help=_("trace the real HF training step under fake tensors (needs trainfit[trace])"),
        description=(
            _("Build the Hugging Face model from its config on a fake device (no weights, no GPU), run full "
            "training steps (forward, HF loss, backward, optimizer step) and report the peak of allocated "
            "tensor memory of the last step with its breakdown. Needs: pip install 'trainfit[trace]'.")
        ),
    )
    add_options(p, COMMAND_OPTIONS["trace"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    shape = model_from_args(args)
    w = workload_from_values(vars(args))
    if args.steps < 1:
        raise WorkloadError(_("--steps must be >= 1; got {steps}").format(steps=args.steps))
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
        task = prog.add_task(_("importing torch / transformers"), total=None)

        def progress(desc: str, completed: int, total: int) -> None:
            prog.update(task, description=desc, completed=completed, total=total)

        result = trace_memory(shape, w, steps=args.steps, progress=progress)
    _render(result)
    return 0


def _render(r: TraceResult) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    w = r.workload
    title = _("{model}: {method}, seq {seq_len} x mb {micro_batch}, {gc}, {attention}, {precision}, {optimizer}").format(
        model=r.model, method=label(METHOD, w["method"]), seq_len=w["seq_len"], micro_batch=w["micro_batch"],
        gc="GC" if w["grad_ckpt"] else _("no GC"), attention=w["attention"], precision=w["precision"],
        optimizer=w["optimizer"])
    if w["strategy"] == "fsdp" and w["gpus"] > 1:
        title += _(", FSDP2 x{gpus} (rank 0)").format(gpus=w["gpus"])
    t = Table(title=title, title_justify="left")
    t.add_column(_("at the peak"), style="bold")
    t.add_column("GiB", justify="right")
    t.add_column(_("share"), justify="right")
    peak = r.tensor_peak_gib or 1.0
    for k, v in r.breakdown_gib.items():
        t.add_row(term_label(k), f"{v:.2f}", f"{100 * v / peak:.0f}%")
    t.add_row("[bold]" + _("peak allocated tensors") + "[/bold]", f"[bold]{r.tensor_peak_gib:.2f}[/bold]", "",
              end_section=True)
    con.print(t)
    p = r.params
    con.print(_("peak phase: [bold]{phase}[/bold] (step {step} of {steps}); params: {total:,} total, {trainable:,} "
                "trainable, {active:,} active").format(phase=label(PHASE, r.peak_phase), step=r.steps, steps=r.steps,
                                                       total=p["total"], trainable=p["trainable"], active=p["active"]))
    per_tok = r.activation_bytes_per_token_per_layer
    if per_tok is not None:
        con.print(_("activations per decoder layer: {n:,.0f} bytes/token (median over layers)").format(n=per_tok))
    con.print(_("traced in {s:.1f} s; torch {torch}, transformers {transformers}, peft {peft}").format(
        s=r.trace_seconds, torch=r.versions.get("torch"), transformers=r.versions.get("transformers"),
        peft=r.versions.get("peft")))
    for n in r.notes:
        con.print("[dim]" + _("note: {text}").format(text=n) + "[/dim]")
    con.print("[dim]" + _("Allocated tensor bytes only (like torch.cuda.max_memory_allocated): add the CUDA context "
                          "and allocator reserve for nvidia-smi numbers.") + "[/dim]")
