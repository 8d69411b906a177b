"""``launch.sh``: torchrun with PAI-DLC's variables read the right way round, running ms-swift's trainer.

On PAI-DLC ``WORLD_SIZE`` is the number of nodes and ``RANK`` the node index (not process counts), so they
go to ``--nnodes`` and ``--node_rank``; ``NPROC_PER_NODE`` is the GPUs of one node. The script is POSIX sh
so it also runs as a DLC ``UserCommand``.
"""

from __future__ import annotations

from trainfit.launch._common import (format_args, hash_header, install_snippet, resume_snippet, sft_only, swift_args,
                                     swift_entry, swift_unsupported)
from trainfit.launch._context import RenderContext
from trainfit.launch.deepspeed import ds_config_snippet

FILES = ("launch.sh",)

TORCHRUN = ("torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK --nproc_per_node=$NPROC_PER_NODE "
            "--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT")


def applies(ctx: RenderContext) -> str | None:
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    return swift_unsupported(ctx)


def launch_script(ctx: RenderContext, *, what: str = "launch.sh: torchrun launch for PAI-DLC") -> str:
    _, module = swift_entry(ctx)
    env = ""
    if ctx.megatron:
        env = "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
    return (
        "#!/usr/bin/env bash\n" + hash_header(ctx, what) + "set -eu\n"
        "# PAI-DLC injects these: WORLD_SIZE = number of nodes, RANK = node index, NPROC_PER_NODE = GPUs per\n"
        "# node. The defaults below only apply when the script runs outside DLC (one local node).\n"
        f": \"${{WORLD_SIZE:=1}}\" \"${{RANK:=0}}\" \"${{NPROC_PER_NODE:={ctx.gpus_per_node}}}\" "
        "\"${MASTER_ADDR:=127.0.0.1}\" \"${MASTER_PORT:=29500}\"\n"
        + env + install_snippet(ctx) + ds_config_snippet(ctx) + resume_snippet(ctx) +
        f"# shellcheck disable=SC2086\n$WATCH {TORCHRUN} \\\n    -m {module} \\\n{format_args(swift_args(ctx))} \\\n    $RESUME\n"
    )


def render(ctx: RenderContext) -> dict[str, str]:
    return {"launch.sh": launch_script(ctx)}
