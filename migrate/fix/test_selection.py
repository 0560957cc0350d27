"""`--test-select imports`: the test files of the scratch copy that import, directly or
through other modules, a file a trial changed; only those run.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.pyscope import resolve_relative
from migrate.fix.gate_workspace import skipped_dirs
from migrate.scan.discover import Skipped, read_checked


def _module_names(rel: Path) -> list[str]:
    """Dotted names a file may be imported as: its path from the root, and every suffix of
    it (a `src/` layout, a tests folder on sys.path)."""
    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _imported(tree: ast.AST, package: list[str]) -> set[str]:
    names: set[str] = set()
    for node in walk_tree(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                module = resolve_relative(".".join(package), True, node.level, node.module)
            else:
                module = node.module or ""
            if module:
                names.add(module)
                names.update(f"{module}.{a.name}" for a in node.names)
    # Importing a.b.c runs a/__init__ and a/b/__init__ too.
    out = set()
    for name in names:
        parts = name.split(".")
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return out


class ImportGraph:
    """Static imports between the copy's Python files: which test files reach which modules."""

    def __init__(self, root: Path):
        self.root = root
        files: list[Path] = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(set(dirs) - skipped_dirs(folder, dirs))
            files.extend(Path(folder) / n for n in names if n.endswith(".py"))
        by_name: dict[str, set[Path]] = {}
        for f in files:
            for name in _module_names(f.relative_to(root)):
                by_name.setdefault(name, set()).add(f)
        self.edges: dict[Path, set[Path]] = {}
        for f in files:
            rel = f.relative_to(root).with_suffix("")
            package = list(rel.parts[:-1])  # the folder, for a package's __init__ too
            try:
                tree = ast.parse(read_checked(f))  # the copy keeps symlinks: not /dev/zero
            except (SyntaxError, ValueError, OSError, Skipped):
                self.edges[f] = set()
                continue
            self.edges[f] = {t for n in _imported(tree, package) for t in by_name.get(n, ())}
        self.tests = sorted(
            f for f in files if f.name.startswith("test_") or f.name.endswith("_test.py")
        )
        self._reach: dict[Path, set[Path]] = {}

    def reach(self, start: Path) -> set[Path]:
        if start not in self._reach:
            seen = {start}
            todo = [start]
            while todo:
                for nxt in self.edges.get(todo.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            self._reach[start] = seen
        return self._reach[start]

    def tests_reaching(self, changed: Iterable[Path]) -> list[Path]:
        targets = set(changed)
        return [t for t in self.tests if self.reach(t) & targets]
