"""`migrate scan`'s pipeline: the scanner, then the repository facts, then the plan.

The scanner (migrate.scan.engine) reports what the checks find. Some fixes are safe only
with other files (a loader and the writers of its archive): those need the repository's
facts (migrate.facts' RepoFacts, which carries the scanner's merged repository facts too),
built only when such a fix is found, and on a thread while the scanner's repository pass
keeps the process pool busy; the plan (migrate.plan) then holds back what would leave the
tree inconsistent. The planned findings are kept in the scan's cache: an unchanged tree's
next scan reuses them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.analysis.repository_facts import RepositoryFacts
from migrate.checks.export.apis import LOAD_RULE, SAVE_RULE, SCRIPT_RULE
from migrate.findings import Finding, ScanResult
from migrate.pipeline.planfacts import BackgroundFacts, build_scan_facts, file_hints
from migrate.plan.fixplan import needs_facts, plan_fixes
from migrate.plan.units import WITH_UNSAFE
from migrate.registry import code_with
from migrate.safe_read import Skipped
from migrate.scan.discover import decode_source
from migrate.scan.engine import Scanner, ScanOptions
from migrate.scan.file_analysis import FileResult
from migrate.scan.workers import rare_collections

if TYPE_CHECKING:  # the facts package is imported only when facts are built
    from migrate.facts import RepoFacts

__all__ = ["PlannedScanner", "ScanOptions", "scan"]

# What a wrapper's rewrite under an intent absorbs into its group (MIG121's round trip).
_WRAPPER_BODY = (SCRIPT_RULE, SAVE_RULE, LOAD_RULE)


class PlannedScanner(Scanner):
    """A Scanner whose findings are planned for the whole repository (what every command
    reports); `facts()` gives the repository facts the plan used, to plan again (apply)."""

    hints = staticmethod(file_hints)

    def scan(self, paths: Iterable[str | Path]) -> ScanResult:
        self._facts = None
        self._background: BackgroundFacts | None = None
        with rare_collections():
            return self._plan(self._scan(list(paths)))

    def repository_pass_starts(
        self, results: dict[str, FileResult], repository_facts: RepositoryFacts
    ) -> bool:
        """Start the planner's facts on a thread when phase 1's findings will need them."""
        if not self.work_beside_pass(results):
            return False
        self._background = BackgroundFacts(
            self.jobs.values(), results, repository_facts, self._wrappers_told()
        )
        return True

    def work_beside_pass(self, results: dict[str, FileResult]) -> bool:
        return needs_facts(f for r in results.values() for f in r.findings)

    def _wrappers_told(self) -> bool:
        """Whether the scan's files told their wrappers (the wrapper rule ran), so that the
        facts take them from the repository pass instead of searching the files again."""
        return code_with("wrapper-call") in self.codes

    def _plan(self, out: ScanResult) -> ScanResult:
        # Fixes whose safety depends on other files: held back as a whole repository.
        # Facts started during the repository pass: waited for here, before anything else
        # runs on this thread (their thread raises the recursion limit while it builds).
        self._early_facts, self._background = self._background, None
        if self._early_facts is not None:
            self._early_facts.wait()
        self._last_findings = out.findings
        out.intent = self.options.intent
        out.evidence = self.options.evidence
        self._unplanned, self._unlinked = out.findings, True  # what findings_under starts from
        if self.kept is not None:  # an unchanged tree: the last run's plan stands
            out.findings = list(self.kept)
            return out
        self._unplanned = out.findings = self._linked(out.findings)
        self._unlinked = False
        out.findings = plan_fixes(
            out.findings, WITH_UNSAFE, self.codes, self.facts(), intent=self.options.intent
        ).findings
        self.keep(out.findings)
        return out

    def _linked(self, findings: list[Finding]) -> list[Finding]:
        if any(f.rule.startswith("MIG4") for f in findings):
            # Serving code outside Python linked to the Python writers of its archives (the
            # planner then keeps those writers: the native loader cannot read a .pt2).
            from migrate.facts.serving import link_serving

            return link_serving(findings, lambda: self.facts(force=True))
        return findings

    def findings_under(self, intent: str, codes: Iterable[str]) -> list[Finding]:
        """The scan's findings before planning as the checks `codes` judge them under another
        migration intent: only the files holding a finding of theirs are analysed again, with
        those checks alone (the repository facts stay)."""
        if getattr(self, "_unlinked", False):  # a warm run's: not linked yet
            self._unplanned, self._unlinked = self._linked(self._unplanned), False
        unplanned = list(getattr(self, "_unplanned", []))
        codes = sorted(set(codes) & set(self.codes))
        by_path: dict[str, list[str]] = {}
        for f in unplanned:
            if f.rule in codes:
                by_path[f.path] = codes
        for f in unplanned:  # a wrapper's rewrite takes its body's findings (MIG121)
            if f.rule == code_with("wrapper-call") and f.path in by_path:
                by_path[f.path] = sorted({*codes, *_WRAPPER_BODY} & set(self.codes))
        if not by_path:
            return unplanned
        scanners: dict[tuple[str, ...], Scanner] = {}
        again: list[Finding] = []
        for display, selected in sorted(by_path.items()):
            other = scanners.get(tuple(selected))
            if other is None:
                options = replace(self.options, intent=intent, select=selected, ignore=[])
                other = scanners[tuple(selected)] = Scanner(options)
                other.jobs, other.exports = self.jobs, self.exports
                other.repo_facts = self.repo_facts
            try:
                text = decode_source(self.jobs[display].read())
            except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError):
                return unplanned
            again.extend(other.analyze(display, text))
        kept = [f for f in unplanned if f.rule not in by_path.get(f.path, ())]
        return sorted([*kept, *again], key=lambda f: (f.path, f.line, f.column, f.rule))

    def facts(self, force: bool = False) -> RepoFacts | None:
        """Repository facts for the fix planner (migrate.pipeline.planfacts), with the scan's
        repository pass in them, built once, and only when a finding's fix depends on other
        files."""
        if getattr(self, "_facts", None) is not None:
            return self._facts
        findings = getattr(self, "_last_findings", [])
        if not force and not needs_facts(findings):
            return None
        early, self._early_facts = getattr(self, "_early_facts", None), None
        if early is not None:
            self._facts = early.result()
        else:
            self._facts = build_scan_facts(
                self.jobs.values(),
                getattr(self, "_results", {}),
                self.repo_facts,
                self._wrappers_told(),
            )
        return self._facts


def scan(paths: Iterable[str | Path], options: ScanOptions | None = None) -> ScanResult:
    return PlannedScanner(options or ScanOptions()).scan(paths)
