"""The service layer's adapters for the web API (``trainfit.web``): option mappings from a request body into the
core service functions of :mod:`trainfit.service`, the uploaded job file, the JSON the CLI prints, the model and
option tables the page shows, and the field and fix an error points at. The web layer only parses HTTP and
presents: every decision is here or in :mod:`trainfit.service`.

Every name here is also importable from :mod:`trainfit.service` (re-exported there). The core functions are
imported inside each function: :mod:`trainfit.service` imports this module at its end.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, TypeVar

from trainfit import i18n, inputs
from trainfit.errors import InputError, PlanFileError, TrainfitError
from trainfit.i18n import _
from trainfit.json_types import JSON, JSONLike

if TYPE_CHECKING:
    from trainfit.catalog.gpus import GPU
    from trainfit.catalog.instances import Instance
    from trainfit.check import CheckResult
    from trainfit.launch import RenderResult
    from trainfit.models import ModelShape
    from trainfit.options import Option
    from trainfit.plan.types import PlanResult
    from trainfit.service import MemoryReport, RLMemoryReport
    from trainfit.service_commands import Where


def json_ready(obj: JSONLike) -> JSON:
    """The JSON the CLI prints: NaN and infinity become null (as ``--json`` does), tuples become lists."""
    import math

    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    return obj


PLAN_EXTRA = ("model", "config")

#: The request field (and query parameter) that names the language of a request's messages.
LANG_FIELD = "lang"


def preferred_language(header: str | None) -> str | None:
    """The first language of an ``Accept-Language`` header that trainfit speaks, by its q weight (``zh-CN,zh;q=0.9,
    en;q=0.8`` -> zh; ``fr-FR, en;q=0.5`` -> en); None when it names none (or says ``*`` only)."""
    best: tuple[float, int, str] | None = None
    for i, part in enumerate((header or "")[:1000].split(",")):
        tag, _sep, params = part.strip().partition(";")
        tag = tag.strip().lower()
        if not tag or tag == "*":
            continue
        q = 1.0
        for p in params.split(";"):
            k, _eq, v = p.strip().partition("=")
            if k.strip().lower() == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
        head = tag.replace("_", "-").split("-")[0]
        if q <= 0 or head not in i18n.LANGUAGES:
            continue
        if best is None or (q, -i) > (best[0], best[1]):
            best = (q, -i, head)
    return best[2] if best else None


def request_language(lang: JSON = None, accept_language: str | None = None) -> str:
    """The language of one web request's messages: its ``lang`` (field or query parameter: en or zh, as ``--lang``;
    anything else is an InputError on the field ``lang``), else its ``Accept-Language`` header, else the server's
    (:func:`trainfit.i18n.current`: ``TRAINFIT_LANG``, ``LANG``...)."""
    if lang is not None and lang != "":
        if not isinstance(lang, str):
            err = InputError(_("lang: must be en or zh; got {value!r}").format(value=str(lang)[:40]),
                             fix=_("send lang=en or lang=zh"))
            err.field = LANG_FIELD  # type: ignore[attr-defined]
            raise err
        try:
            return i18n.parse_lang(lang)
        except InputError as err:
            err.field = LANG_FIELD  # type: ignore[attr-defined]
            raise
    return preferred_language(accept_language) or i18n.current()


@contextmanager
def request_context(lang: JSON = None, accept_language: str | None = None) -> Iterator[str]:
    """``with request_context(lang, accept_language): ...`` runs one web request in its language
    (:func:`request_language`): every message made inside (reasons, fixes, warnings, rejections, errors) is in it;
    ``code`` fields stay English. An error raised inside keeps the fix :func:`error_fix` gives in that language."""
    with i18n.language(request_language(lang, accept_language)) as chosen:
        try:
            yield chosen
        except TrainfitError as e:
            e.fix = error_fix(e)
            raise


_R = TypeVar("_R")


def _in_request_language(fn: Callable[[Mapping[str, JSON]], _R]) -> Callable[[Mapping[str, JSON]], _R]:
    """Run a request function (its first argument the request's field mapping) in the language its ``lang`` field
    names (the field is taken out before the options are parsed); without one, in the current language (which the
    web layer sets from the query parameter or ``Accept-Language`` with :func:`request_context`)."""

    @functools.wraps(fn)
    def run(values: Mapping[str, JSON]) -> _R:
        if not isinstance(values, Mapping) or LANG_FIELD not in values:
            return fn(values)
        rest = {k: v for k, v in values.items() if k != LANG_FIELD}
        with request_context(values.get(LANG_FIELD)):
            return fn(rest)

    return run


@_in_request_language
def plan_from_options(values: Mapping[str, JSON]) -> PlanResult:
    """``plan`` from a mapping of option values (``POST /api/plan``), with the CLI's semantics: workload layout
    options that are given are pinned, the others searched; plan options take their defaults; the RL options
    (``rl``, ``steps``, ``rollout_engine``...) plan an RL run as ``plan --rl`` does."""
    from trainfit.options import PLAN_OPTIONS, RL_OPTIONS, WORKLOAD_OPTIONS, parse_options
    from trainfit.service_commands import plan_command

    # the RL options too (``plan --rl grpo --steps N ...``), as the CLI's plan takes them
    parsed = parse_options(values, WORKLOAD_OPTIONS + PLAN_OPTIONS + RL_OPTIONS, allowed_extra=PLAN_EXTRA,
                           defaults=False)
    for o in PLAN_OPTIONS:
        if parsed.get(o.name) is None:
            parsed[o.name] = o.default
    return plan_command(_model(values), parsed)


def _opt_str(values: Mapping[str, JSON], key: str) -> str | None:
    v = values.get(key)
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        err = InputError(_("{key}: must be a string; got {value!r}").format(key=key, value=str(v)[:40]),
                         fix=_("e.g. Qwen3-8B"))
        err.field = key  # type: ignore[attr-defined]
        raise err
    return v


def _config_value(values: Mapping[str, JSON]) -> Mapping[str, JSON] | None:
    """A pasted config.json: a JSON object, or its text (parsed through the input gate). A path is not accepted
    from the web: the server's files are not the user's."""
    from trainfit.models.hf_config import MAX_CONFIG_BYTES

    cfg = values.get("config")
    if cfg is None or cfg == "":
        return None
    if isinstance(cfg, str):
        if len(cfg) > MAX_CONFIG_BYTES:
            raise inputs._bad("config", cfg[:20], _("is over the {limit:,}-byte limit").format(limit=MAX_CONFIG_BYTES))
        try:
            cfg = inputs.loads_json(cfg, what="config.json")
        except InputError as e:
            e.field = "config"  # type: ignore[attr-defined]
            raise
    if not isinstance(cfg, Mapping):
        raise inputs._bad("config", cfg, _("must be the JSON object of a config.json"),
                          _('paste the whole file, e.g. {{"model_type": "qwen3", ...}}').format())
    return cfg


def _model(values: Mapping[str, JSON]) -> ModelShape:
    """The model of a request: ``model`` (a registry name) or ``config`` (pasted, never a server path)."""
    from trainfit.service import resolve_model

    return resolve_model(_opt_str(values, "model"), config=_config_value(values))


def _where(values: Mapping[str, JSON]) -> Where:
    """``gpu``, ``instance_type``, ``tokens`` and ``spot`` of a render request ("" = not given)."""
    from trainfit.service_commands import Where

    gpu, it, tokens = values.get("gpu"), values.get("instance_type"), values.get("tokens")
    return Where(tokens=None if tokens in (None, "") else float(inputs.as_count("tokens", tokens)),
                 gpu=None if gpu in (None, "") else inputs.as_ident("gpu", gpu, "gpu"),
                 instance_type=None if it in (None, "") else inputs.as_ident("instance_type", it, "instance_type"),
                 spot=inputs.as_bool("spot", values.get("spot", False)))


@_in_request_language
def memory_from_request(values: Mapping[str, JSON]) -> MemoryReport | RLMemoryReport:
    """:func:`~trainfit.service_commands.memory_from_options` where ``config`` is pasted text or an object, never a
    server path."""
    from trainfit.service_commands import memory_from_options

    vals = dict(values)
    vals["model"] = _opt_str(values, "model")
    vals["config"] = _config_value(values)
    return memory_from_options(vals)


#: RenderOptions fields accepted by :func:`render_from_options` (the ``render`` CLI's job options).
RENDER_OPTION_FIELDS = ("region", "workspace_id", "resource_id", "image", "dataset", "job_name", "checkpoint_uri",
                        "vpc", "learning_rate", "epochs", "save_steps", "spot_discount_limit")
RENDER_EXTRA = ("model", "config", "gpu", "instance_type", "tokens", "spot", "plan", "pick", "target")


@_in_request_language
def render_from_options(values: Mapping[str, JSON]) -> RenderResult:
    """``render`` from a mapping (``POST /api/render``): a ``plan`` (one plan of ``plan --json``, or the whole
    document with ``pick``), or the model and workload options with ``gpu`` / ``instance_type`` (and ``tokens``,
    ``spot``) as ``trainfit render MODEL ...``; job options as RenderOptions fields; ``target`` (default all)."""
    from trainfit.launch import RenderOptions
    from trainfit.options import parse_options
    from trainfit.plan.types import plans_from_document
    from trainfit.service import render_plan
    from trainfit.service_commands import plan_to_render

    target = values.get("target") or None  # None: the plan's target (plan --target), else all
    if isinstance(target, (list, tuple)):
        target = ",".join(str(t) for t in target)
    if target is not None and (not isinstance(target, str) or len(target) > 500):
        raise inputs._bad("target", target, _("must be a comma-separated list of targets"),
                          _("e.g. all or deepspeed,dlc"))
    ro = {k: values[k] for k in RENDER_OPTION_FIELDS if values.get(k) is not None}
    if "vpc" in ro and not (isinstance(ro["vpc"], Mapping) and all(isinstance(v, str) for v in ro["vpc"].values())):
        raise inputs._bad("vpc", ro["vpc"], _("must be an object of strings"),
                          _('e.g. {{"VpcId": "vpc-x", "SwitchId": "vsw-x", "SecurityGroupId": "sg-x"}}').format())
    if "vpc" in ro:
        ro["vpc"] = dict(ro["vpc"])
    options = RenderOptions(**ro)
    doc = values.get("plan")
    if doc is not None:
        inputs.check_depth(doc, what="plan", error=PlanFileError)
        plans = plans_from_document(doc, where=_("plan"))
        pick = inputs.as_int("pick", values.get("pick", 1), lo=1, hi=len(plans))
        plan = plans[pick - 1]
    else:
        wl_vals = parse_options(values, allowed_extra=RENDER_EXTRA + RENDER_OPTION_FIELDS)
        model = _model(values)
        plan = plan_to_render(lambda: model, wl_vals, lambda: _where(values), region=options.region, target=target)
    return render_plan(plan, options, target)


def rendered_files(result: RenderResult) -> dict[str, str]:
    """File name -> text of what ``render --out DIR`` writes (the job files and README.md with its manifest line)."""
    from trainfit.launch import readme
    from trainfit.writes import with_manifest

    return with_manifest({**result.files, "README.md": readme(result)})


#: Largest uploaded job file (the same limit as ``trainfit check`` reading a file).
MAX_CHECK_UPLOAD_BYTES = 2 * 2**20


def check_upload(filename: str, data: bytes, *, region: str | None = None, gpu: str | None = None,
                 instance_type: str | None = None, lang: str | None = None) -> CheckResult:
    """:func:`~trainfit.service.check_file` on uploaded bytes: written to a private temporary folder under their base name (the
    file kind is told by name and content), checked, and reported under ``filename``. ``lang``: the language of its
    messages (None: the current one, see :func:`request_context`)."""
    if lang is not None:
        with request_context(lang):
            return check_upload(filename, data, region=region, gpu=gpu, instance_type=instance_type)
    import dataclasses
    import os
    import tempfile

    from trainfit.errors import CheckInputError
    from trainfit.service import check_file

    base = os.path.basename(str(filename or "").replace("\\", "/")) or "job"
    base = inputs.as_ident("file", base, "job_name")
    if len(data) > MAX_CHECK_UPLOAD_BYTES:
        raise CheckInputError(_("{file} is {size:,} bytes, over the {limit:,}-byte limit").format(
                                  file=base, size=len(data), limit=MAX_CHECK_UPLOAD_BYTES),
                              fix=_("upload the job file itself"))
    with tempfile.TemporaryDirectory(prefix="trainfit-check-") as d:
        p = Path(d) / base
        tmp = str(p)

        def clean(text: str) -> str:
            return text.replace(tmp, base).replace(d, ".")

        p.write_bytes(data)
        try:
            res = check_file(p, region=region or None, gpu=gpu or None, instance_type=instance_type or None)
        except TrainfitError as e:  # report the upload's name, never the server's temporary path
            e.message = clean(e.message)
            e.fix = clean(e.fix) if e.fix else e.fix
            e.args = (e.message,)
            if getattr(e, "field", None) is None and e.code == "bad-check-input":
                e.field = "file"  # type: ignore[attr-defined]
            raise

    return dataclasses.replace(
        res, path=base, notes=tuple(clean(n) for n in res.notes),
        violations=tuple(dataclasses.replace(v, message=clean(v.message), fix=clean(v.fix)) for v in res.violations))


def model_rows() -> list[dict[str, JSON]]:
    """The bundled registry as ``trainfit models --json`` prints it."""
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


def option_specs() -> dict[str, list[dict[str, JSON]]]:
    """The option table (name, CLI flag, group, default, choices, help) for forms and docs."""
    from trainfit.options import PLAN_OPTIONS, RL_OPTIONS, WORKLOAD_OPTIONS

    def spec(o: Option) -> dict[str, JSON]:
        return {"name": o.name, "flag": o.cli_flag, "group": o.group, "default": json_ready(o.default),
                "choices": None if o.choices is None else list(o.choice_values or ()),
                "help": o.filled(i18n.translate(o.help)) if o.help else o.help}

    return {"workload": [spec(o) for o in WORKLOAD_OPTIONS], "plan": [spec(o) for o in PLAN_OPTIONS],
            "rl": [spec(o) for o in RL_OPTIONS]}


#: The request field an error is about, by error code (input-gate errors carry their own ``field``).
ERROR_FIELDS = {"unknown-model": "model", "bad-model-config": "config", "unknown-gpu": "gpu",
                "bad-plan-file": "plan", "bad-check-input": "file"}


def error_field(err: Exception) -> str | None:
    """The field to point at for ``err`` (a web form highlights it)."""
    return getattr(err, "field", None) or ERROR_FIELDS.get(getattr(err, "code", ""))


def error_fix(err: Exception) -> str | None:
    """The fix to show for ``err``: its own, else the option table's help of the field at fault (what the value
    must be), so a web form always says how to correct a field."""
    fix = getattr(err, "fix", None)
    if fix:
        return fix
    field = error_field(err)
    if field:
        from trainfit.options import PLAN_OPTIONS, WORKLOAD_OPTIONS

        for o in WORKLOAD_OPTIONS + PLAN_OPTIONS:
            if o.name == field and o.help:
                return f"{o.name}: {o.filled(i18n.translate(o.help))}"
        return _("correct {field} (the API docs at /docs list each field)").format(field=field)
    return None


__all__ = ["json_ready", "PLAN_EXTRA", "LANG_FIELD", "request_language", "preferred_language", "request_context", "plan_from_options", "memory_from_request", "RENDER_OPTION_FIELDS", "RENDER_EXTRA", "render_from_options", "rendered_files", "MAX_CHECK_UPLOAD_BYTES", "check_upload", "model_rows", "option_specs", "ERROR_FIELDS", "error_field", "error_fix"]


@dataclass(frozen=True, kw_only=True)
class Catalogs:
    gpus: tuple[GPU, ...] = field(default=())
    instances: tuple[Instance, ...] = field(default=())

    def to_dict(self) -> dict[str, JSON]:
        """What ``trainfit catalog show gpus --json`` and ``... instances --json`` print, together."""
        return {"gpus": [g.to_dict() for g in self.gpus], "instances": [i.to_dict() for i in self.instances]}


def catalogs() -> Catalogs:
    from trainfit.catalog import list_gpus, list_instances

    return Catalogs(gpus=tuple(list_gpus()), instances=tuple(list_instances()))
