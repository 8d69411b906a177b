"""The ``trainfit watch`` loop: run the trainer in its own process group, turn a preemption notice into a
stop request, enforce the deadline, and choose the exit code that makes the platform restart the job.

Exit code:

* the trainer acknowledged a stop (checkpoint complete) or a notice came and the trainer had to be
  stopped -> ``restart_exit_code`` (default 143, retryable for PyTorchJob ``restartPolicy: ExitCode``);
* otherwise the trainer's own code (``128 + N`` when it died of signal N, as a shell reports it).
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from trainfit.errors import WatchError
from trainfit.i18n import _
from trainfit.watch.checkpoint import latest_complete_checkpoint
from trainfit.watch.notice import FilePoller, MetadataPoller, Notice, custom_source, provider_source
from trainfit.watch.reaper import Guard, descendants, reap, set_child_subreaper, signal_all
from trainfit.watch.protocol import (RESTART_EXIT_CODE, RESUME_ENV, STOP_FILE_ENV, ack_path, read_json,
                                     request_stop)
from trainfit.integrations.hf_autoload import AUTOLOAD_DIR, METRICS_ENV, PORT_ENV


#: Longest duration any watch setting accepts (a day).
MAX_SECONDS = 86_400


def _stderr(msg: str) -> None:
    print(f"trainfit watch: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True, kw_only=True)
class WatchConfig:
    """Everything ``trainfit watch`` was asked to do."""

    command: tuple[str, ...]
    """The training command and its arguments."""
    stop_file: str | None = None
    """Path of the stop request passed to the trainer in TRAINFIT_STOP_FILE; None: a fresh temp path."""
    notice_file: str | None = None
    """A file whose appearance is a preemption notice (custom schedulers, tests)."""
    providers: tuple[str, ...] = ()
    """Cloud metadata sources to poll (keys of trainfit.watch.notice.PROVIDERS)."""
    metadata_url: str | None = None
    """An extra metadata URL to poll (any 200 with a non-empty body that is not FALSE is a notice)."""
    checkpoint_dir: str | None = None
    """Trainer output dir: mark incomplete checkpoints and export TRAINFIT_RESUME_FROM before launch."""
    poll_seconds: float = 5.0
    """How often the metadata URLs and the notice file are polled."""
    lead_seconds: float = 120.0
    """Time left after a notice that states no time and whose source documents none."""
    sigterm_lead_seconds: float = 30.0
    """Time left after SIGTERM (Kubernetes' default terminationGracePeriodSeconds is 30)."""
    margin_seconds: float = 10.0
    """Stop the trainer forcibly this long before the deadline if it has not exited by then."""
    kill_grace_seconds: float = 5.0
    """Between SIGTERM and SIGKILL to the trainer's process group once the deadline is reached."""
    restart_exit_code: int = RESTART_EXIT_CODE
    """Exit code after a preemption stop."""
    hf_callback: bool = False
    """Attach TrainfitCallback to every HF Trainer of the command (sitecustomize hook on PYTHONPATH)."""
    metrics_path: str | None = None
    """TRAINFIT_METRICS_PATH for the attached callback."""
    prometheus_port: int | None = None
    """TRAINFIT_PROMETHEUS_PORT for the attached callback."""
    log: Callable[[str], None] = field(default=_stderr, repr=False)
    """Where progress messages go."""

    def __post_init__(self) -> None:
        if not self.command:
            raise WatchError(_("no training command given"), fix="trainfit watch [options] -- python train.py ...")
        for name in ("poll_seconds", "lead_seconds", "sigterm_lead_seconds", "kill_grace_seconds", "margin_seconds"):
            v = getattr(self, name)
            lo_ok = v >= 0 if name == "margin_seconds" else v > 0
            # finite and at most a day: a nan or inf grace would never force-stop a trainer that ignores SIGTERM
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo_ok \
                    or v > MAX_SECONDS:
                raise WatchError(_("{flag} must be a finite number in {range}; got {value}").format(
                    flag="--" + name.replace("_", "-"),
                    range=f"{'[0' if name == 'margin_seconds' else '(0'}, {MAX_SECONDS}]", value=v),
                    fix=_("e.g. {example}").format(example=5))
        if not 1 <= self.restart_exit_code <= 255:
            raise WatchError(_("--restart-exit-code must be in 1..255; got {value}").format(
                value=self.restart_exit_code))
        if (self.metrics_path or self.prometheus_port is not None) and not self.hf_callback:
            raise WatchError(_("--metrics-path and --prometheus-port configure the attached callback"),
                             fix=_("add --hf-callback, or pass them to TrainfitCallback in your script"))
        for p in self.providers:
            provider_source(p)  # raises WatchError for an unknown name


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Let the kernel kill the trainer if ``watch`` itself dies (Linux only)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _returncode(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def _child_env(cfg: WatchConfig) -> tuple[str, dict[str, str]]:
    """The stop file (stale request and ack removed) and the trainer's environment: TRAINFIT_STOP_FILE, the
    callback autoload hook with its settings, and TRAINFIT_RESUME_FROM when a checkpoint dir is watched."""
    log = cfg.log
    stop_file = cfg.stop_file or os.path.join(tempfile.mkdtemp(prefix="trainfit-watch-"), "stop")
    for stale in (stop_file, str(ack_path(stop_file))):
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass
        except OSError as e:  # a name over the file system's limit, a folder, no permission: the trainer could not
            # write its acknowledgement either
            raise WatchError(_("--stop-file {path} cannot be used: {error}").format(
                path=stale[:80] + ("…" if len(stale) > 80 else ""), error=e.strerror or e),
                fix=_("pass a writable file path (or leave --stop-file out)")) from None
    env = dict(os.environ)
    env[STOP_FILE_ENV] = stop_file
    if cfg.hf_callback:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (AUTOLOAD_DIR, env.get("PYTHONPATH")) if p)
        if cfg.metrics_path:
            env[METRICS_ENV] = cfg.metrics_path
        if cfg.prometheus_port is not None:
            env[PORT_ENV] = str(cfg.prometheus_port)
    if cfg.checkpoint_dir:
        cp = latest_complete_checkpoint(cfg.checkpoint_dir, mark_incomplete=True)
        env[RESUME_ENV] = str(cp) if cp else ""
        log(_("resume from {checkpoint}").format(checkpoint=cp) if cp else
            _("no complete checkpoint in {folder}: starting fresh").format(folder=cfg.checkpoint_dir))
    return stop_file, env


def _pollers(cfg: WatchConfig) -> list:
    """The notice sources: the notice file first, then the providers' metadata, then the custom URL."""
    pollers: list = []
    if cfg.notice_file:
        pollers.append(FilePoller(cfg.notice_file, lead_seconds=cfg.lead_seconds))
    for name in cfg.providers:
        pollers.append(MetadataPoller(provider_source(name), lead_seconds=cfg.lead_seconds))
    if cfg.metadata_url:
        pollers.append(MetadataPoller(custom_source(cfg.metadata_url), lead_seconds=cfg.lead_seconds))
    return pollers


def _first_notice(cfg: WatchConfig, pollers: list, sigterm_at: list[float], now: float,
                  next_poll: float) -> tuple[Notice | None, float]:
    """A notice from SIGTERM or, when a poll is due, from the first poller that has one; and the next poll time."""
    if sigterm_at:
        return Notice(source="sigterm", reason="SIGTERM from the scheduler",
                      deadline_unix=sigterm_at[0] + cfg.sigterm_lead_seconds), next_poll
    notice: Notice | None = None
    if pollers and now >= next_poll:
        for poller in pollers:
            notice = poller.poll(now)
            _say_reachability(cfg, poller)
            if notice:
                break
        next_poll = now + cfg.poll_seconds
    return notice, next_poll


def _kill_tree(pgid: int, tracked: dict[int, int], sig: int) -> None:
    """``sig`` to the trainer's process group and to every tracked descendant (those that left the group with
    ``setsid`` included)."""
    _killpg(pgid, sig)
    signal_all(tracked, sig)


def _say_reachability(cfg: WatchConfig, poller: object) -> None:
    """Say once when a metadata service gives no answer at all (and once when it answers again): with
    ``--provider alibaba`` off an Alibaba instance, or without a route to 100.100.100.200, no reclaim notice can
    come from it, and watch must not look as if it were listening."""
    reachable = getattr(poller, "reachable", None)
    if reachable is None or reachable == getattr(poller, "_said_reachable", True):
        return
    src = poller.src  # type: ignore[attr-defined]
    if reachable:
        cfg.log(_("the {provider} metadata service answers again ({url})").format(provider=src.provider, url=src.url))
    else:
        error = getattr(poller, "error", "") or _("no answer")
        if cfg.notice_file:
            cfg.log(_("warning: the {provider} metadata service cannot be reached ({url}: {error}): no reclaim notice "
                      "can come from it; only SIGTERM and --notice-file will stop the trainer in time. It answers only "
                      "on that cloud's instances: check the job runs there (and its network), or drop "
                      "--provider").format(provider=src.provider, url=src.url, error=error))
        else:
            cfg.log(_("warning: the {provider} metadata service cannot be reached ({url}: {error}): no reclaim notice "
                      "can come from it; only SIGTERM will stop the trainer in time. It answers only on that cloud's "
                      "instances: check the job runs there (and its network), or drop --provider").format(
                provider=src.provider, url=src.url, error=error))
    poller._said_reachable = reachable  # type: ignore[attr-defined]


def _enforce_deadline(cfg: WatchConfig, notice: Notice, sigterm_at: list[float], pgid: int, now: float,
                      term_sent_at: float | None, kill_sent: bool,
                      tracked: dict[int, int] | None = None) -> tuple[Notice, float | None, bool]:
    """After a notice: move the deadline up to a later SIGTERM's, then SIGTERM and, after the grace, SIGKILL the
    trainer's group; return the notice, when SIGTERM was sent and whether SIGKILL was."""
    log = cfg.log
    tracked = {} if tracked is None else tracked
    if sigterm_at and notice.source != "sigterm" and \
            sigterm_at[0] + cfg.sigterm_lead_seconds < notice.deadline_unix:
        # the scheduler's SIGTERM after a cloud notice: its grace period may end first
        notice = dataclasses.replace(notice, source="sigterm",
                                     deadline_unix=sigterm_at[0] + cfg.sigterm_lead_seconds)
        log(_("SIGTERM: the deadline moves to {seconds:.0f} s from now").format(seconds=notice.deadline_unix - now))
    if term_sent_at is None and now >= notice.deadline_unix - cfg.margin_seconds:
        log(_("deadline reached before the trainer stopped: SIGTERM to its process group and descendants"))
        _kill_tree(pgid, tracked, signal.SIGTERM)
        term_sent_at = now
    elif term_sent_at is not None and not kill_sent and now >= term_sent_at + cfg.kill_grace_seconds:
        log(_("trainer still running: SIGKILL to its process group and descendants"))
        _kill_tree(pgid, tracked, signal.SIGKILL)
        kill_sent = True
    return notice, term_sent_at, kill_sent


def _supervise(cfg: WatchConfig, proc: subprocess.Popen, stop_file: str, pollers: list, sigterm_at: list[float],
               interrupted: list[float], guard: Guard | None = None) -> tuple[int, Notice | None, float | None]:
    """Wait for the trainer, passing on Ctrl-C and acting on notices; its raw return code, the notice (None if
    none came) and when the deadline SIGTERM was sent (None if never)."""
    log = cfg.log
    pgid = proc.pid  # start_new_session: the child leads its own process group
    notice: Notice | None = None
    next_poll = 0.0
    term_sent_at: float | None = None
    kill_sent = False
    forwarded_int = 0
    tracked: dict[int, int] = {}
    skip = {proc.pid} | ({guard.proc.pid} if guard is not None and guard.proc is not None else set())
    next_scan = 0.0

    def scan() -> None:
        """The trainer's descendants and the orphans re-parented to watch (the subreaper), tracked to the end."""
        found = {p: t for p, t in descendants({proc.pid, os.getpid()}).items() if p not in skip}
        if guard is not None and guard.proc is not None:
            found = {p: t for p, t in found.items() if p not in descendants({guard.proc.pid})}
        tracked.update(found)
        if guard is not None:
            guard.track(tracked)

    while True:
        rc = proc.poll()
        if rc is not None:
            break
        now = time.time()
        if now >= next_scan:
            scan()
            next_scan = now + 0.5
        if len(interrupted) > forwarded_int:  # Ctrl-C: pass it on, the trainer decides
            forwarded_int = len(interrupted)
            _killpg(pgid, signal.SIGINT)
        if notice is None:
            notice, next_poll = _first_notice(cfg, pollers, sigterm_at, now, next_poll)
            if notice is not None:
                request_stop(stop_file, reason=notice.reason, source=notice.source,
                             deadline_unix=notice.deadline_unix)
                log(_("preemption notice from {source} ({reason!r}); {seconds:.0f} s left; asked the trainer to "
                      "checkpoint and stop").format(source=notice.source, reason=notice.reason,
                                                    seconds=notice.deadline_unix - now))
        else:
            notice, term_sent_at, kill_sent = _enforce_deadline(cfg, notice, sigterm_at, pgid, now, term_sent_at,
                                                                kill_sent, tracked)
        time.sleep(0.05 if notice is None else 0.02)
    scan()
    _kill_tree(pgid, tracked, signal.SIGKILL)  # leftovers: the trainer's group and descendants that left it
    reap(set(tracked))
    return rc, notice, term_sent_at


def _exit_code(cfg: WatchConfig, rc: int, stop_file: str, notice: Notice | None, term_sent_at: float | None) -> int:
    """``restart_exit_code`` after an acknowledged stop or a notice the trainer did not survive cleanly; else the
    trainer's own code."""
    log = cfg.log
    code = _returncode(rc)
    ack = read_json(ack_path(stop_file))
    if ack is not None:
        log(_("trainer stopped at step {step} with a complete checkpoint {checkpoint}; exit {code} so the platform "
              "restarts the job").format(step=ack.get("step"), checkpoint=ack.get("checkpoint"),
                                         code=cfg.restart_exit_code))
        return cfg.restart_exit_code
    if notice is not None and (code != 0 or term_sent_at is not None):
        log(_("trainer ended with {code} after the notice without acknowledging a checkpoint; exit {restart} "
              "(restart resumes from the newest complete checkpoint)").format(code=code, restart=cfg.restart_exit_code))
        return cfg.restart_exit_code
    log(_("trainer exited with {code}").format(code=code))
    return code


def run_watch(cfg: WatchConfig) -> int:
    """Run ``cfg.command`` under watch; return the exit code ``trainfit watch`` should exit with."""
    stop_file, env = _child_env(cfg)
    pollers = _pollers(cfg)
    sigterm_at: list[float] = []
    interrupted: list[float] = []

    def on_sigterm(signum, frame):  # noqa: ARG001
        if not sigterm_at:
            sigterm_at.append(time.time())

    def on_sigint(signum, frame):  # noqa: ARG001
        interrupted.append(time.time())

    old_term = signal.signal(signal.SIGTERM, on_sigterm)
    old_int = signal.signal(signal.SIGINT, on_sigint)
    try:
        set_child_subreaper()  # orphans of the trainer (setsid workers) come back to watch, not to init
        try:
            proc = subprocess.Popen(list(cfg.command), env=env, start_new_session=True,
                                    preexec_fn=_pdeathsig if sys.platform.startswith("linux") else None)
        except OSError as e:
            raise WatchError(_("cannot start {command!r}: {error}").format(command=cfg.command[0], error=e.strerror or e),
                             fix=_("check the command after --")) from None
        cfg.log(_("started pid {pid} (process group {pid}); stop file {path}").format(pid=proc.pid, path=stop_file))
        guard = Guard(proc.pid) if sys.platform.startswith("linux") else None
        try:
            rc, notice, term_sent_at = _supervise(cfg, proc, stop_file, pollers, sigterm_at, interrupted, guard)
        finally:
            if guard is not None:
                guard.close()
            set_child_subreaper(False)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
    return _exit_code(cfg, rc, stop_file, notice, term_sent_at)
