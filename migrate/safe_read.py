"""Reading a file of a scanned tree without trusting it: a regular file only (no FIFO,
device or socket), a symlink kept inside the tree, at most a size cap of bytes. Shared by
the scanner, the config reader and the evidence reader, so it sits below every stage."""

from __future__ import annotations

import functools
import os
import stat

# The most bytes read from one file of the tree ([tool.migrate] max-file-size): a larger
# file is skipped with a note, never read into memory.
DEFAULT_MAX_FILE_SIZE = 8 * 1024 * 1024


class Skipped(Exception):
    """A file that is not read at all: not a regular file, over the size cap, a symlink out
    of the tree. Its message is the reason, for a one-line note ("x.py: <reason>; skipped")."""


_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISDIR, "folder"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "special file")


def size_text(size: int) -> str:
    """A byte count as the config spells it: "8 MiB", "512 KiB", else "1500 bytes"."""
    for unit, name in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"


def checked_stat(
    path: str | os.PathLike[str],
    max_size: int = DEFAULT_MAX_FILE_SIZE,
    confine: str | None = None,
) -> os.stat_result:
    """The stat of a file that may be read, or Skipped: it must be a regular file (after
    symlinks) of at most `max_size` bytes, and, with `confine` (a real folder path), a
    symlink (the file, or a folder above it: git lists a file under a folder that became a
    symlink) must point inside that folder. OSError when it cannot be stat'ed. One realpath
    per folder, one lstat per file (and a stat and a realpath for a symlink)."""
    path = os.fspath(path)
    if confine is not None:
        folder = _real_folder(os.path.dirname(os.path.abspath(path)))
        if not _under(folder, confine):
            raise Skipped(
                f"symlink to {os.path.join(folder, os.path.basename(path))}, outside the tree"
            )
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        if confine is not None:
            real = os.path.realpath(path)
            if not _under(real, confine):
                raise Skipped(f"symlink to {real}, outside the tree")
        st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise Skipped(f"not a regular file ({_kind(st.st_mode)})")
    if st.st_size > max_size:
        raise Skipped(f"larger than max-file-size ({st.st_size} bytes > {size_text(max_size)})")
    return st


def _under(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_OPEN_FLAGS |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def read_checked(
    path: str | os.PathLike[str],
    max_size: int = DEFAULT_MAX_FILE_SIZE,
    confine: str | None = None,
) -> bytes:
    """A file's bytes, read only when `checked_stat` allows it. Opened without blocking
    (a FIFO swapped in after the stat does not hang the open), checked again on the open
    descriptor, and read to at most `max_size` bytes whatever the file claims. Every read
    of the scanned tree goes through here."""
    before = checked_stat(path, max_size, confine)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise Skipped("replaced while being read")
        if not stat.S_ISREG(st.st_mode):  # pragma: no cover - the same inode as the stat
            raise Skipped(f"not a regular file ({_kind(st.st_mode)})")
        chunks, left = [], max_size + 1
        # The first read asks for the size the file claims and one byte more (a 1 MiB
        # buffer per read cost every small file an allocation of that size).
        want = min(left, st.st_size + 1)
        while left > 0:
            chunk = os.read(fd, want)
            chunks.append(chunk)
            left -= len(chunk)
            if len(chunk) < want:  # a regular file reads short only at its end
                break
            want = min(left, 1 << 20)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_size:
        raise Skipped(f"larger than max-file-size (grew past {size_text(max_size)} while read)")
    return data
