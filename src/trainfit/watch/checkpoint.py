"""Which checkpoint to resume from: the newest COMPLETE one.

A Hugging Face checkpoint directory (``checkpoint-<step>``) appears on disk before every file in it is
written, and a kill in the middle of a save leaves a directory that looks like a checkpoint but is not.
:class:`trainfit.integrations.hf.TrainfitCallback` therefore

* writes :data:`SAVING_MARKER` into ``checkpoint-<step>`` when the step that will save ends (before the
  Trainer writes anything), and
* writes :data:`COMPLETE_MARKER` (and removes the saving marker) in ``on_save``, after a barrier across all
  ranks, from rank 0 only (local rank 0 of each node with ``save_on_each_node``): every rank has saved.

:func:`latest_complete_checkpoint` returns the newest directory whose complete marker checks out
(:func:`incomplete_reason`: the marker names the folder's step and lists every file with its size, weights among
them; the files are there with those sizes; no save started since; the folder is no link out of the run folder). With
``mark_incomplete=True`` it renames each directory that carries the saving marker but not the complete
marker to ``incomplete-checkpoint-<step>-<unix time>``, so that neither the Trainer's own
``get_last_checkpoint`` nor its checkpoint rotation ever picks it up, and a new save of the same step starts
from an empty directory. Directories without any trainfit marker (written without the callback) are skipped
but never renamed.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from trainfit.watch.protocol import RESUME_ENV, write_json_atomic
from trainfit.errors import InputError
from trainfit.inputs import loads_json, read_text_file

COMPLETE_MARKER = "trainfit-complete.json"
SAVING_MARKER = "trainfit-saving.json"
INCOMPLETE_PREFIX = "incomplete-"
_CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_dirs(output_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, path)`` of every ``checkpoint-<step>`` directory in ``output_dir``, oldest first."""
    root = Path(output_dir)
    try:
        if not root.is_dir():
            return []
    except OSError:  # a name over the file system's limit: no checkpoint can be there
        return []
    out = []
    for child in root.iterdir():
        m = _CHECKPOINT_RE.match(child.name)
        if m and child.is_dir() and len(m.group(1)) <= 18:
            out.append((int(m.group(1)), child))
    return sorted(out)


#: Files whose presence makes a checkpoint hold weights (model, adapter or DeepSpeed shards).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
MAX_MARKER_BYTES = 16 * 2**20
MAX_LISTED_FILES = 200_000


def _read_marker(path: Path) -> dict | None:
    """The marker's JSON object through the input gate (a regular file, bounded, no FIFO hang), else None."""
    try:
        if path.is_symlink():
            return None
        obj = loads_json(read_text_file(path, max_bytes=MAX_MARKER_BYTES, what="checkpoint marker"),
                         what="checkpoint marker")
    except InputError:
        return None
    return obj if isinstance(obj, dict) else None


def _listing(cp: Path) -> dict[str, int]:
    """Relative path -> size of every regular file under ``cp`` (links not followed, markers left out)."""
    out: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(cp, followlinks=False):
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(cp).as_posix()
            if rel in (COMPLETE_MARKER, SAVING_MARKER):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out[rel] = st.st_size
            if len(out) >= MAX_LISTED_FILES:
                return out
    return out


def incomplete_reason(checkpoint: str | os.PathLike, *, root: str | os.PathLike | None = None) -> str | None:
    """Why ``checkpoint`` is not a complete checkpoint (None: it is). Complete means: a real folder (not a link,
    inside ``root`` when given), no save started after the marker, a marker naming this folder's step and listing
    its files with sizes, every listed file present as a regular file of that size, weights among them."""
    cp = Path(checkpoint)
    if cp.is_symlink():
        return "it is a symbolic link"
    if root is not None:
        try:
            cp.resolve().relative_to(Path(root).resolve())
        except (ValueError, OSError):
            return "it resolves outside the checkpoint folder"
    if not cp.is_dir():
        return "it is not a folder"
    if (cp / SAVING_MARKER).exists() or (cp / SAVING_MARKER).is_symlink():
        return "a save started and never completed"
    marker = _read_marker(cp / COMPLETE_MARKER)
    if marker is None:
        return "no readable completion marker"
    m = _CHECKPOINT_RE.match(cp.name)
    step = marker.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or (m is not None and int(m.group(1)) != step):
        return f"the marker names step {str(step)[:20]}, not this folder's"
    files = marker.get("files")
    if not isinstance(files, dict) or not files:
        return "the marker lists no files"
    weights = False
    for rel, size in files.items():
        if not isinstance(rel, str) or isinstance(size, bool) or not isinstance(size, int):
            return "the marker's file list is malformed"
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            return f"the marker lists a path outside the checkpoint ({rel[:60]!r})"
        try:
            st = os.lstat(cp / rel)
        except OSError:
            return f"{rel[:80]} is missing"
        if not stat.S_ISREG(st.st_mode):
            return f"{rel[:80]} is not a regular file (a link?)"
        if st.st_size != size:
            return f"{rel[:80]} is {st.st_size:,} bytes, the marker says {size:,}"
        weights = weights or rel.endswith(WEIGHT_SUFFIXES)
    if not weights:
        return "the marker lists no weight file"
    return None


def is_complete(checkpoint: str | os.PathLike, *, root: str | os.PathLike | None = None) -> bool:
    """True when the checkpoint is complete (:func:`incomplete_reason`)."""
    return incomplete_reason(checkpoint, root=root) is None


def mark_saving(checkpoint: str | os.PathLike, *, step: int) -> None:
    """Record that a save of ``step`` is starting in ``checkpoint`` (rank 0, before the Trainer writes). An old
    completion marker of an earlier save into the same folder is removed first: a re-save killed midway must
    not leave the folder looking complete."""
    cp = Path(checkpoint)
    try:
        (cp / COMPLETE_MARKER).unlink()
    except FileNotFoundError:
        pass
    write_json_atomic(cp / SAVING_MARKER, {"step": step, "started_unix": time.time()})


def mark_complete(checkpoint: str | os.PathLike, *, step: int, world_size: int = 1, **extra) -> None:
    """Record that every rank finished saving ``checkpoint`` (rank 0, after a barrier): the marker names the step
    and lists every file with its size, and is written last, atomically."""
    cp = Path(checkpoint)
    write_json_atomic(cp / COMPLETE_MARKER, {"step": step, "world_size": world_size,
                                             "completed_unix": time.time(), **extra, "files": _listing(cp)})
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
        if is_complete(path, root=output_dir):
            best = path
        elif mark_incomplete and (path / SAVING_MARKER).exists() and not path.is_symlink():
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
