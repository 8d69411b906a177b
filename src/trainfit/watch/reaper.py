"""Every descendant of the trainer stopped, without cgroups (Linux; elsewhere the process group alone).

* ``trainfit watch`` makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux >= 3.4,
  https://man7.org/linux/man-pages/man2/prctl.2.html): a trainer's worker that calls ``setsid`` (a new session and
  process group, out of reach of ``killpg``) and outlives its parent is re-parented to watch, not to init, so
  watch still finds it;
* :func:`descendants` walks ``/proc`` (parent links) from the trainer and from watch's own re-parented children;
  watch tracks that set while it supervises and signals all of it, not just the process group;
* a *guard* process (:class:`Guard`, its own session, no parent-death signal) holds the read end of a pipe and
  the tracked pids with their start times: when watch dies, even by ``kill -9``, the pipe closes and the guard
  kills the trainer's process group and every tracked process that is still the same process (start time
  checked, so a reused pid is never hit). The trainer itself also gets ``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import os
import subprocess
import sys

PR_SET_CHILD_SUBREAPER = 36


def set_child_subreaper(on: bool = True) -> bool:
    """Make this process a child subreaper (Linux), or stop being one; False where the OS does not allow it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except Exception:  # pragma: no cover - no libc
        return False


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of ``pid`` from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    rest = data[data.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
    try:
        return int(rest[1]), int(rest[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    st = _stat(pid)
    return st[1] if st else None


def descendants(roots: set[int]) -> dict[int, int]:
    """pid -> start time of every live descendant of ``roots`` (the roots themselves excluded), from /proc."""
    if not os.path.isdir("/proc"):
        return {}
    parents: dict[int, int] = {}
    starts: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if name.isdigit():
            st = _stat(int(name))
            if st:
                parents[int(name)], starts[int(name)] = st
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[int, int] = {}
    stack = list(roots)
    while stack:
        for c in children.get(stack.pop(), ()):
            if c not in out and c not in roots:
                out[c] = starts[c]
                stack.append(c)
    return out


def signal_all(pids: dict[int, int], sig: int) -> None:
    """Send ``sig`` to every pid of ``pids`` that is still the same process (start time unchanged)."""
    for pid, started in pids.items():
        if start_time(pid) == started:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def reap(pids: set[int]) -> None:
    """Collect the exit status of re-parented children among ``pids`` (no zombies left behind)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


_GUARD = r"""
import os, signal, sys
pgid = int(sys.argv[1])
tracked = {}
done = False
for line in sys.stdin:
    line = line.strip()
    if line == "done":
        done = True
        break
    try:
        pid, started = (int(x) for x in line.split())
    except ValueError:
        continue
    tracked[pid] = started
if not done:
    def start(pid):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                d = f.read(4096)
            return int(d[d.rfind(b")") + 2:].split()[19])
        except (OSError, ValueError, IndexError):
            return None
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    for pid, started in tracked.items():
        if start(pid) == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
"""


class Guard:
    """A process that kills the trainer's group and the tracked descendants when watch dies without saying
    ``done`` (``kill -9`` of watch included)."""

    def __init__(self, pgid: int) -> None:
        self.proc: subprocess.Popen | None = None
        self.sent: set[int] = set()
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _GUARD, str(pgid)], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True, text=True)
        except OSError:  # pragma: no cover - no interpreter to start: the process group alone
            self.proc = None

    def track(self, pids: dict[int, int]) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        new = {p: s for p, s in pids.items() if p not in self.sent}
        if not new:
            return
        try:
            self.proc.stdin.write("".join(f"{p} {s}\n" for p, s in new.items()))
            self.proc.stdin.flush()
            self.sent.update(new)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """Watch ends normally: the guard exits without killing anything."""
        if self.proc is None:
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.write("done\n")
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            try:
                self.proc.kill()
            except OSError:
                pass

