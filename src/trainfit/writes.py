"""The one safe writer: every file trainfit writes (render, calibrate, refresh caches, watch markers) goes through
:func:`write_file`.

* **atomic**: the text goes to a temporary file in the target's own folder, is flushed and fsynced, then renamed
  over the target (and the folder fsynced): a full disk or a kill leaves the old file or the new one, never a
  fragment;
* **no links, no special files**: an existing target that is a symbolic link, a FIFO, a device or a folder is
  refused (the rename would replace a link rather than follow it, but a link in a job folder is a sign of a
  trick, and a FIFO would hang a plain ``open``); nothing is ever opened for writing but the new temporary file;
* **nothing of the user's lost**: :func:`write_set` (render's folder) keeps a manifest of what trainfit wrote with
  SHA-256 hashes (the last line of the folder's README.md, an HTML comment); a file that differs from both what trainfit wrote last time and what it
  writes now (a hand-edited ``launch.sh``, a file trainfit never wrote) is refused unless ``force``, and files
  of an earlier render that this one does not write are removed (when unedited), so ``submit`` never sends an
  old job.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

from trainfit.errors import TrainfitError, WriteError, InputError
from trainfit.i18n import _
from trainfit.inputs import loads_json

#: The file whose last line is the manifest of a rendered folder: what trainfit wrote there last, with hashes.
MANIFEST = "README.md"
MANIFEST_MARK = "<!-- trainfit-manifest "
MANIFEST_SCHEMA = "trainfit.manifest/1"
MAX_MANIFEST_BYTES = 1 << 20


def _short(p: str | Path, n: int = 200) -> str:
    s = str(p)
    return s if len(s) <= n else s[: n - 3] + "..."


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def existing_kind(path: Path) -> str | None:
    """None when nothing is at ``path``; ``file`` for a regular file; else what it is (never followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return _("unreadable ({error})").format(error=e.strerror or e)
    if stat.S_ISLNK(st.st_mode):
        return _("a symbolic link")
    if stat.S_ISREG(st.st_mode):
        return "file"  # the one kind trainfit writes over (compared, never shown)
    if stat.S_ISDIR(st.st_mode):
        return _("a folder")
    if stat.S_ISFIFO(st.st_mode):
        return _("a FIFO")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return _("a device")
    if stat.S_ISSOCK(st.st_mode):
        return _("a socket")
    return _("a special file")


def ensure_dir(path: str | os.PathLike, *, error: type[TrainfitError] = WriteError, what: str = "folder") -> Path:
    """``path`` as an existing folder (created with its parents when missing); a file, a FIFO or a dangling link
    there is one clear error."""
    p = Path(path)
    if len(str(p)) > 4096 or "\x00" in str(p):
        raise error(_("the {what} name is not usable").format(what=what), fix=_("choose another folder"))
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise error(_("{path} exists and is not a folder").format(path=_short(p)),
                    fix=_("choose another folder")) from None
    except (OSError, ValueError) as e:
        raise error(_("cannot create {path}: {error}").format(path=_short(p), error=getattr(e, "strerror", None) or e),
                    fix=_("choose another folder")) from None
    if not p.is_dir():
        raise error(_("{path} is not a folder").format(path=_short(p)), fix=_("choose another folder"))
    return p


def read_own(path: Path, max_bytes: int = 64 << 20) -> bytes | None:
    """The bytes of a regular file trainfit may replace (None when absent); never opens a FIFO or a device, and
    never follows a link."""
    kind = existing_kind(path)
    if kind is None:
        return None
    if kind != "file":
        raise WriteError(_("{path} is {kind}; trainfit does not write through links or into special files").format(
                             path=_short(path), kind=kind), fix=_("remove it or choose another folder"))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read(max_bytes + 1)
    except OSError:
        return b""


def write_file(path: str | os.PathLike, data: str | bytes, *, mode: int | None = None,
               error: type[TrainfitError] = WriteError) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, fsync, rename, fsync of the folder).
    An existing link, FIFO, device or folder at ``path`` is refused. ``mode`` None keeps an existing file's
    permissions (new files: 0644)."""
    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    kind = existing_kind(p)
    if kind is not None and kind != "file":
        raise error(_("{path} is {kind}; trainfit writes only regular files and never follows links").format(
                        path=_short(p), kind=kind), fix=_("remove it or choose another place"))
    if mode is None:
        try:
            mode = stat.S_IMODE(os.lstat(p).st_mode) if kind == "file" else 0o644
        except OSError:
            mode = 0o644
    folder = p.parent if str(p.parent) else Path(".")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{p.name[:60]}.", suffix=".tmp")
        try:
            view = memoryview(raw)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
        tmp = None
        _fsync_dir(folder)
    except (OSError, ValueError) as e:
        raise error(_("cannot write {path}: {error}").format(path=_short(p), error=getattr(e, "strerror", None) or e),
                    fix=_("check the folder's permissions and free space (nothing was half-written)")) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return p


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_file(path: Path, *, error: type[TrainfitError] = WriteError) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise error(_("cannot remove {path}: {error}").format(path=_short(path), error=e.strerror or e),
                    fix=_("check the folder's permissions")) from None


def _manifest_line(files: dict[str, str]) -> str:
    doc = {"schema": MANIFEST_SCHEMA, "files": dict(sorted(files.items()))}
    return f"{MANIFEST_MARK}{json.dumps(doc, separators=(',', ':'))} -->"


def _split_manifest(raw: bytes) -> tuple[bytes, str | None]:
    """(README body without the manifest line, the manifest line's JSON or None)."""
    idx = raw.rfind(b"\n" + MANIFEST_MARK.encode())
    if idx < 0:
        return raw, None
    line, _sep, rest = raw[idx + 1:].partition(b"\n")
    body = raw[: idx + 1] + rest  # only the manifest line itself is left out: text added below it is the user's
    return body, line.decode("utf-8", "replace")[len(MANIFEST_MARK):].removesuffix("-->").strip()


def _hash_on_disk(path: Path) -> str:
    raw = read_own(path) or b""
    if path.name == MANIFEST:
        raw = _split_manifest(raw)[0]
    return sha256(raw)


def with_manifest(files: dict[str, str]) -> dict[str, str]:
    """``files`` with the manifest line appended to README.md (what :func:`write_set` writes; the web API's zip
    holds the same texts)."""
    texts = dict(files)
    if MANIFEST in texts:
        body = texts[MANIFEST] if texts[MANIFEST].endswith("\n") else texts[MANIFEST] + "\n"
        hashes = {n: sha256(t) for n, t in files.items()}
        hashes[MANIFEST] = sha256(body)
        texts[MANIFEST] = body + _manifest_line(hashes) + "\n"
    return texts


def read_manifest(folder: Path) -> dict[str, str]:
    """File name -> SHA-256 of what trainfit wrote into ``folder`` last ({} when there is no manifest, or it is
    not trainfit's: then nothing there counts as trainfit's own). The manifest is the last line of the folder's
    README.md (an HTML comment, invisible when the README is shown); README.md's own hash is of its text without
    that line."""
    p = folder / MANIFEST
    if existing_kind(p) != "file":
        return {}
    raw = read_own(p, MAX_MANIFEST_BYTES) or b""
    if len(raw) > MAX_MANIFEST_BYTES:
        return {}
    _doc, text = _split_manifest(raw)
    if text is None:
        return {}
    try:
        doc = loads_json(text, what="manifest", error=InputError)
    except InputError:
        return {}
    files = doc.get("files") if isinstance(doc, dict) and doc.get("schema") == MANIFEST_SCHEMA else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str) and _plain_name(k)}


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..") and "\x00" not in name


def write_set(folder: str | os.PathLike, files: dict[str, str], *, force: bool = False,
              executable: tuple[str, ...] = (".sh",), error: type[TrainfitError] = WriteError) -> tuple[list[Path], list[str]]:
    """Write ``files`` (plain names -> text, README.md among them) into ``folder`` as one set and record them in
    the manifest line of its README.md.

    Before anything is written, every target is checked: a link or special file is refused always; an existing
    file that is neither what trainfit wrote there last (manifest hash) nor identical to the new text is refused
    unless ``force``. Files of the previous set that this one does not write are removed when unedited (edited
    ones: refused unless ``force``, then removed too). Returns (paths written, names removed)."""
    out = ensure_dir(folder, error=error, what=_("--out folder"))
    for name in files:
        if not _plain_name(name):  # pragma: no cover - the writers name their files
            raise error(_("refusing to write {name!r}: not a plain file name").format(name=name),
                        fix=_("report this as a bug"))
    old = read_manifest(out)
    blocked: list[str] = []
    for name, text in files.items():
        p = out / name
        kind = existing_kind(p)
        if kind is None:
            continue
        if kind != "file":
            raise error(_("{path} is {kind}; trainfit writes only regular files into --out and never follows links "
                          "out of it").format(path=_short(p), kind=kind),
                        fix=_("remove it, or render into an empty folder"))
        h = _hash_on_disk(p)
        if h != sha256(text) and h != old.get(name) and not force:
            blocked.append(name)
    stale = [n for n in old if n not in files]
    for name in stale:
        p = out / name
        kind = existing_kind(p)
        if kind is None:
            continue
        if kind != "file":
            raise error(_("{path} (a file of the earlier render) is now {kind}").format(path=_short(p), kind=kind),
                        fix=_("remove it"))
        if _hash_on_disk(p) != old[name] and not force:
            blocked.append(_("{name} (from an earlier render, edited since)").format(name=name))
    if blocked:
        raise error(_("{n} file(s) in {path} were not written by trainfit or were edited since: {files}").format(
                        n=len(blocked), path=_short(out), files=", ".join(blocked[:8]) + ("..." if len(blocked) > 8 else "")),
                    fix=_("move your edits elsewhere, render into a new folder, or pass --force to overwrite them"))
    texts = with_manifest(files)
    written = []
    order = [n for n in texts if n != MANIFEST] + ([MANIFEST] if MANIFEST in texts else [])  # the manifest last
    removed = []
    for name in stale:
        if existing_kind(out / name) == "file":
            remove_file(out / name, error=error)
            removed.append(name)
    for name in order:
        mode = 0o755 if name.endswith(executable) else 0o644
        written.append(write_file(out / name, texts[name], mode=mode, error=error))
    return written, removed


def stale_in(folder: Path, name: str) -> bool:
    """True when ``folder`` holds a trainfit manifest that does not list ``name``: the file is left over from
    something else than trainfit's last render there (``submit`` refuses to send it)."""
    files = read_manifest(folder)
    return bool(files) and name not in files
