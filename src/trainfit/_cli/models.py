"""``trainfit models``: the bundled registry with exact parameter counts."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import print_json
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help=_("list the bundled Qwen3 registry with exact parameter counts"),
                       description=_("List the bundled models (Hugging Face names) with exact parameter counts."))
    add_options(p, COMMAND_OPTIONS["models"])
    p.set_defaults(func=run)


def rows() -> list[dict]:
    from trainfit.service import model_rows

    return model_rows()


def run(args: argparse.Namespace) -> int:
    data = rows()
    if args.json:
        print_json(data)
        return 0
    from trainfit._cli.tables import make_console
    from rich.table import Table

    t = Table(title=_("trainfit models (exact counts from the configs)"))
    for i, col in enumerate((_("model"), _("type"), _("layers"), _("hidden"), _("heads q/kv"), _("experts"),
                             _("total params"), _("active params"), _("context"))):
        t.add_column(col, justify="right" if i > 1 else "left")
    for r in data:
        t.add_row(r["name"], r["model_type"], str(r["layers"]), str(r["hidden_size"]),
                  f"{r['heads']}/{r['kv_heads']}",
                  f"{r['experts']}/top-{r['experts_per_token']}" if r["experts"] else "-",
                  f"{r['params_total']:,}", f"{r['params_active']:,}", f"{r['max_position_embeddings']:,}")
    make_console().print(t)
    return 0
