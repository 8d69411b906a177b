"""``swift_sft.sh``: the ms-swift command (``swift sft``, or ``megatron sft`` for tp/pp/ep/cp > 1).

ms-swift starts torchrun itself when ``NPROC_PER_NODE``/``NNODES`` are set (``swift/cli/main.py``), so the
script maps PAI-DLC's variables onto ms-swift's: ``NNODES=$WORLD_SIZE`` (DLC counts nodes),
``NODE_RANK=$RANK`` (DLC's node index); ``NPROC_PER_NODE``, ``MASTER_ADDR`` and ``MASTER_PORT`` keep their
names.
"""

from __future__ import annotations

from trainfit.launch._common import (format_args, hash_header, install_snippet, resume_snippet, sft_only, swift_args,
                                     swift_entry, swift_unsupported)
from trainfit.launch._context import RenderContext
from trainfit.launch.deepspeed import ds_config_snippet

FILES = ("swift_sft.sh",)


def applies(ctx: RenderContext) -> str | None:
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    return swift_unsupported(ctx)


def render(ctx: RenderContext) -> dict[str, str]:
    cmd, _ = swift_entry(ctx)
    text = (
        "#!/usr/bin/env bash\n" + hash_header(ctx, "swift_sft.sh: ms-swift training command") +
        "set -eu\n"
        "# PAI-DLC injects WORLD_SIZE (number of nodes), RANK (node index), NPROC_PER_NODE, MASTER_ADDR and\n"
        "# MASTER_PORT; ms-swift reads NNODES/NODE_RANK/NPROC_PER_NODE. Defaults: one local node.\n"
        f"export NNODES=\"${{WORLD_SIZE:-1}}\"\nexport NODE_RANK=\"${{RANK:-0}}\"\n"
        f"export NPROC_PER_NODE=\"${{NPROC_PER_NODE:-{ctx.gpus_per_node}}}\"\n"
        "export MASTER_ADDR=\"${MASTER_ADDR:-127.0.0.1}\"\nexport MASTER_PORT=\"${MASTER_PORT:-29500}\"\n"
        + install_snippet(ctx) + ds_config_snippet(ctx) + resume_snippet(ctx) +
        f"# shellcheck disable=SC2086\n$WATCH {cmd} \\\n{format_args(swift_args(ctx))} \\\n    $RESUME\n"
    )
    return {"swift_sft.sh": text}
