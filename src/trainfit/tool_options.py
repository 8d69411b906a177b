"""The options of the CLI's tool commands (``submit``, ``serve``, ``watch``, ``diagnose``, ``calibrate``,
``data``): part of the option table (:data:`trainfit.command_options.COMMAND_OPTIONS`), the CLI's only."""

from __future__ import annotations

import argparse

from trainfit import inputs
from trainfit._option_types import Option, parse_float, parse_ident, parse_int, cli_only
from trainfit.dataset.formats import FORMATS
from trainfit.i18n import N_
from trainfit.providers.registry import refresh_sources

#: ``--json`` of the commands that print tables.
JSON_OPTION = Option(name="json", parse=inputs.as_bool, default=False, group="", help=N_("print JSON instead of tables"),
                     web=False)

CALIBRATE_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="results", positional=True, group="",
           help=N_("gpu_probe results JSON (benchmarks/results/gpu_probe.json)")),
    Option(name="gpu", group="", metavar="NAME", help=N_("catalog GPU the probe ran on (default: from the device name)")),
    Option(name="dry_run", parse=inputs.as_bool, default=False, group="", help=N_("print the factors, write nothing")),
    JSON_OPTION,
)

DATA_COMMAND_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="files", positional=True, nargs="+", group="", metavar="FILE",
           help=N_("dataset files (.jsonl, .json, .parquet)")),
    Option(name="tokenizer", required=True, group="", metavar="DIR",
           help=N_("local model folder with tokenizer.json and the chat template "
                   "(modelscope download --model Qwen/Qwen3-8B --local_dir DIR)")),
    Option(name="seq_len", parse=parse_int(16, 4_194_304), default=4096, group="",
           help=N_("cut-off length (ms-swift --max_length, LLaMA-Factory cutoff_len) for truncation, packing "
                   "and padding (default 4096)")),
    Option(name="format", choices=FORMATS, default="auto", group="", help=N_("row format (default: detected per row)")),
    Option(name="columns", group="", metavar="KEY=COL,...",
           help=N_("column names that differ: messages=dialog,output=answer")),
    Option(name="no_template", parse=inputs.as_bool, default=False, group="",
           help=N_("count the plain text (a base model without template)")),
    Option(name="chat_template", group="", metavar="FILE", help=N_("a Jinja chat template file instead of the folder's")),
    Option(name="on_error", choices=("skip", "fail"), default="skip", group="",
           help=N_("a malformed row: skip it and report its line (default) or stop")),
    Option(name="sample", parse=parse_int(10, 10**9), group="", metavar="N",
           help=N_("count N random rows only and estimate totals with a 95%% interval")),
    Option(name="progress", negatable=True, group="",
           help=N_("progress bar on stderr (default: when stderr is a terminal)")),
    JSON_OPTION,
)

DIAGNOSE_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="metrics", positional=True, group="", metavar="METRICS.jsonl", help=N_("metrics file of the run")),
    Option(name="plan", group="", metavar="PLAN.json", help=N_("`trainfit plan --json` output to compare with")),
    Option(name="pick", parse=parse_int(1, 10_000), default=1, group="", metavar="N",
           help=N_("which plan of --plan, 1 = first (default 1)")),
    Option(name="interruptions_per_hour", parse=parse_float(0, 3600), group="", metavar="RATE",
           help=N_("expected interruptions (preemptions, failures) per hour of the whole job, for the optimal "
                   "checkpoint interval (`trainfit plan --spot` states the rate it assumes)")),
    Option(name="warmup_steps", parse=parse_int(0, 10**9), default=1, group="",
           help=N_("steps left out of timing at the start of each launch (default 1)")),
    JSON_OPTION,
)

SERVE_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="host", parse=parse_ident("instance_type"), default="127.0.0.1", group="",
           help=N_("address to listen on (default 127.0.0.1, this machine only)")),
    Option(name="port", parse=parse_int(1, 65535), default=8000, group="", help=N_("port (default 8000)")),
    Option(name="allow_host", parse=parse_ident("instance_type"), action="append", default=(), group="", metavar="NAME",
           help=N_("a host name clients use to reach the server (repeatable; the loopback names and --host are "
                   "always allowed; any other Host header is refused, against DNS rebinding)")),
)

SUBMIT_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="path", positional=True, group="", metavar="DIR_OR_JSON",
           help=N_("dlc_job.json or the folder `trainfit render` wrote")),
    Option(name="yes", parse=inputs.as_bool, default=False, group="", help=N_("really submit (default: dry run)")),
    Option(name="region", group="",
           help=N_("region id (default: the region the job was rendered for, from its trainfit header or image "
                   "registry; else cn-hangzhou)")),
    Option(name="endpoint", group="", help=N_("API endpoint (default pai-dlc.REGION.aliyuncs.com)")),
    Option(name="protocol", choices=("https", "http"), default="https", group="", hidden=True),
    Option(name="timeout", parse=parse_float(0, 600, lo_open=True), default=30.0, group="",
           help=N_("total seconds for the request (default 30)")),
    Option(name="no_check", parse=inputs.as_bool, default=False, group="", help=N_("submit even when `trainfit check` finds errors")),
    JSON_OPTION,
)

_NOTICE, _STOP = N_("notice sources"), N_("stop and restart")
_HF = N_("callback for CLIs that build the Trainer themselves (ms-swift, LLaMA-Factory, TRL)")
WATCH_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="provider", action="append", default=(), group=_NOTICE, metavar="NAME",
           help=N_("poll this cloud's spot metadata: alibaba, tencent, aws, gcp, azure (repeatable; "
                   "default: none, only SIGTERM and --notice-file)")),
    Option(name="metadata_url", group=_NOTICE, metavar="URL", help=N_("poll this URL instead (200 with a body = notice)")),
    Option(name="notice_file", group=_NOTICE, metavar="PATH", help=N_("a notice is this file appearing")),
    Option(name="poll_seconds", parse=parse_float(0, 86_400, lo_open=True), default=5.0, group=_NOTICE,
           help=N_("polling interval (default 5)")),
    Option(name="lead_seconds", parse=parse_float(0, 86_400, lo_open=True), default=120.0, group=_NOTICE,
           help=N_("time left after a notice that states no time (default 120)")),
    Option(name="sigterm_lead_seconds", parse=parse_float(0, 86_400, lo_open=True), default=30.0, group=_NOTICE,
           help=N_("time left after SIGTERM (default 30, Kubernetes' default grace period)")),
    Option(name="stop_file", group=_STOP, metavar="PATH",
           help=N_("stop-request path for the trainer (default: a temp path)")),
    Option(name="checkpoint_dir", group=_STOP, metavar="DIR",
           help=N_("trainer output dir: set aside incomplete checkpoints and export TRAINFIT_RESUME_FROM")),
    Option(name="margin_seconds", parse=parse_float(0, 86_400, lo_open=False), default=10.0, group=_STOP,
           help=N_("force-stop the trainer this long before the deadline (default 10)")),
    Option(name="kill_grace_seconds", parse=parse_float(0, 86_400, lo_open=True), default=5.0, group=_STOP,
           help=N_("SIGTERM to SIGKILL (default 5)")),
    Option(name="restart_exit_code", cli_type=int, default=143, group=_STOP,
           help=N_("exit code after a preemption stop (default 143, retryable for PyTorchJob ExitCode)")),
    Option(name="hf_callback", parse=inputs.as_bool, default=False, group=_HF,
           help=N_("attach TrainfitCallback to every Hugging Face Trainer the command creates")),
    Option(name="metrics_path", group=_HF, metavar="PATH", help=N_("JSONL metrics file of the attached callback")),
    Option(name="prometheus_port", cli_type=int, group=_HF, metavar="PORT",
           help=N_("Prometheus port of the attached callback (each process: PORT + local rank)")),
    Option(name="command", positional=True, nargs=argparse.REMAINDER, group="", metavar="CMD",
           help=N_("training command, after --")),
)



CATALOG_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="catalog_overlay", flag="--catalog", group="", metavar="PATH",
           help=N_("overlay YAML to use instead of $TRAINFIT_CATALOG_OVERLAY / ~/.config/trainfit/catalog.yaml")),
)
_TABLE_JSON = Option(name="json", parse=inputs.as_bool, default=False, group="", help=N_("print JSON instead of a table"),
                     web=False)
_PLAIN_JSON = Option(name="json", parse=inputs.as_bool, default=False, group="", web=False)

CATALOG_SHOW_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="what", positional=True, nargs="?", choices=("gpus", "instances", "prices"), default="gpus", group=""),
    Option(name="provider", group="", help=N_("instances: alibaba | tencent | generic | private")),
    Option(name="resource_class", group="",
           help=N_("instances: pai-public | pai-lingjun | pai-eas | tencent-tione | generic ...")),
    Option(name="gpu", group="", help=N_("instances with this GPU (name or alias)")),
    Option(name="instance_type", group="", help=N_("prices: only this instance type")),
    Option(name="region", group="", help=N_("prices: this region (plus prices whose region is not stated)")),
    Option(name="billing", choices=("payg", "subscription", "spot"), group="", help=N_("prices: only this billing")),
    _TABLE_JSON,
)

CATALOG_VALIDATE_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="path", positional=True, nargs="?", group="",
           help=N_("overlay YAML (default: the overlay in effect, if any)")),
    _PLAIN_JSON,
)

CATALOG_REFRESH_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="provider", required=True, choices=lambda: tuple(s.name for s in refresh_sources()), group="",
           help=N_("pai: PAI-DLC ListEcsSpecs; ecs: Alibaba ECS DescribeInstanceTypes (--prices: DescribePrice "
                   "+ DescribeSpotPriceHistory); tencent: CVM DescribeInstanceTypeConfigs (--prices: "
                   "InquiryPriceRunInstances); alibaba --public-prices: Alibaba's public ECS price list "
                   "(instancePrice.json, every region, no credentials)")),
    Option(name="region", group="", help=N_("region id, e.g. cn-hangzhou, cn-wulanchabu, ap-guangzhou (required except "
                                            "with --public-prices, which reads every region)")),
    Option(name="prices", parse=inputs.as_bool, default=False, group="",
           help=N_("ecs/tencent: fetch prices instead of specs")),
    Option(name="public_prices", parse=inputs.as_bool, default=False, group="",
           help=N_("alibaba: read Alibaba's public ECS price list (no credentials): pay-as-you-go and one-month "
                   "subscription list prices of every region, with the list's version and publication date")),
    Option(name="site", choices=("cn", "intl"), default="cn", group="",
           help=N_("--public-prices: cn = China site (CNY, default), intl = international site (USD)")),
    Option(name="url", group="", metavar="URL|FILE",
           help=N_("--public-prices: read this instancePrice.json (a newer version's link, a mirror or a saved "
                   "copy) instead of the site's default")),
    Option(name="instance_types", flag="--instance-type", action="append", group="", metavar="TYPE",
           help=N_("with --prices: price only this type (repeatable; default: the provider's GPU types "
                   "in the catalog)")),
    Option(name="zone", group="", help=N_("tencent --prices: availability zone to quote (default: the first listed)")),
    Option(name="image_id", group="", help=N_("tencent --prices: image id to quote with (required by "
                                              "InquiryPriceRunInstances)")),
    Option(name="currency", default="CNY", group="",
           help=N_("tencent --prices: currency your account is billed in "
                   "(the API states amounts in CNY; international-site accounts: USD)")),
    Option(name="endpoint", group="", help=N_("API endpoint host (default: the SDK's regional endpoint)")),
    Option(name="timeout", parse=parse_float(0, 600, lo_open=True), default=15.0, group="",
           help=N_("seconds per request (default 15)")),
    Option(name="total_timeout", parse=parse_float(0, 3600, lo_open=True), group="",
           help=N_("seconds for the whole refresh (default: max(60, 4 x --timeout))")),
    Option(name="protocol", choices=("https", "http"), default="https", group="",
           help=N_("https (default); http only for a local proxy or test server")),
    _PLAIN_JSON,
)

CATALOG_RULES_OPTIONS: tuple[Option, ...] = cli_only(
    Option(name="claim", group="", help=N_("only rules that answer this claim id (e.g. C22)")),
    _PLAIN_JSON,
)


#: The tool commands' options in the order ``--help`` lists them.
TOOL_COMMAND_OPTIONS: dict[str, tuple[Option, ...]] = {
    "calibrate": CALIBRATE_OPTIONS, "data": DATA_COMMAND_OPTIONS, "diagnose": DIAGNOSE_OPTIONS,
    "serve": SERVE_OPTIONS, "submit": SUBMIT_OPTIONS, "watch": WATCH_OPTIONS, "catalog": CATALOG_OPTIONS,
    "catalog show": CATALOG_SHOW_OPTIONS, "catalog validate": CATALOG_VALIDATE_OPTIONS,
    "catalog refresh": CATALOG_REFRESH_OPTIONS, "catalog rules": CATALOG_RULES_OPTIONS,
}
