"""The contract between ``trainfit watch`` and the trainer it runs (names, files, exit codes).

``watch`` starts the training command with ``TRAINFIT_STOP_FILE`` set to a path that does not exist yet.
On a preemption notice it writes that file (JSON: reason, source, deadline). The trainer's callback checks
for the file at every optimizer-step boundary; when it appears on any node, every rank agrees to stop, the
Trainer saves a checkpoint, rank 0 writes the completion marker into it and local rank 0 of every node
writes the acknowledgement file ``<stop file>.ack`` (JSON: step, checkpoint) for that node's ``watch``. ``watch`` then exits with :data:`RESTART_EXIT_CODE` so the
platform restarts the job, and the relaunch resumes from the newest complete checkpoint.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from trainfit.writes import write_file
from trainfit.errors import InputError
from trainfit.inputs import loads_json, read_text_file

STOP_FILE_ENV = "TRAINFIT_STOP_FILE"
"""Environment variable that carries the stop-request path to the trainer."""

RESUME_ENV = "TRAINFIT_RESUME_FROM"
"""Environment variable ``watch --checkpoint-dir`` sets to the newest complete checkpoint ('' when none)."""

ACK_SUFFIX = ".ack"
"""The trainer writes ``<stop file>.ack`` once the checkpoint for the stop is complete."""

RESTART_EXIT_CODE = 143
"""Exit code for "stopped for preemption, checkpoint saved, restart me". 143 = 128 + SIGTERM: it is what a
process killed by the scheduler's SIGTERM reports anyway, and it lies in the 128-255 range that the Kubeflow
training operator's ``restartPolicy: ExitCode`` treats as retryable
(https://github.com/kubeflow/training-operator/blob/master/pkg/util/train/train_util.go, IsRetryableExitCode:
``exitCode >= 128``; the older kubeflow/common version of that function lists 130, 137, 138 and 143 as the
retryable ones, so 143 restarts under both; as of 2026-12)."""


def write_json_atomic(path: str | os.PathLike, obj: dict) -> None:
    """Write ``obj`` as JSON to ``path`` so that a reader sees either nothing or the whole file (the safe writer,
    :func:`trainfit.writes.write_file`: temporary file in the folder, fsync, rename, fsync of the folder; a link
    or a special file at ``path`` is refused)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_file(p, json.dumps(obj, sort_keys=True))


def read_json(path: str | os.PathLike) -> dict | None:
    """The JSON object in ``path``; None when the file is missing, not a regular file (a FIFO is never opened
    blocking), over 1 MiB or not a JSON object."""
    try:
        obj = loads_json(read_text_file(path, max_bytes=2**20, what="watch file"), what="watch file")
    except InputError:
        return None
    return obj if isinstance(obj, dict) else None


def request_stop(stop_file: str | os.PathLike, *, reason: str, source: str, deadline_unix: float | None) -> None:
    """Ask the trainer to checkpoint at the next step boundary and stop."""
    write_json_atomic(stop_file, {"reason": reason, "source": source, "deadline_unix": deadline_unix,
                                  "requested_unix": time.time()})


def ack_path(stop_file: str | os.PathLike) -> Path:
    return Path(str(stop_file) + ACK_SUFFIX)
