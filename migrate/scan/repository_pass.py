"""The repository pass: after phase 1, the checks whose findings depend on other files
(`PythonCheck.rerun`) pick the files to judge again with the whole repository's merged facts;
each picked file is settled from the variants its checks judged in phase 1
(`PythonCheck.settle`) or analysed again by those checks alone.

The same steps run here or in a process pool's workers (`pass_over_span`): the workers are
forked after phase 1, so they hold its results already, and each picks, settles and
analyses again the files of its spans of jobs; only what changed comes back.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.checks.base import PythonCheck
from migrate.findings import Finding
from migrate.safe_read import Skipped
from migrate.scan.checkset import CheckSet
from migrate.scan.discover import decode_source
from migrate.scan.file_analysis import FileResult
from migrate.scan.workers import WORKER_STATE, FileJob, RepoPass, run_job


def merged_facts(jobs: list[FileJob], results: dict[str, FileResult]) -> RepositoryFacts:
    """What the parsed files told, with the `remember` words of the files the prefilter
    skipped (empty when no file told anything: then there is no repository pass)."""
    return RepositoryFacts.merge((r.facts for r in results.values()), _remembered(jobs, results))


def _remembered(
    jobs: list[FileJob], results: dict[str, FileResult]
) -> Iterator[tuple[str, set[str]]]:
    """(module, `remember` words) of each file the prefilter skipped."""
    for job in jobs:
        r = results.get(job.display)
        if job.python and r is not None and r.remembered and not r.parsed:
            yield job.module, r.remembered


@dataclass
class PassInputs:
    """What the pass reads: phase 1's jobs and results, the merged facts, the scan's checks
    and export table. A worker of the pass's pool inherits them (forked) or gets them once."""

    jobs: list[FileJob]
    results: dict[str, FileResult]
    facts: RepositoryFacts
    checks: CheckSet
    exports: dict[str, str] | None

    @functools.cached_property
    def askers(self) -> list[PythonCheck]:
        """The checks that may ask to run again (the others never do)."""
        return [c for c in self.checks.python if type(c).rerun is not PythonCheck.rerun]

    def prepare(self) -> None:
        """What every pick reads of the merged facts, built once (a forked worker inherits it)."""
        for check in self.askers:
            check.prepare_pass(self.facts)

    def codes_for(self, job: FileJob) -> tuple[str, ...]:
        """The checks that ask to judge this file again."""
        r = self.results.get(job.display)
        if not self.askers or not job.python or r is None or r.error:
            return ()
        mine = FileFacts(r.facts) if r.parsed else None
        module = functools.partial(getattr, job, "module")
        text = TextOf(job)
        facts = self.facts
        return tuple(
            c.code for c in self.askers if c.rerun(facts, mine, r.remembered, module, text=text)
        )

    def settled(self, job: FileJob, codes: tuple[str, ...]) -> FileResult | None:
        """The file's result with the findings of `codes` settled from their phase-1 variants
        (PythonCheck.settle), or None when one of them must analyse the file again."""
        old = self.results[job.display]
        settled: dict[str, list[Finding]] = {}
        for code in codes:
            variants = old.variants.get(code)
            found = (
                self.checks.python_check(code).settle(variants, self.facts) if variants else None
            )
            if found is None:
                return None
            settled[code] = found
        new = [f for found in settled.values() for f in found]
        return with_findings(old, codes, new, old.parsed)

    def analysed_again(self, job: FileJob, codes: tuple[str, ...], new: FileResult) -> FileResult:
        """The file's result once `codes` analysed it again (`new`): their findings replace
        phase 1's; a file phase 1 skipped or reported keeps its verdict."""
        old = self.results[job.display]
        if new.error:
            return old
        return with_findings(old, codes, new.findings, True)


def with_findings(
    old: FileResult, codes: tuple[str, ...], findings: list[Finding], parsed: bool
) -> FileResult:
    """`old` with the findings of the checks `codes` replaced by `findings`."""
    kept = [f for f in old.findings if f.rule not in codes]
    merged = sorted(kept + findings, key=lambda f: (f.line, f.column))
    return replace(old, findings=merged, parsed=parsed)


class TextOf:
    """A file's text, read again on the first call (empty when it can no longer be read: it
    was read in phase 1, and the repository pass then leaves it as phase 1 found it)."""

    __slots__ = ("job", "text")

    def __init__(self, job: FileJob) -> None:
        self.job, self.text = job, None

    def __call__(self) -> str:
        if self.text is None:
            try:
                self.text = decode_source(self.job.read())
            except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError):
                self.text = ""
        return self.text


# (display, findings, parsed) of a file the pass changed: what a worker sends back.
Changed = tuple[str, list[Finding], bool]


def pass_over_span(span: tuple[int, int]) -> list[Changed]:
    """In a worker of the pass's pool: the pass over jobs[start:end] of the inherited inputs."""
    inputs: PassInputs = WORKER_STATE["pass"]  # type: ignore[assignment]
    changed: list[Changed] = []
    for job in inputs.jobs[span[0] : span[1]]:
        codes = inputs.codes_for(job)
        if not codes:
            continue
        result = inputs.settled(job, codes)
        if result is None:
            new = run_job(job, inputs.exports, RepoPass(codes, None))
            result = inputs.analysed_again(job, codes, new)
        changed.append((job.display, result.findings, result.parsed))
    return changed
