"""``trainfit watch [options] -- CMD ...``: run a training command spot-safely (see docs/watch.md)."""

from __future__ import annotations

import argparse

from trainfit._cli.common import float_arg
from trainfit.i18n import _
from trainfit.watch.runner import WatchConfig, run_watch


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "watch", help=_("run a training command; on a spot/preemption notice checkpoint, stop, exit for restart"),
        description=_("Run CMD in its own process group with TRAINFIT_STOP_FILE set. On a preemption notice "
                    "(cloud metadata with --provider, --metadata-url, --notice-file, or SIGTERM) write the "
                    "stop file, so the trainer's TrainfitCallback checkpoints at the next step boundary and "
                    "stops; force-stop it before the notice's deadline; exit with --restart-exit-code (143) "
                    "so the platform restarts the job, which then resumes from the newest complete "
                    "checkpoint. Otherwise exit with the trainer's code."),
        usage=_("trainfit watch [options] -- CMD [ARG ...]"))
    g = p.add_argument_group(_("notice sources"))
    g.add_argument("--provider", action="append", default=[], metavar="NAME",
                   help=_("poll this cloud's spot metadata: alibaba, tencent, aws, gcp, azure (repeatable; "
                        "default: none, only SIGTERM and --notice-file)"))
    g.add_argument("--metadata-url", metavar="URL", help=_("poll this URL instead (200 with a body = notice)"))
    g.add_argument("--notice-file", metavar="PATH", help=_("a notice is this file appearing"))
    g.add_argument("--poll-seconds", type=float_arg("--poll-seconds", 0, 86_400, lo_open=True), default=5.0, help=_("polling interval (default 5)"))
    g.add_argument("--lead-seconds", type=float_arg("--lead-seconds", 0, 86_400, lo_open=True), default=120.0,
                   help=_("time left after a notice that states no time (default 120)"))
    g.add_argument("--sigterm-lead-seconds", type=float_arg("--sigterm-lead-seconds", 0, 86_400, lo_open=True), default=30.0,
                   help=_("time left after SIGTERM (default 30, Kubernetes' default grace period)"))
    s = p.add_argument_group(_("stop and restart"))
    s.add_argument("--stop-file", metavar="PATH", help=_("stop-request path for the trainer (default: a temp path)"))
    s.add_argument("--checkpoint-dir", metavar="DIR",
                   help=_("trainer output dir: set aside incomplete checkpoints and export TRAINFIT_RESUME_FROM"))
    s.add_argument("--margin-seconds", type=float_arg("--margin-seconds", 0, 86_400, lo_open=False), default=10.0,
                   help=_("force-stop the trainer this long before the deadline (default 10)"))
    s.add_argument("--kill-grace-seconds", type=float_arg("--kill-grace-seconds", 0, 86_400, lo_open=True), default=5.0, help=_("SIGTERM to SIGKILL (default 5)"))
    s.add_argument("--restart-exit-code", type=int, default=143,
                   help=_("exit code after a preemption stop (default 143, retryable for PyTorchJob ExitCode)"))
    h = p.add_argument_group(_("callback for CLIs that build the Trainer themselves (ms-swift, LLaMA-Factory, TRL)"))
    h.add_argument("--hf-callback", action="store_true",
                   help=_("attach TrainfitCallback to every Hugging Face Trainer the command creates"))
    h.add_argument("--metrics-path", metavar="PATH", help=_("JSONL metrics file of the attached callback"))
    h.add_argument("--prometheus-port", type=int, metavar="PORT",
                   help=_("Prometheus port of the attached callback (each process: PORT + local rank)"))
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="CMD", help=_("training command, after --"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    cfg = WatchConfig(command=tuple(cmd), stop_file=args.stop_file, notice_file=args.notice_file,
                      providers=tuple(args.provider), metadata_url=args.metadata_url,
                      checkpoint_dir=args.checkpoint_dir, poll_seconds=args.poll_seconds,
                      lead_seconds=args.lead_seconds, sigterm_lead_seconds=args.sigterm_lead_seconds,
                      margin_seconds=args.margin_seconds, kill_grace_seconds=args.kill_grace_seconds,
                      restart_exit_code=args.restart_exit_code, hf_callback=args.hf_callback,
                      metrics_path=args.metrics_path, prometheus_port=args.prometheus_port)
    return run_watch(cfg)
