"""The fix planner's repository facts (migrate.analysis) for one scan.

Every Python file of the scan takes part as text (a loader's path constant or an importer
of a capture can live in a file that never mentions jit); trees are parsed only for the
files the facts look into, and not at all for those where the scan's walk found no maker
call or archive site (its hints).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from migrate.discover import decode_source


class _Job(Protocol):
    path: str
    display: str
    python: bool

    @property
    def module(self) -> str: ...


class _Hints(Protocol):
    parsed: bool
    no_makers: bool
    no_sites: bool


def build_scan_facts(jobs: Iterable[_Job], results: Mapping[str, _Hints]) -> object:
    """RepoFacts over the scan's Python files, with the hints of the files it parsed."""
    from migrate.analysis import SourceFile, build_facts

    sources = []
    for job in jobs:
        if not job.python:
            continue
        try:
            text = decode_source(Path(job.path).read_bytes())
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            continue
        seen = results.get(job.display)
        hinted = seen is not None and seen.parsed  # the scan's hints, where it parsed
        no_makers, no_sites = (seen.no_makers, seen.no_sites) if hinted else (False, False)
        sources.append(
            SourceFile(job.display, job.module, text, no_makers=no_makers, no_sites=no_sites)
        )
    return build_facts(sources)
