"""One function per rule kind (``check.kind`` in the YAML): ``(rule, JobContext) -> [Violation]``."""

from __future__ import annotations

import re
from typing import Callable

from trainfit.i18n import _, translate
from trainfit.rules.types import JobContext, Rule, Violation
from trainfit.jobspec.shell import is_torchrun, training_args

# --------------------------------------------------------------------------------------- evaluating

def _v(rule: Rule, message: str, severity: str | None = None) -> Violation:
    """A finding of ``rule``: its fix and why in the current language (the rule id stays English, a stable code)."""
    fix = translate(rule.fix)
    if rule.plan_blocks:  # a limit `plan` enforces: say how to lift it once the platform has
        fix = _("{fix} If your limit was already raised, plan with --ignore-rule {rule}.").format(fix=fix, rule=rule.id)
    return Violation(rule=rule.id, severity=severity or rule.severity, message=message, fix=fix,
                     why=translate(rule.why), source=rule.source)


def _t(rule: Rule) -> str:
    """The rule's title in the current language."""
    return translate(rule.title)


def _max_gpus(rule: Rule, ctx: JobContext) -> list[Violation]:
    total = ctx.total_gpus
    cap = rule.params["max"]
    if total is not None and total > cap:
        return [_v(rule, _("{total} GPUs requested, over the cap of {cap}: {title}").format(
            total=total, cap=cap, title=_t(rule)))]
    return []


def _max_vcpu(rule: Rule, ctx: JobContext) -> list[Violation]:
    vcpu = getattr(ctx.instance, "vcpu", None)
    cap = rule.params["max"]
    if vcpu is not None and vcpu * ctx.nodes > cap:
        return [_v(rule, _("{vcpu} vCPUs requested, over the cap of {cap}: {title}").format(
            vcpu=vcpu * ctx.nodes, cap=cap, title=_t(rule)))]
    return []


def _requires_vpc(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.vpc is False:
        return [_v(rule, _("{title}; this job has no VPC").format(title=_t(rule)))]
    if ctx.vpc is None:
        return [_v(rule, _("{title}; make sure UserVpc is set").format(title=_t(rule)), severity="info")]
    return []


def _when_spot_ok(rule: Rule, ctx: JobContext) -> bool:
    return not rule.params.get("when_spot") or ctx.spot


def _region_in(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.region is None or not _when_spot_ok(rule, ctx):
        return []
    allowed = [str(r) for r in rule.params["regions"]]
    if ctx.region not in allowed:
        return [_v(rule, _("region {region}: {title} ({allowed})").format(region=ctx.region, title=_t(rule),
                                                                           allowed=", ".join(allowed)))]
    return []


def _job_type_in(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.job_type is None or not _when_spot_ok(rule, ctx):
        return []
    allowed = [str(t) for t in rule.params["types"]]
    if ctx.job_type not in allowed:
        return [_v(rule, _("job type {job_type}: {title}").format(job_type=ctx.job_type, title=_t(rule)))]
    return []


def _spot_ckpt(rule: Rule, ctx: JobContext) -> list[Violation]:
    if not ctx.spot:
        return []
    out = []
    if ctx.checkpointing is False:
        out.append(_v(rule, _("spot instances can be reclaimed at any time, but checkpoints would not survive: "
                              "{detail}").format(detail=ctx.checkpoint_detail or _t(rule))))
    elif ctx.checkpointing is None:
        out.append(_v(rule, _("{title}; is checkpointing on?").format(title=_t(rule)), severity="info"))
    if ctx.resume is False:
        out.append(_v(rule, _("spot job without resume: after a preemption the restarted job would start from "
                              "step 0")))
    return out


def _multinode_rdma(rule: Rule, ctx: JobContext) -> list[Violation]:
    if ctx.nodes <= 1:
        return []
    net = getattr(ctx.instance, "inter_node", None)
    name = getattr(ctx.instance, "instance_type", None)
    if net == "rdma":
        return []
    if net is None and name is None:
        return [_v(rule, _("{nodes} nodes of this instance, whose inter-node network is not documented; without RDMA "
                           "multi-node training is slow").format(nodes=ctx.nodes), severity="info")]
    if net is None:
        return [_v(rule, _("{nodes} nodes of {name}, whose inter-node network is not documented; without RDMA "
                           "multi-node training is slow").format(nodes=ctx.nodes, name=name), severity="info")]
    return [_v(rule, _("{nodes} nodes of {name} over {net}: {title}").format(nodes=ctx.nodes, name=name, net=net,
                                                                            title=_t(rule)))]


def _regions_match(rule: Rule, ctx: JobContext) -> list[Violation]:
    named = {k: v for k, v in ((_("resources"), ctx.region), (_("workspace"), ctx.workspace_region),
                               (_("storage"), ctx.storage_region)) if v}
    named.update(ctx.region_sources)
    if len(set(named.values())) > 1:
        desc = ", ".join(_("{where} in {region}").format(where=k, region=v) for k, v in named.items())
        return [_v(rule, _("regions differ ({desc}); {title}").format(desc=desc, title=_t(rule)))]
    return []


def _storage_vpc(rule: Rule, ctx: JobContext) -> list[Violation]:
    kinds = [str(s).lower() for s in rule.params["storage"]]
    if ctx.storage and ctx.storage.lower() in kinds and ctx.vpc is False:
        return [_v(rule, _("{storage} storage without a VPC: {title}").format(storage=ctx.storage, title=_t(rule)))]
    return []


def _no_vpc(rule: Rule, ctx: JobContext) -> list[Violation]:
    return [_v(rule, _t(rule))] if ctx.vpc is False else []


def _command(rule: Rule, ctx: JobContext) -> list[Violation]:
    if not ctx.command:
        return []
    m = re.search(str(rule.params["pattern"]), ctx.command)
    if m:
        return [_v(rule, _("launch command has {text!r}: {title}").format(text=m.group(0), title=_t(rule)))]
    return []


def _custom_image(rule: Rule, ctx: JobContext) -> list[Violation]:
    if not ctx.custom_image or ctx.rdma_noted:
        return []
    img = next(iter(ctx.images), "")
    if img:
        return [_v(rule, _("{title}: {image} (PAI images carry them; without them NCCL falls back to TCP)").format(
            title=_t(rule), image=img))]
    return [_v(rule, _("{title} (PAI images carry them; without them NCCL falls back to TCP)").format(title=_t(rule)))]


def _pcie_tp(rule: Rule, ctx: JobContext) -> list[Violation]:
    link = getattr(ctx.instance, "intra_node_link", None)
    if ctx.tp > 1 and link == "pcie":
        name = getattr(ctx.instance, "instance_type", None)
        if name is None:
            return [_v(rule, _("tensor parallel size {tp} on a node whose GPUs talk over PCIe").format(tp=ctx.tp))]
        return [_v(rule, _("tensor parallel size {tp} on {name} whose GPUs talk over PCIe").format(tp=ctx.tp,
                                                                                                 name=name))]
    return []


_VAR = r"(?<![A-Za-z0-9_])%s\b"


def _refs(value: str, var: str) -> bool:
    """``value`` reads shell variable ``var`` ($VAR, ${VAR}, ${VAR:-x}, $((VAR / 8)))."""
    return "$" in value and re.search(_VAR % var, value) is not None


def _launch_values(ctx: JobContext):
    """(where, line, key, value) of every launcher setting in the job's scripts: torchrun flags and the
    NNODES/NODE_RANK/NPROC_PER_NODE variables ms-swift and LLaMA-Factory read."""
    for where, s in ctx.scripts:
        expand = getattr(s, "expand", lambda v: v)  # the script's own variables written out ($N where N=$WORLD_SIZE)
        for cmd in s.commands:
            if is_torchrun(cmd):
                for k, v in cmd.flags().items():
                    k = k.replace("-", "_")
                    if k in ("nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port"):
                        yield where, cmd.line, k, expand(v)
            for k, v in cmd.env.items():
                if k in ("NPROC_PER_NODE", "NNODES", "NODE_RANK"):
                    yield where, cmd.line, k.lower(), expand(v)
        # `export NPROC_PER_NODE=$WORLD_SIZE` on a line of its own: read by the launcher started after it (reported
        # at that launcher's line, where the settings meet)
        launcher = next((c for c in s.commands if training_args(c) is not None), None)
        for k in ("NPROC_PER_NODE", "NNODES", "NODE_RANK"):
            v = s.assignments.get(k)
            if v is not None and launcher is not None and k not in launcher.env:
                yield where, launcher.line, k.lower(), expand(v)


def _launch_world_size(rule: Rule, ctx: JobContext) -> list[Violation]:
    """PAI-DLC's WORLD_SIZE counts nodes: it belongs in --nnodes, never in --nproc_per_node or divided."""
    out = []
    for where, line, key, val in _launch_values(ctx):
        if key == "nproc_per_node" and _refs(val, "WORLD_SIZE"):
            out.append(_v(rule, _("{where} line {line}: {key}={val}: WORLD_SIZE is the number of nodes, not the "
                                  "GPUs of a node").format(where=where, line=line, key=key, val=val)))
        elif key == "nnodes" and (_refs(val, "RANK") or _refs(val, "NPROC_PER_NODE") or _refs(val, "LOCAL_RANK")
                                  or (_refs(val, "WORLD_SIZE") and "/" in val)):
            out.append(_v(rule, _("{where} line {line}: {key}={val}: WORLD_SIZE already counts nodes (it is not "
                                  "the number of processes)").format(where=where, line=line, key=key,
                                                                     val=val)))
    if ctx.command and not ctx.scripts:
        m = re.search(str(rule.params.get("pattern", r"--nproc[_-]per[_-]node[= ]+[\"']?\$\{?WORLD_SIZE\}?")),
                      ctx.command)
        if m:
            out.append(_v(rule, _("launch command has {text!r}: {title}").format(text=m.group(0), title=_t(rule))))
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
                out.append(_v(rule, _("{where} line {line}: {key}={val}: the node rank is RANK (the node "
                                      "index)").format(where=where, line=line, key=key, val=val)))
        elif key in ("master_addr", "master_port") and _refs(val, "RANK") and not _refs(val, "MASTER_ADDR"):
            out.append(_v(rule, _("{where} line {line}: {key}={val}: the master address/port is built from RANK; "
                                  "use MASTER_ADDR/MASTER_PORT").format(where=where, line=line, key=key,
                                                                        val=val)))
        elif key == "nnodes" and (_refs(val, "WORLD_SIZE") or (val.isdecimal() and int(val) > 1)):
            multi[(where, line)] = True
        elif key == "nnodes" and ctx.nodes > 1:
            multi[(where, line)] = True
        if key == "nnodes" and "nnodes" in rule.params.get("also", ()):
            pass
    for k in multi:
        if k not in seen_rank and any(w == k[0] for w, _s in ctx.scripts):
            out.append(_v(rule, _("{where} line {line}: multi-node torchrun without --node_rank: every node would "
                                  "claim rank 0").format(where=k[0], line=k[1])))
    if ctx.command and not ctx.scripts:
        m = re.search(r"--nnodes[= ]+[\"']?\$\{?NPROC_PER_NODE\}?", ctx.command)
        if m:
            out.append(_v(rule, _("launch command has {text!r}: {title}").format(text=m.group(0), title=_t(rule))))
    return out


def _max_body(rule: Rule, ctx: JobContext) -> list[Violation]:
    cap = rule.params["max"]
    if ctx.body_bytes is not None and ctx.body_bytes > cap:
        return [_v(rule, _("the CreateJob body is {size:,} bytes; {title} ({cap:,})").format(
            size=ctx.body_bytes, title=_t(rule), cap=cap))]
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
