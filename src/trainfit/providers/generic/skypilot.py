"""``skypilot.yaml``: a SkyPilot task (any cloud or Kubernetes SkyPilot reaches; Tencent Cloud users run
it on their own Kubernetes cluster) with ``num_nodes``, ``accelerators``, ``use_spot``, a bucket mounted at
``/mnt/checkpoints`` and, with spot, ``job_recovery`` (launch with ``sky jobs launch`` so a preempted job is
recovered and resumes from the bucket).

SkyPilot's variables: ``SKYPILOT_NUM_NODES``, ``SKYPILOT_NODE_RANK``, ``SKYPILOT_NODE_IPS`` (head first),
``SKYPILOT_NUM_GPUS_PER_NODE``.
"""

from __future__ import annotations




from trainfit.json_types import JSONLike
from trainfit.launch.kit import (ds_config_snippet, dump_yaml, format_args, hash_header, install_snippet,
                                 resume_snippet, sft_only, swift_args, swift_entry, swift_unsupported, CKPT_MOUNT,
                                 RenderContext)

FILES = ("skypilot.yaml",)
#: catalog name -> SkyPilot accelerator name (others pass through with the form factor suffix dropped).
SKY_GPU = {"A100-80GB-SXM": "A100-80GB", "A100-80GB-PCIe": "A100-80GB", "A100-40GB-SXM": "A100",
           "A100-40GB-PCIe": "A100", "H100-SXM": "H100", "H100-PCIe": "H100", "H200-SXM": "H200",
           "V100-16GB": "V100", "V100-32GB": "V100-32GB", "A800-80GB-SXM": "A800", "H800-SXM": "H800"}


def applies(ctx: RenderContext) -> str | None:
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    return swift_unsupported(ctx)


def accelerator(ctx: RenderContext) -> str:
    name = ctx.gpu or "REPLACE_ME_GPU"
    name = SKY_GPU.get(name, name.removesuffix("-SXM").removesuffix("-PCIe"))
    return f"{name}:{ctx.gpus_per_node}"


def task(ctx: RenderContext) -> dict[str, JSONLike]:
    _, module = swift_entry(ctx)
    resources: dict[str, JSONLike] = {"accelerators": accelerator(ctx), "use_spot": ctx.spot}
    if ctx.spot:
        resources["job_recovery"] = {"strategy": "EAGER_NEXT_REGION", "max_restarts_on_errors": 3}
    run = ("set -eu\n" + ("export CUDA_DEVICE_MAX_CONNECTIONS=1\n" if ctx.megatron else "")
           + "MASTER_ADDR=$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\n"
           + ds_config_snippet(ctx) + resume_snippet(ctx)
           + "$WATCH torchrun --nnodes=$SKYPILOT_NUM_NODES --node_rank=$SKYPILOT_NODE_RANK "
             "--nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE --master_addr=$MASTER_ADDR --master_port=29500 \\\n"
           + f"    -m {module} \\\n{format_args(swift_args(ctx))} \\\n    $RESUME\n")
    return {
        "name": ctx.job_name,
        "num_nodes": ctx.nodes,
        "resources": resources,
        "file_mounts": {CKPT_MOUNT: {"name": f"{ctx.job_name}-checkpoints", "mode": "MOUNT"}},
        "envs": {"NCCL_DEBUG": "WARN"},
        "setup": "set -eu\n" + install_snippet(ctx),
        "run": run,
    }


def render(ctx: RenderContext) -> dict[str, str]:
    body = dump_yaml(task(ctx))
    note = "# launch: sky jobs launch skypilot.yaml  (managed job: recovers preempted spot nodes)\n" if ctx.spot \
        else "# launch: sky launch -c NAME skypilot.yaml\n"
    return {"skypilot.yaml": hash_header(ctx, "skypilot.yaml: SkyPilot task") + note + body}
