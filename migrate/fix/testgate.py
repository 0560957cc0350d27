"""`migrate apply --test CMD`: keep only the fixes the project's own tests still pass.

The suite runs first on an untouched scratch copy of the repository (the baseline), then with
every selected fix written into that copy. When tests that passed now fail, bisection over
the fix units (split at file boundaries first; a unit, one fix or a whole group, is never
split) finds the unit responsible; it is re-run once to tell a real break from a flaky test,
reverted, and the suite re-run until it is back at its baseline. Nothing here writes to the
user's tree: the caller writes the kept units once, atomically. The command's runs are
`test_command`, the copy `gate_workspace`, `--test-select imports` `test_selection`, and
what the gate found `gate_report`.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from migrate.fix.gate_report import GateReport, HeldWith, Reverted
from migrate.fix.gate_workspace import FileState, Workspace, skipped_dirs
from migrate.fix.source_text import Decoded
from migrate.fix.test_command import (
    EXIT_CODE_TEST,
    PSEUDO_TESTS,
    GateError,
    SuiteRun,
    TestResult,
    TestSettings,
    last_line,
    run_suite,
)
from migrate.fix.test_selection import ImportGraph
from migrate.plan.context import CAPTURE_RULES


def estimate_runs(units: int, retries: int) -> int:
    """Suite runs when one unit is at fault: baseline(s), the full trial, bisection, a re-run
    of the culprit (flaky or not), the confirming run."""
    return 1 + retries + 1 + math.ceil(math.log2(max(units, 1))) + 2


def _rewrites_a_capture(unit) -> bool:
    """A unit rewriting a `torch.jit.script`/`trace` (MIG101-103). The planner lets other
    fixes (an `is_scripting()` fold, a removed `@torch.jit.ignore`) go because those captures
    are rewritten in this run (a script rewritten in the run blocks nothing):
    applied without them, such a fix breaks a test that still scripts its code."""
    return any(f.rule in CAPTURE_RULES for f in unit.findings)


def _split(order: list[int], path_of: Callable[[int], str]) -> tuple[list[int], list[int]]:
    """Halves of a unit list, cut at the file boundary nearest the middle when it spans
    several files (bisect over files first, then over the units of one file)."""
    cuts = [i for i in range(1, len(order)) if path_of(order[i]) != path_of(order[i - 1])]
    middle = len(order) / 2
    cut = min(cuts, key=lambda i: abs(i - middle)) if cuts else len(order) // 2
    return order[:cut], order[cut:]


# apply --test's re-plan after a revert: reverted unit -> its reason, to the other units
# the planner now holds -> its reason (migrate.plan.fixplan.held_with_reverted).
Replan = Callable[[dict[int, str]], dict[int, str]]


class Gate:
    def __init__(
        self,
        settings: TestSettings,
        root: Path,
        progress: Callable[[str], None] | None = None,
    ):
        self.settings = settings
        self.root = root
        self.progress = progress or (lambda message: None)
        self.cwd_rel = Path(".")
        cwd = Path.cwd()
        if cwd == root or root in cwd.parents:
            self.cwd_rel = cwd.relative_to(root)

    # Each source file: (display name, path in the user's tree, its decoded text, units).
    def run(
        self,
        units: list,
        sources: dict[str, tuple[Path, Decoded]],
        replan: Replan | None = None,
    ) -> GateReport:
        """`replan`: after each revert, the units whose plan assumed a reverted unit
        migrates; they are held with it, untried (without one, each is tried and bisected)."""
        start = time.monotonic()
        self._replan = replan
        report = GateReport(units, command=self.settings.command)
        if self.settings.select == "imports" and not self.settings.junit:
            raise GateError("--test-select imports needs a pytest command (or --test-format junit)")
        if not units:
            return report  # nothing to gate: no test run needed
        scratch = Path(os.path.realpath(tempfile.gettempdir()))
        root = Path(os.path.realpath(self.root))
        if root.parent == root:
            raise GateError(
                "--test: the folder to copy for the test runs would be the filesystem root; "
                "run migrate from the repository's folder"
            )
        if scratch == root or root in scratch.parents:
            raise GateError(
                f"--test: {self.root}, the folder copied for the test runs, holds the "
                f"temporary folder {scratch}; set TMPDIR outside it"
            )
        tmp = Path(tempfile.mkdtemp(prefix="migrate-test-"))
        try:
            copy = tmp / "tree"
            shutil.copytree(self.root, copy, symlinks=True, ignore=skipped_dirs)
            (tmp / "reports").mkdir()
            files = []
            for display, (path, decoded) in sorted(sources.items()):
                try:
                    rel = Path(os.path.abspath(path)).relative_to(self.root)
                except ValueError:
                    raise GateError(
                        f"--test: {display} lies outside {self.root}, the folder copied for the "
                        "test runs; migrate one repository at a time"
                    ) from None
                # A unit's edits are in its file and in those of the wrapper calls riding on
                # it that pass example inputs (plan.units: FixUnit.paths).
                mine = [i for i, u in enumerate(units) if display in u.paths]
                files.append(FileState(display, path, copy / rel, decoded, mine))
            self._copy = copy
            self._reports = tmp / "reports"
            self._workspace = Workspace(copy, files, units, tmp)
            self._graph = ImportGraph(copy) if self.settings.select == "imports" else None
            self._env = self._environment(copy)
            self._report = report
            self._gate(report, units)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        report.seconds = time.monotonic() - start
        return report

    def _environment(self, copy: Path) -> dict[str, str]:
        env = dict(os.environ)
        # The copy's modules come first (an editable install would import the user's
        # tree), and no bytecode is cached: a trial can restore a file within the second.
        front = [str(copy)] + ([str(copy / "src")] if (copy / "src").is_dir() else [])
        env["PYTHONPATH"] = os.pathsep.join(front + [p for p in [env.get("PYTHONPATH")] if p])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def _suite(self, phase: str, applied: frozenset[int]) -> SuiteRun:
        try:
            changed = self._workspace.write(applied)
        except ValueError as exc:  # these units together do not make valid code
            failed = {"(invalid code)": TestResult("failed", str(exc))}
            run = SuiteRun(phase, len(applied), 0.0, None, results=failed)
            self._report.runs.append(run)
            return run
        ignore: list[Path] = []
        selected = None
        if self._graph is not None and not phase.startswith("baseline"):
            reaching = set(self._graph.tests_reaching(f.copy for f in changed))
            ignore = [t for t in self._graph.tests if t not in reaching]
            selected = len(reaching)
            if not reaching:
                # No test imports what changed: nothing to run, nothing can break.
                run = SuiteRun(phase, len(applied), 0.0, None, results={}, selected_files=0)
                self._report.runs.append(run)
                self.progress(f"{phase}: no test file imports the changed modules; not run")
                return run
        n = len(self._report.runs) + 1
        self._expected = max(self._expected, n)
        self.progress(f"run {n} of about {self._expected}: {phase}")
        run = run_suite(
            self.settings,
            self._copy / self.cwd_rel,
            self._env,
            phase=phase,
            applied=len(applied),
            ignore=ignore,
            report_dir=self._reports,
        )
        run.selected_files = selected
        self._report.runs.append(run)
        return run

    def _baseline(self, report: GateReport) -> tuple[set[str], set[str]]:
        runs = []
        for i in range(1 + self.settings.retries):
            label = "baseline" if not self.settings.retries else f"baseline {i + 1}"
            run = self._suite(label, frozenset())
            if run.timed_out:
                raise GateError(
                    f"--test: the untouched tree's test run timed out after "
                    f"{self.settings.timeout:g} s (raise --test-timeout)"
                )
            if run.results is None:
                raise GateError(
                    f"--test: {self.settings.command!r} left no JUnit report "
                    f"(exit code {run.exit_code}): {last_line(run.output_tail)}"
                )
            if not run.results:
                raise GateError(f"--test: {self.settings.command!r} ran no tests")
            runs.append(run.results)
        passing, failing = set(), set()
        for tid in set().union(*runs):
            outcomes = {r[tid].outcome if tid in r else "missing" for r in runs}
            if len(outcomes) > 1 and tid in PSEUDO_TESTS:
                raise GateError(
                    f"--test: {self.settings.command!r} passed and failed on the untouched "
                    "tree; its exit code cannot judge the fixes"
                )
            if len(outcomes) > 1:
                report.flaky[tid] = "passed and failed on the untouched tree"
            elif outcomes == {"passed"}:
                passing.add(tid)
            elif outcomes == {"failed"}:
                failing.add(tid)
        if not self.settings.junit and failing:
            raise GateError(
                f"--test: {self.settings.command!r} already fails on the untouched tree "
                f"({runs[0][EXIT_CODE_TEST].message}); nothing to compare against"
            )
        return passing, failing

    def _broken(self, run: SuiteRun) -> dict[str, str]:
        """Tests that passed at baseline and do not now (flaky ones aside)."""
        if run.timed_out:
            run.broken = {"(timeout)": f"the run timed out after {self.settings.timeout:g} s"}
            return run.broken
        if run.results is None:
            last = last_line(run.output_tail)
            run.broken = {"(no report)": f"exit code {run.exit_code}, no JUnit report: {last}"}
            return run.broken
        broken = {
            tid: r.message
            for tid, r in run.results.items()
            if r.outcome == "failed" and tid not in self._failing and tid not in self._report.flaky
        }
        if not broken and run.selected_files is None:
            # A test that vanished (its module no longer imports, say) is broken too.
            for tid in sorted(self._passing - set(run.results) - set(self._report.flaky)):
                broken[tid] = "did not run"
        run.broken = broken
        return broken

    def _gate(self, report: GateReport, units: list) -> None:
        n = len(units)
        report.estimate = self._expected = estimate_runs(n, self.settings.retries)
        self.progress(
            f"{n} fix unit{'s' * (n != 1)} to test: about {report.estimate} suite runs if one "
            f"breaks a test, {math.ceil(math.log2(max(n, 1))) + 2} more for each other one"
        )
        self._passing, self._failing = self._baseline(report)
        report.baseline_failing = sorted(self._failing)
        # Captures first: bisection keeps an innocent prefix applied, so a fix that is right
        # only once a capture is rewritten is never judged without it.
        kept = sorted(range(n), key=lambda i: not _rewrites_a_capture(units[i]))
        path_of = {i: units[i].path for i in kept}
        phase = "trial (all fixes)"
        # Each round reverts one unit or marks a test flaky; both are finite.
        for _ in range(2 * n + len(self._passing) + 2):
            if not kept:
                break
            broken = self._broken(self._suite(phase, frozenset(kept)))
            if not broken:
                break
            phase = "confirming"
            # Bisection, a re-run of the culprit, a confirming run.
            steps = math.ceil(math.log2(max(len(kept), 1))) + 2
            self._expected = max(self._expected, len(report.runs) + steps)
            culprit, background, tests = self._bisect(kept, broken, path_of.__getitem__)
            again = self._broken(self._suite("re-run of the culprit", background | {culprit}))
            for tid in set(tests) - set(again) - PSEUDO_TESTS:
                report.flaky[tid] = "failed, then passed with the same fixes"
            # A whole run that failed (timed out, no report, exit code) is not a test that
            # can be set aside as flaky: its culprit is reverted, to be safe.
            confirmed = {t: m for t, m in tests.items() if t in again or t in PSEUDO_TESTS}
            if confirmed:
                kept.remove(culprit)
                report.reverted.append(Reverted(culprit, confirmed))
                self._hold_dependents(report, kept)
        else:
            # Never back at the baseline (tests that keep flipping): keep nothing, say so.
            report.unsettled = True
            kept = []
        report.kept = sorted(kept)

    def _hold_dependents(self, report: GateReport, kept: list[int]) -> None:
        """The planner again, every reverted unit held: what it holds now that it did not
        (a load of a reverted save, a fold allowed because every script goes) is held with
        the last revert, for that reason, instead of being tried and bisected."""
        if self._replan is None:
            return
        reverted = {
            r.unit: f"reverted: it broke {', '.join(sorted(r.tests))}" for r in report.reverted
        }
        last = report.reverted[-1]
        for i, why in sorted(self._replan(reverted).items()):
            if i in kept:
                kept.remove(i)
                last.held.append(HeldWith(i, why))
        if last.held:
            n = len(last.held)
            self.progress(
                f"{n} unit{'s' * (n != 1)} held with it, not tried: {last.reason(report.units)}"
            )

    def _bisect(
        self, kept: list[int], broken: dict[str, str], path_of: Callable[[int], str]
    ) -> tuple[int, frozenset[int], dict[str, str]]:
        """One unit that breaks tests when added to a background that does not."""
        suspects = list(kept)
        background: frozenset[int] = frozenset()
        while len(suspects) > 1:
            first, second = _split(suspects, path_of)
            trial = background | set(first)
            label = f"bisecting {len(suspects)} units ({len(first)} applied of them)"
            now = self._broken(self._suite(label, frozenset(trial)))
            if now:
                suspects, broken = first, now
            else:
                # The first half is innocent alone: it stays applied while the second is split.
                background, suspects = frozenset(trial), second
        return suspects[0], background, broken
