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
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

from trainfit.errors import CatalogError

SEVERITIES = ("error", "warning", "info")
_SEV_ORDER = {s: i for i, s in enumerate(SEVERITIES)}
#: Provider folders whose ``rules.yaml`` is loaded (adding a provider = a folder + catalog rows + rules).
PROVIDERS = ("alibaba", "tencent", "generic")
VERDICTS = ("true", "false", "partly", "unverified")


@dataclass(frozen=True, kw_only=True)
class Rule:
    id: str
    title: str
    applies_to: tuple[str, ...]
    """fnmatch patterns over resource classes / platforms (``pai-lingjun``, ``pai-*``, ``*``)."""
    kind: str
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    severity: str
    why: str
    fix: str
    source: str
    verified: bool
    as_of: str
    claims: tuple[str, ...] = ()
    verdict: str | None = None

    def applies(self, *names: str | None) -> bool:
        return _applies(self.applies_to, names)


@lru_cache(maxsize=1024)
def _applies(patterns: tuple[str, ...], names: tuple[str | None, ...]) -> bool:
    return any(n and fnmatchcase(n, p) for p in patterns for n in names)


@dataclass(frozen=True, kw_only=True)
class Violation:
    rule: str
    """Rule id."""
    severity: str
    message: str
    fix: str
    why: str = ""
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """What the evaluator knows about a job. None = unknown (the related checks stay quiet)."""

    platform: str = "pai-dlc"
    """pai-dlc | tencent-tione | generic (matched against ``applies_to`` together with resource_class)."""
    resource_class: str | None = None
    """pai-public | pai-quota | pai-lingjun | ...; defaults to the instance's."""
    instance: Any = None
    """A :class:`trainfit.catalog.instances.Instance` (or None)."""
    nodes: int = 1
    gpus_per_node: int | None = None
    """Defaults to the instance's gpu_count."""
    spot: bool = False
    region: str | None = None
    workspace_region: str | None = None
    storage_region: str | None = None
    vpc: bool | None = None
    storage: str | None = None
    """oss | nas | cpfs | bmcpfs."""
    job_type: str | None = None
    """DLC JobType (PyTorchJob, MPIJob...)."""
    custom_image: bool | None = None
    checkpointing: bool | None = None
    tp: int = 1
    command: str | None = None
    scripts: tuple = ()
    """(where, :class:`~trainfit.check.shell.Script`) pairs of a checked file (launch commands)."""
    resume: bool | None = None
    """The job resumes from its newest checkpoint (None = unknown)."""
    checkpoint_detail: str | None = None
    """Why checkpoints would not survive (set by ``check`` when ``checkpointing`` is False)."""
    images: tuple[str, ...] = ()
    rdma_noted: bool = False
    """The job says its custom image carries the RDMA libraries."""
    region_sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    """Where each region came from (image registry, OSS endpoint, --region...), for regions_match."""
    body_bytes: int | None = None
    """Size of the CreateJob request body."""

    @property
    def rclass(self) -> str | None:
        if self.resource_class:
            return self.resource_class
        return getattr(self.instance, "resource_class", None)

    @property
    def total_gpus(self) -> int | None:
        gpn = self.gpus_per_node if self.gpus_per_node is not None else getattr(self.instance, "gpu_count", None)
        return None if gpn is None else gpn * self.nodes


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
_OPTIONAL = ("claims", "verdict")


def parse_rules(data: Any, where: str = "rules.yaml") -> tuple[list[Rule], list[str]]:
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
        verdict = raw.get("verdict")
        if verdict is not None and str(verdict) not in VERDICTS:
            problems.append(f"{w}: verdict {verdict!r} must be one of {', '.join(VERDICTS)}")
        claims = raw.get("claims") or []
        if not isinstance(claims, list):
            problems.append(f"{w}: claims must be a list")
            claims = []
        if kind == "fact" and (not claims or verdict is None):
            problems.append(f"{w}: a fact rule needs claims and a verdict")
        rules.append(Rule(id=rid, title=str(raw["title"]), applies_to=tuple(applies), kind=kind, params=params,
                          severity=sev, why=" ".join(str(raw["why"]).split()), fix=" ".join(str(raw["fix"]).split()),
                          source=str(raw["source"]), verified=bool(verified), as_of=str(as_of),
                          claims=tuple(str(c) for c in claims), verdict=None if verdict is None else str(verdict)))
    return rules, problems


@lru_cache(maxsize=1)
def load_rules() -> tuple[Rule, ...]:
    """The bundled rules (cached). A rules file that does not validate raises :class:`CatalogError`."""
    import yaml

    rules: list[Rule] = []
    problems: list[str] = []
    for provider in PROVIDERS:
        res = resources.files(f"trainfit.providers.{provider}").joinpath("rules.yaml")
        if not res.is_file():
            continue
        r, p = parse_rules(yaml.safe_load(res.read_text(encoding="utf-8")), where=f"providers/{provider}/rules.yaml")
        rules += r
        problems += p
    dup = sorted({r.id for r in rules if sum(1 for q in rules if q.id == r.id) > 1})
    problems += [f"rule id {d} defined twice" for d in dup]
    if problems:
        raise CatalogError("bundled platform rules do not validate:\n  " + "\n  ".join(problems),
                           fix="this is a bug in trainfit; please report it")
    return tuple(rules)


def get_rule(rule_id: str) -> Rule:
    for r in load_rules():
        if r.id == rule_id:
            return r
    from trainfit.errors import did_you_mean

    sugg = did_you_mean(rule_id, [r.id for r in load_rules()])
    raise CatalogError(f"unknown platform rule '{rule_id}'",
                       fix=("did you mean " + " or ".join(sugg) + "?") if sugg else None)


def rules_for_claim(claim_id: str) -> list[Rule]:
    """Rules that answer a claim of shared/reference/claims.md (``C22``...)."""
    return [r for r in load_rules() if claim_id.upper() in (c.upper() for c in r.claims)]


# --------------------------------------------------------------------------------------- evaluating

def _v(rule: Rule, message: str, severity: str | None = None) -> Violation:
    return Violation(rule=rule.id, severity=severity or rule.severity, message=message, fix=rule.fix,
                     why=rule.why, source=rule.source)


def _max_gpus(rule: Rule, ctx: JobContext) -> list[Violation]:
    total = ctx.total_gpus
    cap = rule.params["max"]
    if total is not None and total > cap:
        return [_v(rule, f"{total} GPUs requested, over the cap of {cap}: {rule.title}")]
    return []


def _max_vcpu(rule: Rule, ctx: JobContext) -> list[Violation]:
    vcpu = getattr(ctx.instance, "vcpu", None)
    cap = rule.params["max"]
    if vcpu is not None and vcpu * ctx.nodes > cap:
        return [_v(rule, f"{vcpu * ctx.nodes} vCPUs requested, over the cap of {cap}: {rule.title}")]
    return []


def _requires_vpc(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.vpc is False:
        return [_v(rule, f"{rule.title}; this job has no VPC")]
    if ctx.vpc is None:
        return [_v(rule, f"{rule.title}; make sure UserVpc is set", severity="info")]
    return []


def _when_spot_ok(rule: Rule, ctx: JobContext) -> bool:
    return not rule.params.get("when_spot") or ctx.spot


def _region_in(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.region is None or not _when_spot_ok(rule, ctx):
        return []
    allowed = [str(r) for r in rule.params["regions"]]
    if ctx.region not in allowed:
        return [_v(rule, f"region {ctx.region}: {rule.title} ({', '.join(allowed)})")]
    return []


def _job_type_in(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.job_type is None or not _when_spot_ok(rule, ctx):
        return []
    allowed = [str(t) for t in rule.params["types"]]
    if ctx.job_type not in allowed:
        return [_v(rule, f"job type {ctx.job_type}: {rule.title}")]
    return []


def _spot_ckpt(rule: Rule, ctx: JobContext) -> list[Violation]:
    if not ctx.spot:
        return []
    out = []
    if ctx.checkpointing is False:
        out.append(_v(rule, "spot instances can be reclaimed at any time, but checkpoints would not survive: "
                            + (ctx.checkpoint_detail or rule.title)))
    elif ctx.checkpointing is None:
        out.append(_v(rule, rule.title + "; is checkpointing on?", severity="info"))
    if ctx.resume is False:
        out.append(_v(rule, "spot job without resume: after a preemption the restarted job would start from step 0"))
    return out


def _multinode_rdma(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.nodes <= 1:
        return []
    net = getattr(ctx.instance, "inter_node", None)
    name = getattr(ctx.instance, "instance_type", "this instance")
    if net == "rdma":
        return []
    if net is None:
        return [_v(rule, f"{ctx.nodes} nodes of {name}, whose inter-node network is not documented; "
                         "without RDMA multi-node training is slow", severity="info")]
    return [_v(rule, f"{ctx.nodes} nodes of {name} over {net}: {rule.title}")]


def _regions_match(rule: Rule, ctx: JobContext) -> list[Violation]:
    named = {k: v for k, v in (("resources", ctx.region), ("workspace", ctx.workspace_region),
                               ("storage", ctx.storage_region)) if v}
    named.update(ctx.region_sources)
    if len(set(named.values())) > 1:
        desc = ", ".join(f"{k} in {v}" for k, v in named.items())
        return [_v(rule, f"regions differ ({desc}); {rule.title}")]
    return []


def _storage_vpc(rule: Rule, ctx: JobContext) -> list[Violation]:
    kinds = [str(s).lower() for s in rule.params["storage"]]
    if ctx.storage and ctx.storage.lower() in kinds and ctx.vpc is False:
        return [_v(rule, f"{ctx.storage} storage without a VPC: {rule.title}")]
    return []


def _no_vpc(rule: Rule, ctx: JobContext) -> list[Violation]:
    return [_v(rule, rule.title)] if ctx.vpc is False else []


def _command(rule: Rule, ctx: JobContext) -> list[Violation]:
    if not ctx.command:
        return []
    m = re.search(str(rule.params["pattern"]), ctx.command)
    if m:
        return [_v(rule, f"launch command has {m.group(0)!r}: {rule.title}")]
    return []


def _custom_image(rule: Rule, ctx: JobContext) -> list[Violation]:
    if not ctx.custom_image or ctx.rdma_noted:
        return []
    img = next(iter(ctx.images), "")
    return [_v(rule, f"{rule.title}" + (f": {img}" if img else "") + " (PAI images carry them; without them NCCL "
                     "falls back to TCP)")]


def _pcie_tp(rule: Rule, ctx: JobContext) -> list[Violation]:
    link = getattr(ctx.instance, "intra_node_link", None)
    if ctx.tp > 1 and link == "pcie":
        return [_v(rule, f"tensor parallel size {ctx.tp} on {getattr(ctx.instance, 'instance_type', 'a node')} "
                         "whose GPUs talk over PCIe")]
    return []


_VAR = r"(?<![A-Za-z0-9_])%s\b"


def _refs(value: str, var: str) -> bool:
    """``value`` reads shell variable ``var`` ($VAR, ${VAR}, ${VAR:-x}, $((VAR / 8)))."""
    return "$" in value and re.search(_VAR % var, value) is not None


def _launch_values(ctx: JobContext):
    """(where, line, key, value) of every launcher setting in the job's scripts: torchrun flags and the
    NNODES/NODE_RANK/NPROC_PER_NODE variables ms-swift and LLaMA-Factory read."""
    from trainfit.check.shell import is_torchrun

    for where, s in ctx.scripts:
        for cmd in s.commands:
            if is_torchrun(cmd):
                for k, v in cmd.flags().items():
                    k = k.replace("-", "_")
                    if k in ("nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port"):
                        yield where, cmd.line, k, v
            for k, v in cmd.env.items():
                if k in ("NPROC_PER_NODE", "NNODES", "NODE_RANK"):
                    yield where, cmd.line, k.lower(), v


def _launch_world_size(rule: Rule, ctx: JobContext) -> list[Violation]:
    """PAI-DLC's WORLD_SIZE counts nodes: it belongs in --nnodes, never in --nproc_per_node or divided."""
    out = []
    for where, line, key, val in _launch_values(ctx):
        if key == "nproc_per_node" and _refs(val, "WORLD_SIZE"):
            out.append(_v(rule, f"{where} line {line}: {key}={val}: WORLD_SIZE is the number of nodes, not the GPUs "
                                "of a node"))
        elif key == "nnodes" and (_refs(val, "RANK") or _refs(val, "NPROC_PER_NODE") or _refs(val, "LOCAL_RANK")
                                  or (_refs(val, "WORLD_SIZE") and "/" in val)):
            out.append(_v(rule, f"{where} line {line}: {key}={val}: WORLD_SIZE already counts nodes (it is not the "
                                "number of processes)"))
    if ctx.command and not ctx.scripts:
        m = re.search(str(rule.params.get("pattern", r"--nproc[_-]per[_-]node[= ]+[\"']?\$\{?WORLD_SIZE\}?")),
                      ctx.command)
        if m:
            out.append(_v(rule, f"launch command has {m.group(0)!r}: {rule.title}"))
    return out


def _launch_node_rank(rule: Rule, ctx: JobContext) -> list[Violation]:
    """PAI-DLC's RANK is the node index: it belongs in --node_rank; the master comes from MASTER_ADDR/PORT."""
    out = []
    seen_rank: dict[tuple[str, int], bool] = {}
    multi: dict[tuple[str, int], bool] = {}
    for where, line, key, val in _launch_values(ctx):
        if key == "node_rank":
            seen_rank[(where, line)] = True
            if _refs(val, "WORLD_SIZE") or _refs(val, "LOCAL_RANK"):
                out.append(_v(rule, f"{where} line {line}: {key}={val}: the node rank is RANK (the node index)"))
        elif key in ("master_addr", "master_port") and _refs(val, "RANK") and not _refs(val, "MASTER_ADDR"):
            out.append(_v(rule, f"{where} line {line}: {key}={val}: the master address/port is built from RANK; "
                                "use MASTER_ADDR/MASTER_PORT"))
        elif key == "nnodes" and (_refs(val, "WORLD_SIZE") or (val.isdigit() and int(val) > 1)):
            multi[(where, line)] = True
        elif key == "nnodes" and ctx.nodes > 1:
            multi[(where, line)] = True
        if key == "nnodes" and "nnodes" in rule.params.get("also", ()):
            pass
    for k in multi:
        if k not in seen_rank and any(w == k[0] for w, _ in ctx.scripts):
            out.append(_v(rule, f"{k[0]} line {k[1]}: multi-node torchrun without --node_rank: every node would "
                                "claim rank 0"))
    if ctx.command and not ctx.scripts:
        m = re.search(r"--nnodes[= ]+[\"']?\$\{?NPROC_PER_NODE\}?", ctx.command)
        if m:
            out.append(_v(rule, f"launch command has {m.group(0)!r}: {rule.title}"))
    return out


def _max_body(rule: Rule, ctx: JobContext) -> list[Violation]:
    cap = rule.params["max"]
    if ctx.body_bytes is not None and ctx.body_bytes > cap:
        return [_v(rule, f"the CreateJob body is {ctx.body_bytes:,} bytes; {rule.title} ({cap:,})")]
    return []


_CHECKS: dict[str, Callable[[Rule, JobContext], list[Violation]]] = {
    "max_gpus_per_job": _max_gpus,
    "max_vcpu_per_job": _max_vcpu,
    "requires_vpc": _requires_vpc,
    "region_in": _region_in,
    "job_type_in": _job_type_in,
    "spot_needs_checkpoint": _spot_ckpt,
    "multinode_needs_rdma": _multinode_rdma,
    "regions_match": _regions_match,
    "storage_needs_vpc": _storage_vpc,
    "no_vpc": _no_vpc,
    "command_pattern": _command,
    "custom_image_needs_rdma": _custom_image,
    "pcie_tensor_parallel": _pcie_tp,
    "launch_world_size": _launch_world_size,
    "launch_node_rank": _launch_node_rank,
    "max_body_bytes": _max_body,
    "fact": lambda rule, ctx: [],
}


def evaluate(ctx: JobContext, rules: tuple[Rule, ...] | list[Rule] | None = None) -> list[Violation]:
    """Violations of the rules that apply to ``ctx``, errors first, then warnings, then info."""
    out: list[Violation] = []
    names = (ctx.rclass, ctx.platform)
    for rule in (load_rules() if rules is None else rules):
        if not rule.applies(*names):
            continue
        out.extend(_CHECKS[rule.kind](rule, ctx))
    return sorted(out, key=lambda v: _SEV_ORDER.get(v.severity, 9))


def evaluate_instance(instance: Any, *, nodes: int = 1, gpus: int | None = None, spot: bool = False,
                      region: str | None = None, platform: str | None = None, **kw: Any) -> list[Violation]:
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
        platform = "pai-dlc" if rc.startswith("pai-") else (rc or "generic")
    ctx = JobContext(platform=platform, instance=instance, nodes=nodes, gpus_per_node=gpus, spot=spot,
                     region=region, **kw)
    return evaluate(ctx)


def evaluate_command(command: str, *, platform: str = "pai-dlc") -> list[Violation]:
    """Rules about a launch command line (e.g. ``--nproc_per_node=$WORLD_SIZE`` on DLC)."""
    return [v for v in evaluate(JobContext(platform=platform, command=command))
            if get_rule(v.rule).kind in ("command_pattern", "launch_world_size", "launch_node_rank")]
