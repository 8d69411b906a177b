"""``trainfit serve``: the web page and JSON API on a local port (needs the ``web`` extra)."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help=_("the web page and JSON API (memory, plan, render, check) on http://127.0.0.1:8000"),
        description=_("Serve the trainfit page and its JSON API (OpenAPI docs at /docs). The page works offline. "
                    "Needs the extra: pip install 'trainfit[web]'."))
    add_options(p, COMMAND_OPTIONS["serve"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainfit.errors import MissingExtraError

    try:
        import uvicorn

        from trainfit.web.app import create_app
    except ModuleNotFoundError as e:
        raise MissingExtraError(_("`trainfit serve` needs {name}, which is not installed").format(name=e.name),
                                fix="pip install 'trainfit[web]'") from None
    print(_("trainfit: serving on http://{host}:{port}/ (API docs: /docs); Ctrl-C stops").format(host=args.host,
                                                                                                   port=args.port))
    # keep-alive longer than a busy client waits between requests: a connection closed by the server while the
    # client sends on it is a failed request (seen under 50 clients with the default of 5 s)
    uvicorn.run(create_app(allowed_hosts=[args.host, *args.allow_host]), host=args.host, port=args.port, log_level="warning", timeout_keep_alive=30)
    return 0
