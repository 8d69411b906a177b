"""Read a job file into :class:`JobFacts`: what the rules need to know, whatever the file's format.

Formats: PAI-DLC CreateJob JSON, ``pai dlc job submit`` / legacy ``dlc submit`` commands, shell launch
scripts, Kubeflow PyTorchJob YAML, SkyPilot task YAML, DeepSpeed JSON and LLaMA-Factory YAML. YAML is read
with ``yaml.safe_load`` only; every malformed input becomes one :class:`CheckInputError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainfit.check.shell import Script, parse_script, training_args
from trainfit.errors import CheckInputError, TrainfitError

MAX_BYTES = 2 * 2**20
_REGION_IN_IMAGE = re.compile(r"\.((?:cn|ap|us|eu|me)-[a-z0-9-]+?)\.(?:cr\.)?aliyuncs\.com")
_REGION_IN_OSS = re.compile(r"oss-((?:cn|ap|us|eu|me)-[a-z0-9-]+?)(?:-internal)?\.aliyuncs\.com")


@dataclass
class JobFacts:
    kind: str
    """dlc-json | pai-cli | shell | pytorchjob | skypilot | deepspeed | llamafactory."""
    path: str = ""
    platform: str = "generic"
    """pai-dlc | kubernetes | skypilot | generic (decides how WORLD_SIZE/RANK are read)."""
    instance_types: list[str] = field(default_factory=list)
    nodes: int | None = None
    gpus_per_node: int | None = None
    gpu: str | None = None
    spot: bool = False
    resource_id: str | None = None
    vpc: dict[str, Any] | None = None
    mounts: list[str] = field(default_factory=list)
    """Persistent mount paths (OSS/NAS/CPFS data sources, PVCs, SkyPilot buckets)."""
    images: list[str] = field(default_factory=list)
    regions: dict[str, str] = field(default_factory=dict)
    """where -> region id, from image registries, OSS endpoints, the catalog."""
    envs: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    scripts: list[tuple[str, Script]] = field(default_factory=list)
    """(where, parsed script) of every shell text in the file (UserCommand, container command, run...)."""
    engine: str | None = None
    train: dict[str, str] = field(default_factory=dict)
    """Training arguments found (ms-swift/LLaMA-Factory names as written)."""
    ds_config: dict[str, Any] | None = None
    header: dict[str, Any] = field(default_factory=dict)
    """``key value`` facts of a trainfit header, if the file has one."""
    placeholders: list[str] = field(default_factory=list)
    body_bytes: int = 0
    notes: list[str] = field(default_factory=list)


def read_text(path: str | Path) -> str:
    """UTF-8 text of a job file through the input gate (regular file, bounded read, no binary)."""
    from trainfit.inputs import read_text_file

    return read_text_file(path, max_bytes=MAX_BYTES, what="job file", error=CheckInputError,
                          fix="pass a job file (JSON, YAML or a shell script)")


def _load_json(text: str, path: str) -> Any:
    from trainfit.inputs import loads_json

    return loads_json(text, what=str(path), error=CheckInputError)


def _load_yaml(text: str, path: str) -> list[Any]:
    from trainfit.inputs import loads_yaml_all

    return loads_yaml_all(text, what=str(path), error=CheckInputError)


def _is_file(p: Path) -> bool:
    """``Path.is_file`` that says False for names the OS refuses (too long, NUL bytes) instead of raising."""
    try:
        return Path(p).is_file()
    except (OSError, ValueError):
        return False


def _type_error(path: str, what: str, expected: str, got: Any) -> CheckInputError:
    return CheckInputError(f"{path}: {what} must be {expected}, not {type(got).__name__} ({got!r:.60})",
                           fix=f"write {what} as {expected}")


def _int(path: str, what: str, v: Any, *, default: int | None = None) -> int | None:
    if v is None:
        return default
    from trainfit.inputs import InputError, as_int

    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _type_error(path, what, "an integer", v)
    try:
        return as_int(what, v, lo=0, hi=1_000_000)
    except InputError as e:
        raise CheckInputError(f"{path}: {what} must be an integer in [0, 1000000] ({e.message})",
                              fix=f"write {what} as a whole number") from None


def _plan_facts(line: str) -> dict | None:
    """The machine-readable ``trainfit-plan {...}`` header line (what render wrote), or None."""
    if not line.startswith("trainfit-plan {") or len(line) > 8192:
        return None
    try:
        d = json.loads(line[len("trainfit-plan "):])
    except (ValueError, RecursionError):
        return None
    return d if isinstance(d, dict) else None


def _header(text: str | list) -> dict[str, Any]:
    """Facts from a trainfit header (``# instance X; gpu Y; spot; region R``, ``gpus N (A node(s) x B)`` and the
    ``trainfit-plan {...}`` line, kept under ``plan``)."""
    out: dict[str, Any] = {}
    lines = text if isinstance(text, list) else text.splitlines()[:24]
    for line in lines:
        if not isinstance(line, str):
            continue
        s = line.lstrip("#").strip()
        pf = _plan_facts(s)
        if pf is not None:
            out["plan"] = pf
            continue
        m = re.search(r"gpus (\d+) \((\d+) node\(s\) x (\d+)\)", s)
        if m and s.startswith("model "):
            out["nodes"], out["gpus_per_node"] = m.group(2), m.group(3)
        if s.startswith("instance "):
            for part in s.split(";"):
                k, _, v = part.strip().partition(" ")
                if k in ("instance", "gpu", "region") and v and v != "not set":
                    out[k] = v.strip()
    return out


def _add_script(f: JobFacts, where: str, text: str) -> None:
    if not isinstance(text, str):
        raise _type_error(f.path, where, "a string", text)
    f.scripts.append((where, parse_script(text)))


def _placeholders(f: JobFacts, text: str) -> None:
    # str.find + a bounded walk instead of a regex with a leading ``[...]*`` (quadratic on long runs)
    ok = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:-")
    i = text.find("REPLACE_ME")
    while i >= 0 and len(f.placeholders) < 100:
        a, b = i, i + len("REPLACE_ME")
        while a > 0 and i - a < 200 and text[a - 1] in ok:
            a -= 1
        while b < len(text) and b - i < 200 and text[b] in ok:
            b += 1
        if text[a:b] not in f.placeholders:
            f.placeholders.append(text[a:b])
        i = text.find("REPLACE_ME", b)


def _region_of_image(f: JobFacts, image: str) -> None:
    m = _REGION_IN_IMAGE.search(image)
    if m:
        f.regions[f"image {image}"] = m.group(1)


# ------------------------------------------------------------------------------------------------ kinds
def _dlc(body: Any, f: JobFacts) -> None:
    path = f.path
    if not isinstance(body, dict):
        raise _type_error(path, "the CreateJob body", "an object", body)
    f.platform = "pai-dlc"
    specs = body.get("JobSpecs")
    if not isinstance(specs, list) or not specs:
        raise CheckInputError(f"{path}: JobSpecs must be a non-empty list", fix="add a Worker JobSpec with PodCount, "
                              "EcsSpec (or ResourceConfig) and Image")
    nodes = 0
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise _type_error(path, f"JobSpecs[{i}]", "an object", spec)
        nodes += _int(path, f"JobSpecs[{i}].PodCount", spec.get("PodCount"), default=1) or 0
        ecs = spec.get("EcsSpec")
        if ecs is not None:
            if not isinstance(ecs, str):
                raise _type_error(path, f"JobSpecs[{i}].EcsSpec", "a string", ecs)
            f.instance_types.append(ecs)
        rc = spec.get("ResourceConfig")
        if isinstance(rc, dict) and rc.get("GPU") is not None:
            f.gpus_per_node = _int(path, f"JobSpecs[{i}].ResourceConfig.GPU", rc.get("GPU"))
            if rc.get("GPUType"):
                f.gpu = str(rc["GPUType"])
        if spec.get("UseSpotInstance") or spec.get("SpotSpec") or spec.get("ElasticSpotSpecs"):
            f.spot = True
        if spec.get("Image"):
            f.images.append(str(spec["Image"]))
        if spec.get("UserCommand"):
            _add_script(f, f"JobSpecs[{i}].UserCommand", spec["UserCommand"])
    f.nodes = nodes
    uc = body.get("UserCommand")
    if uc is None and not any(w.startswith("JobSpecs") for w, _ in f.scripts):
        raise CheckInputError(f"{path}: UserCommand is missing", fix="add the command every node runs (launch.sh)")
    if uc is not None:
        _add_script(f, "UserCommand", uc)
    f.resource_id = body.get("ResourceId") or None
    vpc = body.get("UserVpc")
    if vpc is not None and not isinstance(vpc, dict):
        raise _type_error(path, "UserVpc", "an object", vpc)
    f.vpc = vpc
    ds = body.get("DataSources") or []
    if not isinstance(ds, list):
        raise _type_error(path, "DataSources", "a list", ds)
    for d in ds:
        if isinstance(d, dict) and d.get("MountPath") and str(d.get("MountAccess", "RW")).upper() != "RO":
            f.mounts.append(str(d["MountPath"]))
            m = _REGION_IN_OSS.search(str(d.get("Uri", "")))
            if m:
                f.regions[f"data source {d.get('Uri')}"] = m.group(1)
    envs = body.get("Envs") or {}
    if isinstance(envs, dict):
        f.envs.update({str(k): str(v) for k, v in envs.items()})
    for ce in body.get("CustomEnvs") or []:
        if isinstance(ce, dict) and ce.get("Key"):
            f.envs[str(ce["Key"])] = str(ce.get("Value", ""))
    if isinstance(body.get("Settings"), dict):
        f.settings = body["Settings"]
    for img in f.images:
        _region_of_image(f, img)
    f.body_bytes = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))


def _pai_cli(script: Script, f: JobFacts) -> bool:
    """Fill facts from a ``pai dlc job submit`` or legacy ``dlc submit`` command; False when none."""
    for cmd in script.commands:
        w = cmd.words
        if len(w) >= 4 and w[0] == "pai" and w[1:4] == ["dlc", "job", "submit"]:
            f.kind, f.platform = "pai-cli", "pai-dlc"
            fl = cmd.flags()
            roles = [cmd.words[i + 1] for i, t in enumerate(cmd.words[:-1]) if t == "--role"]
            if fl.get("worker-spec"):
                f.instance_types.append(fl["worker-spec"])
            if fl.get("worker-count"):
                f.nodes = _int(f.path, "--worker-count", fl["worker-count"])
            for r in roles:
                _, _, kv = r.partition(":")
                opts = dict(p.split("=", 1) for p in kv.split(",") if "=" in p)
                if opts.get("spec"):
                    f.instance_types.append(opts["spec"])
                if opts.get("count"):
                    f.nodes = (f.nodes or 0) + _int(f.path, "--role count", opts["count"])
                if opts.get("spot", "").lower() in ("true", "1", "yes"):
                    f.spot = True
                if opts.get("image"):
                    f.images.append(opts["image"])
            if fl.get("gpu"):
                f.gpus_per_node = _int(f.path, "--gpu", fl["gpu"])
            if fl.get("gpu-type"):
                f.gpu = fl["gpu-type"]
            if fl.get("image"):
                f.images.append(fl["image"])
            f.resource_id = fl.get("resource-id") or None
            if any(k.startswith("vpc") for k in fl):
                f.vpc = {"VpcId": fl.get("vpc-id", "set")}
            body_src = fl.get("body-json") or fl.get("from-file")
            if body_src:
                _pai_cli_body(f, body_src, bool(fl.get("body-json")))
            command = fl.get("command", "")
            if command:
                _add_script(f, "--command", _expand_cat(f, command))
            for img in f.images:
                _region_of_image(f, img)
            return True
        if len(w) >= 3 and w[0].endswith("dlc") and w[1] == "submit":
            f.kind, f.platform = "pai-cli", "pai-dlc"
            fl = cmd.flags()
            if fl.get("workers"):
                f.nodes = _int(f.path, "--workers", fl["workers"])
            if fl.get("worker_gpu"):
                f.gpus_per_node = _int(f.path, "--worker_gpu", fl["worker_gpu"])
            if fl.get("worker_spec"):
                f.instance_types.append(fl["worker_spec"])
            if fl.get("worker_image"):
                f.images.append(fl["worker_image"])
            if fl.get("command"):
                _add_script(f, "--command", fl["command"])
            f.resource_id = fl.get("resource_id") or None
            return True
    return False


def _expand_cat(f: JobFacts, value: str) -> str:
    """``$(cat FILE)`` -> FILE's text (relative to the checked file's folder) when it is there."""
    m = re.fullmatch(r"\s*\$\(\s*cat\s+([^)\s]+)\s*\)\s*", value)
    if not m:
        return value
    p = Path(f.path).parent / m.group(1)
    if _is_file(p):
        return read_text(p)
    f.notes.append(f"{m.group(1)} (read by the command) is not beside the file, so it was not checked")
    return ""


def _pai_cli_body(f: JobFacts, src: str, is_json: bool) -> None:
    text = _expand_cat(f, src) if "$(" in src else src
    if not is_json:
        p = Path(f.path).parent / src
        text = read_text(p) if _is_file(p) else ""
    if not text.strip():
        return
    body = _load_json(text, f"{f.path} (request body)")
    kind, path = f.kind, f.path
    _dlc(body, f)
    f.kind, f.path = kind, path


def _pytorchjob(doc: dict, f: JobFacts) -> None:
    f.platform = "kubernetes"
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise _type_error(f.path, "spec", "a mapping", spec)
    reps = spec.get("pytorchReplicaSpecs")
    if not isinstance(reps, dict) or not reps:
        raise CheckInputError(f"{f.path}: spec.pytorchReplicaSpecs is missing",
                              fix="add Master (and Worker) replica specs")
    nodes = 0
    for role, r in reps.items():
        if not isinstance(r, dict):
            raise _type_error(f.path, f"pytorchReplicaSpecs.{role}", "a mapping", r)
        n = _int(f.path, f"pytorchReplicaSpecs.{role}.replicas", r.get("replicas"), default=1) or 0
        nodes += n
        pod = ((r.get("template") or {}).get("spec") or {}) if isinstance(r.get("template"), dict) else {}
        vols = {v.get("name"): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
        for c in pod.get("containers") or []:
            if not isinstance(c, dict):
                continue
            if c.get("image"):
                f.images.append(str(c["image"]))
            lim = ((c.get("resources") or {}).get("limits") or {})
            g = lim.get("nvidia.com/gpu")
            if g is not None:
                f.gpus_per_node = _int(f.path, f"{role} nvidia.com/gpu limit", g)
            cmd = list(c.get("command") or []) + list(c.get("args") or [])
            if cmd:
                if len(cmd) >= 3 and cmd[0] in ("bash", "sh", "/bin/bash", "/bin/sh") and cmd[1] == "-c":
                    _add_script(f, f"{role} command", str(cmd[2]))
                else:
                    _add_script(f, f"{role} command", " ".join(str(x) for x in cmd))
            for vm in c.get("volumeMounts") or []:
                v = vols.get(vm.get("name")) if isinstance(vm, dict) else None
                if isinstance(v, dict) and any(k in v for k in ("persistentVolumeClaim", "nfs", "csi", "hostPath")):
                    if vm.get("mountPath") not in f.mounts:
                        f.mounts.append(str(vm.get("mountPath")))
            for e in c.get("env") or []:
                if isinstance(e, dict) and e.get("name"):
                    f.envs[str(e["name"])] = str(e.get("value", ""))
    f.nodes = nodes


def _skypilot(doc: dict, f: JobFacts) -> None:
    f.platform = "skypilot"
    f.nodes = _int(f.path, "num_nodes", doc.get("num_nodes"), default=1)
    res = doc.get("resources") or {}
    if not isinstance(res, dict):
        raise _type_error(f.path, "resources", "a mapping", res)
    acc = res.get("accelerators")
    if isinstance(acc, str):
        name, _, n = acc.partition(":")
        f.gpu = name or None
        f.gpus_per_node = int(n) if n.isdigit() else 1
    elif isinstance(acc, dict) and acc:
        name, n = next(iter(acc.items()))
        f.gpu, f.gpus_per_node = str(name), int(n or 1)
    if res.get("instance_type"):
        f.instance_types.append(str(res["instance_type"]))
    f.spot = bool(res.get("use_spot"))
    if res.get("region"):
        f.regions["resources.region"] = str(res["region"])
    if res.get("job_recovery") is not None:
        f.settings["job_recovery"] = res["job_recovery"]
    fm = doc.get("file_mounts") or {}
    if not isinstance(fm, dict):
        raise _type_error(f.path, "file_mounts", "a mapping", fm)
    for target, src in fm.items():
        if isinstance(src, dict) and (src.get("mode", "MOUNT") in ("MOUNT", "MOUNT_CACHED") or src.get("store")):
            f.mounts.append(str(target))
        elif isinstance(src, str) and "://" in src:
            f.mounts.append(str(target))
    envs = doc.get("envs") or {}
    if isinstance(envs, dict):
        f.envs.update({str(k): str(v) for k, v in envs.items()})
    for key in ("setup", "run"):
        if doc.get(key):
            _add_script(f, key, doc[key])


def _training_from_scripts(f: JobFacts, base: Path) -> None:
    for _, script in f.scripts:
        for cmd in script.commands:
            got = training_args(cmd)
            if not got:
                continue
            engine, flags = got
            if engine == "script" and f.engine:
                continue
            f.engine = engine
            f.train.update({k: v for k, v in flags.items()})
            if engine == "llamafactory":
                cfg = next((w for w in cmd.words[2:] if w.endswith((".yaml", ".yml", ".json"))), None)
                if cfg and _is_file(base / cfg):
                    _llamafactory_file(f, base / cfg)
        for body in script.heredocs:
            try:
                cfg = _load_json(body, f"{f.path} (heredoc)")
            except CheckInputError:
                continue
            if isinstance(cfg, dict) and ("zero_optimization" in cfg or "train_micro_batch_size_per_gpu" in cfg):
                f.ds_config = cfg
    ds = f.train.get("deepspeed")
    if ds and f.ds_config is None and ds.endswith(".json"):
        p = Path(ds) if Path(ds).is_absolute() else base / ds
        if _is_file(p):
            try:
                cfg = _load_json(read_text(p), str(p))
                if isinstance(cfg, dict):
                    f.ds_config = cfg
            except CheckInputError:
                f.notes.append(f"could not read the DeepSpeed config {ds}")


def _llamafactory_file(f: JobFacts, p: Path) -> None:
    docs = _load_yaml(read_text(p), str(p))
    if docs and isinstance(docs[0], dict):
        _llamafactory(docs[0], f, p.parent)


def _llamafactory(doc: dict, f: JobFacts, base: Path) -> None:
    f.engine = "llamafactory"
    f.train.update({str(k): ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
                    for k, v in doc.items()})
    ds = doc.get("deepspeed")
    if isinstance(ds, str) and ds.endswith(".json"):
        p = Path(ds) if Path(ds).is_absolute() else base / ds
        if _is_file(p):
            try:
                cfg = _load_json(read_text(p), str(p))
                f.ds_config = cfg if isinstance(cfg, dict) else None
            except CheckInputError:
                f.notes.append(f"could not read the DeepSpeed config {ds}")


def _deepspeed(cfg: dict, f: JobFacts) -> None:
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        v = cfg.get(key)
        if v is not None and v != "auto" and (isinstance(v, bool) or not isinstance(v, int)):
            raise _type_error(f.path, key, 'an integer or "auto"', v)
    zero = cfg.get("zero_optimization")
    if zero is not None and not isinstance(zero, dict):
        raise _type_error(f.path, "zero_optimization", "an object", zero)
    f.ds_config = cfg
    meta = cfg.get("_trainfit")
    if isinstance(meta, dict) and isinstance(meta.get("header"), list):
        f.header = _header(meta["header"][:24])


def _unknown_mem(gpu: str) -> bool:
    try:
        from trainfit.catalog.gpus import get_gpu

        return get_gpu(gpu).mem_gib is None
    except (ImportError, TrainfitError):
        return True


def read_facts(path: str | Path) -> JobFacts:
    """Parse ``path`` into :class:`JobFacts` (raises :class:`CheckInputError`): a value of the wrong type anywhere
    in the file (a string where a mapping belongs, a list for a number...) is one clear error, never a traceback."""
    try:
        return _read_facts(path)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError) as e:
        raise CheckInputError(f"{str(path)[:200]}: a field has the wrong type or shape ({type(e).__name__}: "
                              f"{str(e)[:120]})", fix="compare the file with the format's documentation; "
                              "`trainfit render` writes valid examples") from None


def _read_facts(path: str | Path) -> JobFacts:
    p = Path(path)
    text = read_text(p)
    sp = str(path)
    suffix = p.suffix.lower()
    f = JobFacts(kind="unknown", path=sp)
    f.header = _header(text)
    _placeholders(f, text)
    stripped = text.lstrip()
    if suffix == ".json" or (suffix not in (".yaml", ".yml", ".sh", ".bash") and stripped.startswith("{")):
        data = _load_json(text, sp)
        if isinstance(data, dict) and ("JobSpecs" in data or "UserCommand" in data or "JobType" in data):
            f.kind = "dlc-json"
            _dlc(data, f)
        elif isinstance(data, dict) and any(k in data for k in ("zero_optimization", "train_micro_batch_size_per_gpu",
                                                                "train_batch_size", "bf16", "fp16")):
            f.kind = "deepspeed"
            _deepspeed(data, f)
        else:
            raise CheckInputError(f"{sp}: JSON of unknown kind (neither a PAI-DLC CreateJob body nor a DeepSpeed "
                                  "config)", fix="pass a DLC job JSON (JobSpecs, UserCommand) or a ds_config.json")
    elif suffix in (".yaml", ".yml"):
        docs = _load_yaml(text, sp)
        doc = next((d for d in docs if isinstance(d, dict)), None)
        if doc is None:
            raise CheckInputError(f"{sp}: the YAML holds no mapping", fix="pass a PyTorchJob, SkyPilot or "
                                  "LLaMA-Factory YAML")
        if doc.get("kind") == "PyTorchJob":
            f.kind = "pytorchjob"
            _pytorchjob(doc, f)
        elif any(k in doc for k in ("model_name_or_path", "finetuning_type", "stage")):
            f.kind = "llamafactory"
            _llamafactory(doc, f, p.parent)
        elif any(k in doc for k in ("run", "resources", "num_nodes", "setup", "file_mounts")):
            f.kind = "skypilot"
            _skypilot(doc, f)
        else:
            raise CheckInputError(f"{sp}: YAML of unknown kind (not a PyTorchJob, SkyPilot task or LLaMA-Factory "
                                  "config)", fix="pass one of those, or a shell script / DLC JSON")
    else:
        script = parse_script(text)
        if not script.commands:
            raise CheckInputError(f"{sp}: no commands found", fix="pass a launch script, a `pai dlc job submit` "
                                  "command, or a JSON/YAML job spec")
        if not _pai_cli(script, f):
            f.kind = "shell"
            f.scripts.append(("script", script))
            if any(v in text for v in ("$WORLD_SIZE", "${WORLD_SIZE", "$MASTER_ADDR", "${MASTER_ADDR")):
                f.platform = "pai-dlc" if "PAI" in text or "DLC" in text else "generic"
        else:
            f.scripts.append(("script", script))
    _training_from_scripts(f, p.parent)
    if not f.header:
        for _, script in f.scripts:
            f.header = _header(script.text)
            if f.header:
                break
    if f.header.get("gpu") and (not f.gpu or _unknown_mem(f.gpu)):
        f.gpu = f.header["gpu"]
    if f.nodes is None and f.header.get("nodes"):
        f.nodes = int(f.header["nodes"])
    if f.gpus_per_node is None and f.header.get("gpus_per_node") and not f.instance_types:
        f.gpus_per_node = int(f.header["gpus_per_node"])
    return f
