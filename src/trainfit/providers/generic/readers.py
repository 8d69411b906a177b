"""Readers of Kubeflow PyTorchJob and SkyPilot task specs for ``trainfit check``, into
:class:`~trainfit.jobspec.facts.JobFacts`. Their writers are ``pytorchjob.py`` and ``skypilot.py`` beside this file."""

from __future__ import annotations

from trainfit.jobspec.facts import JobFacts, add_script, int_field, type_error
from trainfit.errors import CheckInputError
from trainfit.i18n import _


def read_pytorchjob(doc: dict, f: JobFacts) -> None:
    f.platform = "kubernetes"
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise type_error(f.path, "spec", _("a mapping"), spec)
    reps = spec.get("pytorchReplicaSpecs")
    if not isinstance(reps, dict) or not reps:
        raise CheckInputError(_("{path}: spec.pytorchReplicaSpecs is missing").format(path=f.path),
                              fix=_("add Master (and Worker) replica specs"))
    nodes = 0
    for role, r in reps.items():
        if not isinstance(r, dict):
            raise type_error(f.path, f"pytorchReplicaSpecs.{role}", _("a mapping"), r)
        n = int_field(f.path, f"pytorchReplicaSpecs.{role}.replicas", r.get("replicas"), default=1) or 0
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
                f.gpus_per_node = int_field(f.path, _("{role} nvidia.com/gpu limit").format(role=role), g)
            cmd = list(c.get("command") or []) + list(c.get("args") or [])
            if cmd:
                if len(cmd) >= 3 and cmd[0] in ("bash", "sh", "/bin/bash", "/bin/sh") and cmd[1] == "-c":
                    add_script(f, _("{role} command").format(role=role), str(cmd[2]))
                else:
                    add_script(f, _("{role} command").format(role=role), " ".join(str(x) for x in cmd))
            for vm in c.get("volumeMounts") or []:
                v = vols.get(vm.get("name")) if isinstance(vm, dict) else None
                if isinstance(v, dict) and any(k in v for k in ("persistentVolumeClaim", "nfs", "csi", "hostPath")):
                    if vm.get("mountPath") not in f.mounts:
                        f.mounts.append(str(vm.get("mountPath")))
            for e in c.get("env") or []:
                if isinstance(e, dict) and e.get("name"):
                    f.envs[str(e["name"])] = str(e.get("value", ""))
    f.nodes = nodes


def read_skypilot(doc: dict, f: JobFacts) -> None:
    f.platform = "skypilot"
    f.nodes = int_field(f.path, "num_nodes", doc.get("num_nodes"), default=1)
    res = doc.get("resources") or {}
    if not isinstance(res, dict):
        raise type_error(f.path, "resources", _("a mapping"), res)
    acc = res.get("accelerators")
    if isinstance(acc, str):
        name, _sep, n = acc.partition(":")
        f.gpu = name or None
        f.gpus_per_node = int(n) if n.isdecimal() else 1
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
        raise type_error(f.path, "file_mounts", _("a mapping"), fm)
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
            add_script(f, key, doc[key])
