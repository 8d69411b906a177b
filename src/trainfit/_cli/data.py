"""``trainfit data FILE... --tokenizer DIR``: tokens, lengths, truncation, packing and padding of a dataset, counted
with the model's own tokenizer and chat template; ``--json`` writes the stats file ``plan --dataset`` reads."""

from __future__ import annotations

import argparse
import sys

from trainfit._cli.arguments import add_options
from trainfit._cli.common import print_json
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "data", help=_("count a dataset's tokens with the model's tokenizer: lengths, truncation, packing, padding"),
        description=_("Read JSONL / JSON / Parquet datasets in the formats ms-swift and LLaMA-Factory accept (messages, "
                    "sharegpt, alpaca), apply the model's chat template and count every sample's tokens (the "
                    "`data` extra). `--json > stats.json` writes the file `plan --dataset` reads."))
    add_options(p, COMMAND_OPTIONS["data"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainfit.dataset.formats import parse_columns
    from trainfit.dataset.scan import ScanRequest, scan
    from trainfit.dataset.template import load_counter
    from trainfit.errors import DatasetError

    try:
        columns = parse_columns(args.columns)
    except ValueError as e:
        raise DatasetError(str(e), fix=_("keys: messages, conversations, instruction, input, output, query, "
                                         "response, system, history")) from None
    counter = load_counter(args.tokenizer, use_template=not args.no_template, chat_template=args.chat_template)
    req = ScanRequest(files=tuple(args.files), counter=counter, seq_len=args.seq_len, fmt=args.format,
                      columns=columns, on_error=args.on_error, sample=args.sample)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    if show:
        stats = _with_progress(req, scan)
    else:
        stats = scan(req)
    if args.json:
        print_json(stats.to_dict())
        return 0
    _print(stats)
    return 0


def _with_progress(req, scan):
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from trainfit.dataset import reader

    total = sum(reader.file_size(f) for f in req.files)
    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(_("counting tokens"), total=total)
        return scan(req, progress=lambda n: bar.advance(task, n))


def _print(s) -> None:
    from rich.table import Table

    from trainfit._cli.tables import make_console

    c = make_console()
    est = _(" (estimated from a sample)") if s.sampled else ""
    c.print(_("{files}: {samples:,} samples counted of {rows:,} rows, {skipped:,} skipped").format(
        files=", ".join(s.files), samples=s.samples, rows=s.rows, skipped=s.skipped) + est)
    c.print(_("tokenizer {tokenizer}; template: {template}").format(
        tokenizer=s.tokenizer, template=s.template or _("none (plain text)")))
    t = Table(title=_("tokens per sample (cut-off {seq_len:,})").format(seq_len=s.seq_len))
    for col in (_("mean"), _("std"), _("min"), *s.percentiles, _("max"), _("loss mean"), f"> {s.seq_len:,}"):
        t.add_column(col, justify="right")
    t.add_row(f"{s.mean:,.0f}", f"{s.std:,.0f}", f"{s.min_len:,}", *(f"{v:,}" for v in s.percentiles.values()),
              f"{s.max_len:,}", f"{s.loss_mean:,.0f}", f"{s.truncated_share:.1%}")
    c.print(t)
    ci = _(" (95% interval {lo:,.0f} - {hi:,.0f})").format(lo=s.tokens_ci95[0], hi=s.tokens_ci95[1]) \
        if s.tokens_ci95 else ""
    c.print(_("tokens per epoch: {total:,} uncut{ci}, {cut:,} cut to {seq_len:,}; loss tokens {loss:,}").format(
        total=s.tokens_total, ci=ci, cut=s.tokens_after_cut, seq_len=s.seq_len, loss=s.loss_tokens_total))
    c.print(_("packing to {seq_len:,}: {n:,} sequences, {filled:.1%} filled").format(
        seq_len=s.seq_len, n=s.packed_sequences, filled=s.packing_efficiency))
    c.print(_("padding without packing (share of processed tokens): {shares}").format(
        shares=", ".join(_("micro-batch {mb}: {waste:.1%}").format(mb=mb, waste=w) for mb, w in s.padding_waste.items())))
    h = Table(title=_("length histogram"))
    h.add_column(_("tokens <="), justify="right")
    h.add_column(_("samples"), justify="right")
    h.add_column("", justify="left")
    peak = max(n for _edge, n in s.histogram) or 1
    for edge, n in s.histogram:
        h.add_row(f"{edge:,}", f"{n:,}", "#" * round(40 * n / peak))
    c.print(h)
    for e in s.errors[:5]:
        c.print(_("skipped {file} line {line}: {why}").format(file=e["file"], line=e["line"], why=e["why"]))
