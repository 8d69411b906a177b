"""Run the tiny trainer uninterrupted and under ``trainfit watch`` with a notice and a kill -9, relaunching
after each; used by test_resume.py (and runnable by hand: python resume_harness.py VARIANT TMPDIR)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAIN = str(HERE / "_train_tiny.py")
SRC = str(HERE.parent.parent / "src")


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    for k in list(env):
        if k.startswith("TINY_") or k in ("TRAINFIT_STOP_FILE", "TRAINFIT_RESUME_FROM"):
            del env[k]
    env.update(extra)
    return env


def start_baseline(out: Path, variant: str, steps: int, save_steps: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, TRAIN, str(out), "--variant", variant, "--steps", str(steps),
                             "--save-steps", str(save_steps)], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _watch_cmd(out: Path, variant: str, steps: int, save_steps: int) -> list[str]:
    return [sys.executable, "-m", "trainfit.cli", "watch", "--notice-file", str(out / "notice"),
            "--poll-seconds", "0.02", "--stop-file", str(out / "stop"), "--checkpoint-dir", str(out / "ckpt"),
            "--", sys.executable, TRAIN, str(out), "--variant", variant, "--steps", str(steps),
            "--save-steps", str(save_steps)]


def interrupted_run(out: Path, variant: str, *, steps: int, save_steps: int, rng: random.Random) -> dict:
    """Notice at a random step, relaunch; kill -9 of both process groups at a later random step (inside a
    checkpoint save when possible), relaunch; run to the end. Returns what happened, for assertions."""
    out.mkdir(parents=True, exist_ok=True)
    notice_at = rng.randint(1, steps - 3)
    later_saves = [s for s in range(notice_at + 1, steps) if s % save_steps == 0]
    hang_where = "save" if later_saves and rng.random() < 0.7 else "step_end"
    hang_at = rng.choice(later_saves) if hang_where == "save" else rng.randint(notice_at + 1, steps - 1)
    log: dict = {"notice_at": notice_at, "hang_at": hang_at, "hang_where": hang_where, "runs": []}
    cmd = _watch_cmd(out, variant, steps, save_steps)

    # 1. preemption notice at step notice_at: the trainer checkpoints there and stops; watch exits 143
    r = subprocess.run(cmd, env=_env(TINY_NOTICE_AT=str(notice_at), TINY_NOTICE_FILE=str(out / "notice")),
                       capture_output=True, text=True, timeout=300)
    log["runs"].append({"rc": r.returncode, "stderr": r.stderr[-3000:]})
    (out / "notice").unlink(missing_ok=True)

    # 2. relaunch; kill -9 of watch's and the trainer's process groups at hang_at
    reached = out / "reached"
    w = subprocess.Popen(cmd, env=_env(TINY_HANG_AT=str(hang_at), TINY_HANG_WHERE=hang_where,
                                       TINY_REACHED=str(reached)),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    t0 = time.time()
    while not reached.exists() and w.poll() is None and time.time() - t0 < 300:
        time.sleep(0.02)
    info = json.loads(reached.read_text()) if reached.exists() else None
    if info:
        os.killpg(info["pgid"], signal.SIGKILL)  # the trainer's group (watch started it in its own)
    try:
        os.killpg(w.pid, signal.SIGKILL)  # watch's group: the whole machine is gone
    except ProcessLookupError:
        pass
    text, _ = w.communicate(timeout=60)
    log["runs"].append({"rc": w.returncode, "killed": info is not None, "stderr": (text or "")[-3000:]})
    reached.unlink(missing_ok=True)
    log["dirs_after_kill"] = sorted(p.name for p in (out / "ckpt").iterdir())

    # 3. relaunch and finish
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    log["runs"].append({"rc": r.returncode, "stderr": r.stderr[-3000:]})
    log["dirs_at_end"] = sorted(p.name for p in (out / "ckpt").iterdir())
    return log


if __name__ == "__main__":  # pragma: no cover - manual use
    variant, tmp = sys.argv[1], Path(sys.argv[2])
    b = start_baseline(tmp / "base", variant, 14, 3)
    log = interrupted_run(tmp / "run", variant, steps=14, save_steps=3, rng=random.Random())
    print(b.communicate()[0][-500:])
    print(json.dumps({k: v for k, v in log.items() if k != "runs"}, indent=1))
    for run in log["runs"]:
        print(run["rc"], run["stderr"][-600:])
