"""The fix planner's repository facts (migrate.facts) for one scan.

Every Python file of the scan takes part as text (a loader's path constant or an importer
of a capture can live in a file that never mentions jit); trees are parsed only for the
files the facts look into, and not at all for those where the scan's walk found no maker
call or archive site (its hints). What the scan's repository pass merged (its
RepositoryFacts) goes into the same object, so the planner reads one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol

from migrate.analysis.repository_facts import NO_FACTS, RepositoryFacts
from migrate.scan.discover import Skipped, decode_source

if TYPE_CHECKING:  # the facts package is imported only when facts are built
    from migrate.facts import RepoFacts


class _Job(Protocol):
    path: str
    display: str
    python: bool

    @property
    def module(self) -> str: ...

    @property
    def script_dir(self) -> str: ...

    def read(self) -> bytes: ...  # discover.read_checked, with the scan's cap and tree


class _Hints(Protocol):
    parsed: bool
    no_makers: bool
    no_sites: bool


def build_scan_facts(
    jobs: Iterable[_Job],
    results: Mapping[str, _Hints],
    repository_facts: RepositoryFacts = NO_FACTS,
    wrappers_told: bool = False,
) -> RepoFacts:
    """RepoFacts over the scan's Python files, with the hints of the files it parsed and
    what its repository pass merged (`wrappers_told`: the wrapper rule was among its rules)."""
    from migrate.facts import SourceFile, build_facts

    sources = []
    for job in jobs:
        if not job.python:
            continue
        text, module, script_dir = _read(job)
        if text is None:
            continue
        seen = results.get(job.display)
        hinted = seen is not None and seen.parsed  # the scan's hints, where it parsed
        no_makers, no_sites = (seen.no_makers, seen.no_sites) if hinted else (False, False)
        sources.append(
            SourceFile(
                job.display,
                module,
                text,
                no_makers=no_makers,
                no_sites=no_sites,
                script_dir=script_dir,
            )
        )
    return build_facts(sources, repository_facts, wrappers_told)


def _read(job: _Job) -> tuple[str | None, str, str]:
    """(text, module, script folder) of a Python file; no text when it cannot be read."""
    try:
        text = decode_source(job.read())
    except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError):
        return None, "", ""
    return text, job.module, job.script_dir


class _Hint(NamedTuple):
    parsed: bool
    no_makers: bool
    no_sites: bool


class BackgroundFacts:
    """build_scan_facts on a thread, started when the repository pass hands its files to the
    process pool: the main process only waits for the workers then, and the facts were
    otherwise built after the pass, on one core. They are the same facts: the pass changes
    findings, not the files or the hints the facts read (taken here before it starts), and
    its merged facts are complete when it starts (the pass reads them, never adds to them)."""

    def __init__(
        self,
        jobs: Iterable[_Job],
        results: Mapping[str, _Hints],
        repository_facts: RepositoryFacts = NO_FACTS,
        wrappers_told: bool = False,
    ) -> None:
        hints = {k: _Hint(r.parsed, r.no_makers, r.no_sites) for k, r in results.items()}
        self._facts: RepoFacts | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._build,
            args=(list(jobs), hints, repository_facts, wrappers_told),
            name="migrate-facts",
            daemon=True,
        )
        self._thread.start()

    def _build(
        self,
        jobs: list[_Job],
        hints: dict[str, _Hint],
        repository_facts: RepositoryFacts,
        wrappers_told: bool,
    ) -> None:
        try:
            self._facts = build_scan_facts(jobs, hints, repository_facts, wrappers_told)
        except BaseException as exc:  # raised where the facts are asked for
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> RepoFacts | None:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._facts


def file_hints(text: str, tree: object, table: object) -> tuple[bool, bool]:
    """(no_makers, no_sites) of one parsed file: certain that no call there is a TorchScript
    maker, or an archive site (the fact searches then skip the file). The scanner computes
    them in its workers, on the tree and scope table it already has (Scanner.hints)."""
    # Imported here: the planner's analysis package is a tenth of a one-file scan's start-up,
    # and most files of a scan are never parsed.
    from migrate.facts.artifacts import may_hold_site
    from migrate.facts.values import may_capture

    return not may_capture(text, tree, table), not may_hold_site(text, tree, table)
