"""The workload's options: the part of the option table (:mod:`trainfit.options`) that describes a
:class:`~trainfit.workload.Workload`, the input gate's documented ranges, and :func:`parse_options`, the one parser
of a mapping of option values (a web body, a plan file's workload).

Below the planner and the launch writers: a plan file's workload (:meth:`trainfit.plan.types.Plan.from_dict`) and a
GPU probe's configuration (:mod:`trainfit.calibrate`) are read back through it.
"""

from __future__ import annotations

from typing import Mapping

from trainfit import inputs
from trainfit._option_types import Option, OptionValue, parse_choice, parse_int
from trainfit.errors import InputError, did_you_mean
from trainfit.i18n import N_, _
from trainfit.workload import (ATTENTIONS, EXPERTS_IMPLS, LOSSES, MAX_DS_BUCKET_ELEMS, MAX_MOE_IMBALANCE, METHODS,
                               MOE_ROUTINGS, OFFLOADS, OPTIMIZERS, PRECISIONS, STRATEGIES,
                               Workload)

#: Documented ranges of the input gate (docs/security.md).
MAX_GPUS = 65_536
MAX_PARALLEL = 1024
MAX_MICRO_BATCH = 65_536
MAX_LORA_RANK = 65_536
MAX_TOKENS = 1e15


def _targets(field: str, raw: object) -> tuple[str, ...]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)):
        raise inputs._bad(field, raw, _("must be a comma-separated list of module names"))
    out = tuple(inputs.as_ident(field, str(t), "module") for t in items if str(t).strip())
    if not out:
        raise inputs._bad(field, raw, _("is empty"), _("use all-linear or a list such as q_proj,v_proj"))
    return out


def _moe_routing(field: str, raw: object) -> str:
    """``natural`` | ``balanced`` | a max/mean load factor from 1 to :data:`MAX_MOE_IMBALANCE` (kept as text)."""
    if isinstance(raw, str) and raw.strip().lower() in MOE_ROUTINGS:
        return raw.strip().lower()
    try:
        return f"{inputs.as_float(field, raw, lo=1.0, hi=MAX_MOE_IMBALANCE):g}"
    except InputError:
        raise inputs._bad(field, raw, _("must be natural, balanced or a max/mean load factor from 1 to {hi:g}").format(
            hi=MAX_MOE_IMBALANCE), _("use natural, balanced or a number such as 1.3")) from None


_D = Workload()
#: Workload fields as options (memory, trace, plan, render, web).
WORKLOAD_OPTIONS: tuple[Option, ...] = (
    Option(name="method", parse=parse_choice(METHODS), default=_D.method, choices=METHODS,
           help=N_("full | lora | qlora | freeze (default: full)")),
    Option(name="lora_rank", parse=parse_int(1, MAX_LORA_RANK), default=_D.lora_rank, help=N_("LoRA rank (default {default})")),
    Option(name="lora_alpha", parse=parse_int(1, MAX_LORA_RANK * 16), default=_D.lora_alpha,
           help=N_("LoRA alpha (default {default})")),
    Option(name="lora_targets", parse=_targets, default=_D.lora_targets,
           help=N_("comma-separated module names or all-linear (default)")),
    Option(name="freeze_trainable_layers", flag="--freeze-layers", parse=parse_int(1, 10_000),
           default=_D.freeze_trainable_layers, help=N_("for --method freeze: how many last layers train (default 2)")),
    Option(name="seq_len", parse=lambda f, v: inputs.as_seq_len(f, v), default=_D.seq_len,
           help=N_("tokens per sample: 4096 or 4k (default {default})")),
    Option(name="packing", parse=inputs.as_bool, off_flag="--no-packing", default=_D.packing,
           help=N_("pack samples into rows of --seq-len tokens (ms-swift --packing, LLaMA-Factory packing; default on; "
                "--no-packing pads each sample instead: the step budget then assumes samples of --seq-len tokens)")),
    Option(name="micro_batch", parse=parse_int(1, MAX_MICRO_BATCH), default=_D.micro_batch,
           help=N_("samples per GPU per step (default 1)")),
    Option(name="grad_accum", parse=parse_int(1, 1_000_000), default=None,
           help=N_("gradient accumulation steps (default: plan and render reach the planned tokens per optimizer step, "
                "docs/launch.md; memory and trace: 1)")),
    Option(name="grad_ckpt", parse=inputs.as_bool, off_flag="--no-grad-ckpt", default=_D.grad_ckpt,
           help=N_("gradient checkpointing (default on; --no-grad-ckpt turns it off)")),
    Option(name="attention", parse=parse_choice(ATTENTIONS), default=_D.attention, choices=ATTENTIONS,
           help=N_("sdpa (engine default) | flash (FlashAttention-2) | flash3 (FlashAttention-3, Hopper) | eager (default sdpa)")),
    Option(name="experts_impl", parse=parse_choice(EXPERTS_IMPLS), default=_D.experts_impl, choices=EXPERTS_IMPLS,
           help=N_("Hugging Face MoE experts: modulelist (transformers < 5, default) | eager (transformers >= 5, "
                "stacked weights in a loop) | grouped_mm (transformers >= 5's default; ms-swift --experts_impl)")),
    Option(name="moe_routing", parse=_moe_routing, default=_D.moe_routing, metavar="natural|balanced|F",
           help=N_("MoE with --ep > 1: natural (learned router, the busiest EP rank gets about 1.7x the mean tokens; "
                   "default) | balanced (Megatron --moe-router-force-load-balancing) | F, the max/mean load")),
    Option(name="loss", parse=parse_choice(LOSSES), default=_D.loss, choices=LOSSES,
           help=N_("standard (fp32 logits) | fused (Liger-style) | half (16-bit logits, no fp32 copy: "
                "e.g. Qwen v1 remote code without autocast) | shift-copy (transformers < 4.49: one more fp32 "
                "copy of the logits)")),
    Option(name="precision", parse=parse_choice(PRECISIONS), default=_D.precision, choices=PRECISIONS,
           help=N_("bf16 (pure) | amp-bf16 | fp16 | fp8 (default bf16)")),
    Option(name="optimizer", parse=parse_choice(OPTIMIZERS), default=_D.optimizer, choices=OPTIMIZERS,
           help=N_("default adamw-fused")),
    Option(name="gpus", parse=parse_int(1, MAX_GPUS), default=_D.gpus, group=N_("distribution"),
           help=N_("GPUs in the job, all nodes (default 1)")),
    Option(name="gpus_per_node", parse=parse_int(1, 64), default=None, group=N_("distribution"),
           help=N_("GPUs per node (default: min(gpus, 8))")),
    Option(name="strategy", parse=parse_choice(STRATEGIES), default=_D.strategy, choices=STRATEGIES, group=N_("distribution"),
           help=N_("ddp | zero1 | zero2 | zero3 | fsdp (default ddp)")),
    Option(name="offload", parse=parse_choice(OFFLOADS), default=_D.offload, choices=OFFLOADS, group=N_("distribution"),
           help=N_("none | optimizer | all")),
    Option(name="tp", parse=parse_int(1, MAX_PARALLEL), default=1, group=N_("distribution"), help=N_("tensor parallel size (default 1)")),
    Option(name="pp", parse=parse_int(1, MAX_PARALLEL), default=1, group=N_("distribution"), help=N_("pipeline parallel size (default 1)")),
    Option(name="ep", parse=parse_int(1, MAX_PARALLEL), default=1, group=N_("distribution"), help=N_("expert parallel size (default 1)")),
    Option(name="cp", parse=parse_int(1, MAX_PARALLEL), default=1, group=N_("distribution"), help=N_("context parallel size (default 1)")),
    Option(name="ulysses", parse=parse_int(1, MAX_PARALLEL), default=1, group=N_("distribution"),
           help=N_("DeepSpeed-Ulysses sequence parallel size, Hugging Face / DeepSpeed engines only (ms-swift "
                   "--sequence_parallel_size; default 1)")),
    Option(name="sequence_parallel", parse=inputs.as_bool, off_flag="--no-sequence-parallel", default=True, group=N_("distribution"),
           help=N_("Megatron sequence parallelism with --tp > 1 (default on; --no-sequence-parallel turns it off)")),
    Option(name="ds_bucket_elems", parse=lambda f, v: inputs.as_count(f, v, lo=1, hi=MAX_DS_BUCKET_ELEMS),
           default=_D.ds_bucket_elems, group=N_("distribution"),
           help=N_("DeepSpeed reduce/allgather bucket size in elements (5e8, 200M), as written to ds_config.json "
                "(default 2e8, as ms-swift's zero2 preset)")),
    Option(name="ds_overlap_comm", parse=inputs.as_bool, off_flag="--no-ds-overlap-comm", default=_D.ds_overlap_comm, group=N_("distribution"),
           help=N_("DeepSpeed overlap_comm (default on; --no-ds-overlap-comm turns it off)")),
)
WORKLOAD_OPTION_NAMES = tuple(o.name for o in WORKLOAD_OPTIONS)


def parse_options(raw: Mapping[str, object], options: tuple[Option, ...] = WORKLOAD_OPTIONS, *,
                  allowed_extra: tuple[str, ...] = (), defaults: bool = True) -> dict[str, OptionValue]:
    """Validate a mapping of option values (a web request body). Unknown keys are an error with "did you mean";
    missing keys take the option default (or are left out when ``defaults`` is False)."""
    by_name = {o.name: o for o in options}
    out: dict[str, OptionValue] = {}
    for k, v in raw.items():
        if k in allowed_extra:
            continue
        o = by_name.get(k)
        if o is None:
            sugg = did_you_mean(str(k), list(by_name) + list(allowed_extra), n=1)
            err = InputError(_("unknown option {name!r}").format(name=str(k)[:60]),
                             fix=_("did you mean {s}?").format(s=sugg[0]) if sugg else
                             _("see the API docs (/docs) for the fields"))
            err.field = str(k)  # type: ignore[attr-defined]
            raise err
        out[k] = None if v is None else o.parse(k, v)
    if defaults:
        for o in options:
            out.setdefault(o.name, o.default)
    return out


def workload_from_values(values: Mapping[str, OptionValue]) -> Workload:
    """A Workload from parsed option values (``gpus_per_node`` None -> min(gpus, 8))."""
    kw = {k: values[k] for k in WORKLOAD_OPTION_NAMES if values.get(k) is not None}
    if kw.get("gpus_per_node") is None:
        kw["gpus_per_node"] = min(kw.get("gpus", 1), 8)
    return Workload(**kw)
