"""Read a job file into :class:`JobFacts`: what the rules need to know, whatever the file's format.

Formats: PAI-DLC CreateJob JSON, ``pai dlc job submit`` / legacy ``dlc submit`` commands, shell launch
scripts, Kubeflow PyTorchJob YAML, SkyPilot task YAML, DeepSpeed JSON and LLaMA-Factory YAML. YAML is read
with ``yaml.safe_load`` only; every malformed input becomes one :class:`CheckInputError`.
"""

from __future__ import annotations

import re
from pathlib import Path

from trainfit.jobspec.facts import JobFacts, is_file, load_json, load_yaml, plan_facts, read_text, type_error
from trainfit.jobspec.shell import parse_script, training_args
from trainfit.errors import CheckInputError, TrainfitError
from trainfit.i18n import _
from trainfit.targets import target_specs
from trainfit.catalog.gpus import get_gpu
from trainfit.providers.alibaba.dlc_reader import read_dlc_json, read_pai_cli
from trainfit.providers.generic.readers import read_pytorchjob, read_skypilot
from typing import TYPE_CHECKING
from trainfit.json_types import JSON

if TYPE_CHECKING:
    from trainfit.targets import JobReader


def _header(text: str | list) -> dict[str, JSON]:
    """Facts from a trainfit header (``# instance X; gpu Y; spot; region R``, ``gpus N (A node(s) x B)`` and the
    ``trainfit-plan {...}`` line, kept under ``plan``)."""
    out: dict[str, JSON] = {}
    lines = text if isinstance(text, list) else text.splitlines()[:24]
    for line in lines:
        if not isinstance(line, str):
            continue
        s = line.lstrip("#").strip()
        pf = plan_facts(s)
        if pf is not None:
            out["plan"] = pf
            continue
        m = re.search(r"gpus (\d+) \((\d+) node\(s\) x (\d+)\)", s)
        if m and s.startswith("model "):
            out["nodes"], out["gpus_per_node"] = m.group(2), m.group(3)
        if s.startswith("instance "):
            for part in s.split(";"):
                k, _sep, v = part.strip().partition(" ")
                if k in ("instance", "gpu", "region") and v and v != "not set":
                    out[k] = v.strip()
    return out


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


# ------------------------------------------------------------------------------------------------ kinds
def _training_from_scripts(f: JobFacts, base: Path) -> None:
    for _where, script in f.scripts:
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
                if cfg and is_file(base / cfg):
                    _llamafactory_file(f, base / cfg)
        for body in script.heredocs:
            try:
                cfg = load_json(body, f"{f.path} (heredoc)")
            except CheckInputError:
                continue
            if isinstance(cfg, dict) and ("zero_optimization" in cfg or "train_micro_batch_size_per_gpu" in cfg):
                f.ds_config = cfg
    ds = f.train.get("deepspeed")
    if ds and f.ds_config is None and ds.endswith(".json"):
        p = Path(ds) if Path(ds).is_absolute() else base / ds
        if is_file(p):
            try:
                cfg = load_json(read_text(p), str(p))
                if isinstance(cfg, dict):
                    f.ds_config = cfg
            except CheckInputError:
                f.notes.append(_("could not read the DeepSpeed config {path}").format(path=ds))


def _monitoring(sp: str) -> CheckInputError:
    return CheckInputError(_("{path} is a monitoring config (Prometheus scrape config or Grafana dashboard), not a "
                             "training job: there is nothing to check in it").format(path=sp),
                           fix=_("check the launch files (swift_sft.sh, launch.sh, dlc_job.json, ...)"))


def _llamafactory_file(f: JobFacts, p: Path) -> None:
    docs = load_yaml(read_text(p), str(p))
    if docs and isinstance(docs[0], dict):
        _llamafactory(docs[0], f, p.parent)


def _llamafactory(doc: dict, f: JobFacts, base: Path) -> None:
    f.engine = "llamafactory"
    f.train.update({str(k): ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
                    for k, v in doc.items()})
    ds = doc.get("deepspeed")
    if isinstance(ds, str) and ds.endswith(".json"):
        p = Path(ds) if Path(ds).is_absolute() else base / ds
        if is_file(p):
            try:
                cfg = load_json(read_text(p), str(p))
                f.ds_config = cfg if isinstance(cfg, dict) else None
            except CheckInputError:
                f.notes.append(_("could not read the DeepSpeed config {path}").format(path=ds))


def _deepspeed(cfg: dict, f: JobFacts) -> None:
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        v = cfg.get(key)
        if v is not None and v != "auto" and (isinstance(v, bool) or not isinstance(v, int)):
            raise type_error(f.path, key, _('an integer or "auto"'), v)
    zero = cfg.get("zero_optimization")
    if zero is not None and not isinstance(zero, dict):
        raise type_error(f.path, "zero_optimization", _("an object"), zero)
    f.ds_config = cfg
    meta = cfg.get("_trainfit")
    if isinstance(meta, dict) and isinstance(meta.get("header"), list):
        f.header = _header(meta["header"][:24])


def _unknown_mem(gpu: str) -> bool:
    try:
        return get_gpu(gpu).mem_gib is None
    except TrainfitError:
        return True


def read_facts(path: str | Path) -> JobFacts:
    """Parse ``path`` into :class:`JobFacts` (raises :class:`CheckInputError`): a value of the wrong type anywhere
    in the file (a string where a mapping belongs, a list for a number...) is one clear error, never a traceback."""
    try:
        return _read_facts(path)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError) as e:
        raise CheckInputError(_("{path}: a field has the wrong type or shape ({error})").format(
            path=str(path)[:200], error=f"{type(e).__name__}: {str(e)[:120]}"),
            fix=_("compare the file with the format's documentation; `trainfit render` writes valid examples")) from None


def _json_facts(text: str, sp: str, f: JobFacts) -> None:
    """A JSON job file: a PAI-DLC CreateJob body or a DeepSpeed config (a dashboard or a plan is a clear error)."""
    data = load_json(text, sp)
    if isinstance(data, dict) and ("JobSpecs" in data or "UserCommand" in data or "JobType" in data):
        f.kind = "dlc-json"
        read_dlc_json(data, f)
    elif isinstance(data, dict) and any(k in data for k in ("zero_optimization", "train_micro_batch_size_per_gpu",
                                                            "train_batch_size", "bf16", "fp16")):
        f.kind = "deepspeed"
        _deepspeed(data, f)
    elif isinstance(data, dict) and "panels" in data:
        raise _monitoring(sp)
    elif isinstance(data, dict) and str(data.get("schema", "")).startswith("trainfit.plan"):
        raise CheckInputError(_("{path} is a trainfit plan (`trainfit plan --json`), not a job file").format(path=sp),
                              fix=_("render it first: `trainfit render --plan {path} --out job/`, then "
                                    "`trainfit check job/<file>`").format(path=sp))
    else:
        raise CheckInputError(_("{path}: JSON of unknown kind (neither a PAI-DLC CreateJob body nor a DeepSpeed "
                                "config)").format(path=sp),
                              fix=_("pass a DLC job JSON (JobSpecs, UserCommand) or a ds_config.json"))


def _registered_reader(path: str, text: str) -> JobReader | None:
    """The :class:`~trainfit.targets.JobReader` of the first registered target that claims the file (the
    built-in targets have none: their formats are read below)."""
    return next((s.reader for s in target_specs() if s.reader is not None and s.reader.matches(path, text)), None)


def _read_facts(path: str | Path) -> JobFacts:
    p = Path(path)
    text = read_text(p)
    sp = str(path)
    suffix = p.suffix.lower()
    f = JobFacts(kind="unknown", path=sp)
    f.header = _header(text)
    _placeholders(f, text)
    stripped = text.lstrip()
    reader = _registered_reader(sp, text)
    if reader is not None:  # a target registered from outside (targets.register_target) reads its own files
        f.kind = reader.kind
        reader.read(sp, text, f)
    elif suffix == ".json" or (suffix not in (".yaml", ".yml", ".sh", ".bash") and stripped.startswith("{")):
        _json_facts(text, sp, f)
    elif suffix in (".yaml", ".yml"):
        docs = load_yaml(text, sp)
        doc = next((d for d in docs if isinstance(d, dict)), None)
        if doc is None:
            raise CheckInputError(_("{path}: the YAML holds no mapping").format(path=sp),
                                  fix=_("pass a PyTorchJob, SkyPilot or LLaMA-Factory YAML"))
        if doc.get("kind") == "PyTorchJob":
            f.kind = "pytorchjob"
            read_pytorchjob(doc, f)
        elif any(k in doc for k in ("model_name_or_path", "finetuning_type", "stage")):
            f.kind = "llamafactory"
            _llamafactory(doc, f, p.parent)
        elif any(k in doc for k in ("run", "resources", "num_nodes", "setup", "file_mounts")):
            f.kind = "skypilot"
            read_skypilot(doc, f)
        elif "scrape_configs" in doc:
            raise _monitoring(sp)
        else:
            raise CheckInputError(_("{path}: YAML of unknown kind (not a PyTorchJob, SkyPilot task or LLaMA-Factory "
                                    "config)").format(path=sp), fix=_("pass one of those, or a shell script / DLC JSON"))
    else:
        script = parse_script(text)
        if not script.commands:
            raise CheckInputError(_("{path}: no commands found").format(path=sp),
                                  fix=_("pass a launch script, a `pai dlc job submit` command, or a JSON/YAML job "
                                        "spec"))
        if not read_pai_cli(script, f):
            f.kind = "shell"
            f.scripts.append((_("script"), script))
            if any(v in text for v in ("$WORLD_SIZE", "${WORLD_SIZE", "$MASTER_ADDR", "${MASTER_ADDR")):
                f.platform = "pai-dlc" if "PAI" in text or "DLC" in text else "generic"
        else:
            f.scripts.append((_("script"), script))
    _training_from_scripts(f, p.parent)
    if not f.header:
        for _where, script in f.scripts:
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
