"""Readers of Alibaba PAI-DLC job specs for ``trainfit check``: a CreateJob request body (``dlc_job.json``) and the
``pai dlc job submit`` / legacy ``dlc submit`` command lines, into :class:`~trainfit.check.facts.JobFacts`. The
writer of the same body is ``dlc_writer.py`` beside this file."""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainfit.check.facts import (REGION_IN_OSS, JobFacts, add_script, int_field, is_file, load_json, region_of_image,
                                  type_error, read_text)
from trainfit.check.shell import Script
from trainfit.errors import CheckInputError
from trainfit.i18n import _
from trainfit.json_types import JSON


def read_dlc_json(body: JSON, f: JobFacts) -> None:
    path = f.path
    if not isinstance(body, dict):
        raise type_error(path, _("the CreateJob body"), _("an object"), body)
    f.platform = "pai-dlc"
    specs = body.get("JobSpecs")
    if not isinstance(specs, list) or not specs:
        raise CheckInputError(_("{path}: JobSpecs must be a non-empty list").format(path=path),
                              fix=_("add a Worker JobSpec with PodCount, EcsSpec (or ResourceConfig) and Image"))
    nodes = 0
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise type_error(path, f"JobSpecs[{i}]", _("an object"), spec)
        nodes += int_field(path, f"JobSpecs[{i}].PodCount", spec.get("PodCount"), default=1) or 0
        ecs = spec.get("EcsSpec")
        if ecs is not None:
            if not isinstance(ecs, str):
                raise type_error(path, f"JobSpecs[{i}].EcsSpec", _("a string"), ecs)
            f.instance_types.append(ecs)
        rc = spec.get("ResourceConfig")
        if isinstance(rc, dict) and rc.get("GPU") is not None:
            f.gpus_per_node = int_field(path, f"JobSpecs[{i}].ResourceConfig.GPU", rc.get("GPU"))
            if rc.get("GPUType"):
                f.gpu = str(rc["GPUType"])
        if spec.get("UseSpotInstance") or spec.get("SpotSpec") or spec.get("ElasticSpotSpecs"):
            f.spot = True
        if spec.get("Image"):
            f.images.append(str(spec["Image"]))
        if spec.get("UserCommand"):
            add_script(f, f"JobSpecs[{i}].UserCommand", spec["UserCommand"])
    f.nodes = nodes
    uc = body.get("UserCommand")
    if uc is None and not any(w.startswith("JobSpecs") for w, _s in f.scripts):
        raise CheckInputError(_("{path}: UserCommand is missing").format(path=path),
                              fix=_("add the command every node runs (launch.sh)"))
    if uc is not None:
        add_script(f, "UserCommand", uc)
    f.resource_id = body.get("ResourceId") or None
    vpc = body.get("UserVpc")
    if vpc is not None and not isinstance(vpc, dict):
        raise type_error(path, "UserVpc", _("an object"), vpc)
    f.vpc = vpc
    ds = body.get("DataSources") or []
    if not isinstance(ds, list):
        raise type_error(path, "DataSources", _("a list"), ds)
    for d in ds:
        if isinstance(d, dict) and d.get("MountPath") and str(d.get("MountAccess", "RW")).upper() != "RO":
            f.mounts.append(str(d["MountPath"]))
            m = REGION_IN_OSS.search(str(d.get("Uri", "")))
            if m:
                f.regions[_("data source {uri}").format(uri=d.get("Uri"))] = m.group(1)
    envs = body.get("Envs") or {}
    if isinstance(envs, dict):
        f.envs.update({str(k): str(v) for k, v in envs.items()})
    for ce in body.get("CustomEnvs") or []:
        if isinstance(ce, dict) and ce.get("Key"):
            f.envs[str(ce["Key"])] = str(ce.get("Value", ""))
    if isinstance(body.get("Settings"), dict):
        f.settings = body["Settings"]
    for img in f.images:
        region_of_image(f, img)
    f.body_bytes = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))


def read_pai_cli(script: Script, f: JobFacts) -> bool:
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
                f.nodes = int_field(f.path, "--worker-count", fl["worker-count"])
            for r in roles:
                _role, _sep, kv = r.partition(":")
                opts = dict(p.split("=", 1) for p in kv.split(",") if "=" in p)
                if opts.get("spec"):
                    f.instance_types.append(opts["spec"])
                if opts.get("count"):
                    f.nodes = (f.nodes or 0) + int_field(f.path, _("--role count"), opts["count"])
                if opts.get("spot", "").lower() in ("true", "1", "yes"):
                    f.spot = True
                if opts.get("image"):
                    f.images.append(opts["image"])
            if fl.get("gpu"):
                f.gpus_per_node = int_field(f.path, "--gpu", fl["gpu"])
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
                add_script(f, "--command", _expand_cat(f, command))
            for img in f.images:
                region_of_image(f, img)
            return True
        if len(w) >= 3 and w[0].endswith("dlc") and w[1] == "submit":
            f.kind, f.platform = "pai-cli", "pai-dlc"
            fl = cmd.flags()
            if fl.get("workers"):
                f.nodes = int_field(f.path, "--workers", fl["workers"])
            if fl.get("worker_gpu"):
                f.gpus_per_node = int_field(f.path, "--worker_gpu", fl["worker_gpu"])
            if fl.get("worker_spec"):
                f.instance_types.append(fl["worker_spec"])
            if fl.get("worker_image"):
                f.images.append(fl["worker_image"])
            if fl.get("command"):
                add_script(f, "--command", fl["command"])
            f.resource_id = fl.get("resource_id") or None
            return True
    return False


def _expand_cat(f: JobFacts, value: str) -> str:
    """``$(cat FILE)`` -> FILE's text (relative to the checked file's folder) when it is there."""
    m = re.fullmatch(r"\s*\$\(\s*cat\s+([^)\s]+)\s*\)\s*", value)
    if not m:
        return value
    p = Path(f.path).parent / m.group(1)
    if is_file(p):
        return read_text(p)
    f.notes.append(_("{path} (read by the command) is not beside the file, so it was not checked").format(
        path=m.group(1)))
    return ""


def _pai_cli_body(f: JobFacts, src: str, is_json: bool) -> None:
    text = _expand_cat(f, src) if "$(" in src else src
    if not is_json:
        p = Path(f.path).parent / src
        text = read_text(p) if is_file(p) else ""
    if not text.strip():
        return
    body = load_json(text, _("{path} (request body)").format(path=f.path))
    kind, path = f.kind, f.path
    read_dlc_json(body, f)
    f.kind, f.path = kind, path
