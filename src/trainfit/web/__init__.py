"""The web page and JSON API of trainfit (``trainfit serve``; the optional extra ``web``).

Everything here parses HTTP and presents: each endpoint calls one function of :mod:`trainfit.service`, the
same the CLI calls, so ``POST /api/memory`` and ``POST /api/plan`` answer exactly what ``trainfit memory --json``
and ``trainfit plan --json`` print. The page (``static/``) is plain HTML/JS with a vendored chart library: it
loads nothing from outside its own origin and works offline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI


def create_app() -> FastAPI:
    """The FastAPI application (imports fastapi: needs ``pip install 'trainfit[web]'``)."""
    from trainfit.web.app import create_app as _create

    return _create()
