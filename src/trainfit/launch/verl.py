"""``verl_rl.sh``: verl's ``main_ppo`` entry (GRPO or PPO) for an RL plan, colocated hybrid engine, FSDP backend.

The command is :func:`trainfit.rl.launch.write_verl` (``WRITERS["verl"]``) of the plan's RLConfig and policy
Workload, so ``trainfit check`` reads it back with :func:`trainfit.rl.launch.parse_rl_launch` to the same
settings. The script adds what the plan does not decide: the data files (``$TRAIN_FILES`` / ``$VAL_FILES``,
default verl's GSM8K example parquet files), the checkpoint folder, the learning rate and
``trainer.total_training_steps`` = the planned RL steps. Option names: https://verl.readthedocs.io/en/latest/
examples/config.html (ppo_trainer.yaml: ``trainer.total_training_steps``, ``trainer.default_local_dir``,
``actor_rollout_ref.actor.optim.lr``, ``data.train_files``).
"""

from __future__ import annotations

from trainfit.i18n import _
from trainfit.launch._common import hash_header, q, rl_only
from trainfit.launch._context import RenderContext
from trainfit.rl.launch import WRITERS

FILES = ("verl_rl.sh",)


def applies(ctx: RenderContext) -> str | None:
    why = rl_only(ctx)
    if why:
        return why
    rl = ctx.plan.rl_config()
    wl = ctx.workload
    if rl is None or rl.algo == "dpo":
        return _("verl has no offline DPO trainer (render --target swift_grpo)")
    if not rl.colocate:
        return _("the verl writer emits the colocated hybrid engine only (--colocate)")
    if wl.strategy != "fsdp":
        return _("verl's FSDP backend shards with FSDP; the plan's strategy is {strategy} (plan with --rl-framework "
                 "verl)").format(strategy=wl.strategy)
    if wl.offload == "all":
        return _("verl maps parameter offload to the trainer's offload during rollout (--trainer-offload), not "
                 "--offload all")
    if wl.uses_megatron:
        return _("the plan uses tp/pp/ep/cp > 1; the verl writer emits the FSDP backend only")
    return None


def command(ctx: RenderContext) -> str:
    """The verl command (the writer's, plus data, checkpoint, learning rate and steps)."""
    base = WRITERS["verl"](ctx.model.name, ctx.plan.rl_config(), ctx.workload).rstrip("\n")
    extra = [("actor_rollout_ref.actor.optim.lr", f"{ctx.learning_rate if ctx.learning_rate is not None else 1e-6:g}"),
             ("trainer.project_name", "trainfit"), ("trainer.experiment_name", ctx.job_name),
             ("trainer.default_local_dir", ctx.ckpt_dir), ("trainer.save_freq", ctx.save_steps),
             ("trainer.logger", '["console"]')]
    if ctx.max_steps:
        extra.append(("trainer.total_training_steps", ctx.max_steps))
    body = "".join(f" \\\n    {k}={q(v)}" for k, v in extra)
    return base + ' \\\n    data.train_files="$TRAIN_FILES" \\\n    data.val_files="$VAL_FILES"' + body + "\n"


def render(ctx: RenderContext) -> dict[str, str]:
    text = (
        "#!/usr/bin/env bash\n" + hash_header(ctx, "verl_rl.sh: verl RL launch (main_ppo, colocated hybrid engine)")
        + "set -eu\n"
        "# Data: parquet files with verl's prompt/reward columns (verl examples/data_preprocess/gsm8k.py writes\n"
        "# these defaults). Multi-node: start a Ray cluster first (ray start --head / --address) on every node.\n"
        'TRAIN_FILES="${TRAIN_FILES:-$HOME/data/gsm8k/train.parquet}"\n'
        'VAL_FILES="${VAL_FILES:-$HOME/data/gsm8k/test.parquet}"\n'
        "command -v python3 >/dev/null 2>&1 && python3 -c 'import verl' 2>/dev/null || pip install -q verl\n"
        + command(ctx)
    )
    return {"verl_rl.sh": text}
