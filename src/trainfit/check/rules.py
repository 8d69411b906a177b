"""The rules of ``trainfit check``. Each takes :class:`JobFacts` (and the check options) and returns
violations; :func:`run_rules` runs them all, so every problem is reported at once.

Rule ids: unknown-instance-type, memory-fit, world-size-misuse, rank-misuse, nnodes-hardcoded,
nproc-mismatch, spot-no-checkpoint, spot-no-resume, lingjun-vpc, public-gpu-cap, region-mismatch,
lingjun-custom-image-rdma, global-batch, batch-mismatch, dlc-body-size, placeholder, plus the platform rules
of :mod:`trainfit.rules` when that module is present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from trainfit.check.facts import JobFacts
from trainfit.check.shell import is_torchrun
from trainfit.errors import TrainfitError

ERROR, WARNING, INFO = "error", "warning", "info"
#: PAI public resource group: "maximum 2 GPU cards and 8 CPU cores" unless raised (DLC doc, pai-facts 1.3).
PUBLIC_GPU_CAP = 2
#: CreateJob: all parameters together at most 65,536 bytes (DLC CreateJob API doc).
DLC_BODY_LIMIT = 65_536
#: Official PAI registries; other images on Lingjun need RDMA libraries installed by hand.
PAI_REGISTRIES = ("dsw-registry", "registry.", "registry-vpc.", "pai-dlc")
_VAR = r"(?<![A-Za-z0-9_])%s\b"


@dataclass(frozen=True, kw_only=True)
class Violation:
    rule: str
    severity: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "severity": self.severity, "message": self.message, "fix": self.fix}


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    region: str | None = None
    gpu: str | None = None
    instance_type: str | None = None


def _refs(value: str, var: str) -> bool:
    """``value`` reads shell variable ``var`` ($VAR, ${VAR}, ${VAR:-x}, $((VAR / 8)))."""
    return "$" in value and re.search(_VAR % var, value) is not None


def _catalog_instance(name: str):
    try:
        from trainfit.catalog.instances import list_instances
    except ImportError:
        return None, None
    try:
        rows = list_instances()
    except TrainfitError:
        return None, None
    hit = next((r for r in rows if r.instance_type.lower() == name.strip().lower()), None)
    return hit, [r.instance_type for r in rows]


def _is_lingjun(name: str) -> bool:
    hit, _ = _catalog_instance(name)
    if hit is not None:
        return hit.resource_class == "pai-lingjun"
    return re.match(r"^ml\.gu\d+[a-z]*f\.", name.strip(), re.IGNORECASE) is not None


def _gpus_per_node(f: JobFacts) -> int | None:
    if f.gpus_per_node:
        return f.gpus_per_node
    for it in f.instance_types:
        hit, _ = _catalog_instance(it)
        if hit is not None and hit.gpu_count:
            return hit.gpu_count
    v = f.header.get("gpus_per_node")
    if v:
        return int(v)
    for _, s in f.scripts:
        for cmd in s.commands:
            if is_torchrun(cmd):
                v = cmd.flags().get("nproc_per_node") or cmd.flags().get("nproc-per-node")
                if v and v.isdigit():
                    return int(v)
        v = s.assignments.get("NPROC_PER_NODE")
        if v and v.isdigit():
            return int(v)
    v = f.header.get("gpus_per_node")
    return int(v) if v else None


# ------------------------------------------------------------------------------------------------ rules
def rule_unknown_instance(f: JobFacts, o: CheckOptions) -> list[Violation]:
    out = []
    for it in dict.fromkeys(f.instance_types):
        if "REPLACE_ME" in it:
            continue
        hit, names = _catalog_instance(it)
        if names is None or hit is not None:
            continue
        from trainfit.errors import did_you_mean

        sugg = did_you_mean(it, names)
        out.append(Violation(
            rule="unknown-instance-type", severity=ERROR,
            message=f"instance type '{it}' is not in the catalog" + (f" (did you mean {' or '.join(sugg)}?)" if sugg else ""),
            fix=(f"use {sugg[0]}; " if sugg else "") + "`trainfit catalog show instances` lists known types; "
                "`trainfit catalog refresh --provider pai` fetches the live PAI list"))
    return out


def rule_world_size(f: JobFacts, o: CheckOptions) -> list[Violation]:
    out: list[Violation] = []
    for where, s in f.scripts:
        for cmd in s.commands:
            checks: list[tuple[str, str]] = []
            if is_torchrun(cmd):
                fl = cmd.flags()
                checks = [(k.replace("-", "_"), v) for k, v in fl.items()
                          if k.replace("-", "_") in ("nproc_per_node", "nnodes", "node_rank")]
            checks += [(k.lower(), v) for k, v in cmd.env.items() if k in ("NPROC_PER_NODE", "NNODES", "NODE_RANK")]
            for key, val in checks:
                if key == "nproc_per_node" and _refs(val, "WORLD_SIZE"):
                    out.append(Violation(
                        rule="world-size-misuse", severity=ERROR,
                        message=f"{where} line {cmd.line}: {key}={val}: on PAI-DLC (and Kubeflow) WORLD_SIZE is the "
                                "number of nodes, not the GPUs of a node",
                        fix="use --nproc_per_node=$NPROC_PER_NODE and --nnodes=$WORLD_SIZE"))
                if key == "nnodes" and (_refs(val, "RANK") or _refs(val, "NPROC_PER_NODE") or _refs(val, "LOCAL_RANK")
                                        or (_refs(val, "WORLD_SIZE") and "/" in val)):
                    out.append(Violation(
                        rule="world-size-misuse", severity=ERROR,
                        message=f"{where} line {cmd.line}: {key}={val}: PAI-DLC's WORLD_SIZE already counts nodes "
                                "(it is not the number of processes)",
                        fix="use --nnodes=$WORLD_SIZE as it is"))
                if key == "node_rank" and (_refs(val, "WORLD_SIZE") or _refs(val, "LOCAL_RANK")):
                    out.append(Violation(
                        rule="rank-misuse", severity=ERROR,
                        message=f"{where} line {cmd.line}: {key}={val}: the node rank is PAI-DLC's RANK (node index)",
                        fix="use --node_rank=$RANK"))
            if is_torchrun(cmd):
                fl = {k.replace("-", "_"): v for k, v in cmd.flags().items()}
                if _refs(fl.get("master_port", ""), "RANK") or _refs(fl.get("master_addr", ""), "RANK"):
                    out.append(Violation(rule="rank-misuse", severity=ERROR,
                                         message=f"{where} line {cmd.line}: master address/port built from RANK",
                                         fix="use --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT"))
                if (f.nodes or 1) > 1:
                    nn = fl.get("nnodes")
                    if nn is not None and nn.strip().isdigit() and int(nn) != f.nodes:
                        out.append(Violation(
                            rule="nnodes-hardcoded", severity=ERROR,
                            message=f"{where} line {cmd.line}: --nnodes={nn} but the job has {f.nodes} nodes",
                            fix="use --nnodes=$WORLD_SIZE (PAI-DLC) or the job's node count"))
                    if "node_rank" not in fl and f.platform == "pai-dlc":
                        out.append(Violation(
                            rule="rank-misuse", severity=ERROR,
                            message=f"{where} line {cmd.line}: multi-node torchrun without --node_rank: every node "
                                    "would claim rank 0",
                            fix="add --node_rank=$RANK"))
                gpn = _gpus_per_node(f)
                v = fl.get("nproc_per_node")
                if gpn and v and v.isdigit() and int(v) != gpn:
                    out.append(Violation(
                        rule="nproc-mismatch", severity=WARNING,
                        message=f"{where} line {cmd.line}: --nproc_per_node={v} but a node has {gpn} GPU(s)",
                        fix="use --nproc_per_node=$NPROC_PER_NODE (PAI-DLC sets it) or the node's GPU count"))
    return out


def _resume(f: JobFacts) -> bool:
    t = f.train
    if t.get("resume_from_checkpoint") or t.get("load") or (t.get("mcore_model") and t.get("finetune") == "false"):
        return True
    if f.engine == "llamafactory" and str(t.get("overwrite_output_dir", "false")).lower() != "true" \
            and t.get("output_dir"):
        return True  # LLaMA-Factory resumes from the last checkpoint-N in output_dir by itself
    for _, s in f.scripts:
        if re.search(r"resume_from_checkpoint|--auto[-_]resume|--finetune\s+false|--load\s", s.text):
            return True
    return False


def _output_dir(f: JobFacts) -> str | None:
    t = f.train
    return t.get("output_dir") or t.get("save")


def rule_spot(f: JobFacts, o: CheckOptions) -> list[Violation]:
    if not f.spot:
        return []
    out: list[Violation] = []
    out_dir = _output_dir(f)
    on_mount = bool(out_dir) and any(out_dir.rstrip("/").startswith(m.rstrip("/")) for m in f.mounts)
    if not f.mounts or not on_mount:
        where = f"output_dir {out_dir} is not on it" if (f.mounts and out_dir) else \
            ("no output_dir/save path was found" if f.mounts else "the job mounts no persistent storage")
        out.append(Violation(
            rule="spot-no-checkpoint", severity=ERROR,
            message=f"spot instances can be reclaimed at any time, but checkpoints would not survive: {where}",
            fix="mount OSS/NAS/CPFS (DLC DataSources, MountAccess RW), a PVC or a SkyPilot bucket and write "
                "output_dir (with save_steps) under it; `trainfit render --spot` wires this"))
    if not _resume(f):
        out.append(Violation(
            rule="spot-no-resume", severity=ERROR,
            message="spot job without resume: after a preemption the restarted job would start from step 0",
            fix="pass --resume_from_checkpoint <newest checkpoint> (ms-swift/HF), keep overwrite_output_dir false "
                "(LLaMA-Factory), or --mcore_model DIR --finetune false (megatron sft)"))
    return out


def rule_lingjun(f: JobFacts, o: CheckOptions) -> list[Violation]:
    lingjun = [t for t in f.instance_types if _is_lingjun(t)]
    if not lingjun or f.platform != "pai-dlc":
        return []
    out: list[Violation] = []
    vpc_ok = isinstance(f.vpc, dict) and bool(f.vpc.get("VpcId"))
    if not vpc_ok:
        if f.kind == "pai-cli":
            out.append(Violation(
                rule="lingjun-vpc", severity=WARNING,
                message=f"Lingjun instance {lingjun[0]}: Lingjun jobs need a VPC, and this command sets none",
                fix="submit the CreateJob body with UserVpc {VpcId, SwitchId, SecurityGroupId} "
                    "(`trainfit submit dlc_job.json`), or set the VPC with your CLI version's option"))
        else:
            out.append(Violation(
                rule="lingjun-vpc", severity=ERROR,
                message=f"Lingjun instance {lingjun[0]} without a VPC: DLC requires UserVpc for Lingjun resources",
                fix="add UserVpc {VpcId, SwitchId, SecurityGroupId} in the job's region"))
    custom = [i for i in f.images if not i.startswith(PAI_REGISTRIES) and "REPLACE_ME" not in i]
    if custom:
        noted = any("rdma" in (k + v).lower() for k, v in f.envs.items()) or \
            any("rdma" in c.lower() for _, s in f.scripts for c in s.comments)
        if not noted:
            out.append(Violation(
                rule="lingjun-custom-image-rdma", severity=WARNING,
                message=f"custom image {custom[0]} on Lingjun: PAI images carry the RDMA libraries, custom ones "
                        "must install them, or NCCL falls back to TCP",
                fix="install rdma-core/libibverbs and an IB-enabled NCCL in the image, then say so (e.g. Envs "
                    "TRAINFIT_RDMA_NOTE=...), or use a PAI image (dsw-registry...)"))
    return out


def rule_public_cap(f: JobFacts, o: CheckOptions) -> list[Violation]:
    if f.kind not in ("dlc-json", "pai-cli") or f.resource_id or f.spot:
        return []
    if any(_is_lingjun(t) for t in f.instance_types):
        return []
    gpn = _gpus_per_node(f)
    if not gpn or not f.nodes:
        return []
    total = gpn * f.nodes
    if total <= PUBLIC_GPU_CAP:
        return []
    return [Violation(
        rule="public-gpu-cap", severity=ERROR,
        message=f"{total} GPUs on PAI public resources (no ResourceId): the public group allows at most "
                f"{PUBLIC_GPU_CAP} GPU cards per job unless your quota was raised",
        fix="use a resource quota (ResourceId / --resource-id), spot resources, or ask your account manager to "
            "raise the limit")]


def rule_region(f: JobFacts, o: CheckOptions) -> list[Violation]:
    regions = dict(f.regions)
    if o.region:
        regions["--region"] = o.region
    for it in f.instance_types:
        hit, _ = _catalog_instance(it)
        regs = tuple(getattr(hit, "regions", ()) or ()) if hit is not None else ()
        if regs and (o.region or regions) and not any(r in regs for r in regions.values()):
            regions[f"instance {it} (seen only in {', '.join(regs)})"] = regs[0]
    if len(set(regions.values())) <= 1:
        return []
    listing = "; ".join(f"{k}: {v}" for k, v in regions.items())
    return [Violation(rule="region-mismatch", severity=ERROR,
                      message=f"the job names more than one region ({listing})",
                      fix="use one region for the job, its image registry, its OSS/CPFS data and its workspace "
                          "(images: dsw-registry-vpc.<region>.cr.aliyuncs.com)")]


def _int(v: Any) -> int | None:
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
    for name, a, b in (("micro-batch", mb, ds_mb), ("gradient accumulation", ga, ds_ga)):
        if a is not None and b is not None and a != b:
            out.append(Violation(rule="batch-mismatch", severity=ERROR,
                                 message=f"{name}: the training arguments say {a}, the DeepSpeed config {b}",
                                 fix="make them equal (or write \"auto\" in the DeepSpeed config)"))
    mb = mb if mb is not None else ds_mb
    ga = ga if ga is not None else (ds_ga if ds_ga is not None else (1 if f.engine in ("swift", "llamafactory") else None))
    gpn = _gpus_per_node(f)
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
                message=f"DeepSpeed train_batch_size {ds_tbs} != micro-batch {mb} x accumulation {ga} x "
                        f"{dp} data-parallel GPUs = {mb * ga * dp}: DeepSpeed refuses to start",
                fix=f"set train_batch_size to {mb * ga * dp} (or \"auto\"), or change the micro-batch/accumulation"))
        elif dp is None and ds_tbs % (mb * ga):
            out.append(Violation(
                rule="global-batch", severity=ERROR,
                message=f"DeepSpeed train_batch_size {ds_tbs} is not a multiple of micro-batch {mb} x accumulation "
                        f"{ga}: no GPU count makes it consistent",
                fix="set train_batch_size = micro-batch x accumulation x GPUs"))
    gbs = _int(t.get("global_batch_size"))
    if gbs is not None and mb and dp:
        if gbs % (mb * dp):
            out.append(Violation(
                rule="global-batch", severity=ERROR,
                message=f"global_batch_size {gbs} is not a multiple of micro_batch_size {mb} x {dp} data-parallel "
                        "ranks: Megatron refuses to start",
                fix=f"use a multiple of {mb * dp}"))
    return out


def _model_name(f: JobFacts) -> str | None:
    for k in ("model", "model_name_or_path", "model_id_or_path"):
        v = f.train.get(k)
        if v:
            return v
    return None


def workload_from_facts(f: JobFacts) -> tuple[Any, list[str]]:
    """(Workload, assumptions) from the training arguments; raises WorkloadError when inconsistent."""
    from trainfit.workload import Workload

    t, ds = f.train, f.ds_config or {}
    assumed: list[str] = []
    kw: dict[str, Any] = {}
    tuner = (t.get("tuner_type") or t.get("train_type") or t.get("finetuning_type") or "").lower()
    quant4 = t.get("quant_bits") == "4" or t.get("quantization_bit") == "4"
    kw["method"] = ("qlora" if quant4 else "lora") if tuner in ("lora", "qlora") else \
        ("freeze" if tuner == "freeze" else "full")
    if not tuner:
        assumed.append("full fine-tuning")
    seq = _int(t.get("max_length") or t.get("cutoff_len") or t.get("seq_length"))
    if seq is None:
        assumed.append("seq_len 2048")
    else:
        kw["seq_len"] = seq
    mb = _int(t.get("per_device_train_batch_size") or t.get("micro_batch_size") or ds.get("train_micro_batch_size_per_gpu"))
    kw["micro_batch"] = mb or 1
    gc = str(t.get("gradient_checkpointing", "true")).lower()
    kw["grad_ckpt"] = gc not in ("false", "0") and str(t.get("disable_gradient_checkpointing", "false")).lower() != "true" \
        and t.get("recompute_granularity", "full") != "none"
    if t.get("torch_dtype") == "float16" or str(t.get("fp16", "")).lower() == "true":
        kw["precision"] = "fp16"
    attn = (t.get("attn_impl") or t.get("flash_attn") or "").lower()
    kw["attention"] = "flash" if attn in ("flash_attn", "flash_attention_2", "fa2") else ("eager" if attn in ("eager", "disabled") else "sdpa")
    for k, name in (("lora_rank", "lora_rank"), ("lora_alpha", "lora_alpha")):
        if _int(t.get(k)):
            kw[name] = _int(t.get(k))
    zero = ds.get("zero_optimization") if isinstance(ds.get("zero_optimization"), dict) else {}
    stage = _int(zero.get("stage")) if zero else None
    dsarg = t.get("deepspeed", "")
    if stage is None:
        m = re.match(r"^zero(\d)(_offload)?$", dsarg or "")
        if m:
            stage = int(m.group(1))
            if m.group(2):
                kw["offload"] = "all" if stage == 3 else "optimizer"
    if stage in (1, 2, 3):
        kw["strategy"] = f"zero{stage}"
        off_o = (zero.get("offload_optimizer") or {}).get("device") if isinstance(zero.get("offload_optimizer"), dict) else None
        off_p = (zero.get("offload_param") or {}).get("device") if isinstance(zero.get("offload_param"), dict) else None
        if off_p in ("cpu", "nvme"):
            kw["offload"] = "all"
        elif off_o in ("cpu", "nvme"):
            kw["offload"] = "optimizer"
    elif str(t.get("use_distributed_optimizer", "")).lower() == "true" or f.engine == "megatron":
        kw["strategy"] = "zero1"
    for k, name in (("tensor_model_parallel_size", "tp"), ("pipeline_model_parallel_size", "pp"),
                    ("expert_model_parallel_size", "ep"), ("context_parallel_size", "cp")):
        if _int(t.get(k)):
            kw[name] = _int(t.get(k))
    gpn = _gpus_per_node(f) or 1
    nodes = f.nodes or 1
    kw["gpus"], kw["gpus_per_node"] = gpn * nodes, gpn
    ga = _int(t.get("gradient_accumulation_steps") or ds.get("gradient_accumulation_steps"))
    if ga:
        kw["grad_accum"] = ga
    return Workload(**kw), assumed


def rule_memory(f: JobFacts, o: CheckOptions) -> list[Violation]:
    name = _model_name(f)
    if not name:
        return []
    from trainfit.errors import TrainfitError as _TE
    from trainfit.models import get_model

    try:
        model = get_model(name)
    except _TE:
        return []  # a local path or another family: nothing to model
    gpu = o.gpu or f.gpu
    inst = o.instance_type or (f.instance_types[0] if f.instance_types else f.header.get("instance"))
    if not gpu and inst:
        hit, _ = _catalog_instance(inst)
        gpu = getattr(hit, "gpu", None) if hit is not None else None
    if not gpu:
        return []
    try:
        from trainfit.catalog.gpus import get_gpu

        g = get_gpu(gpu)
    except (ImportError, _TE):
        return []
    if g.mem_gib is None:
        return [Violation(rule="memory-fit", severity=INFO,
                          message=f"GPU {g.name}'s memory is not in the catalog, so the fit was not checked",
                          fix="pass --gpu NAME (e.g. H800) or add the GPU to your catalog overlay")]
    try:
        wl, assumed = workload_from_facts(f)
        from trainfit.estimate.memory import estimate_memory

        est = estimate_memory(model, wl)
    except _TE as e:
        return [Violation(rule="memory-fit", severity=WARNING,
                          message=f"the training settings could not be modelled: {e.message}",
                          fix=e.fix or "check the parallel sizes against the GPU count")]
    if est.reserved_gib <= g.usable_mem_gib:
        return []
    extra = f" (assumed {', '.join(assumed)})" if assumed else ""
    return [Violation(
        rule="memory-fit", severity=ERROR,
        message=f"{model.name} {wl.method}, seq {wl.seq_len}, micro-batch {wl.micro_batch}, {wl.strategy}"
                f"{'+offload ' + wl.offload if wl.offload != 'none' else ''} on {wl.gpus} GPU(s): needs "
                f"{est.reserved_gib:.1f} GiB per GPU, {g.name} has {g.usable_mem_gib:.4g} GiB usable{extra}",
        fix="`trainfit memory` with these settings and --gpu lists changes that fit (ZeRO-3, offload, smaller "
            "micro-batch, LoRA, more GPUs)")]


def rule_body_size(f: JobFacts, o: CheckOptions) -> list[Violation]:
    if f.kind == "dlc-json" and f.body_bytes > DLC_BODY_LIMIT:
        return [Violation(rule="dlc-body-size", severity=ERROR,
                          message=f"the CreateJob body is {f.body_bytes} bytes; DLC accepts at most {DLC_BODY_LIMIT}",
                          fix="move long scripts into a code source or a mounted file and call them from UserCommand")]
    return []


def rule_placeholders(f: JobFacts, o: CheckOptions) -> list[Violation]:
    if not f.placeholders:
        return []
    return [Violation(rule="placeholder", severity=WARNING,
                      message="values still to fill in: " + ", ".join(f.placeholders[:6]),
                      fix="replace every REPLACE_ME (VPC ids, OSS bucket, ...) or pass them to `trainfit render`")]


#: Platform rules whose topic a dedicated check above already reports (kept out to avoid duplicates).
_COVERED_PLATFORM_RULES = frozenset({
    "pai-public-quota", "lingjun-needs-vpc", "spot-needs-checkpoints", "region-must-match",
    "dlc-world-size-is-nodes", "dlc-node-rank-not-rank-env", "lingjun-custom-image-rdma",
})


def rule_platform(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """The data-driven platform rules of :mod:`trainfit.rules` (regions, spot job types,
    multi-node networking, storage/VPC, TP over PCIe ...), evaluated on what the file states."""
    from trainfit.rules import JobContext, evaluate

    inst = None
    for it in f.instance_types:
        inst, _ = _catalog_instance(it)
        if inst is not None:
            break
    region = o.region or next(iter(f.regions.values()), None)
    platform = f.platform if f.platform in ("pai-dlc", "tencent-tione") else "generic"
    tp = _int(f.settings.get("tp") or f.train.get("tensor_model_parallel_size") or 1) or 1
    ctx = JobContext(platform=platform, instance=inst, nodes=f.nodes or 1, gpus_per_node=_gpus_per_node(f),
                     spot=f.spot, region=region, vpc=(bool(f.vpc) if f.vpc is not None else None), tp=tp)
    try:
        found = evaluate(ctx)
    except TrainfitError:
        return []
    return [Violation(rule=v.rule, severity=v.severity, message=v.message, fix=v.fix or "")
            for v in found if v.rule not in _COVERED_PLATFORM_RULES]


RULES: tuple[Callable[[JobFacts, CheckOptions], list[Violation]], ...] = (
    rule_unknown_instance, rule_memory, rule_world_size, rule_spot, rule_lingjun, rule_public_cap, rule_region,
    rule_batch, rule_body_size, rule_placeholders, rule_platform)


def run_rules(f: JobFacts, o: CheckOptions) -> list[Violation]:
    out: list[Violation] = []
    for rule in RULES:
        out.extend(rule(f, o))
    return out
