"""Re-export tables: which torch or framework name a module-level name of the repository
stands for, followed through the modules that re-export it (`from .compat import script`),
including modules outside the scanned paths that a scanned file imports (a pre-commit run
names single files)."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

from migrate.analysis.astwalk import DEEP_RECURSION, recursion_limit, walk_lines
from migrate.analysis.parsed import parsed_file
from migrate.analysis.pyscope import shared_table
from migrate.scan.checkset import CheckSet
from migrate.scan.discover import Skipped, decode_source, import_root, module_files


class ScanJob(Protocol):
    """What the re-export search reads of one of the scan's files."""

    display: str
    path: str
    python: bool
    module: str
    is_package: bool
    script_dir: str

    def read(self) -> bytes: ...


def reexportable(exported: dict[str, str], checks: CheckSet) -> dict[str, str]:
    """The module-level names another module could import a TorchScript API through."""
    return {
        name: qual
        for name, qual in exported.items()
        if qual == "torch.jit" or checks.for_symbol(qual) or not qual.startswith("torch")
    }


@dataclass
class ExportTable:
    exports: dict[str, str]
    repo_imports: set[str]


def export_table(
    path: str, text: str, checks: CheckSet, module: str, is_package: bool
) -> ExportTable | None:
    """Only what a module re-exports (no checks run): for modules read but not reported."""
    try:
        with recursion_limit(DEEP_RECURSION):
            # Only module-level names can be re-exported, and only through module-level
            # imports: function bodies are neither walked nor followed.
            table = shared_table(parsed_file(path, text), module, is_package, module_only=True)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return ExportTable(reexportable(table.module_exports(), checks), table.repo_imports)


def _installed_root(folder: str) -> bool:
    return os.path.basename(folder) in ("site-packages", "dist-packages")


def outside_exports(
    jobs: list[ScanJob],
    results: Mapping,
    paths: list,
    read_exports: Callable[[str, str, str, bool], ExportTable | None],
) -> list[dict[str, str]]:
    """Export tables of repository modules that scanned files import but that lie outside
    the scanned paths (pre-commit names single files): read, never reported, so that
    `from .compat import script` resolves in a one-file scan as in a whole-repo scan.

    A file named on the command line asks only for the names it refers to (each import
    and each attribute chain on an imported name): the modules on those names' re-export
    chains are read, not every module its imports import in turn (a pre-commit run read
    a tenth of the package). Other scanned files follow all their modules' imports, four
    hops deep."""
    named = {os.path.abspath(p) for p in paths if not os.path.isdir(p)}
    # (root, qualified name, follow every import of its module: else only its chain)
    queue: list[tuple[str, str, bool]] = []
    for job in jobs:
        r = results.get(job.display)
        if not job.python or r is None or r.error:
            continue
        asked: set[str] | None = None
        if named and os.path.abspath(job.path) in named and (r.parsed or r.import_words):
            asked = _referenced(job)
        if asked is not None:
            quals, every = asked, False
        elif r.parsed:
            quals, every = r.repo_imports, True
        elif named and r.import_words and os.path.abspath(job.path) in named:
            quals, every = _repo_imports_of(job), True
        else:
            continue
        # Where Python would look: the package's root, a script's own folder, and the
        # current folder (pre-commit and test runners start at the repository's top).
        roots = {import_root(job.path, job.module, job.is_package), os.path.abspath(".")}
        roots.add(os.path.dirname(os.path.abspath(job.path)))
        # Installed packages are not the repository's own modules: never follow into them.
        queue.extend(
            (root, q, every) for root in roots if root and not _installed_root(root) for q in quals
        )
    tables: list[dict[str, str]] = []
    scanned: dict[str, object] | None = None  # path -> its scan result; built when needed
    read: dict[str, ExportTable | None] = {}
    probed: set[tuple[str, str, bool]] = set()
    tops: dict[tuple[str, str], bool] = {}  # most imports are of other packages: 1 stat
    # Re-export chains are followed as deep as close_exports follows them; a module's
    # every import, four hops (compat -> utils -> model).
    for hop in range(8):
        next_queue = []
        for root, qual, every in queue:
            if every and hop >= 4:
                continue
            top = (root, qual.split(".")[0])
            if top not in tops:
                base = os.path.join(*top)
                tops[top] = os.path.isfile(base + ".py") or os.path.isdir(base)
            if not tops[top] or (root, qual, every) in probed:
                continue
            probed.add((root, qual, every))
            # A package's __init__ can re-export a name too; all modules follow only the
            # one that defines the longest prefix.
            found = module_files(root, qual)
            for path, module, package in islice(found, 1) if every else found:
                if scanned is None:
                    scanned = {
                        os.path.abspath(j.path): results.get(j.display) for j in jobs if j.python
                    }
                if path in scanned:
                    if every:
                        continue
                    mine = scanned[path]  # its exports are the scan's own
                    exports = mine.exports if mine is not None else {}
                else:
                    if path not in read:
                        read[path] = read_exports(root, path, module, package)
                        if read[path] is not None:
                            tables.append(read[path].exports)  # type: ignore[union-attr]
                    table = read[path]
                    if table is None:
                        continue
                    exports = table.exports
                    if every:
                        here = import_root(path, module, package)
                        next_queue.extend((here, q, True) for q in table.repo_imports if here)
                        continue
                here = import_root(path, module, package)
                if here:
                    next_queue.extend((here, q, False) for q in _chained(qual, exports))
        queue = next_queue
    return tables


def close_exports(
    tables: Iterable[dict[str, str]], framework_apis: Iterable[str] = ()
) -> dict[str, str]:
    """Follow repo-module re-export chains to the torch name at their end, or to a
    framework API a rule names (or a module on its path: `timm.layers`, not `timm`)."""
    ends = {
        ".".join(parts[:cut])
        for parts in (api.split(".") for api in framework_apis)
        for cut in range(2, len(parts) + 1)
    }
    raw: dict[str, str] = {}
    for table in tables:
        raw.update(table)

    def follow(qual: str, depth: int = 0) -> str | None:
        if qual.startswith("torch") or qual in ends:
            return qual
        if depth > 8:
            return None
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            if head in raw and raw[head] != qual:
                return follow(".".join([raw[head], *parts[cut:]]), depth + 1)
        return None

    out = {}
    for name, qual in raw.items():
        # Names inside torch itself are never rewritten (ScopeTable.canonical): scanning
        # torch's own source must not send every importer through a second pass.
        if name.startswith("torch."):
            continue
        final = follow(qual)
        if final and final != name:
            out[name] = final
    return out


def _chained(qual: str, exports: dict[str, str]) -> list[str]:
    """Where a module's re-exports send `qual` (`pkg.utils.f` when `pkg.utils` binds `f`
    from `pkg.core`: `pkg.core.f`), torch's names aside (their tables end the chain)."""
    out = []
    for key, value in exports.items():
        if qual == key or qual.startswith(key + "."):
            target = value + qual[len(key) :]
            if not target.startswith("torch"):
                out.append(target)
    return out


def _referenced(job: ScanJob) -> set[str] | None:
    """The qualified names a file refers to through its imports: each import, each module
    alias, each attribute chain on an imported name (`utils.foo.bar`), as the file spells
    them before any re-export is followed. None when a star import can bind any name (then
    every import is followed) or the file cannot be read."""
    try:
        parsed = parsed_file(job.display, decode_source(job.read()))
        table = shared_table(parsed, job.module, job.is_package, None, job.script_dir)
        if table.module_scope.star_modules:
            return None
        found = set(table.repo_imports)
        for node in walk_lines(parsed.tree, None):
            if type(node) is ast.Attribute:
                qual = table.qualname(node)
                if qual and qual.split(".")[0] not in ("torch", "executorch"):
                    found.add(qual)
                    if table.script_dir:  # run as a script: its folder is on sys.path
                        found.add(f"{table.script_dir}.{qual}")
    except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError, ValueError):
        return None
    except RecursionError:
        return None
    return found


def _repo_imports_of(job: ScanJob) -> set[str]:
    """Modules of the repository a file imports (for a named file the pre-filter skipped)."""
    try:
        parsed = parsed_file(job.display, decode_source(job.read()))
        return shared_table(parsed, job.module, job.is_package, None, job.script_dir).repo_imports
    except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError, ValueError):
        return set()
    except RecursionError:  # too deep to parse or to walk: the scan reported it
        return set()


def imports_module(qual: str, modules: set[str]) -> bool:
    return any(qual == m or qual.startswith(m + ".") for m in modules)
