"""Find the files to look at: git-aware walk, skip folders, --exclude globs, text prefilter."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from migrate import gitsafe
from migrate.safe_read import (  # noqa: F401 (the scanner's readers, also imported from here)
    DEFAULT_MAX_FILE_SIZE,
    Skipped,
    checked_stat,
    read_checked,
    size_text,
)

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "build",
        "dist",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        "site-packages",
        ".ipynb_checkpoints",
        ".migrate_cache",
    }
)

PYTHON_SUFFIXES = (".py", ".pyi")


class UsageError(Exception):
    """Bad command-line input (missing path, bad option): exit 2."""


@dataclass(frozen=True)
class SourceFile:
    path: Path  # as given/found (relative paths stay relative, for reporting)
    root: Path  # the scan root it was found under (for module names and excludes)
    named: bool = False  # named on the command line: a symlink is followed wherever it points

    @property
    def display(self) -> str:
        return self.path.as_posix()

    @property
    def is_python(self) -> bool:
        return self.path.suffix in PYTHON_SUFFIXES


def _skip_dir(name: str, full: str) -> bool:
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    return os.path.exists(os.path.join(full, "pyvenv.cfg"))


def _in_skipped_dir(base: Path, parts: Iterable[str], known: dict[str, bool]) -> bool:
    """Whether a folder on the way from `base` down through `parts` is one to skip."""
    folder = str(base)
    for part in parts:
        folder = os.path.join(folder, part)
        skip = known.get(folder)
        if skip is None:
            skip = known[folder] = _skip_dir(part, folder)
        if skip:
            return True
    return False


def is_excluded(path: Path, root: Path, patterns: Iterable[str]) -> bool:
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    parts = rel.split("/")
    absolute = None
    for pattern in patterns:
        pat = pattern.rstrip("/")
        if pat.startswith("/"):
            # Anchored at a config file's folder (migrate.config): match the real path.
            if absolute is None:
                absolute = (Path(os.path.realpath(path.parent)) / path.name).as_posix()
            if fnmatch.fnmatchcase(absolute, pat) or absolute.startswith(pat + "/"):
                return True
            continue
        if fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(path.name, pat):
            return True
        if any(fnmatch.fnmatchcase(part, pat) for part in parts[:-1]):
            return True
        if rel.startswith(pat + "/"):
            return True
        if pat.startswith("**/") and fnmatch.fnmatchcase(rel, pat[3:]):
            return True
    return False


# git's warning for a folder it cannot list (dir.c, open_cached_dir).
_GIT_UNREADABLE = re.compile(r"could not open directory '(.+)': (.+)$")


def _git_files(directory: Path, errors: list[tuple[str, str]]) -> list[Path] | None:
    """Tracked and untracked-but-not-ignored files, or None outside a git work tree."""
    try:
        proc = gitsafe.run(
            ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], directory
        )
    except gitsafe.GitUnavailable:
        return None
    if proc.returncode != 0:
        return None
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        match = _GIT_UNREADABLE.search(line)
        if match:
            folder = (directory / match.group(1).rstrip("/")).as_posix()
            errors.append((folder, f"cannot read folder: {match.group(2).lower()}"))
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [directory / n for n in dict.fromkeys(names) if n]


def _git_ignored(directory: Path) -> bool:
    try:
        proc = gitsafe.run(["check-ignore", "-q", "."], directory, timeout=30)
    except gitsafe.GitUnavailable:
        return False
    return proc.returncode == 0


def _walk(directory: Path, errors: list[tuple[str, str]]) -> Iterator[Path]:
    def unreadable(exc: OSError) -> None:
        reason = exc.strerror.lower() if exc.strerror else str(exc)
        errors.append((Path(exc.filename or directory).as_posix(), f"cannot read folder: {reason}"))

    # followlinks=False: a symlinked folder is not entered, so a symlink loop cannot recurse.
    for dirpath, dirnames, filenames in os.walk(directory, onerror=unreadable, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d, os.path.join(dirpath, d)))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def discover(
    paths: Iterable[str | Path],
    exclude: Iterable[str] = (),
    use_git: bool = True,
    errors: list[tuple[str, str]] | None = None,
) -> list[SourceFile]:
    """Expand the given files and folders into the files to consider, deduplicated, sorted.
    Folders that cannot be listed are appended to `errors` as (path, reason)."""
    exclude = list(exclude)
    errors = [] if errors is None else errors
    seen: dict[str, SourceFile] = {}
    for given in paths:
        path = Path(given)
        if not os.path.lexists(path):
            raise UsageError(f"{path}: no such file or directory")
        if path.is_dir():
            files = _git_files(path, errors) if use_git else None
            if files == [] and _git_ignored(path):
                # Named on the command line but ignored by its enclosing repository (a folder
                # inside a virtualenv or a build tree): the user asked for it, so walk it.
                files = None
            if files is None:
                files = list(_walk(path, errors))
            else:
                # git lists files inside skipped folders too (a committed venv, say).
                skipped: dict[str, bool] = {}
                files = [
                    f
                    for f in files
                    if not _in_skipped_dir(path, f.relative_to(path).parts[:-1], skipped)
                    and os.path.lexists(f)
                ]
            root = path
        else:
            files, root = [path], path.parent
        named = not path.is_dir()
        # A glob matches relative to the scanned folder, or to the current folder as typed
        # (`--exclude src/gen` while scanning `src`, or a file named on the command line).
        here = Path(".")
        for f in files:
            if exclude and (
                is_excluded(f, root, exclude) or (root != here and is_excluded(f, here, exclude))
            ):
                continue
            key = os.path.normpath(f)
            if key not in seen:
                seen[key] = SourceFile(Path(key), root, named)
    return sorted(seen.values(), key=lambda s: s.display)


def read_source(
    path: Path | str, max_size: int = DEFAULT_MAX_FILE_SIZE, confine: str | None = None
) -> str:
    """Decode a source file the way Python would (PEP 263 cookie, BOM), keeping newlines;
    read through `read_checked` (Skipped, like OSError, means there is no text)."""
    return decode_source(read_checked(path, max_size, confine))


def decode_source(data: bytes) -> str:
    import io
    import tokenize

    if b"\0" in data[:8192]:
        raise UnicodeDecodeError("binary", data[:1], 0, 1, "file looks binary (NUL bytes)")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


@functools.lru_cache(maxsize=4096)
def _package_prefix(directory: str) -> tuple[str, ...] | None:
    """Dotted package chain of a folder (folders holding __init__.py), None outside one."""
    if not os.path.exists(os.path.join(directory, "__init__.py")):
        return None
    real = os.path.realpath(directory)
    parent = os.path.dirname(real)
    outer = _package_prefix(parent) if parent != real else None
    return (*(outer or ()), os.path.basename(real))


def in_package(path: Path | str) -> bool:
    """Whether the file's folder holds an __init__.py (the answer cached per folder)."""
    return _package_prefix(os.path.dirname(os.path.abspath(os.fspath(path)))) is not None


def module_name(path: Path | str, root: Path | str) -> str:
    """Dotted module name: the package chain (folders with __init__.py), else relative to root.
    String operations: pathlib's objects cost more than the rest for every file of a scan."""
    path, root = os.fspath(path), os.fspath(root)
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    prefix = _package_prefix(os.path.dirname(os.path.abspath(path)))
    if prefix is not None:
        return ".".join(prefix if stem == "__init__" else (*prefix, stem))
    rel = _relative_parts(os.path.join(folder, stem), root)
    if rel is None:
        return stem
    return ".".join(p for p in rel if p != "__init__") or stem


def _relative_parts(path: str, root: str) -> list[str] | None:
    """PurePath.relative_to's parts, lexically (no resolving), or None outside `root`."""
    if os.altsep:  # Windows: pathlib reads "/" as a separator too
        path, root = path.replace(os.altsep, os.sep), root.replace(os.altsep, os.sep)
    parts = [p for p in path.split(os.sep) if p not in ("", ".")]
    base = [p for p in root.split(os.sep) if p not in ("", ".")]
    if os.path.isabs(path) != os.path.isabs(root) or parts[: len(base)] != base:
        return None
    return parts[len(base) :]


def prefilter_regex(words: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(sorted(set(words))))


def import_root(path: str, module: str, is_package: bool) -> str | None:
    """The sys.path entry from which `module` (stored at `path`) is imported."""
    parts = module.split(".") if module else []
    up = len(parts) if is_package else len(parts) - 1
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(max(up, 0)):
        folder = os.path.dirname(folder)
    return folder if parts else None


def module_file(root: str, qual: str) -> tuple[str, str, bool] | None:
    """The file under `root` that defines the longest module prefix of a dotted name:
    (path, module, is_package), or None."""
    return next(module_files(root, qual), None)


def module_files(root: str, qual: str) -> Iterator[tuple[str, str, bool]]:
    """The files under `root` that define module prefixes of a dotted name, longest first
    (`pkg/utils.py`, then `pkg/__init__.py`): (path, module, is_package)."""
    parts = qual.split(".")
    for cut in range(len(parts), 0, -1):
        base = os.path.join(root, *parts[:cut])
        for candidate, package in (
            (base + ".py", False),
            (os.path.join(base, "__init__.py"), True),
        ):
            if os.path.isfile(candidate):
                yield candidate, ".".join(parts[:cut]), package
                break
