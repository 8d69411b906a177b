"""Which checkpoint to resume from: the newest COMPLETE one.

A Hugging Face checkpoint directory (``checkpoint-<step>``) appears on disk before every file in it is
written, and a kill in the middle of a save leaves a directory that looks like a checkpoint but is not.
:class:`trainfit.integrations.hf.TrainfitCallback` therefore

* writes :data:`SAVING_MARKER` into ``checkpoint-<step>`` when the step that will save ends (before the
  Trainer writes anything), and
* writes :data:`COMPLETE_MARKER` (and removes the saving marker) in ``on_save``, after a barrier across all
  ranks, from rank 0 only (local rank 0 of each node with ``save_on_each_node``): every rank has saved.

:func:`latest_complete_checkpoint` returns the newest directory with the complete marker. With
``mark_incomplete=True`` it renames each directory that carries the saving marker but not the complete
marker to ``incomplete-checkpoint-<step>-<unix time>``, so that neither the Trainer's own
``get_last_checkpoint`` nor its checkpoint rotation ever picks it up, and a new save of the same step starts
from an empty directory. Directories without any trainfit marker (written without the callback) are skipped
but never renamed.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from trainfit.watch.protocol import RESUME_ENV, read_json, write_json_atomic

COMPLETE_MARKER = "trainfit-complete.json"
SAVING_MARKER = "trainfit-saving.json"
INCOMPLETE_PREFIX = "incomplete-"
_CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_dirs(output_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, path)`` of every ``checkpoint-<step>`` directory in ``output_dir``, oldest first."""
    root = Path(output_dir)
    if not root.is_dir():
        return []
    out = []
    for child in root.iterdir():
        m = _CHECKPOINT_RE.match(child.name)
        if m and child.is_dir():
            out.append((int(m.group(1)), child))
    return sorted(out)


def is_complete(checkpoint: str | os.PathLike) -> bool:
    """True when the checkpoint carries a readable completion marker."""
    return read_json(Path(checkpoint) / COMPLETE_MARKER) is not None


def mark_saving(checkpoint: str | os.PathLike, *, step: int) -> None:
    """Record that a save of ``step`` is starting in ``checkpoint`` (rank 0, before the Trainer writes)."""
    write_json_atomic(Path(checkpoint) / SAVING_MARKER, {"step": step, "started_unix": time.time()})


def mark_complete(checkpoint: str | os.PathLike, *, step: int, world_size: int = 1, **extra) -> None:
    """Record that every rank finished saving ``checkpoint`` (rank 0, after a barrier)."""
    cp = Path(checkpoint)
    write_json_atomic(cp / COMPLETE_MARKER, {"step": step, "world_size": world_size,
                                             "completed_unix": time.time(), **extra})
    try:
        (cp / SAVING_MARKER).unlink()
    except FileNotFoundError:
        pass


def latest_complete_checkpoint(output_dir: str | os.PathLike, *, mark_incomplete: bool = False) -> Path | None:
    """The newest ``checkpoint-<step>`` in ``output_dir`` with a completion marker, or None.

    ``mark_incomplete=True`` renames the checkpoints that trainfit started to save but never completed
    (see the module docstring); call it from one process per filesystem (``trainfit watch`` does, before it
    starts the trainer), not from every rank.
    """
    best: Path | None = None
    for step, path in checkpoint_dirs(output_dir):
        if is_complete(path):
            best = path
        elif mark_incomplete and (path / SAVING_MARKER).exists():
            target = path.with_name(f"{INCOMPLETE_PREFIX}{path.name}-{int(time.time())}")
            try:
                path.rename(target)
            except OSError:  # another node renamed it first, or a read-only mount: skipping is enough
                pass
    return best


def resume_from(output_dir: str | os.PathLike) -> str | None:
    """What to pass as ``trainer.train(resume_from_checkpoint=...)``.

    Under ``trainfit watch --checkpoint-dir`` the answer was chosen once before launch and is in
    ``TRAINFIT_RESUME_FROM`` ('' means start fresh); otherwise the newest complete checkpoint in
    ``output_dir`` (None when there is none).
    """
    env = os.environ.get(RESUME_ENV)
    if env is not None:
        return env or None
    cp = latest_complete_checkpoint(output_dir)
    return str(cp) if cp else None
