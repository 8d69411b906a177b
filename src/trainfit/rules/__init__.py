"""Platform rules as data (``providers/<provider>/rules.yaml``) and one small, pure evaluator.

The planner and ``trainfit check`` describe a job with :class:`JobContext` (or call
:func:`evaluate_instance` with keywords) and get back :class:`Violation` records, most severe first.
Rules of kind ``fact`` never fire; they carry the verdicts on public claims (``rules_for_claim("C22")``).

Check kinds (``check.kind`` in the YAML):

``max_gpus_per_job {max}``, ``max_vcpu_per_job {max}``, ``requires_vpc``, ``region_in {regions, when_spot}``,
``job_type_in {types, when_spot}``, ``spot_needs_checkpoint``, ``multinode_needs_rdma``, ``regions_match``,
``storage_needs_vpc {storage}``, ``no_vpc``, ``command_pattern {pattern}``, ``custom_image_needs_rdma``,
``pcie_tensor_parallel``, ``fact``.

A check whose input is unknown (None) does not fire, except ``requires_vpc``, which gives an ``info``
reminder, and ``multinode_needs_rdma``, which gives an ``info`` note when the network is unknown.
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, TypedDict

from trainfit.errors import CatalogError, did_you_mean
from trainfit.i18n import _
from trainfit.json_types import YAMLValue

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11+: only for the checker (annotations are not evaluated)

    from trainfit.catalog.instances import Instance

from trainfit.providers.registry import platform_of, provider_specs, registry_version
from trainfit.rules.types import (SEVERITIES, VERDICTS, _SEV_ORDER, JobContext, Rule,  # noqa: F401
                                  Violation)
from trainfit.rules.kinds import _CHECKS  # noqa: E402


# ------------------------------------------------------------------------------------------ loading

_CHECK_PARAMS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required params, optional params)
    "max_gpus_per_job": ({"max"}, set()),
    "max_vcpu_per_job": ({"max"}, set()),
    "requires_vpc": (set(), set()),
    "region_in": ({"regions"}, {"when_spot"}),
    "job_type_in": ({"types"}, {"when_spot"}),
    "spot_needs_checkpoint": (set(), set()),
    "multinode_needs_rdma": (set(), set()),
    "regions_match": (set(), set()),
    "storage_needs_vpc": ({"storage"}, set()),
    "no_vpc": (set(), set()),
    "command_pattern": ({"pattern"}, set()),
    "custom_image_needs_rdma": (set(), set()),
    "pcie_tensor_parallel": (set(), set()),
    "launch_world_size": (set(), {"pattern"}),
    "launch_node_rank": (set(), set()),
    "max_body_bytes": ({"max"}, set()),
    "fact": (set(), set()),
}
_REQUIRED = ("id", "title", "applies_to", "check", "severity", "why", "fix", "source", "verified", "as_of")
_OPTIONAL = ("claims", "verdict", "plan_blocks")


def _optional_fields(raw: dict, w: str, kind: str, problems: list[str]) -> tuple[list, YAMLValue, YAMLValue]:
    """(claims, verdict, plan_blocks) of one raw rule, with every problem appended to ``problems``."""
    verdict = raw.get("verdict")
    if verdict is not None and str(verdict) not in VERDICTS:
        problems.append(f"{w}: verdict {verdict!r} must be one of {', '.join(VERDICTS)}")
    claims = raw.get("claims") or []
    if not isinstance(claims, list):
        problems.append(f"{w}: claims must be a list")
        claims = []
    plan_blocks = raw.get("plan_blocks", False)
    if not isinstance(plan_blocks, bool):
        problems.append(f"{w}: plan_blocks must be yes or no")
    if kind == "fact" and (not claims or verdict is None):
        problems.append(f"{w}: a fact rule needs claims and a verdict")
    return claims, verdict, plan_blocks


def parse_rules(data: YAMLValue, where: str = "rules.yaml") -> tuple[list[Rule], list[str]]:
    """Typed rules and every problem found in ``data`` (the parsed YAML)."""
    problems: list[str] = []
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        return [], [f"{where}: top level must be a mapping with a 'rules:' list"]
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, raw in enumerate(data["rules"]):
        w = f"{where} rules[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{w}: must be a mapping")
            continue
        w = f"{where} rule {raw.get('id', i)!s}"
        bad = False
        for k in _REQUIRED:
            if raw.get(k) in (None, "", []):
                problems.append(f"{w}: {k} is required")
                bad = True
        for k in raw:
            if k not in _REQUIRED + _OPTIONAL:
                problems.append(f"{w}: unknown key {k!r}")
        if bad:
            continue
        rid = str(raw["id"])
        if rid in seen:
            problems.append(f"{w}: duplicate id")
        seen.add(rid)
        sev = str(raw["severity"])
        if sev not in SEVERITIES:
            problems.append(f"{w}: severity {sev!r} must be one of {', '.join(SEVERITIES)}")
        check = raw["check"]
        if not isinstance(check, dict) or "kind" not in check:
            problems.append(f"{w}: check must be a mapping with 'kind'")
            continue
        kind = str(check["kind"])
        params = {k: v for k, v in check.items() if k != "kind"}
        if kind not in _CHECK_PARAMS:
            problems.append(f"{w}: unknown check kind {kind!r} (known: {', '.join(sorted(_CHECK_PARAMS))})")
            continue
        req, opt = _CHECK_PARAMS[kind]
        for p in req - set(params):
            problems.append(f"{w}: check {kind} needs parameter {p!r}")
        for p in set(params) - req - opt:
            problems.append(f"{w}: check {kind} has unknown parameter {p!r}")
        if kind == "command_pattern" and "pattern" in params:
            try:
                re.compile(str(params["pattern"]))
            except re.error as e:
                problems.append(f"{w}: bad pattern: {e}")
        applies = raw["applies_to"]
        if isinstance(applies, str):
            applies = [applies]
        if not isinstance(applies, list) or not all(isinstance(a, str) for a in applies):
            problems.append(f"{w}: applies_to must be a list of names/patterns")
            continue
        verified = raw["verified"]
        if not isinstance(verified, bool):
            problems.append(f"{w}: verified must be yes or no")
        as_of = raw["as_of"]
        try:
            as_of = as_of.isoformat() if isinstance(as_of, _dt.date) else _dt.date.fromisoformat(str(as_of)).isoformat()
        except ValueError:
            problems.append(f"{w}: as_of {as_of!r} is not a YYYY-MM-DD date")
        claims, verdict, plan_blocks = _optional_fields(raw, w, kind, problems)
        rules.append(Rule(id=rid, title=str(raw["title"]), applies_to=tuple(applies), kind=kind, params=params,
                          severity=sev, why=" ".join(str(raw["why"]).split()), fix=" ".join(str(raw["fix"]).split()),
                          source=str(raw["source"]), verified=bool(verified), as_of=str(as_of),
                          claims=tuple(str(c) for c in claims), verdict=None if verdict is None else str(verdict),
                          plan_blocks=plan_blocks is True))
    return rules, problems


def __getattr__(name: str) -> tuple[str, ...]:
    """``PROVIDERS``: the registered providers whose platform rules live in a package folder (``rules.yaml``)."""
    if name == "PROVIDERS":
        return tuple(s.name for s in provider_specs() if s.rules_package)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_rules() -> tuple[Rule, ...]:
    """The platform rules of every registered provider (cached until a provider is registered or removed)."""
    return _load_rules(registry_version())


@lru_cache(maxsize=2)
def _load_rules(_version: int) -> tuple[Rule, ...]:
    """The registered providers' rules. A rules file that does not validate raises :class:`CatalogError`.

    The rules keep their English ``title``/``why``/``fix`` (message ids): the cache holds no language. Findings
    translate them when they are built (``rules/kinds.py``), and :meth:`Rule.shown` gives a rule in the current
    language for display."""
    import yaml

    rules: list[Rule] = []
    problems: list[str] = []
    for spec in provider_specs():
        if spec.rules is not None:
            raw, where = spec.rules(), f"the rules of provider {spec.name}"
        elif spec.rules_package:
            res = resources.files(spec.rules_package).joinpath("rules.yaml")
            if not res.is_file():
                continue
            raw, where = yaml.safe_load(res.read_text(encoding="utf-8")), f"providers/{spec.name}/rules.yaml"
        else:
            continue
        r, p = parse_rules(raw, where=where)
        rules += r
        problems += p
    dup = sorted({r.id for r in rules if sum(1 for q in rules if q.id == r.id) > 1})
    problems += [f"rule id {d} defined twice" for d in dup]
    if problems:
        raise CatalogError(_("bundled platform rules do not validate:") + "\n  " + "\n  ".join(problems),
                           fix=_("this is a bug in trainfit; please report it"))
    return tuple(rules)


load_rules.cache_clear = _load_rules.cache_clear  # type: ignore[attr-defined]


def get_rule(rule_id: str) -> Rule:
    for r in load_rules():
        if r.id == rule_id:
            return r

    sugg = did_you_mean(rule_id, [r.id for r in load_rules()])
    raise CatalogError(_("unknown platform rule '{rule}'").format(rule=rule_id),
                       fix=_("did you mean {names}?").format(names=_(" or ").join(sugg)) if sugg else
                       _("`trainfit catalog rules` lists the platform rules"))


def rules_for_claim(claim_id: str) -> list[Rule]:
    """Rules that answer a claim of shared/reference/claims.md (``C22``...)."""
    return [r for r in load_rules() if claim_id.upper() in (c.upper() for c in r.claims)]


def evaluate(ctx: JobContext, rules: tuple[Rule, ...] | list[Rule] | None = None) -> list[Violation]:
    """Violations of the rules that apply to ``ctx``, errors first, then warnings, then info."""
    out: list[Violation] = []
    names = (ctx.rclass, ctx.platform)
    for rule in (load_rules() if rules is None else rules):
        if not rule.applies(*names):
            continue
        out.extend(_CHECKS[rule.kind](rule, ctx))
    return sorted(out, key=lambda v: _SEV_ORDER.get(v.severity, 9))


class _ContextFields(TypedDict, total=False):
    """The other :class:`JobContext` fields :func:`evaluate_instance` takes as keywords."""

    vpc: bool | None
    job_type: str | None
    workspace_region: str | None
    storage: str | None
    storage_region: str | None
    custom_image: bool | None
    checkpointing: bool | None
    tp: int
    command: str | None
    resource_class: str | None


def evaluate_instance(instance: Instance | str, *, nodes: int = 1, gpus: int | None = None, spot: bool = False,
                      region: str | None = None, platform: str | None = None,
                      **kw: Unpack[_ContextFields]) -> list[Violation]:
    """Shortcut: rules for running on ``nodes`` x ``instance`` (an Instance or an instance type name).

    ``gpus`` is the GPUs per node the job uses (default: all of the instance's). Other keywords are the
    :class:`JobContext` fields (vpc, job_type, workspace_region, storage, storage_region, custom_image,
    checkpointing, tp, command, resource_class).
    """
    if isinstance(instance, str):
        from trainfit.catalog.instances import get_instance

        instance = get_instance(instance, resource_class=kw.get("resource_class"))
    if platform is None:
        rc = kw.get("resource_class") or getattr(instance, "resource_class", "") or ""
        platform = platform_of(rc)
    ctx = JobContext(platform=platform, instance=instance, nodes=nodes, gpus_per_node=gpus, spot=spot,
                     region=region, **kw)
    return evaluate(ctx)


def evaluate_command(command: str, *, platform: str = "pai-dlc") -> list[Violation]:
    """Rules about a launch command line (e.g. ``--nproc_per_node=$WORLD_SIZE`` on DLC)."""
    return [v for v in evaluate(JobContext(platform=platform, command=command))
            if get_rule(v.rule).kind in ("command_pattern", "launch_world_size", "launch_node_rank")]
