"""``pytorchjob.yaml``: a Kubeflow Training Operator ``PyTorchJob`` (``kubeflow.org/v1``) for Kubernetes
clusters outside PAI (e.g. Tencent TKE).

The operator sets ``MASTER_ADDR``/``MASTER_PORT`` and ``RANK`` (the pod index: Master 0, Worker i -> i+1)
in every pod; ``WORLD_SIZE`` is the pod count in the v1 operator but its meaning changed between operator
versions, so the script passes the node count and GPUs per node as literals and only reads ``$RANK``.
Checkpoints live on a PersistentVolumeClaim mounted at ``/mnt/checkpoints`` (ReadWriteMany for
multi-node jobs); with spot/preemptible nodes the pods restart ``OnFailure`` and resume from it.
"""

from __future__ import annotations




from trainfit.json_types import JSONLike
from trainfit.launch.kit import (ds_config_snippet, dump_yaml, format_args, hash_header, install_snippet,
                                 resume_snippet, sft_only, swift_args, swift_entry, swift_unsupported, CKPT_MOUNT,
                                 RenderContext)

FILES = ("pytorchjob.yaml",)


def applies(ctx: RenderContext) -> str | None:
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    return swift_unsupported(ctx)


def _script(ctx: RenderContext) -> str:
    _, module = swift_entry(ctx)
    return ("set -eu\n" + ("export CUDA_DEVICE_MAX_CONNECTIONS=1\n" if ctx.megatron else "")
            + install_snippet(ctx) + ds_config_snippet(ctx) + resume_snippet(ctx)
            + f"$WATCH torchrun --nnodes={ctx.nodes} --node_rank=$RANK --nproc_per_node={ctx.gpus_per_node} "
              "--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT \\\n"
            + f"    -m {module} \\\n{format_args(swift_args(ctx))} \\\n    $RESUME\n")


def manifest(ctx: RenderContext) -> dict[str, JSONLike]:
    container = {
        "name": "pytorch",  # the operator looks for this container name
        "image": ctx.image,
        "command": ["bash", "-c", _script(ctx)],
        "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
        "resources": {"limits": {"nvidia.com/gpu": ctx.gpus_per_node}},
        "volumeMounts": [{"name": "checkpoints", "mountPath": CKPT_MOUNT}, {"name": "dshm", "mountPath": "/dev/shm"}],
    }
    pod = {"spec": {"containers": [container],
                    "volumes": [{"name": "checkpoints",
                                 "persistentVolumeClaim": {"claimName": f"{ctx.job_name}-checkpoints"}},
                                {"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}
    restart = "OnFailure" if ctx.spot else "Never"
    replicas: dict[str, JSONLike] = {"Master": {"replicas": 1, "restartPolicy": restart, "template": pod}}
    if ctx.nodes > 1:
        replicas["Worker"] = {"replicas": ctx.nodes - 1, "restartPolicy": restart, "template": pod}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": ctx.job_name, "labels": {"app.kubernetes.io/created-by": "trainfit"}},
        "spec": {"runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 10 if ctx.spot else 0},
                 "pytorchReplicaSpecs": replicas},
    }


def render(ctx: RenderContext) -> dict[str, str]:
    note = ""
    if ctx.spot:
        note = ("# spot: schedule on your cluster's spot/preemptible node pool (nodeSelector/tolerations are\n"
                "# cluster-specific, add them to the pod templates); pods restart OnFailure and resume from\n"
                f"# the newest checkpoint on the PVC {ctx.job_name}-checkpoints.\n")
    body = dump_yaml(manifest(ctx))
    return {"pytorchjob.yaml": hash_header(ctx, "pytorchjob.yaml: Kubeflow PyTorchJob") + note + body}
