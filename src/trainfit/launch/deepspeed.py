"""``ds_config.json``: a DeepSpeed config with the plan's ZeRO stage, offload, precision and batch sizes.

The header goes into a top-level ``"_trainfit"`` key: DeepSpeed's ``DeepSpeedConfig`` reads only the keys
it knows at the top level (its pydantic sub-configs such as ``zero_optimization`` forbid extra keys, the
top level does not), which the tests check against the real class. Batch sizes are numbers, not ``"auto"``,
and equal the ms-swift / LLaMA-Factory arguments rendered from the same plan (HF's integration raises
when they differ).
"""

from __future__ import annotations

import json
from typing import Any

from trainfit.i18n import _
from trainfit.errors import RenderError
from trainfit.launch._common import DS_CONFIG_PATH, sft_only
from trainfit.launch._context import RenderContext
from trainfit.target_layouts import deepspeed_layout_reason
from trainfit.workload import MAX_DS_BUCKET_ELEMS

FILES = ("ds_config.json",)


def applies(ctx: RenderContext) -> str | None:
    """None when the target applies to this plan, else why not."""
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    return deepspeed_layout_reason(ctx.workload)


def ds_config(ctx: RenderContext, *, with_header: bool = True) -> dict[str, Any]:
    wl = ctx.workload
    if not wl.strategy.startswith("zero"):
        raise RenderError(_("strategy {strategy} is not a DeepSpeed ZeRO stage").format(strategy=wl.strategy),
                          fix=_("use --strategy zero1, zero2 or zero3 for the deepspeed target"))
    stage = int(wl.strategy[-1])
    zero: dict[str, Any] = {"stage": stage, "overlap_comm": wl.ds_overlap_comm, "contiguous_gradients": True,
                            "reduce_bucket_size": wl.ds_bucket_elems}
    if stage <= 2:
        zero["allgather_bucket_size"] = wl.ds_bucket_elems
    else:
        zero.update({"stage3_prefetch_bucket_size": 50_000_000, "stage3_param_persistence_threshold": 100_000,
                     "stage3_gather_16bit_weights_on_model_save": True})
    if wl.offload in ("optimizer", "all"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if wl.offload == "all":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    cfg: dict[str, Any] = {}
    if with_header:
        cfg["_trainfit"] = {"header": ctx.file_header_lines()}
    cfg.update({
        # DeepSpeed checks micro x accumulation x its data-parallel world; under ms-swift's Ulysses that world is every
        # rank (DeepSpeed gets no sequence-parallel group; the HF Trainer's "auto" fills world_size x micro x GA)
        "train_batch_size": wl.global_batch * wl.ulysses,
        "train_micro_batch_size_per_gpu": wl.micro_batch,
        "gradient_accumulation_steps": wl.grad_accum,
        "gradient_clipping": 1.0,
        "zero_optimization": zero,
        "steps_per_print": 100,
        "wall_clock_breakdown": False,
    })
    if wl.precision == "fp16":
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    else:
        cfg["bf16"] = {"enabled": True}
    return cfg


def render(ctx: RenderContext) -> dict[str, str]:
    return {"ds_config.json": json.dumps(ds_config(ctx), indent=2, ensure_ascii=False) + "\n"}


DS_DEFAULT_BUCKET_ELEMS = 500_000_000
"""DeepSpeed's ``reduce_bucket_size`` when a config leaves it out (deepspeed/runtime/zero/config.py)."""


def strategy_from_config(cfg: dict, *, hidden_size: int | None = None) -> dict:
    """Workload fields a DeepSpeed config states (the inverse of :func:`ds_config`): strategy (ZeRO stage),
    offload, micro-batch, gradient accumulation, the reduce bucket size and ``overlap_comm``. A
    ``reduce_bucket_size`` of ``"auto"`` is what Hugging Face's integration fills in, ``hidden_size**2``
    (transformers/integrations/deepspeed.py), when the model's ``hidden_size`` is given; else it is left out."""
    kw: dict = {}
    zero = cfg.get("zero_optimization") if isinstance(cfg.get("zero_optimization"), dict) else {}
    stage = zero.get("stage")
    if stage in (1, 2, 3):
        kw["strategy"] = f"zero{stage}"
    elif stage == 0:
        kw["strategy"] = "ddp"

    def dev(key: str) -> str | None:
        v = zero.get(key)
        return v.get("device") if isinstance(v, dict) else None

    if dev("offload_param") in ("cpu", "nvme"):
        kw["offload"] = "all"
    elif dev("offload_optimizer") in ("cpu", "nvme"):
        kw["offload"] = "optimizer"
    elif stage in (1, 2, 3):
        kw["offload"] = "none"
    # a key the file leaves out takes DeepSpeed's own default (deepspeed/runtime/zero/config.py:
    # reduce_bucket_size 5e8; overlap_comm off for stages 1-2, on for stage 3), not trainfit's writer default
    bucket = zero.get("reduce_bucket_size", DS_DEFAULT_BUCKET_ELEMS if stage in (1, 2, 3) else None)
    if bucket == "auto" and hidden_size:
        bucket = hidden_size * hidden_size
    if isinstance(bucket, (int, float)) and not isinstance(bucket, bool) and 1 <= bucket <= MAX_DS_BUCKET_ELEMS:
        kw["ds_bucket_elems"] = int(bucket)
    overlap = zero.get("overlap_comm", stage == 3 if stage in (1, 2, 3) else None)
    if isinstance(overlap, bool):
        kw["ds_overlap_comm"] = overlap
    for key, name in (("train_micro_batch_size_per_gpu", "micro_batch"), ("gradient_accumulation_steps", "grad_accum")):
        v = cfg.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            kw[name] = v
    return kw


def ds_config_snippet(ctx: RenderContext) -> str:
    """POSIX sh that writes the DeepSpeed config next to the job (empty unless the plan uses ZeRO)."""
    if ctx.megatron or not ctx.workload.strategy.startswith("zero"):
        return ""
    text = json.dumps(ds_config(ctx, with_header=False), indent=2)
    return f"cat > {DS_CONFIG_PATH} <<'TRAINFIT_DS_EOF'\n{text}\nTRAINFIT_DS_EOF\n"
