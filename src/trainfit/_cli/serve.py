"""``trainfit serve``: the web page and JSON API on a local port (needs the ``web`` extra)."""

from __future__ import annotations

import argparse

from trainfit._cli.common import ident_arg, int_arg
from trainfit.i18n import _
from trainfit.errors import MissingExtraError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help=_("the web page and JSON API (memory, plan, render, check) on http://127.0.0.1:8000"),
        description=_("Serve the trainfit page and its JSON API (OpenAPI docs at /docs). The page works offline. "
                    "Needs the extra: pip install 'trainfit[web]'."))
    p.add_argument("--host", default="127.0.0.1", type=ident_arg("--host", "instance_type"),
                   help=_("address to listen on (default 127.0.0.1, this machine only)"))
    p.add_argument("--port", default=8000, type=int_arg("--port", 1, 65535), help=_("port (default 8000)"))
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   type=ident_arg("--allow-host", "instance_type"),
                   help=_("a host name clients use to reach the server (repeatable; the loopback names and --host are "
                        "always allowed; any other Host header is refused, against DNS rebinding)"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
