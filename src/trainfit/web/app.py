"""The FastAPI application: JSON endpoints over :mod:`trainfit.service` and the static page.

No logic of its own: each endpoint validates JSON types (pydantic), hands the fields to one service function and
returns its dict as the CLI's ``--json`` would print it. Every :class:`~trainfit.errors.TrainfitError` becomes a
422 carrying the code, the message, the fix and (for input-gate errors) the field.

Language: every request is answered in the language it asks for, the ``lang`` query parameter (``?lang=zh``, what
the page's 中文 switch sends with every call), else the ``Accept-Language`` header, else the server's environment
(:mod:`trainfit.i18n`); ``code`` fields stay English. ``GET /api/labels?lang=zh`` gives the page's own labels from
the same catalog, ``GET /api/terms?lang=zh`` the memory terms' (with their units and colours).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Awaitable, Callable, Mapping

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

from trainfit import __version__, i18n, service
from trainfit.errors import InputError, TrainfitError
from trainfit.i18n import N_, _
from trainfit.json_types import JSON, JSONLike
from trainfit.web.schemas import (CatalogResponse, CheckResponse, ErrorResponse, MemoryRequest, MemoryResponse,
                                  PlanRequest, PlanResponse, RenderRequest)
from trainfit.web.labels import labels as page_labels, terms as page_terms

STATIC = Path(__file__).parent / "static"

#: Nothing but this origin: the page works offline and cannot leak a request elsewhere.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
#: Largest request body: a plan document (service.MAX_PLAN_BYTES) with room for JSON around it.
MAX_BODY_BYTES = service.MAX_PLAN_BYTES + 2 * 2**20
CSP_DOCS = CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'")
ERRORS: dict[int | str, dict[str, type[BaseModel] | str]] = {422: {"model": ErrorResponse, "description": "refused, with the fix"}}


def _json(obj: JSONLike, status: int = 200) -> Response:
    body = json.dumps(service.json_ready(obj), ensure_ascii=False, allow_nan=False)
    return Response(body, status_code=status, media_type="application/json")


def _error(code: str, message: str, fix: str | None, field: str | None) -> Response:
    return _json({"error": {"code": code, "message": message, "fix": fix, "field": field}}, 422)


def _json_type(v: JSON) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(v), "number")


def _no_surrogates(value: JSONLike, field: str | None) -> None:
    """Refuse text that is not Unicode (a lone surrogate such as ``"\\ud800"`` in a JSON string): a 422 naming
    the field, not a 500 where the text is first encoded."""
    stack = [(value, field)]
    while stack:
        v, f = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                err = InputError(_("{field}: holds a lone surrogate escape (such as \\ud800), which is not Unicode "
                                   "text").format(field=f or _("a field")), fix=_("send UTF-8 text"))
                err.field = f  # type: ignore[attr-defined]
                raise err from None
        elif isinstance(v, dict):
            stack.extend((x, f or str(k)) for k, x in v.items())
            stack.extend((k, f) for k in v if isinstance(k, str))
        elif isinstance(v, (list, tuple)):
            stack.extend((x, f) for x in v)


def _body(req: BaseModel) -> dict[str, JSON]:
    """The fields the client sent (unset ones are left out, so the service applies the CLI's defaults)."""
    body = req.model_dump(exclude_unset=True)
    for k, v in body.items():
        _no_surrogates(v, k)
    return body


#: Host names a browser may use to reach a server bound to the loopback interface, and ``testserver``, the Host of
#: Starlette's in-process TestClient (never a name a DNS-rebinding page can make a browser send to this machine).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]", "testserver"})
_ABS_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^\s/'\"]+/)+([^\s/'\"]*)")


def _scrub_paths(text: str | None) -> str | None:
    """A message without the server's absolute paths (``/home/u/.config/trainfit/overlay.yaml`` ->
    ``.../overlay.yaml``): a 4xx never tells a client where the server keeps its files."""
    return _ABS_PATH.sub(r".../\1", text) if text else text


def _host_name(host_header: str) -> str:
    h = host_header.strip().lower()
    if h.startswith("["):
        return h[: h.find("]") + 1] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def create_app(allowed_hosts: tuple[str, ...] | list[str] | None = None) -> FastAPI:
    """``allowed_hosts``: the Host header values (names, no port) the server answers besides the loopback names
    (``trainfit serve --host NAME`` adds its own); any other Host gets 421, so a DNS-rebinding page cannot
    read the API. A request that changes anything (POST) from another origin (``Origin`` or
    ``Sec-Fetch-Site: cross-site``) gets 403."""
    import inspect

    limit = {"max_body_size": MAX_BODY_BYTES} if "max_body_size" in inspect.signature(FastAPI).parameters else {}
    app = FastAPI(title="trainfit", version=__version__, docs_url=None, redoc_url=None, **limit,
                  description="Will a training job fit, how fast, what it costs, and its job files: the "
                              "`trainfit` CLI as a JSON API. /api/memory and /api/plan answer exactly what "
                              "`trainfit memory --json` and `trainfit plan --json` print.")
    _add_error_handlers(app)
    _add_header_middleware(app, LOOPBACK_HOSTS | {_host_name(h) for h in (allowed_hosts or ())})
    app.add_middleware(RequestLanguage)  # outermost: the refusals above are in the request's language too
    _add_job_routes(app)
    _add_reference_routes(app)
    _add_page_routes(app)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """TrainfitError and request validation errors become 422 with code, message, fix and field."""

    @app.exception_handler(TrainfitError)
    async def _trainfit_error(request: Request, err: TrainfitError) -> Response:
        return _error(err.code, _scrub_paths(err.message), _scrub_paths(service.error_fix(err)),
                      service.error_field(err))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, err: RequestValidationError) -> Response:
        errors = list(err.errors()) or [{}]
        first = errors[0]
        loc = [str(x) for x in first.get("loc", ()) if x != "body"]
        field = loc[0] if loc else None
        msg = _validation_message(first)
        same = [e for e in errors if [str(x) for x in e.get("loc", ()) if x != "body"][:1] == loc[:1]]
        if field and len(same) > 1:  # a union of JSON types: say which types, not each member's complaint
            msg = _("must be a number, a string or true/false, not a JSON {type}").format(
                type=_json_type(first.get("input")))
        what = _("{field}: {problem}").format(field=field, problem=msg) if field else msg
        return _error(InputError.code, what, _("send a JSON object with the fields listed at /docs"), field)


#: pydantic's error types the API's JSON validation raises, as a sentence in the catalog (pydantic's own ``msg``,
#: English only, for any other).
_VALIDATION = {
    "missing": N_("is required"),
    "string_type": N_("must be a string"),
    "bool_type": N_("must be true or false"),
    "int_type": N_("must be a whole number"),
    "float_type": N_("must be a number"),
    "dict_type": N_("must be a JSON object"),
    "list_type": N_("must be a JSON array"),
    "model_attributes_type": N_("must be a JSON object"),
    "model_type": N_("must be a JSON object"),
    "json_invalid": N_("is not valid JSON"),
}


def _validation_message(error: Mapping[str, object]) -> str:
    """One validation error of the request as a sentence in the request's language."""
    known = _VALIDATION.get(str(error.get("type", "")))
    if known is not None:
        return i18n.translate(known)
    return str(error.get("msg") or _("invalid request"))


def _refusal(status: int, message: str, fix: str) -> Response:
    return _json({"error": {"code": "refused", "message": message, "fix": fix, "field": None}}, status)


def _cross_origin(request: Request) -> bool:
    """A state-changing request sent by a page of another origin (a form or fetch from elsewhere)."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return False
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in ("same-origin", "none"):
        return True
    origin = request.headers.get("origin")
    if origin is None:
        return False  # not a browser (curl, scripts): no ambient credentials to abuse
    if origin == "null":
        return True
    from urllib.parse import urlsplit

    return urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower()


def _add_header_middleware(app: FastAPI, hosts: frozenset[str] | set[str] = LOOPBACK_HOSTS) -> None:
    """The Host and Origin checks (421 / 403), the body-size limit (413) and the security headers of every
    response."""

    @app.middleware("http")
    async def _headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        size = request.headers.get("content-length", "")
        if _host_name(request.headers.get("host", "")) not in hosts:
            resp = _refusal(421, _("this server answers only requests addressed to its own host name"),
                            _("open the page at http://127.0.0.1:PORT/, or start `trainfit serve --allow-host NAME`"))
        elif _cross_origin(request):
            resp = _refusal(403, _("cross-origin request refused"), _("use the page this server serves"))
        elif size.isdecimal() and int(size) > MAX_BODY_BYTES:
            resp = _json({"error": {"code": InputError.code, "message": _(
                "the request body is {size:,} bytes, over the {limit:,}-byte limit").format(
                size=int(size), limit=MAX_BODY_BYTES), "fix": _("send the job file or plan itself"),
                "field": None}}, 413)
        else:
            resp = await call_next(request)
        # Swagger UI (/docs) starts itself with an inline script; everything else runs under the strict policy
        resp.headers.setdefault("Content-Security-Policy",
                                CSP_DOCS if request.url.path == "/docs" else CSP)
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")
        return resp


class RequestLanguage:
    """ASGI middleware: the request's language (``?lang=`` query, else ``Accept-Language``) for everything the
    handler says, set in :mod:`trainfit.i18n`'s context variable around the call (so concurrent requests in
    different languages do not mix). A ``lang`` that is neither en nor zh is a 422 with the fix on /api/ paths (the
    page itself still loads)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        from urllib.parse import parse_qs

        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        asked = (query.get("lang") or [""])[-1].strip() or None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:  # the service layer's one rule: lang, else Accept-Language, else the server's own language
            lang = service.request_language(asked, headers.get("accept-language"))
        except InputError as err:
            if str(scope.get("path", "")).startswith("/api/"):
                await _error(err.code, err.message, err.fix, "lang")(scope, receive, send)
                return
            lang = None  # the page (/?lang=fr) still loads, in the server's language
        with i18n.language(lang):
            await self.app(scope, receive, send)


def _zip_job(files: dict[str, str]) -> bytes:
    """The rendered job files as a zip under ``trainfit-job/`` (fixed timestamps; scripts executable)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            info = zipfile.ZipInfo(f"trainfit-job/{name}", date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
    return buf.getvalue()


def _add_job_routes(app: FastAPI) -> None:
    """/api/memory, /api/plan, /api/render and /api/check: one service call each."""

    @app.post("/api/memory", response_model=MemoryResponse, responses=ERRORS, tags=["api"],
              summary="per-GPU memory and the fit verdict (= trainfit memory --json)")
    def memory(req: MemoryRequest) -> Response:  # type: ignore[valid-type]
        return _json(service.memory_from_request(_body(req)).to_dict())

    @app.post("/api/plan", response_model=PlanResponse, responses=ERRORS, tags=["api"],
              summary="ranked plans, rejections and the cost-time frontier (= trainfit plan --json)")
    def plan(req: PlanRequest) -> Response:  # type: ignore[valid-type]
        return _json(service.plan_from_options(_body(req)).to_dict())

    @app.post("/api/render", responses={**ERRORS, 200: {"content": {"application/zip": {}},
                                                         "description": "a zip of the job files and README.md"}},
              response_class=Response, tags=["api"], summary="job files as a zip (= trainfit render --out DIR)")
    def render(req: RenderRequest) -> Response:  # type: ignore[valid-type]
        result = service.render_from_options(_body(req))
        return Response(_zip_job(service.rendered_files(result)), media_type="application/zip",
                        headers={"Content-Disposition": 'attachment; filename="trainfit-job.zip"'})

    @app.post("/api/check", response_model=CheckResponse, responses=ERRORS, tags=["api"],
              summary="lint one uploaded job file (= trainfit check FILE --json)")
    async def check(file: UploadFile = File(..., description="the job file (DLC JSON, launch script, YAML...)"),
                    region: str | None = Form(None), gpu: str | None = Form(None),
                    instance_type: str | None = Form(None)) -> Response:
        for k, v in (("region", region), ("gpu", gpu), ("instance_type", instance_type), ("file", file.filename)):
            _no_surrogates(v, k)
        data = await file.read(service.MAX_CHECK_UPLOAD_BYTES + 1)
        res = service.check_upload(file.filename or "job", data, region=region, gpu=gpu,
                                   instance_type=instance_type)
        return _json(res.to_dict())


def _add_reference_routes(app: FastAPI) -> None:
    """/api/models, /api/catalog and /api/options: what the page's forms offer; /api/labels and /api/terms: its words."""

    @app.get("/api/models", tags=["api"], summary="the bundled models (= trainfit models --json)")
    def models() -> Response:
        return _json(service.model_rows())

    @app.get("/api/catalog", response_model=CatalogResponse, tags=["api"], summary="GPU and instance catalogs")
    def catalog() -> Response:
        return _json(service.catalogs().to_dict())

    @app.get("/api/options", tags=["api"], summary="the option table the CLI and this API share")
    def options() -> Response:
        return _json(service.option_specs())

    @app.get("/api/labels", tags=["api"], summary="the page's labels in the request's language (?lang=en|zh)")
    def labels() -> Response:
        return _json(page_labels(i18n.current()))

    @app.get("/api/terms", tags=["api"], summary="the memory terms' labels (request's language), units and colours")
    def terms() -> Response:
        return _json(page_terms(i18n.current()))


def _add_page_routes(app: FastAPI) -> None:
    """The page, the vendored Swagger UI at /docs and the static files."""

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        # the vendored Swagger UI: FastAPI's default loads it from a CDN, and the site must work offline
        return get_swagger_ui_html(openapi_url="/openapi.json", title="trainfit API",
                                   swagger_js_url="/static/vendor/swagger-ui/swagger-ui-bundle.js",
                                   swagger_css_url="/static/vendor/swagger-ui/swagger-ui.css",
                                   swagger_favicon_url="data:,")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
