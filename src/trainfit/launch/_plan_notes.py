"""What a job's header and render's warnings say about the plan's schedule: the checkpoint interval in steps
(:func:`save_steps`) and how packed rows keep their samples apart (:func:`packing_line`). Below the render context
(:mod:`trainfit.launch._context`) and the writers, which both read them."""

from __future__ import annotations


from trainfit.i18n import _
from trainfit.plan.cost import (CHECKPOINT_BYTES_PER_TRAINABLE_PARAM, CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT,
                                ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR, checkpoint_interval_hours)
from trainfit.plan.types import Plan
from trainfit.workload import Workload

#: Checkpoint interval when the plan has no step time to convert hours into steps (HF's common choice).
SAVE_STEPS_FALLBACK = 200


def save_steps(plan: Plan, step_seconds: float | None, max_steps: int | None) -> tuple[int, str]:
    """(checkpoint interval in steps, why): the plan's interval (spot: Young/Daly at the spot reclaim rate, or
    ``--checkpoint-interval``), else Young/Daly for an on-demand job (:func:`trainfit.plan.cost.checkpoint_interval_hours`
    at :data:`~trainfit.plan.cost.ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR`): its checkpoint size, written by every
    node at the assumed bandwidth, against the nodes' interruption rate. Never more than the run; every
    :data:`SAVE_STEPS_FALLBACK` steps when the plan has no step time."""
    hours, why = plan.time_cost.checkpoint_interval_hours, _("the plan's spot checkpoint interval")
    trainable = plan.memory.params.trainable
    if not hours and trainable:
        hours, write_h = checkpoint_interval_hours(trainable_params=trainable, nodes=plan.placement.nodes,
                                                   interruptions_per_node_hour=ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR)
        size_gb = trainable * CHECKPOINT_BYTES_PER_TRAINABLE_PARAM / 1e9
        why = _("Young/Daly: a {size:,.1f} GB checkpoint at {rate:g} GB/s per node = {write} s, {nodes} node(s) x "
                "{interruptions:.2g} interruptions per node-hour -> every {hours:,.1f} h").format(
            size=size_gb, rate=CHECKPOINT_WRITE_GBYTES_PER_S_DEFAULT,
            write=f"{write_h * 3600:,.{0 if write_h * 3600 >= 10 else 1}f}", nodes=plan.placement.nodes,
            interruptions=ON_DEMAND_INTERRUPTION_RATE_PER_NODE_HOUR, hours=hours)
    if hours and step_seconds:
        n = max(1, int(hours * 3600 / step_seconds))
    else:
        n, why = SAVE_STEPS_FALLBACK, _("no step time in the plan: every {n} steps").format(n=SAVE_STEPS_FALLBACK)
    if max_steps and n >= max_steps:
        return max_steps, _("{why}; capped at the run's end").format(why=why)
    return n, why


def packing_budget_warning(wl: Workload) -> str | None:
    """Render's warning for a job without packing (None with packing): the plan's step budget assumes rows of
    ``seq_len`` data tokens."""
    if wl.packing:
        return None
    return _("packing off (--no-packing): each row is one sample padded to the batch's longest, but the step budget "
             "(tokens / (global batch x seq_len)) assumes {seq_len}-token samples: on shorter samples the job trains "
             "fewer tokens than planned (average sample tokens / seq_len of them); use --epochs for a dataset-sized "
             "budget, or keep packing on").format(seq_len=wl.seq_len)


def packing_line(wl: Workload, *, megatron: bool) -> str:
    """The header's packing line: whether the samples of a packed row see each other in each launcher.

    Packed rows keep their samples apart only where the launcher documents it: ms-swift with ``--attn_impl
    flash_attn`` (its command-line docs, ``packing``), Megatron-SWIFT always (except Qwen3-Next), LLaMA-Factory's
    ``neat_packing`` (written with FlashAttention-2 only: other kernels get a ``(batch, 1, S, S)`` mask in the
    compute dtype that trainfit does not size). Elsewhere the samples of one row attend to each other, as in
    pre-training."""
    if not wl.packing:
        return _("packing: off; rows are single samples padded to at most {seq_len} tokens").format(seq_len=wl.seq_len)
    swift = _("apart") if (megatron or wl.attention in ("flash", "flash3")) else \
        _("attending to each other (--attention flash keeps them apart)")
    lf = _("apart (neat_packing)") if wl.attention == "flash" else \
        _("attending to each other (--attention flash: neat_packing)")
    return _("packing: on; rows of {seq_len} tokens; samples in a row: ms-swift {swift}; LLaMA-Factory {lf}").format(
        seq_len=wl.seq_len, swift=swift, lf=lf)
