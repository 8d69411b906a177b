"""Every user option, defined once: name, type, range, default and help. The CLI builds its argparse options
from this table and the web API validates its JSON bodies with it, so both accept the same values and say the
same thing when a value is wrong (the parsing goes through :mod:`trainfit.inputs`, the one input gate).

An option's ``name`` is the field name (``seq_len``); the CLI flag is ``--seq-len``.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

from trainfit import inputs
from trainfit._option_types import Option, OptionValue, cli_only, parse_choice, parse_float, parse_ident, parse_int
from trainfit.catalog.instances import get_instance, gpu_on_instance
from trainfit.dataset.budget import PERCENTILE_CHOICES, budget_from_values
from trainfit.errors import PlanError, WorkloadError
from trainfit.i18n import N_, _, translate
from trainfit.targets import check_target, plan_targets, rl_target_frameworks
from trainfit.models.shapes import ModelShape
from trainfit.plan.request import PIN_FIELDS, RL_SEARCHED, PlanRequest
from trainfit.providers.registry import listed_provider_names, provider_names, resource_classes
from trainfit.rl.config import ALGOS, ENGINES, FRAMEWORKS, RLConfig, trainer_defaults
from trainfit.workload import Workload
from trainfit.workload_options import (MAX_GPUS, MAX_LORA_RANK, MAX_MICRO_BATCH, MAX_PARALLEL, MAX_TOKENS,
                                       WORKLOAD_OPTION_NAMES, WORKLOAD_OPTIONS, parse_options, workload_from_values)

#: The workload's part of the table and its parser (:mod:`trainfit.workload_options`) are this table's too.
__all__ = ["CHECK_DATA_OPTIONS", "DATA_OPTIONS", "MAX_GPUS", "MAX_LORA_RANK", "MAX_MICRO_BATCH", "MAX_PARALLEL",
           "MAX_TOKENS", "PLAN_OPTIONS", "RL_CONFIG_FIELDS", "RL_OPTION_NAMES", "RL_OPTIONS", "WORKLOAD_OPTION_NAMES",
           "WORKLOAD_OPTIONS", "Option", "parse_options", "plan_request_from_values", "rl_config_from_values",
           "rl_workload_from_values", "workload_from_values"]


def count_parser(lo: float = 1, hi: float = MAX_TOKENS) -> Callable[[str, object], int]:
    """A token (or other) count through the input gate: 2B, 500M, 1e9."""
    return lambda f, v: inputs.as_count(f, v, lo=lo, hi=hi)


def _rules(field: str, raw: object) -> tuple[str, ...]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)):
        raise inputs._bad(field, raw, _("must be a list of rule ids"))
    return tuple(inputs.as_ident(field, str(x), "job_name") for x in items)


#: Options of ``trainfit plan`` beyond the workload (and of ``POST /api/plan``).
PLAN_OPTIONS: tuple[Option, ...] = (
    Option(name="tokens", parse=count_parser(), group=N_("job"), help=N_("training tokens in total (2B, 500M...)")),
    Option(name="dataset_tokens", parse=count_parser(), group=N_("job"), help=N_("tokens in the dataset (with --epochs)")),
    Option(name="epochs", parse=parse_float(0, 10_000, lo_open=True), default=1.0, group=N_("job"),
           help=N_("epochs over --dataset-tokens (default 1)")),
    Option(name="global_batch", parse=parse_int(1, 10**9), group=N_("job"),
           help=N_("samples per optimizer step (default: no constraint)")),
    Option(name="objective", parse=parse_choice(("cost", "time")), default="cost", choices=("cost", "time"), group=N_("search"),
           help=N_("rank by cost (default) or time")),
    Option(name="budget", parse=parse_float(0, 1e12, lo_open=True), group=N_("search"),
           help=N_("maximum cost (in the instance's currency)")),
    Option(name="deadline", parse=parse_float(0, 1e6, lo_open=True), group=N_("search"), metavar="HOURS",
           help=N_("maximum wall-clock hours")),
    Option(name="max_days", parse=parse_float(0, 3650, lo_open=True), default=14.0, group=N_("search"), metavar="DAYS",
           help=N_("reject plans that run longer than this (default 14 days)")),
    Option(name="provider", parse=parse_choice(provider_names), group=N_("search"),
           choices=provider_names, help=N_("{providers} (default: all)"),
           help_fill=lambda: {"providers": " | ".join(listed_provider_names())}),
    Option(name="resource_class", parse=parse_choice(resource_classes), group=N_("search"), choices=resource_classes,
           metavar="CLASS", help=" | ".join(resource_classes())),
    Option(name="region", parse=parse_ident("region"), group=N_("search"),
           help=N_("e.g. cn-hangzhou, cn-wulanchabu: also prices each plan at that region's price where sources give "
                "per-region prices (default: the cheapest region's)")),
    Option(name="compare_regions", parse=inputs.as_bool, default=False, group=N_("search"),
           help=N_("also show each plan priced in every region with a price for its instance type")),
    Option(name="spot", parse=inputs.as_bool, default=False, group=N_("search"),
           help=N_("spot / preemptible instances (竞价实例)")),
    Option(name="interruption_rate", parse=parse_float(0, 10), group=N_("search"), metavar="PER_NODE_HOUR",
           help=N_("spot interruptions per node-hour (default: see docs/cost-model.md)")),
    Option(name="checkpoint_interval", parse=parse_float(0, 1e4, lo_open=True), group=N_("search"), metavar="HOURS",
           help=N_("hours between checkpoints (spot; default: the Young/Daly optimum)")),
    Option(name="max_gpus", parse=parse_int(1, MAX_GPUS), default=64, group=N_("search"),
           help=N_("largest job to consider (default 64)")),
    Option(name="framework", parse=parse_choice(("hf-trainer", "deepspeed", "fsdp2", "automodel", "megatron")),
           group=N_("search"), choices=("hf-trainer", "deepspeed", "fsdp2", "automodel", "megatron"),
           help=N_("engine whose kernels the speed model times: hf-trainer/deepspeed (HF code, eager MoE expert "
                "loop), fsdp2 (native PyTorch FSDP2, grouped-GEMM experts), automodel (NeMo AutoModel: FSDP2 + "
                "TransformerEngine + DeepEP), megatron (Megatron-Core: TE, grouped GEMM, FP8) "
                "(default: the engine --target runs for the layout, else ms-swift's: megatron for tp/pp/ep/cp > 1, "
                "deepspeed for ZeRO, else hf-trainer)")),
    Option(name="target", parse=parse_choice(plan_targets), group=N_("search"), choices=plan_targets, metavar="LAUNCHER",
           help=N_("the launcher you will render ({choices}): the speed model times its engine "
                   "(ms-swift targets: megatron/deepspeed/hf-trainer by layout; llamafactory: hf-trainer/deepspeed), "
                   "only layouts it writes are searched, and `render` writes it by default (default: none, ms-swift's "
                   "engine)")),
    Option(name="allow_fp16", parse=inputs.as_bool, default=False, group=N_("search"),
           help=N_("also search GPUs without bf16 (V100, T4, P100) for a bf16 model, planned in fp16 mixed precision "
                "(fp16 can overflow where bf16 does not); without it they are rejected (code no-bf16) unless "
                "--gpu or --instance-type names them")),
    Option(name="gpu", parse=parse_ident("gpu"), group=N_("search"), metavar="NAME", help=N_("only instance types with this GPU")),
    Option(name="gpu_mem", parse=parse_float(0, 4096, lo_open=True), group=N_("search"), metavar="GIB",
           help=N_("GiB per GPU for instance types whose GPU memory no public source states (a Lingjun code such as "
                "GU108: what your console shows); the plan says the memory is yours and that its speed figures are "
                "assumed (from H20 unless the catalog names a class)")),
    Option(name="instance_type", parse=parse_ident("instance_type"), group=N_("search"), help=N_("only this instance type")),
    Option(name="ignore_rule", parse=_rules, default=(), group=N_("search"), metavar="RULE_ID",
           help=N_("do not enforce a platform rule (e.g. pai-public-quota when your quota was raised); repeatable")),
)


def _file_path(field: str, raw: object) -> str:
    if not isinstance(raw, str) or not raw or len(raw) > 4096 or "\x00" in raw:
        raise inputs._bad(field, raw, _("must be a file path"))
    return raw


#: Options of ``trainfit plan`` that read a file on the user's machine (a dataset stats file): the CLI's only. The web
#: API takes no server-side paths (docs/security.md), so these are not in :data:`PLAN_OPTIONS`.
DATA_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="dataset", parse=_file_path, group=N_("job"), metavar="STATS|FILE",
           help=N_("a stats file from `trainfit data FILE --tokenizer DIR --json`, or the dataset itself with "
                "--tokenizer (counted in place, as `trainfit data` does): the token budget (x --epochs), the "
                "cut-off length (unless --seq-len) and the optimizer steps as the rendered launcher counts them "
                "(packed rows, or samples with --no-packing); `memory`: sized at the data's longest row")),
    Option(name="tokenizer", parse=_file_path, group=N_("job"), metavar="DIR",
           help=N_("with --dataset FILE (a dataset, not a stats file): the model folder with tokenizer.json and the "
                "chat template to count it with (the `data` extra)")),
    Option(name="seq_len_percentile", parse=parse_choice(PERCENTILE_CHOICES), group=N_("job"),
           choices=PERCENTILE_CHOICES, metavar="PCT",
           help=N_("with --dataset and no --seq-len: the cut-off is the smallest in the stats at or above this "
                "percentile of sample lengths (default p99; the plan says what it truncates)")),
)


#: ``trainfit check --dataset``: the data a job file's settings are compared with (CLI only, as DATA_OPTIONS).
CHECK_DATA_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="dataset", parse=_file_path, group=N_("data"), metavar="STATS|FILE",
           help=N_("a stats file from `trainfit data ... --json` (or the dataset with --tokenizer): warn when the job's "
                "cut-off truncates more than one sample in a hundred, when padding is over a fifth of the processed "
                "tokens without packing, and when max_steps x global batch is not a whole number of epochs of the data")),
    Option(name="tokenizer", parse=_file_path, group=N_("data"), metavar="DIR",
           help=N_("with --dataset FILE: the model folder to count it with")),
)


def plan_request_from_values(model: ModelShape, values: Mapping[str, OptionValue]) -> PlanRequest:
    """A :class:`~trainfit.plan.search.PlanRequest` from parsed option values (workload + plan options). Workload
    layout fields that are set are pinned; the others are searched."""
    pins = {k: values[k] for k in PIN_FIELDS if values.get(k) is not None}
    base = {k: values[k] for k in WORKLOAD_OPTION_NAMES if k not in PIN_FIELDS and values.get(k) is not None}
    # validate the pinned fields together with the rest once, for a clear error; an unpinned GPU count is searched,
    # so it is checked at the smallest one the pinned tp/pp/cp/ep allow (not at the default 1 GPU)
    gpus = pins.get("gpus", math.prod(pins.get(k, 1) for k in ("tp", "pp", "cp", "ep")) * base.get("ulysses", 1))
    if "gpus" not in pins and "gpus_per_node" in pins and gpus > pins["gpus_per_node"]:
        gpus = math.lcm(gpus, pins["gpus_per_node"])
    Workload(**{**base, **pins, "gpus": gpus, "gpus_per_node": pins.get("gpus_per_node", min(gpus, 8))})
    if values.get("gpu") and values.get("instance_type"):  # both: they must name the same GPU
        gpu_on_instance(get_instance(values["instance_type"]), values["gpu"])
    target = values.get("target")
    if target is not None:
        values = _rl_framework_of_target(target, values)
    rl = rl_config_from_values(values)
    if target is not None:  # an RL target without --rl (or the reverse) before "how many tokens?"
        check_target(target, values.get("framework"), rl=rl is not None)
    tokens = values.get("tokens")
    data = None if rl is not None else budget_from_values(values)
    if data is not None:
        base["seq_len"] = data.seq_len
        tokens = data.tokens
    if rl is not None:
        _no_rl_ulysses(base)
        for name, why in (("seq_len", N_("the sequence is --prompt-len + --response-len")),
                          ("tokens", N_("the budget is --steps")), ("dataset_tokens", N_("the budget is --steps"))):
            if values.get(name) is not None:
                flag = "--" + name.replace("_", "-")
                raise WorkloadError(_("{flag} does not apply to --rl: {why}").format(flag=flag, why=translate(why)),
                                    fix=_("drop {flag}").format(flag=flag))
        if not values.get("steps"):
            raise WorkloadError(_("how many RL steps? `plan --rl` ranks by the hours and cost of the steps"),
                                fix=_("pass --steps N (e.g. --steps 500)"))
        base["seq_len"] = rl.seq_len
        # the sequences the RL steps train on (prompt + response tokens), for the plan's summary
        tokens = float(values["steps"] * rl.seqs_per_step * rl.seq_len)
    if tokens is None:
        if values.get("dataset_tokens") is None:
            raise WorkloadError(_("how many tokens to train on?"),
                                fix=_("pass --tokens 2B or --dataset-tokens 500M --epochs 3"))
        tokens = values["dataset_tokens"] * (values.get("epochs") or 1.0)
    u = base.get("ulysses", 1)  # the searched GPU counts replace this; the base must be a valid layout itself
    return PlanRequest(
        model=model, workload=Workload(**({**base, "gpus": u, "gpus_per_node": min(u, 8)} if u > 1 else base)),
        tokens=float(tokens), pins=pins, global_batch=values.get("global_batch"),
        objective=values.get("objective") or "cost", budget=values.get("budget"), deadline_hours=values.get("deadline"),
        max_days=values.get("max_days") or 14.0,
        provider=values.get("provider"), region=values.get("region"), resource_class=values.get("resource_class"),
        gpu=values.get("gpu"), gpu_mem_gib=values.get("gpu_mem"), instance_type=values.get("instance_type"),
        spot=bool(values.get("spot")), max_gpus=values.get("max_gpus") or 64, framework=values.get("framework"),
        target=target, allow_fp16=bool(values.get("allow_fp16")),
        ignore_rules=frozenset(values.get("ignore_rule") or ()),
        interruption_rate_per_node_hour=values.get("interruption_rate"),
        checkpoint_interval_hours=values.get("checkpoint_interval"), rl=rl,
        compare_regions=bool(values.get("compare_regions")), data=data,
        steps=values.get("steps") if rl is not None else None,
        rl_searched=_rl_searched(values) if rl is not None else frozenset())


def _rl_searched(values: Mapping[str, OptionValue]) -> frozenset[str]:
    """The RL settings ``plan --rl`` searches: those of :data:`trainfit.plan.request.RL_SEARCHED` the user left unset."""
    return frozenset(f for f in RL_SEARCHED if values.get(f) is None)


def _rl_framework_of_target(target: str, values: Mapping[str, OptionValue]) -> Mapping[str, OptionValue]:
    """``--target verl|swift_grpo`` sets ``--rl-framework`` when it is not given; a different one is an error."""
    rl_targets = rl_target_frameworks()
    want = rl_targets.get(target)
    if want is None or not values.get("rl"):
        return values
    got = values.get("rl_framework")
    if got is not None and got != want:
        other = [t for t, f in rl_targets.items() if f == got]
        raise PlanError(_("--target {target} runs {want}, but --rl-framework is {got}").format(target=target, want=want,
                                                                                              got=got),
                        fix=_("drop --rl-framework, or use --target {other}").format(other=other[0]) if other else
                        _("drop --rl-framework (no render target writes a {got} launch), or drop --target").format(got=got))
    return {**values, "rl_framework": want}


# ------------------------------------------------------------------------------------------------- RL
_RL_GROUP = N_("RL fine-tuning (default: none = SFT)")


def _seq(field: str, raw: object) -> int:
    return inputs.as_seq_len(field, raw)


#: RL options (issue 13) of ``memory``, ``plan`` and ``render`` (and of the web API's bodies). Every default
#: is None: what the user does not set comes from ``--rl-framework``'s documented defaults, then from
#: :class:`~trainfit.rl.RLConfig`'s own.
RL_OPTIONS: tuple[Option, ...] = (
    Option(name="rl", parse=parse_choice(ALGOS), choices=ALGOS, group=_RL_GROUP,
           help=N_("grpo | ppo | dpo: size the RL phases (rollout, train, weight sync) around the policy update")),
    Option(name="rl_framework", parse=parse_choice(FRAMEWORKS), choices=FRAMEWORKS, group=_RL_GROUP,
           help=N_("fill unset RL options with this framework's documented defaults")),
    Option(name="rollout_engine", parse=parse_choice(ENGINES), choices=ENGINES, group=_RL_GROUP,
           help=N_("vllm | sglang (default vllm)")),
    Option(name="rollout_tp", parse=parse_int(1, MAX_PARALLEL), group=_RL_GROUP,
           help=N_("tensor-parallel size of each rollout engine")),
    Option(name="rollout_util", parse=parse_float(0, 1, lo_open=True), group=_RL_GROUP, metavar="U",
           help=N_("engine gpu_memory_utilization / mem_fraction_static (0-1)")),
    Option(name="prompt_len", parse=_seq, group=_RL_GROUP, help=N_("prompt tokens (max)")),
    Option(name="response_len", parse=_seq, group=_RL_GROUP, help=N_("generated tokens (max)")),
    Option(name="num_generations", parse=parse_int(1, 65_536), group=_RL_GROUP, help=N_("responses per prompt")),
    Option(name="rollout_batch", parse=parse_int(1, 10_000_000), group=_RL_GROUP, help=N_("prompts per RL step")),
    Option(name="colocate", parse=inputs.as_bool, negatable=True, group=_RL_GROUP,
           help=N_("engine shares the training GPUs (default: the framework's, else yes)")),
    Option(name="ref", parse=inputs.as_bool, negatable=True, group=_RL_GROUP,
           help=N_("load a reference model (--no-ref: beta = 0)")),
    Option(name="critic", parse=inputs.as_bool, negatable=True, group=_RL_GROUP,
           help=N_("PPO critic / value model (default: on for ppo)")),
    Option(name="engine_sleep", parse=inputs.as_bool, negatable=True, group=_RL_GROUP,
           help=N_("engine releases weights + KV cache during the update (vLLM sleep level 1)")),
    Option(name="trainer_offload", parse=inputs.as_bool, negatable=True, group=_RL_GROUP,
           help=N_("trainer weights/optimizer to host RAM during rollout")),
    Option(name="ref_offload", parse=inputs.as_bool, negatable=True, group=_RL_GROUP,
           help=N_("reference weights in host RAM between its forward passes")),
    Option(name="steps", parse=parse_int(1, 10_000_000), group=_RL_GROUP,
           help=N_("RL steps (hours and cost; `plan --rl` needs it)")),
)
RL_OPTION_NAMES = tuple(o.name for o in RL_OPTIONS)
#: RLConfig fields set from the option of the same name (``rl`` is ``algo``; ``steps`` is not a config field).
RL_CONFIG_FIELDS = ("rollout_engine", "rollout_tp", "rollout_util", "prompt_len", "response_len", "num_generations",
                    "rollout_batch", "colocate", "ref", "critic", "engine_sleep", "trainer_offload", "ref_offload")


def _no_rl_ulysses(values: Mapping[str, OptionValue]) -> None:
    """``--ulysses`` with ``--rl``: refused (the RL memory and speed models and the verl / swift_grpo writers do not
    split the sequence), one message for memory and plan."""
    if (values.get("ulysses") or 1) > 1:
        raise WorkloadError(_("--ulysses is not modelled for --rl yet (the RL memory and speed models and the verl / "
                              "swift_grpo writers do not split the sequence)"), fix=_("drop --ulysses"))


def rl_workload_from_values(values: Mapping[str, OptionValue], rl: RLConfig) -> Workload:
    """The policy update of the RL request ``rl``: the workload options the user set (None or absent = not set),
    then the RL framework's documented trainer defaults (:func:`trainfit.rl.config.trainer_defaults`: verl trains
    with FSDP), then the Workload's; at prompt + response length."""
    kw = {k: values.get(k) for k in WORKLOAD_OPTION_NAMES}
    _no_rl_ulysses(kw)
    for k, v in trainer_defaults(rl.rl_framework).items():
        if kw.get(k) is None:
            kw[k] = v
    kw["seq_len"] = rl.seq_len
    return workload_from_values(kw)


def rl_config_from_values(values: Mapping[str, OptionValue]) -> RLConfig | None:
    """The :class:`~trainfit.rl.RLConfig` of parsed option values, or None without ``rl`` (SFT). Unset fields
    take ``rl_framework``'s documented defaults, then RLConfig's."""
    algo = values.get("rl")
    if not algo:
        return None
    user: dict[str, OptionValue] = {f: values.get(f) for f in RL_CONFIG_FIELDS}
    user["algo"] = algo
    return RLConfig.for_framework(values.get("rl_framework"), **user)
