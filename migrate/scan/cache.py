"""Content-hash cache of per-file scan results, so a repeated scan of an unchanged tree is
near-instant. Entries are keyed by path and validated by the stat first, then by a BLAKE2
digest of the bytes when the stat changed (a checkout that touched files).

Size and mtime alone do not tell a file is unchanged: `tar -x`, `cp -p` and rsync give a
replaced file its old mtime, and same-size content hides then. The stat compared is (size,
mtime, inode, ctime): writing a file or setting its mtime moves its ctime, and a file put in
its place has another inode, so either sends the lookup to the digest."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from migrate import __version__
from migrate.registry import cache_home
from migrate.scan.discover import Skipped, checked_stat, read_checked


class Readable(Protocol):
    def stat(self) -> os.stat_result: ...

    def read(self) -> bytes: ...


@dataclass(frozen=True)
class _Plain:
    """A file read with the default checks (discover.read_checked)."""

    path: str

    def stat(self) -> os.stat_result:
        return checked_stat(self.path)

    def read(self) -> bytes:
        return read_checked(self.path)


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    """What must be unchanged for a file's cached result to stand without reading it."""
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns


@dataclass
class Entry:
    stat: tuple[int, int, int, int]  # stat_key when the result was stored
    digest: bytes
    result: Any  # file_analysis.FileResult of the first phase


class ResultCache:
    def __init__(self, folder: Path, key_parts: tuple) -> None:
        rules_hash = _rules_fingerprint()
        key = hashlib.blake2b(
            repr((__version__, rules_hash, key_parts)).encode(), digest_size=8
        ).hexdigest()
        self.folder = folder
        self.file = folder / f"scan-{key}.pickle"
        self.entries: dict[str, Entry] = {}
        # The whole outcome of the last scan, valid while no file (nor a module read from
        # outside the scanned paths) changed: (fingerprint, outside stats, payload).
        self._final: tuple[Any, tuple, Any] | None = None
        self.dirty = False
        try:
            with open(self.file, "rb") as handle:
                self.entries, self._final = pickle.load(handle)
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
            AttributeError,
            ImportError,
            ValueError,
            TypeError,
        ):
            self.entries, self._final = {}, None

    def final(self, fingerprint: Any) -> Any | None:
        if self._final is None or self._final[0] != fingerprint:
            return None
        if _stats(p for p, *_ in self._final[1]) != self._final[1]:
            return None
        return self._final[2]

    def store_final(self, fingerprint: Any, outside: list[str], payload: Any) -> None:
        self._final = (fingerprint, _stats(outside), payload)
        self.dirty = True

    def lookup(self, path: str, source: Readable | None = None) -> Any | None:
        """The stored result while the file is unchanged. `source` reads it (workers.FileJob:
        its size cap and the tree it must stay in); a file it would skip is a miss, so the
        scan reads it again and says why it skipped it."""
        entry = self.entries.get(path)
        if entry is None:
            return None
        source = source or _Plain(path)
        try:
            st = source.stat()
        except (OSError, Skipped):
            return None
        if stat_key(st) == entry.stat:
            return entry.result
        if st.st_size != entry.stat[0]:
            return None
        try:
            same = digest(source.read()) == entry.digest
        except (OSError, Skipped):
            return None
        if same:
            entry.stat = stat_key(st)
            self.dirty = True
            return entry.result
        return None

    def store(self, path: str, file_digest: bytes | None, result: Any) -> None:
        if file_digest is None:
            return
        try:
            st = os.stat(path)
        except OSError:
            return
        self.entries[path] = Entry(stat_key(st), file_digest, result)
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tag = self.folder.parent / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(
                    "Signature: 8a477f597d28d172789f06886806bc55\n"
                    "# This folder is a cache of torchscript-migrate.\n"
                )
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((self.entries, self._final), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.file)
        except OSError:
            pass  # a read-only tree: the cache is an optimisation, never a failure


def _stats(paths) -> tuple:
    out = []
    for path in paths:
        try:
            out.append((path, *stat_key(os.stat(path))))
        except OSError:
            out.append((path, -1, -1, -1, -1))
    return tuple(out)


def _rules_fingerprint() -> str:
    from migrate.registry import rules_dir

    h = hashlib.blake2b(digest_size=8)
    for path in sorted(rules_dir().glob("*.yaml")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    # The code that produces results is part of the key (an editable install changes).
    package = Path(__file__).parent.parent
    for path in sorted([*package.glob("*.py"), *package.glob("*/*.py")]):
        st = path.stat()
        h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def default_cache_folder(paths: list[str]) -> Path:
    """Outside the scanned tree (so scans and dry runs leave it byte-identical): one folder
    per scan root under $MIGRATE_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache."""
    first = Path(paths[0]) if paths else Path(".")
    base = (first if first.is_dir() else first.parent).resolve()
    tag = hashlib.blake2b(str(base).encode(), digest_size=8).hexdigest()
    return cache_home() / f"{base.name or 'root'}-{tag}"
