"""Stage 2, facts: repository-wide facts that decide whether a rewrite is safe.

In: the repository's Python files (SourceFile: display path, module, text, the scan's hints)
and what the scan's repository pass merged of what those files told each other (a
RepositoryFacts, migrate.analysis.repository_facts); migrate.pipeline.planfacts makes both
from a scan's jobs and results. Out: RepoFacts, the one object the planner asks: archive
writers and readers, capture uses, blockers, import reach, and the scan's merged facts
themselves (`RepoFacts.repository_facts`), so that a question the repository pass already
answered (the repository's wrappers) is asked of it, not computed again.

Pure analysis on the standard library's ast: no torch import, no file writes. Build once per
run with `build_facts(files, repository_facts)` and ask the returned RepoFacts. Every position
is a Span: (display, line 1-based, column 1-based in characters, end_line, end_column
exclusive), the convention of migrate.findings.Finding, so a finding maps to a site by (path,
line, column) of its start. Names resolve through migrate.analysis.pyscope (each file's
ScopeTable: `qualname`, `lookup`, relative imports), as the checks' names do.

- artifacts.py: producers/consumers of TorchScript archives and the file they name.
- wrappers.py: the calls of the repository's own wrappers among them.
- values.py: where a module-level or `self.attr` capture's value is used outside its scope.
- blockers.py: the class a capture captures, the methods its forward reaches and the
  `@torch.jit.ignore/unused` ones among them.
- trace calls per file (for the TracerWarning filter).

Cost: one text search per file; per-file tables are only built for files that mention
`jit`, `.save(`, `_for_lite_interpreter` or a tracked name, and for the modules a path or a
class resolves into.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Collection, Iterable
from pathlib import Path

from migrate.analysis.pyscope import resolve_relative
from migrate.analysis.repository_facts import NO_FACTS, RepositoryFacts
from migrate.checks.repository_wrappers import Wrapper, repository_wrappers
from migrate.facts._repo import Repo, SourceFile, Span
from migrate.facts.artifacts import Site, find_sites
from migrate.facts.blockers import Blocker, CapturedClass, Method, find_captured_classes
from migrate.facts.imports import import_statements
from migrate.facts.values import CaptureValue, ValueUse, find_captures
from migrate.facts.wrappers import find_wrappers_in

__all__ = [
    "Blocker",
    "CaptureValue",
    "CapturedClass",
    "Method",
    "RepoFacts",
    "Site",
    "SourceFile",
    "Span",
    "ValueUse",
    "build_facts",
    "load_tree",
]

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", ".venv"})


class RepoFacts:
    """The answers, indexed by the start (display, line, column) of the call they are about.

    `repository_facts` is what the scan's repository pass merged (NO_FACTS without a scan):
    with `wrappers_told` (the scan ran the wrapper rule, so every file that defines a
    wrapper told it) the wrappers whose calls join the artifact flow are the pass's, decoded
    once for MIG121 and for these facts (checks.repository_wrappers.repository_wrappers);
    without it they are searched in the files."""

    def __init__(
        self,
        repo: Repo,
        repository_facts: RepositoryFacts = NO_FACTS,
        wrappers_told: bool = False,
    ) -> None:
        self.repo = repo
        self.repository_facts = repository_facts
        self.wrappers: dict[str, Wrapper]  # by qualname
        if wrappers_told:
            self.wrappers = repository_wrappers(repository_facts).wrappers
        else:
            self.wrappers = find_wrappers_in(repo)
        self._imports: dict[str, frozenset[str]] = {}
        captures, self._traces, torchscript_names = find_captures(repo)
        self.captures: list[CaptureValue] = captures
        self._captures_at = {c.call.start: c for c in captures}
        for capture in captures:  # torch.jit.freeze(torch.jit.script(m)): either call
            self._captures_at.setdefault(capture.outer.start, capture)
        self.sites: list[Site] = find_sites(repo, self.wrappers, torchscript_names)
        self._sites_at = {s.span.start: s for s in self.sites}
        self._by_key: dict[str, list[Site]] = {}
        for site in self.sites:
            if site.key is not None:
                self._by_key.setdefault(site.key, []).append(site)
        self._classes = find_captured_classes(repo)

    # ---- artifacts ----------------------------------------------------------------------
    @property
    def producers(self) -> list[Site]:
        return [s for s in self.sites if s.role == "producer"]

    @property
    def consumers(self) -> list[Site]:
        return [s for s in self.sites if s.role == "consumer"]

    def site_at(self, display: str, line: int, column: int) -> Site | None:
        """The producer or consumer whose call starts there."""
        return self._sites_at.get((display, line, column))

    def producers_of(self, consumer: Site) -> list[Site]:
        """Producers writing the file a consumer reads (same key, or same file name where one
        side's folder is unknown); [] when nothing of its path is known.
        Producers with an unknown key are not included: see `unknown_producers`."""
        return self._linked(consumer, "producer")

    def consumers_of(self, producer: Site) -> list[Site]:
        """Consumers reading the file a producer writes (same key); [] when its key is None."""
        return self._linked(producer, "consumer")

    def _linked(self, site: Site, role: str) -> list[Site]:
        """Same key; or, where one side knows only the file name, the same file name."""
        name = site.file_name
        if name is None:
            return []
        exact = self._by_key.get(site.key, []) if site.key is not None else []
        loose = [
            s
            for s in self.sites
            if s.file_name == name and (s.key is None or site.key is None) and s not in exact
        ]
        return [s for s in [*exact, *loose] if s.role == role]

    @property
    def unknown_producers(self) -> list[Site]:
        """Producers whose path is unknown: any consumer may be reading what they write."""
        return [s for s in self.sites if s.role == "producer" and s.key is None]

    def wrapper_example(self, display: str, line: int, column: int, param: str):
        """(offset, text) passing example inputs to the wrapper call starting there, when
        the program shows what it calls the module with (migrate.facts.wrappers)."""
        from migrate.facts.wrappers import wrapper_example

        memo = self.__dict__.setdefault("_examples", {})
        key = (display, line, column, param)
        if key not in memo:
            memo[key] = wrapper_example(self, display, line, column, param)
        return memo[key]

    # ---- values -------------------------------------------------------------------------
    def capture_at(self, display: str, line: int, column: int) -> CaptureValue | None:
        """The script/trace/trace_module call starting there (or the freeze/optimize call
        wrapping it), with its binding and uses."""
        return self._captures_at.get((display, line, column))

    def external_uses(self, display: str, line: int, column: int) -> list[ValueUse]:
        """Uses of the capture's value outside the scope that binds it ([] when none or when
        the call is not a tracked capture: check `capture_at(...).binding`)."""
        capture = self.capture_at(display, line, column)
        return list(capture.uses) if capture is not None else []

    def torchscript_only_uses(self, display: str, line: int, column: int) -> list[ValueUse]:
        """The external uses that need a TorchScript module (`.graph`, `.code`, `.save`...)."""
        return [u for u in self.external_uses(display, line, column) if u.torchscript_only]

    # ---- blockers -----------------------------------------------------------------------
    def class_of_capture(self, display: str, line: int, column: int) -> CapturedClass | None:
        """The in-repository class the capture call starting there captures."""
        return self._classes.get((display, line, column))

    def capture_blockers(self, display: str, line: int, column: int) -> list[Blocker]:
        """`@torch.jit.ignore/unused` methods reachable from the captured forward."""
        found = self.class_of_capture(display, line, column)
        return list(found.blockers) if found is not None else []

    def compiled_with(self, captured: CapturedClass, display: str, line: int) -> bool:
        """Whether the code at (display, line) may be compiled with the captured class: true
        unless it lies in another top-level class that the captured one neither is, reaches
        (its methods, its submodules' forwards) nor names, and that no other code of its file
        names (a file's other classes are not scripted with it: `Summarizer` beside a
        scripted `Gate`)."""
        f = self.repo.files.get(display)
        if f is None:
            return True
        classes = [s for s in f.tree.body if isinstance(s, ast.ClassDef)]
        spans = [(min([c.lineno] + [d.lineno for d in c.decorator_list]), c) for c in classes]
        around = next((c for first, c in spans if first <= line <= (c.end_lineno or first)), None)
        if around is None:
            return True
        name = around.name
        if name == captured.class_name or any(m.class_name == name for m in captured.methods):
            return True
        word = re.compile(rf"\b{re.escape(name)}\b")
        lines = f.src.text.splitlines()
        first = min([around.lineno] + [d.lineno for d in around.decorator_list])
        outside = lines[: first - 1] + lines[(around.end_lineno or around.lineno) :]
        if any(word.search(text) for text in outside):
            return True
        home = self.repo.files.get(captured.display)
        span = captured.span
        if home is None or span is None:
            return True
        own = home.src.text.splitlines()[span.line - 1 : span.end_line]
        return any(word.search(text) for text in own)

    # ---- reach ---------------------------------------------------------------------------
    def imported_closure(self, display: str) -> frozenset[str]:
        """The file and every repository file it imports, directly or through others: what a
        scripting compiler starting in this file can reach."""
        return self.reached(display, None)

    def reached(self, display: str, wanted: Collection[str] | None) -> frozenset[str]:
        """imported_closure(display), or, given `wanted`, those of its files that it holds:
        the walk stops once it has met them all (reading imports is most of its cost)."""
        seen = {display}
        todo = [display]
        left = None if wanted is None else set(wanted) - seen
        while todo and left != set():
            for target in self._imports_of(todo.pop()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
                    if left is not None:
                        left.discard(target)
        if wanted is None:
            return frozenset(seen)
        return frozenset(seen.intersection(wanted))

    def _imports_of(self, display: str) -> frozenset[str]:
        if display not in self._imports:
            f = self.repo.files.get(display)
            found: set[str] = set()
            if f is not None and f.src.text:
                for node in import_statements(f.src.text):
                    if isinstance(node, ast.Import):
                        names = [a.name for a in node.names]
                    else:
                        base = node.module or ""
                        if node.level:
                            base = resolve_relative(f.module, f.is_package, node.level, base)
                        names = [base, *(f"{base}.{a.name}" for a in node.names)]
                    for name in names:
                        while name:
                            target = self.repo.modules.get(name)
                            if target is not None:
                                found.add(target.display)
                                break
                            name = name.rpartition(".")[0]
            self._imports[display] = frozenset(found)
        return self._imports[display]

    # ---- dead code claims ---------------------------------------------------------------
    def trace_calls_in(self, display: str) -> int:
        """How many torch.jit.trace / trace_module calls the file holds."""
        return self._traces.get(display, 0)


def build_facts(
    files: Iterable[SourceFile] | str | os.PathLike[str],
    repository_facts: RepositoryFacts = NO_FACTS,
    wrappers_told: bool = False,
) -> RepoFacts:
    """Facts over parsed files (or over every Python file under a folder), with what the
    scan's repository pass merged of them (see RepoFacts)."""
    from migrate.analysis.astwalk import DEEP_RECURSION, recursion_limit

    if isinstance(files, (str, os.PathLike)):
        files = load_tree(files)
    with recursion_limit(DEEP_RECURSION):
        return RepoFacts(Repo.build(list(files)), repository_facts, wrappers_told)


def load_tree(root: str | os.PathLike[str]) -> list[SourceFile]:
    """Every parseable .py file under `root`, displayed relative to it ("pkg/paths.py").
    Hidden folders, caches and virtual environments are skipped; so are files that cannot
    be read or parsed (the engine reports those)."""
    from migrate.scan.discover import module_name

    base = Path(root)
    out = []
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = Path(folder, name)
            try:
                text = path.read_text(encoding="utf-8")
                tree = ast.parse(text, filename=str(path))
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                continue
            display = path.relative_to(base).as_posix()
            out.append(SourceFile(display, module_name(path, base), text, tree))
    return out
