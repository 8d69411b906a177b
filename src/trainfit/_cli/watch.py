"""``trainfit watch [options] -- CMD ...``: run a training command spot-safely (see docs/watch.md)."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


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
    add_options(p, COMMAND_OPTIONS["watch"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainfit.watch.runner import WatchConfig, run_watch

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
