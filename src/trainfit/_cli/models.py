"""``trainfit models``: the bundled registry with exact parameter counts."""

from __future__ import annotations

import argparse

from trainfit._cli.common import add_json_option, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the bundled Qwen3 registry with exact parameter counts",
                       description="List the bundled models (Hugging Face names) with exact parameter counts.")
    add_json_option(p)
    p.set_defaults(func=run)


def rows() -> list[dict]:
    from trainfit.models import get_model, model_names

    out = []
    for name in model_names():
        m = get_model(name)
        out.append({
            "name": name, "hf_id": f"Qwen/{name}", "model_type": m.model_type, "arch": m.arch,
            "layers": m.num_layers, "hidden_size": m.hidden_size, "heads": m.num_heads, "kv_heads": m.num_kv_heads,
            "experts": m.num_experts, "experts_per_token": m.experts_per_token,
            "max_position_embeddings": m.max_position_embeddings, "tie_word_embeddings": m.tie_word_embeddings,
            "params_total": m.total_params, "params_active": m.active_params,
            "params_embedding": m.embedding_params, "largest_tensor": m.largest_tensor_params,
            "source": m.source,
        })
    return out


def run(args: argparse.Namespace) -> int:
    data = rows()
    if args.json:
        print_json(data)
        return 0
    from trainfit._cli.tables import make_console
    from rich.table import Table

    t = Table(title="trainfit models (exact counts from the configs)")
    for col in ("model", "type", "layers", "hidden", "heads q/kv", "experts", "total params", "active params",
                "context"):
        t.add_column(col, justify="right" if col not in ("model", "type") else "left")
    for r in data:
        t.add_row(r["name"], r["model_type"], str(r["layers"]), str(r["hidden_size"]),
                  f"{r['heads']}/{r['kv_heads']}",
                  f"{r['experts']}/top-{r['experts_per_token']}" if r["experts"] else "-",
                  f"{r['params_total']:,}", f"{r['params_active']:,}", f"{r['max_position_embeddings']:,}")
    make_console().print(t)
    return 0
