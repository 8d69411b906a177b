"""The rules of ``trainfit check``: parse (``facts.py``) -> facts -> the same platform rules as the planner
(``trainfit.rules``, data in ``providers/*/rules.yaml``) + the same memory model and fit decision as
``memory``/``plan`` (``readback.py``) + job-level checks of the launcher and batch arithmetic. :func:`run_rules`
runs them all, so every problem is reported at once.

Job-level rule ids (here): unknown-instance-type, memory-fit, launcher (nnodes/nproc/master address/node rank
inconsistent with the job), global-batch, batch-mismatch, step-budget, placeholder, settings-differ-from-plan,
image-registry (a look-alike of PAI's registry host), deepspeed-config (DeepSpeed's own schema: stage 0-3,
positive batch sizes, offload devices; what fills "auto"), shell-injection, data (``--dataset``: the cut-off, packing
and step count against the data's stats). Every platform rule id comes from the YAML (pai-public-quota, lingjun-needs-vpc,
spot-needs-checkpoints, region-must-match, dlc-world-size-is-nodes, dlc-node-rank-not-rank-env, dlc-body-size...).
"""

from __future__ import annotations

import re
from typing import Callable

from trainfit.check.budget_rules import budget_findings
from trainfit.check.context import CheckOptions, catalog_instance, first_instance, gpus_per_node, rl_launch_text
from trainfit.check.injection import rule_shell_injection
from trainfit.check.readback import read_workload
from trainfit.check.data_rules import rule_data
from trainfit.check.ds_rules import rule_deepspeed_config
from trainfit.jobspec.facts import JobFacts
from trainfit.jobspec.shell import is_torchrun
from trainfit.estimate.fit import VERDICT_WORDS
from trainfit.i18n import _, translate
from trainfit.rules.types import ERROR, INFO, WARNING, Violation
from trainfit.providers.alibaba.lingjun import is_lingjun
from trainfit.rules import JobContext, evaluate
from trainfit.providers.alibaba.images import is_pai_image, image_host, imitates_pai
from trainfit.estimate.uncertainty import format_probability, memory_range
from trainfit.estimate.hardware import kernel_gaps
from trainfit.errors import TrainfitError as _TE, did_you_mean
from trainfit.rl.lint import lint_rl, phase_label, size_rl_launch
from trainfit.catalog.gpus import get_gpu
from trainfit.json_types import JSON


def _is_lingjun(name: str) -> bool:
    hit, _names = catalog_instance(name)
    return is_lingjun(name, hit)


# ------------------------------------------------------------------------------------------------ rules
def rule_unknown_instance(f: JobFacts, o: CheckOptions) -> list[Violation]:
    out = []
    for it in dict.fromkeys(f.instance_types):
        if "REPLACE_ME" in it:
            continue
        hit, names = catalog_instance(it)
        if names is None or hit is not None:
            continue
        sugg = did_you_mean(it, names)
        if sugg:
            message = _("instance type '{name}' is not in the catalog (did you mean {names}?)").format(
                name=it, names=_(" or ").join(sugg))
            fix = _("use {name}; `trainfit catalog show instances` lists known types; `trainfit catalog refresh "
                    "--provider pai` fetches the live PAI list").format(name=sugg[0])
        else:
            message = _("instance type '{name}' is not in the catalog").format(name=it)
            fix = _("`trainfit catalog show instances` lists known types; `trainfit catalog refresh --provider pai` "
                    "fetches the live PAI list")
        out.append(Violation(rule="unknown-instance-type", severity=ERROR, message=message, fix=fix))
    return out


def _int(v: JSON) -> int | None:
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return None


def rule_batch(f: JobFacts, o: CheckOptions) -> list[Violation]:
    out: list[Violation] = []
    t = f.train
    ds = f.ds_config or {}
    mb = _int(t.get("per_device_train_batch_size") or t.get("micro_batch_size"))
    ga = _int(t.get("gradient_accumulation_steps"))
    ds_mb, ds_ga, ds_tbs = (_int(ds.get("train_micro_batch_size_per_gpu")), _int(ds.get("gradient_accumulation_steps")),
                            _int(ds.get("train_batch_size")))
    for name, a, b in ((_("micro-batch"), mb, ds_mb), (_("gradient accumulation"), ga, ds_ga)):
        if a is not None and b is not None and a != b:
            out.append(Violation(rule="batch-mismatch", severity=ERROR,
                                 message=_("{name}: the training arguments say {a}, the DeepSpeed config {b}").format(
                                     name=name, a=a, b=b),
                                 fix=_("make them equal (or write \"auto\" in the DeepSpeed config)")))
    mb = mb if mb is not None else ds_mb
    ga = ga if ga is not None else (ds_ga if ds_ga is not None else (1 if f.engine in ("swift", "llamafactory") else None))
    gpn = gpus_per_node(f)
    nodes = f.nodes
    mp = 1
    for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"):
        mp *= _int(t.get(k)) or 1
    gpus = gpn * nodes if (gpn and nodes) else None
    dp = gpus // mp if gpus and gpus % mp == 0 else None
    if ds_tbs is not None and mb and ga:
        if dp is not None and ds_tbs != mb * ga * dp:
            out.append(Violation(
                rule="global-batch", severity=ERROR,
                message=_("DeepSpeed train_batch_size {tbs} != micro-batch {mb} x accumulation {ga} x {dp} "
                          "data-parallel GPUs = {want}: DeepSpeed refuses to start").format(
                    tbs=ds_tbs, mb=mb, ga=ga, dp=dp, want=mb * ga * dp),
                fix=_("set train_batch_size to {want} (or \"auto\"), or change the micro-batch/accumulation").format(
                    want=mb * ga * dp)))
        elif dp is None and ds_tbs % (mb * ga):
            out.append(Violation(
                rule="global-batch", severity=ERROR,
                message=_("DeepSpeed train_batch_size {tbs} is not a multiple of micro-batch {mb} x accumulation "
                          "{ga}: no GPU count makes it consistent").format(tbs=ds_tbs, mb=mb, ga=ga),
                fix=_("set train_batch_size = micro-batch x accumulation x GPUs")))
    gbs = _int(t.get("global_batch_size"))
    if gbs is not None and mb and dp:
        if gbs % (mb * dp):
            out.append(Violation(
                rule="global-batch", severity=ERROR,
                message=_("global_batch_size {gbs} is not a multiple of micro_batch_size {mb} x {dp} data-parallel "
                          "ranks: Megatron refuses to start").format(gbs=gbs, mb=mb, dp=dp),
                fix=_("use a multiple of {n}").format(n=mb * dp)))
    return out


def rule_placeholders(f: JobFacts, o: CheckOptions) -> list[Violation]:
    if not f.placeholders:
        return []
    return [Violation(rule="placeholder", severity=WARNING,
                      message=_("values still to fill in: {names}").format(names=", ".join(f.placeholders[:6])),
                      fix=_("replace every REPLACE_ME (VPC ids, OSS bucket, ...) or pass them to `trainfit render`"))]


def _int_s(v: JSON) -> int | None:
    return int(v) if isinstance(v, str) and v.strip().isdecimal() else (v if isinstance(v, int) else None)


def _resume(f: JobFacts) -> bool:
    t = f.train
    if t.get("resume_from_checkpoint") or t.get("load") or (t.get("mcore_model") and t.get("finetune") == "false"):
        return True
    if f.engine == "llamafactory" and str(t.get("overwrite_output_dir", "false")).lower() != "true" \
            and t.get("output_dir"):
        return True  # LLaMA-Factory resumes from the last checkpoint-N in output_dir by itself
    for _where, s in f.scripts:
        if re.search(r"resume_from_checkpoint|--auto[-_]resume|--finetune\s+false|--load\s", s.text):
            return True
    return False


def _checkpointing(f: JobFacts) -> tuple[bool | None, str | None]:
    out_dir = f.train.get("output_dir") or f.train.get("save")
    if not f.scripts and f.kind in ("deepspeed",):
        return None, None
    on_mount = bool(out_dir) and any(out_dir.rstrip("/").startswith(m.rstrip("/")) for m in f.mounts)
    if f.mounts and on_mount:
        return True, None
    if f.mounts and out_dir:
        why = _("output_dir {path} is not on it").format(path=out_dir)
    elif f.mounts:
        why = _("no output_dir/save path was found")
    else:
        why = _("the job mounts no persistent storage")
    return False, _("{why} (mount OSS/NAS/CPFS, a PVC or a bucket and write output_dir with save_steps under it; "
                    "`trainfit render --spot` wires this)").format(why=why)


def job_context(f: JobFacts, o: CheckOptions):
    """The :class:`trainfit.rules.JobContext` of a checked file: what the platform rules read."""
    inst = first_instance([*f.instance_types, o.instance_type, f.plan.get("instance_type")])
    lingjun = any(_is_lingjun(t) for t in f.instance_types)
    # the instance's class, else the trainfit header's (a render for a GPU without an instance type is "generic")
    rclass = getattr(inst, "resource_class", None) or (f.plan.get("resource_class") or None)
    if lingjun:
        rclass = "pai-lingjun"
    elif f.platform == "pai-dlc" and (f.resource_id or f.spot):
        rclass = "pai-quota" if f.resource_id else "pai-spot"
    elif f.platform == "pai-dlc" and rclass is None:
        rclass = "pai-public"
    region_sources = dict(f.regions)
    if o.region:
        region_sources["--region"] = o.region
    for it in f.instance_types:
        hit, _names = catalog_instance(it)
        regs = tuple(getattr(hit, "regions", ()) or ()) if hit is not None else ()
        if regs and region_sources and not any(r in regs for r in region_sources.values()):
            region_sources[_("instance {name} (seen only in {regions})").format(name=it, regions=", ".join(regs))] = \
                regs[0]

    # PAI's own images by their exact registry host; other images on Lingjun need RDMA libraries installed by hand
    custom = [i for i in f.images if not is_pai_image(i) and "REPLACE_ME" not in i]
    rdma = any("rdma" in (k + v).lower() for k, v in f.envs.items()) or \
        any("rdma" in c.lower() for _where, s in f.scripts for c in s.comments)
    ckpt, why = _checkpointing(f) if f.spot else (None, None)
    vpc = None
    if f.vpc is not None:
        vpc = isinstance(f.vpc, dict) and bool(f.vpc.get("VpcId"))
    elif f.kind == "dlc-json":
        vpc = False
    platform = "pai-dlc" if f.platform == "pai-dlc" else ("tencent-tione" if f.platform == "tencent-tione" else
                                                          "generic")
    tp = _int_s(f.train.get("tensor_model_parallel_size")) or 1
    return JobContext(platform=platform, resource_class=rclass, instance=inst, nodes=f.nodes or o.nodes or 1,
                      gpus_per_node=gpus_per_node(f) or o.gpus_per_node, spot=f.spot,
                      region=o.region or next(iter(f.regions.values()), None), vpc=vpc, tp=tp,
                      custom_image=bool(custom) if f.images else None, checkpointing=ckpt, checkpoint_detail=why,
                      resume=_resume(f) if f.spot else None, scripts=tuple(f.scripts), images=tuple(custom),
                      rdma_noted=rdma, region_sources=region_sources,
                      body_bytes=f.body_bytes if f.kind == "dlc-json" else None)


def rule_platform(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """The platform rules of ``providers/*/rules.yaml`` (one evaluator, the planner's too) on what the file states."""
    if f.kind == "deepspeed":
        return []  # a DeepSpeed config alone says nothing about the platform
    return evaluate(job_context(f, o))


def rule_launcher(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """torchrun's node count, GPUs per node and master address against the job (any platform)."""
    out: list[Violation] = []
    nodes = f.nodes or o.nodes
    gpn = gpus_per_node(f) or o.gpus_per_node
    for where, s in f.scripts:
        for cmd in s.commands:
            if not is_torchrun(cmd):
                continue
            fl = {k.replace("-", "_"): v for k, v in cmd.flags().items()}
            nn = fl.get("nnodes", "")
            literal_nodes = int(nn) if nn.strip().isdecimal() else None
            if nodes and nodes > 1 and literal_nodes is not None and literal_nodes != nodes:
                out.append(Violation(rule="launcher", severity=ERROR,
                                     message=_("{where} line {line}: --nnodes={nn} but the job has {nodes} "
                                               "nodes").format(where=where, line=cmd.line, nn=nn, nodes=nodes),
                                     fix=_("use --nnodes=$WORLD_SIZE (PAI-DLC) or the job's node count")))
            multi = (nodes or 1) > 1 or (literal_nodes or 1) > 1
            addr = fl.get("master_addr", "")
            if multi and addr.strip() in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
                out.append(Violation(rule="launcher", severity=ERROR,
                                     message=_("{where} line {line}: --master_addr={addr} on a multi-node job: the "
                                               "other nodes cannot reach it").format(where=where, line=cmd.line,
                                                                                     addr=addr),
                                     fix=_("use --master_addr=$MASTER_ADDR (set by PAI-DLC, Kubeflow and "
                                           "SkyPilot)")))
            if multi and "node_rank" not in fl and f.platform != "pai-dlc":
                out.append(Violation(rule="launcher", severity=ERROR,
                                     message=_("{where} line {line}: multi-node torchrun without --node_rank: every "
                                               "node would claim rank 0").format(where=where, line=cmd.line),
                                     fix=_("add --node_rank=$RANK (or $NODE_RANK)")))
            v = fl.get("nproc_per_node", "")
            if gpn and v.isdecimal() and int(v) != gpn:
                out.append(Violation(rule="launcher", severity=WARNING,
                                     message=_("{where} line {line}: --nproc_per_node={n} but a node has {gpn} "
                                               "GPU(s)").format(where=where, line=cmd.line, n=v, gpn=gpn),
                                     fix=_("use --nproc_per_node=$NPROC_PER_NODE (PAI-DLC sets it) or the node's GPU "
                                           "count")))
    return out


def _memory_finding(f: JobFacts, *, gpu: str, reserved_gib: float, usable_gib: float, verdict: str,
                    oom_probability: float | None, phase: str | None = None, phase_text: str = "") -> None:
    """The memory check's note (the figure with its p10-p90 range from the fit corpus, as ``memory`` prints it) and
    its figures for ``check --json`` (``memory``: reserved GiB with p10/p50/p90, usable GiB, verdict, P(OOM));
    the range is :func:`trainfit.estimate.uncertainty.memory_range`, the one every command uses."""
    rng = memory_range(reserved_gib)
    word = translate(VERDICT_WORDS.get(verdict, verdict))
    what = _("; binding: {phase}").format(phase=phase_text or phase) if phase else ""
    if rng:
        note = _("memory: {gib:.1f} GiB per GPU (p10-p90 {p10:.1f}-{p90:.1f} from published runs) of {usable:.4g} GiB "
                 "usable on {gpu}: {verdict}").format(gib=reserved_gib, p10=rng["p10"], p90=rng["p90"],
                                                     usable=usable_gib, gpu=gpu, verdict=word)
    else:
        note = _("memory: {gib:.1f} GiB per GPU of {usable:.4g} GiB usable on {gpu}: {verdict}").format(
            gib=reserved_gib, usable=usable_gib, gpu=gpu, verdict=word)
    if oom_probability is not None:
        note += ", P(OOM) {p}".format(p=format_probability(oom_probability))
    f.notes.append(note + what)
    f.memory = {"gpu": gpu, "reserved_gib": reserved_gib, "reserved_interval_gib": rng, "usable_gib": usable_gib,
                "verdict": verdict, "oom_probability": oom_probability, "binding_phase": phase}


def rule_memory(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """The memory model and the one fit decision on the training settings the file states."""
    got = read_workload(f, o)
    if got is None:
        return []
    if isinstance(got, Violation):
        return [got]
    rb = got
    out: list[Violation] = []
    d = rb.decision
    wl = rb.workload
    layout = (wl.strategy + (f"+offload {wl.offload}" if wl.offload != "none" else "")
              + "".join(f", {k} {getattr(wl, k)}" for k in ("ep", "tp", "pp", "cp", "ulysses") if getattr(wl, k) > 1))
    where = _("{model} {method}, seq {seq}, micro-batch {mb}, {layout} on {gpus} GPU(s)").format(
        model=rb.model.name, method=wl.method, seq=wl.seq_len, mb=wl.micro_batch, layout=layout, gpus=wl.gpus)
    extra = _(" (assumed {what})").format(what=", ".join(rb.assumed)) if rb.assumed else ""
    _memory_finding(f, gpu=rb.gpu, reserved_gib=rb.estimate.reserved_gib, usable_gib=d.usable_gib,
                    verdict=d.verdict, oom_probability=d.oom_probability)
    reasons = "; ".join(d.reasons)
    if d.verdict == "oom":
        out.append(Violation(rule="memory-fit", severity=ERROR,
                             message=_("{where}: {reasons} on {gpu}{extra}").format(where=where, reasons=reasons,
                                                                                   gpu=rb.gpu, extra=extra),
                             fix=_("`trainfit memory` with these settings and --gpu lists changes that fit (ZeRO-3, "
                                   "offload, smaller micro-batch, LoRA, more GPUs)")))
    elif d.verdict == "tight":
        out.append(Violation(rule="memory-fit", severity=WARNING,
                             message=_("{where}: {reasons}{extra}").format(where=where, reasons=reasons, extra=extra),
                             fix=_("leave room: a smaller micro-batch, gradient checkpointing or more sharding")))
    elif d.verdict == "unknown":
        out.append(Violation(rule="memory-fit", severity=INFO,
                             message=_("{where}: {reasons}").format(where=where, reasons=reasons),
                             fix=_("check the node's host RAM before renting")))

    for gap in kernel_gaps(rb.workload.attention, rb.gpu_class, rb.gpu):
        out.append(Violation(rule="kernel-support", severity=ERROR, message=gap,
                             fix=_("change the attention setting (sdpa runs everywhere), or rent GPUs that run the "
                                   "kernel")))
    out += budget_findings(f, rb)
    planned = rb.planned_gib
    if planned is not None and abs(planned - rb.estimate.reserved_gib) > 0.01:
        out.append(Violation(rule="settings-differ-from-plan", severity=INFO,
                             message=_("the file's settings need {gib:.2f} GiB per GPU; its trainfit header planned "
                                       "{planned:.2f} GiB (edited since it was rendered?)").format(
                                 gib=rb.estimate.reserved_gib, planned=planned),
                             fix=_("re-render from the plan, or re-plan with the new settings")))
    return out


def rule_rl(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """RL launches (verl main_ppo, ``swift rlhf``): read back and sized per phase with the same model and fit
    decision as ``memory --rl`` / ``plan --rl``, plus the RL lints (utilization vs the trainer's residual,
    colocation without sleep/offload, KV pool below one sequence, unfused logits at long responses)."""
    text = rl_launch_text(f)
    if text is None:
        return []

    plan = f.plan
    usable = (plan.get("rl") or {}).get("gpu_mem_gib") if isinstance(plan.get("rl"), dict) and not o.gpu else None
    gpu = o.gpu or f.gpu or plan.get("gpu")
    inst = first_instance([o.instance_type, *f.instance_types, plan.get("instance_type")])
    if gpu is None and inst is not None:
        gpu = inst.gpu
    if usable is None and gpu:
        try:
            usable = get_gpu(gpu).usable_mem_gib
        except _TE:
            usable = None
    if usable is None:
        return [Violation(rule="memory-fit", severity=INFO, message=_("the GPU of this RL job is unknown, so its "
                          "memory was not checked"), fix=_("pass --gpu NAME (e.g. H100)"))]
    try:
        parsed, est = size_rl_launch(text, usable, model=plan.get("model"), host_ram_gib=getattr(inst, "ram_gib", None))
        findings = lint_rl(None, parsed.workload_obj(), parsed.rl, usable, estimate=est)
    except _TE as e:
        return [Violation(rule="memory-fit", severity=WARNING,
                          message=_("the RL settings could not be modelled: {error}").format(error=e.message),
                          fix=e.fix or "")]
    # the binding phase's peak with its p10-p90 range and P(OOM), as `memory --rl` prints it (issue 26)
    _memory_finding(f, gpu=str(gpu or _("the GPU")), reserved_gib=est.peak_gib, usable_gib=(est.fit or {}).get(
        "usable_gib", usable), verdict=est.verdict, oom_probability=(est.fit or {}).get("oom_probability"),
                    phase=est.binding_phase, phase_text=phase_label(est.binding_phase))
    return list(findings)


def rule_image_registry(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """An image on a host named like PAI's registry that is not PAI's (``dsw-registry-vpc.<region>.attacker.example``):
    the job would pull its code from somewhere else than it seems to."""
    return [Violation(rule="image-registry", severity=ERROR,
                      message=_("image {image!r} is on {host!r}, a host named like PAI's registry that is not PAI's "
                                "(PAI's are dsw-registry[-vpc].<region>.cr.aliyuncs.com and "
                                "registry[-vpc].<region>.aliyuncs.com/pai-dlc/)").format(image=img[:120],
                                                                                         host=image_host(img)[:80]),
                      fix=_("use the official PAI image of your region, or your own registry under its real name"))
            for img in dict.fromkeys(f.images) if isinstance(img, str) and imitates_pai(img)]


RULES: tuple[Callable[[JobFacts, CheckOptions], list[Violation]], ...] = (
    rule_unknown_instance, rule_memory, rule_rl, rule_launcher, rule_batch, rule_placeholders, rule_platform,
    rule_image_registry, rule_deepspeed_config, rule_shell_injection, rule_data)


def run_rules(f: JobFacts, o: CheckOptions) -> list[Violation]:
    out: list[Violation] = []
    for rule in RULES:
        out.extend(rule(f, o))
    return out
