"""The CLI's commands and the options each takes, all in the option table: the shared options of
:mod:`trainfit.options` (the web API takes those too) and the options only the CLI has (a path on the user's
machine, where to write, how to print). ``trainfit._cli`` makes every argparse argument from
:data:`COMMAND_OPTIONS`, so a flag is declared once, with its help, type, range and section.
"""

from __future__ import annotations

from trainfit import inputs
from trainfit._option_types import Option, parse_float, parse_ident, parse_int, cli_only, unset_defaults
from trainfit.i18n import N_
from trainfit.targets import render_targets
from trainfit.dataset.budget import PERCENTILE_CHOICES
from trainfit.options import (CHECK_DATA_OPTIONS, DATA_OPTIONS, PLAN_OPTIONS, RL_OPTIONS, WORKLOAD_OPTIONS,
                              count_parser)
from trainfit.tool_options import JSON_OPTION, TOOL_COMMAND_OPTIONS

#: ``trainfit [--version] [--lang LANG] COMMAND``.
GLOBAL_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="version", parse=inputs.as_bool, default=False, group="", help=N_("print the version and exit")),
    Option(name="lang", group="", metavar="LANG",
           help=N_("language of messages and tables: en or zh (default: TRAINFIT_LANG, LANGUAGE, LC_ALL, LC_MESSAGES, "
                   "LANG; else en); taken before or after the command")),
)

#: ``MODEL`` or ``--config PATH``: the model of ``memory``, ``trace``, ``plan`` and ``render``.
MODEL_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="model", positional=True, nargs="?", metavar="MODEL", group="",
           help=N_("registry name (Qwen3-8B, qwen/qwen3-30b-a3b...); see `trainfit models`")),
    Option(name="config", group="", metavar="PATH", help=N_("a config.json or model folder instead of a registry name")),
)

_GPU = N_("GPU")
MEMORY_OPTIONS: tuple[Option, ...] = (
    *MODEL_OPTIONS,
    *unset_defaults(WORKLOAD_OPTIONS),  # None = not given: the Workload's default, or --rl-framework's
    *cli_only(
        Option(name="gpu", parse=parse_ident("gpu"), group=_GPU, metavar="NAME",
               help=N_("GPU from the catalog (A10, L20, A100-80GB, H800, H20...)")),
        Option(name="gpu_mem", parse=parse_float(0, 4096, lo_open=True), group=_GPU, metavar="GIB",
               help=N_("usable GPU memory in GiB instead of --gpu")),
        Option(name="instance_type", parse=parse_ident("instance_type"), group=_GPU, metavar="TYPE",
               help=N_("instance type from the catalog: its GPU and host RAM")),
        Option(name="host_ram", parse=parse_float(0, 1e6, lo_open=True), group=_GPU, metavar="GIB",
               help=N_("host RAM per node (for the verdict on offload)")),
    ),
    *RL_OPTIONS,
    *DATA_OPTIONS,  # --dataset: size memory at the data's longest row
    JSON_OPTION,
)

PLAN_COMMAND_OPTIONS: tuple[Option, ...] = (
    *MODEL_OPTIONS,
    *unset_defaults(WORKLOAD_OPTIONS),
    *(o for o in PLAN_OPTIONS if o.name != "ignore_rule"),
    *DATA_OPTIONS,
    *cli_only(
        Option(name="ignore_rule", parse=parse_ident("job_name"), action="append", default=(), group="", metavar="RULE_ID",
               help=N_("do not enforce a platform rule (e.g. pai-public-quota when your quota was raised)")),
    ),
    *RL_OPTIONS,
    *cli_only(Option(name="top", parse=parse_int(1, 10_000), default=10, group="", help=N_("plans to show (default 10)"))),
    JSON_OPTION,
)

_RENDER, _WHERE, _JOB = N_("render"), N_("where it runs (without --plan)"), N_("job")
RENDER_OPTIONS: tuple[Option, ...] = (
    *MODEL_OPTIONS,
    *unset_defaults(WORKLOAD_OPTIONS),  # None = not given (the Workload's default), so --plan can refuse them
    *cli_only(
        Option(name="target", group=_RENDER, help_fill=lambda: {"targets": ", ".join(render_targets())},
               help=N_("comma-separated: {targets} or all (default: the plan's --target, else all); a target whose "
                       "engine differs from the one the plan's speed assumed is written with a warning")),
        Option(name="out", required=True, group=_RENDER, metavar="DIR", help=N_("folder to write the files into (created)")),
        Option(name="force", parse=inputs.as_bool, default=False, group=_RENDER,
               help=N_("overwrite files in --out that trainfit did not write or that were edited since (default: "
                       "refuse them; files of an earlier render are replaced, its leftovers removed)")),
        Option(name="plan", group=_RENDER, metavar="PLAN_JSON", help=N_("output of `trainfit plan ... --json`")),
        Option(name="pick", parse=parse_int(1, 10_000), default=1, group=_RENDER, metavar="N",
               help=N_("which plan of --plan, 1 = first (default 1)")),
        Option(name="instance_type", parse=parse_ident("instance_type"), group=_WHERE, metavar="TYPE",
               help=N_("instance type (ecs.gn7i-c8g1.2xlarge, ml.gu7xf.8xlarge-gu108...)")),
        Option(name="gpu", parse=parse_ident("gpu"), group=_WHERE, metavar="NAME", help=N_("GPU model (e.g. H800)")),
        Option(name="tokens", parse=count_parser(), group=_WHERE,
               help=N_("training tokens (sets the steps and the time)")),
        Option(name="spot", parse=inputs.as_bool, default=False, group=_WHERE,
               help=N_("spot/preemptible: checkpoint mount and resume are wired")),
        Option(name="spot_discount_limit", parse=parse_float(0, 1, lo_open=True), group=_JOB, metavar="F",
               help=N_("Lingjun spot bid as a fraction of the list price (default 0.5)")),
        Option(name="region", parse=parse_ident("region"), group=_JOB, help=N_("region id (cn-hangzhou, cn-wulanchabu...)")),
        Option(name="workspace_id", parse=parse_ident("workspace_id"), group=_JOB,
               help=N_("PAI workspace id (default: your default workspace)")),
        Option(name="resource_id", parse=parse_ident("resource_id"), group=_JOB,
               help=N_("PAI resource quota id (default: public resources)")),
        Option(name="image", parse=parse_ident("image"), group=_JOB,
               help=N_("container image (default: PAI's Megatron-Patch image of the region)")),
        Option(name="dataset", parse=parse_ident("dataset"), group=_JOB,
               help=N_("dataset id or path the job trains on (default: the plan's data file, else "
                       "AI-ModelScope/alpaca-gpt4-data-en); without --plan, a stats file from `trainfit data --json` "
                       "or a dataset file with --tokenizer also sets the steps, the cut-off and the budget as "
                       "`plan --dataset` does")),
        Option(name="tokenizer", group=_JOB, metavar="DIR",
               help=N_("without --plan, with --dataset FILE: count the dataset in place with this model folder's "
                       "tokenizer and chat template (as `trainfit data`)")),
        Option(name="seq_len_percentile", choices=PERCENTILE_CHOICES, group=_JOB, metavar="PCT",
               help=N_("without --plan, with a --dataset that is counted: the cut-off is the smallest in the stats "
                       "at or above this percentile of sample lengths (default p99, unless --seq-len)")),
        Option(name="job_name", parse=parse_ident("job_name"), group=_JOB, help=N_("job name (default MODEL-METHOD)")),
        Option(name="checkpoint_uri", parse=parse_ident("uri"), group=_JOB, metavar="URI",
               help=N_("OSS path for checkpoints (oss://bucket/path/)")),
        Option(name="vpc_id", parse=parse_ident("vpc"), group=_JOB),
        Option(name="vswitch_id", parse=parse_ident("vpc"), group=_JOB),
        Option(name="security_group_id", parse=parse_ident("vpc"), group=_JOB),
        Option(name="lr", parse=parse_float(0, 1, lo_open=True), group=_JOB,
               help=N_("learning rate (default 1e-4 LoRA, 1e-5 full)")),
        Option(name="epochs", parse=parse_float(0, 10_000, lo_open=True), group=_JOB,
               help=N_("epochs over the dataset instead of the plan's token budget")),
        Option(name="save_steps", parse=parse_int(1, 10**9), group=_JOB,
               help=N_("checkpoint every N steps (default: from the plan, else 200)")),
    ),
    *RL_OPTIONS,
    JSON_OPTION,
)

CHECK_OPTIONS: tuple[Option, ...] = (
    *cli_only(
        Option(name="file", positional=True, group="", metavar="FILE", help=N_("the job file")),
        Option(name="region", group="", help=N_("the region you will submit to (checked against the spec)")),
        Option(name="gpu", group="", help=N_("GPU model, when the spec does not say (for the memory check)")),
        Option(name="instance_type", group="", help=N_("instance type, when the spec does not say")),
        Option(name="nodes", parse=parse_int(1, 65_536), group="", help=N_("nodes the job runs on, when the spec does not say")),
        Option(name="gpus_per_node", parse=parse_int(1, 64), group="", help=N_("GPUs per node, when the spec does not say")),
    ),
    *CHECK_DATA_OPTIONS,
    JSON_OPTION,
)

TRACE_OPTIONS: tuple[Option, ...] = (
    *MODEL_OPTIONS,
    *WORKLOAD_OPTIONS,
    JSON_OPTION,
    *cli_only(Option(name="steps", cli_type=int, default=2, group="",
                     help=N_("training steps to trace; the last is reported (default 2)"))),
)

#: Each command's options in the order ``--help`` lists them (``catalog show``: a subcommand).
COMMAND_OPTIONS: dict[str, tuple[Option, ...]] = {
    "": GLOBAL_OPTIONS, "models": (JSON_OPTION,), "memory": MEMORY_OPTIONS, "trace": TRACE_OPTIONS,
    "plan": PLAN_COMMAND_OPTIONS, "render": RENDER_OPTIONS, "check": CHECK_OPTIONS, **TOOL_COMMAND_OPTIONS,
}
