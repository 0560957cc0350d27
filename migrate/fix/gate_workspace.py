"""The scratch copy `migrate apply --test` runs the tests in: which folder is copied, what is
left out of the copy, and the files of each trial written into it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from migrate import gitsafe
from migrate.fix.fixer import apply_units
from migrate.fix.source_text import Decoded, encode

# Never copied into the scratch tree: version control, virtual environments, caches.
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
    | {".tox", ".nox", "node_modules", ".venv", "venv", ".eggs"}
)


def repository_root(paths: list[str]) -> Path:
    """The folder to copy: the git work tree holding PATHS, else the closest project root
    (pyproject.toml...) above them, else the current folder when it holds them, else their
    common folder. The current folder wins over a project root above it."""
    absolute = [Path(os.path.abspath(p)) for p in paths]
    common = Path(os.path.commonpath([str(p) for p in absolute]))
    start = common if common.is_dir() else common.parent
    try:
        proc = gitsafe.run(["rev-parse", "--show-toplevel"], start, timeout=30)
        if proc.returncode == 0:
            top = Path(proc.stdout.decode("utf-8", "surrogateescape").strip())
            return Path(os.path.abspath(top))
    except gitsafe.GitUnavailable:
        pass
    cwd = Path.cwd()
    projects = [f for f in (start, *start.parents) if _is_project(f)]
    if all(p == cwd or cwd in p.parents for p in absolute):
        # where the test command is meant to run, unless a project root lies between it and
        # the paths (`cd / && migrate apply --test ... ~/proj` must not copy the whole disk)
        inner = [f for f in projects if cwd in f.parents]
        return inner[0] if inner else cwd
    return projects[0] if projects else start


def _is_project(folder: Path) -> bool:
    return any((folder / marker).is_file() for marker in PROJECT_MARKERS)


# Files that mark a Python project's root when it is not a git work tree.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini")


def skipped_dirs(folder: str, names: list[str]) -> set[str]:
    return {
        n for n in names if n in SKIP_DIRS or os.path.isfile(os.path.join(folder, n, "pyvenv.cfg"))
    }


@dataclass
class FileState:
    """One file the fixes touch: where it is in the user's tree and in the copy."""

    display: str
    source: Path
    copy: Path
    decoded: Decoded
    units: list[int]  # indices into the gate's unit list


class Workspace:
    """A scratch copy of the repository; each trial writes the files of one set of units."""

    def __init__(self, root: Path, files: list[FileState], units: list, tmp: Path):
        self.root = root
        self.files = files
        self.units = units
        self.tmp = tmp
        self._current = {f.display: f.decoded.text for f in files}
        self._texts: dict[tuple[str, frozenset[int]], str] = {}

    def text(self, f: FileState, applied: frozenset[int]) -> str:
        mine = frozenset(i for i in f.units if i in applied)
        key = (f.display, mine)
        if key not in self._texts:
            ordered = [self.units[i] for i in sorted(mine)]
            self._texts[key] = apply_units(f.display, f.decoded.text, ordered, f.decoded.newline)
        return self._texts[key]

    def write(self, applied: frozenset[int]) -> list[FileState]:
        """Make the copy hold exactly these units; returns the files that differ from the
        user's tree."""
        changed = []
        for f in self.files:
            text = self.text(f, applied)
            if text != self._current[f.display]:
                f.copy.write_bytes(encode(f.decoded, text))
                self._current[f.display] = text
            if text != f.decoded.text:
                changed.append(f)
        return changed
