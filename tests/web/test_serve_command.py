"""`trainfit serve` is registered without making the core import the web stack."""

import subprocess
import sys


def test_core_commands_do_not_import_fastapi():
    code = ("import sys; from trainfit.cli import build_parser; build_parser(); "
            "bad = [m for m in ('fastapi', 'uvicorn', 'starlette', 'pydantic') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_serve_is_listed():
    from trainfit.cli import COMMANDS, build_parser

    assert "serve" in COMMANDS
    args = build_parser().parse_args(["serve", "--port", "8123"])
    assert (args.host, args.port) == ("127.0.0.1", 8123)
