"""``swift_rlhf.sh``: ms-swift's ``swift rlhf`` (GRPO / PPO with a vLLM engine, or DPO) for an RL plan.

The command is :func:`trainfit.rl.launch.write_swift` (``WRITERS["ms-swift"]``) of the plan's RLConfig and policy
Workload, so ``trainfit check`` reads it back with :func:`trainfit.rl.launch.parse_rl_launch` to the same
settings. The script adds the dataset, the reward functions (GRPO: ms-swift's built-in ``accuracy`` and
``format``), the output folder, the learning rate and ``--max_steps``. One RL step is one generation batch of
``generation_batch_size`` completions (DPO: ``rollout_batch`` preference pairs), which ms-swift trains in
``completions / (per_device_train_batch_size x GPUs x gradient_accumulation_steps)`` optimizer steps (ms-swift
batch sizes are completion-level: https://swift.readthedocs.io/en/latest/Megatron-SWIFT/GRPO.html, parameter
table). The DeepSpeed preset is ms-swift's own (``--deepspeed zero2|zero3|zero2_offload|zero3_offload``).
"""

from __future__ import annotations

import math

from trainfit.i18n import _
from trainfit.launch._common import hash_header, q, rl_only
from trainfit.launch._context import RenderContext
from trainfit.rl.launch import WRITERS

FILES = ("swift_rlhf.sh",)
#: Defaults when the user names no dataset: ms-swift's GRPO example dataset; DPO: its preference example.
GRPO_DATASET = "AI-MO/NuminaMath-TIR#5000"
DPO_DATASET = "hjh0119/shareAI-Llama3-DPO-zh-en-emoji"
SFT_DEFAULT_DATASET = "AI-ModelScope/alpaca-gpt4-data-en"


def applies(ctx: RenderContext) -> str | None:
    why = rl_only(ctx)
    if why:
        return why
    wl = ctx.workload
    if wl.uses_megatron:
        return _("the plan uses tp/pp/ep/cp > 1; the ms-swift writer emits `swift rlhf` (DDP / DeepSpeed) only")
    if wl.strategy not in ("ddp", "zero2", "zero3"):
        return _("ms-swift rlhf runs DDP or DeepSpeed; the plan's strategy is {strategy} (plan with --rl-framework "
                 "ms-swift)").format(strategy=wl.strategy)
    if (wl.strategy, wl.offload) == ("zero3", "optimizer"):
        return _("ms-swift's zero3_offload preset offloads parameters too (the plan offloads the optimizer only)")
    return None


def optimizer_steps(ctx: RenderContext) -> int | None:
    """``--max_steps`` (optimizer steps) for the planned RL steps (None without steps)."""
    rl = ctx.plan.rl_config()
    if not ctx.max_steps or rl is None:
        return None
    wl = ctx.workload
    # completions per RL step (GRPO/PPO: one generation batch); DPO: preference pairs per step
    per_step = rl.rollout_batch * (1 if rl.algo == "dpo" else rl.num_generations)
    return ctx.max_steps * max(1, math.ceil(per_step / (wl.micro_batch * wl.dp * wl.grad_accum)))


def command(ctx: RenderContext) -> str:
    rl = ctx.plan.rl_config()
    base = WRITERS["ms-swift"](ctx.model.name, rl, ctx.workload).rstrip("\n")
    dataset = ctx.dataset
    if dataset == SFT_DEFAULT_DATASET:
        dataset = DPO_DATASET if rl.algo == "dpo" else GRPO_DATASET
    extra: list[tuple[str, object]] = [("dataset", dataset), ("output_dir", ctx.ckpt_dir),
                                       ("learning_rate", f"{ctx.learning_rate if ctx.learning_rate is not None else 1e-6:g}"),
                                       ("save_steps", ctx.save_steps)]
    if rl.algo == "grpo":
        extra.insert(1, ("reward_funcs", ("accuracy", "format")))
    steps = optimizer_steps(ctx)
    if steps:
        extra.append(("max_steps", steps))
    body = "".join(f" \\\n    --{k} " + (" ".join(q(x) for x in v) if isinstance(v, tuple) else q(v))
                   for k, v in extra)
    return base + body + "\n"


def render(ctx: RenderContext) -> dict[str, str]:
    text = (
        "#!/usr/bin/env bash\n" + hash_header(ctx, "swift_rlhf.sh: ms-swift RL launch (swift rlhf)") + "set -eu\n"
        "# ms-swift starts torchrun itself from NPROC_PER_NODE / NNODES; on PAI-DLC WORLD_SIZE is the number of\n"
        "# nodes and RANK the node index.\n"
        'export NODE_RANK="${RANK:-0}"\nexport MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"\n'
        'export MASTER_PORT="${MASTER_PORT:-29500}"\n'
        "command -v swift >/dev/null 2>&1 || pip install -q 'ms-swift>=4.6' vllm\n"
        + command(ctx)
    )
    return {"swift_rlhf.sh": text}
