"""`migrate scan`'s pipeline: the scanner, then the repository facts, then the plan.

The scanner (migrate.scan.engine) reports what the checks find. Some fixes are safe only
with other files (a loader and the writers of its archive): those need the repository's
facts (migrate.facts), built only when such a fix is found, and on a thread while the
scanner's repository pass keeps the process pool busy; the plan (migrate.plan) then holds
back what would leave the tree inconsistent. The planned findings are kept in the scan's
cache: an unchanged tree's next scan reuses them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from migrate.findings import ScanResult
from migrate.pipeline.planfacts import BackgroundFacts, build_scan_facts, file_hints
from migrate.plan.fixplan import needs_facts, plan_fixes
from migrate.plan.units import WITH_UNSAFE
from migrate.scan.engine import FileResult, Scanner, ScanOptions, _rare_collections

__all__ = ["PlannedScanner", "ScanOptions", "scan"]


class PlannedScanner(Scanner):
    """A Scanner whose findings are planned for the whole repository (what every command
    reports); `facts()` gives the repository facts the plan used, to plan again (apply)."""

    hints = staticmethod(file_hints)

    def scan(self, paths: Iterable[str | Path]) -> ScanResult:
        self._facts = None
        self._background: BackgroundFacts | None = None
        with _rare_collections():
            return self._plan(self._scan(list(paths)))

    def pool_pass_starts(self, results: dict[str, FileResult]) -> None:
        """Start the planner's facts on a thread when phase 1's findings will need them."""
        if needs_facts(f for r in results.values() for f in r.findings):
            self._background = BackgroundFacts(self.jobs.values(), results)

    def _plan(self, out: ScanResult) -> ScanResult:
        # Fixes whose safety depends on other files: held back as a whole repository.
        # Facts started during the repository pass: waited for here, before anything else
        # runs on this thread (their thread raises the recursion limit while it builds).
        self._early_facts, self._background = self._background, None
        if self._early_facts is not None:
            self._early_facts.wait()
        self._last_findings = out.findings
        if self.kept is not None:  # an unchanged tree: the last run's plan stands
            out.findings = list(self.kept)
            return out
        if any(f.rule.startswith("MIG4") for f in out.findings):
            # Serving code outside Python linked to the Python writers of its archives (the
            # planner then keeps those writers: the native loader cannot read a .pt2).
            from migrate.facts.serving import link_serving

            out.findings = link_serving(out.findings, lambda: self.facts(force=True))
        out.findings = plan_fixes(out.findings, WITH_UNSAFE, self.codes, self.facts()).findings
        self.keep(out.findings)
        return out

    def facts(self, force: bool = False) -> object | None:
        """Repository facts for the fix planner (migrate.pipeline.planfacts), built once, and
        only when a finding's fix depends on other files."""
        if getattr(self, "_facts", None) is not None:
            return self._facts
        findings = getattr(self, "_last_findings", [])
        if not force and not needs_facts(findings):
            return None
        early, self._early_facts = getattr(self, "_early_facts", None), None
        if early is not None:
            self._facts = early.result()
        else:
            self._facts = build_scan_facts(self.jobs.values(), getattr(self, "_results", {}))
        return self._facts


def scan(paths: Iterable[str | Path], options: ScanOptions | None = None) -> ScanResult:
    return PlannedScanner(options or ScanOptions()).scan(paths)
