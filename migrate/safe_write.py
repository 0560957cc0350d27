"""Writing a file without trusting the folder it goes to: every output of the tool (apply's
rewrites, reports, verify and convert artifacts, record's evidence) is written to a temp file
beside its target, fsynced and renamed over it, so it is wholly old or wholly new; never
through a symlink; and, given the chosen output folder (`root`), never into a folder outside
it. Shared by every stage, so it sits below them all, beside safe_read."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

# The temp file a write goes through: `.NAME.migrate-PID-XXXXXXXX.migrate-tmp` beside NAME,
# so that one left by a killed run is recognised, with the run that wrote it.
TEMP_SUFFIX = ".migrate-tmp"
TEMP_NAME = re.compile(r"\.(?P<name>.+)\.migrate-(?P<pid>\d+)-[a-z0-9_]{8}\.migrate-tmp")


class UnsafeOutput(ValueError):
    """An output that would be written through a symlink or outside the chosen folder; its
    message is one line naming it."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path, self.reason = os.fspath(path), reason
        super().__init__(f"{self.path}: {reason}")


def check_output(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> None:
    """UnsafeOutput when writing `path` would follow a symlink: the file itself is one, or
    (with `root`, the chosen output folder) a folder between root and the file is one or
    the file's folder lies outside root."""
    path = Path(path)
    if os.path.islink(path):
        raise UnsafeOutput(path, "is a symlink; not written through it")
    if root is not None:
        _check_folders(path.parent, Path(root))


def _check_folders(folder: Path, root: Path) -> None:
    for part in _below(folder, root):
        if os.path.islink(part):
            raise UnsafeOutput(part, "is a symlink; not written through it")
    real, top = os.path.realpath(folder), os.path.realpath(root)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        raise UnsafeOutput(folder, f"resolves to {real}, outside {root}; not written")


def _below(folder: Path, root: Path) -> list[Path]:
    """The folders from just below `root` down to `folder` (empty when folder is root or
    not under it as written)."""
    try:
        rel = folder.relative_to(root)
    except ValueError:
        rel = Path(os.path.relpath(folder, root))
        if rel.parts[:1] == ("..",):
            return [folder]  # outside root as written: its real path decides
    parts, out = root, []
    for name in rel.parts:
        parts = parts / name
        out.append(parts)
    return out


def make_folder(folder: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path:
    """`folder` created (with the chosen output folder `root` itself and its parents, which
    the user named) one level at a time below root, refusing a symlink at any level: no
    folder is ever created outside root."""
    folder, root = Path(folder), Path(root)
    if os.path.islink(root) and not os.path.isdir(root):
        raise UnsafeOutput(root, "is a symlink to nothing; not written through it")
    root.mkdir(parents=True, exist_ok=True)
    for part in _below(folder, root):
        if os.path.islink(part):
            raise UnsafeOutput(part, "is a symlink; not written through it")
        try:
            part.mkdir()
        except FileExistsError:
            if not part.is_dir():
                raise UnsafeOutput(part, "exists and is not a folder") from None
    _check_folders(folder, root)
    return folder


def _new_file_mode() -> int:
    """What `open(path, "w")` would give a new file: 0o666 less the umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def replacing(
    path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
) -> Iterator[Path]:
    """A temp file beside `path` for a writer that takes a path (torch.save): once the block
    ends it is fsynced, given the old file's mode (a new file's: the umask's) and renamed
    over `path`. An exception (Ctrl-C too) removes it and leaves `path` as it was. Signals
    are held while the temp file is created and while it is renamed, so neither can leave
    it behind; a long write in between can still be interrupted."""
    path = Path(path)
    check_output(path, root)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = _new_file_mode()
    temp: Path | None = None
    try:
        with _signals_held():
            fd, name = tempfile.mkstemp(
                prefix=f".{path.name}.migrate-{os.getpid()}-", suffix=TEMP_SUFFIX, dir=path.parent
            )
            os.close(fd)
            temp = Path(name)
        yield temp
        with _signals_held():
            with open(temp, "rb") as handle:  # the writer may have closed it unsynced
                os.fsync(handle.fileno())
            os.chmod(temp, mode)
            check_output(path, root)  # a link put there meanwhile is not replaced either
            os.replace(temp, path)
    except BaseException:
        # Ctrl-C or a full disk: the original is untouched, and so must the folder be.
        if temp is not None:
            temp.unlink(missing_ok=True)
        raise


def write_atomic(
    path: str | os.PathLike[str], data: bytes, root: str | os.PathLike[str] | None = None
) -> Path:
    """`data` written to `path` through a temp file beside it (see `replacing`)."""
    with replacing(path, root) as temp, open(temp, "wb") as handle:
        handle.write(data)
    return Path(path)


def open_append(path: str | os.PathLike[str]):
    """`path` opened for appending text, never through a symlink (O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeOutput(path, "is a symlink; not written through it") from None
        raise
    return os.fdopen(fd, "a", encoding="utf-8")


@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT/SIGTERM while one file is written, so that neither can land between
    creating the temp file and cleaning it up; they are delivered right after."""
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not (
        threading.main_thread()
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
