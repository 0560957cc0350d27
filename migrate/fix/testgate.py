"""`migrate apply --test CMD`: keep only the fixes the project's own tests still pass (issue 12).

The suite runs first on an untouched scratch copy of the repository (the baseline), then with
every selected fix written into that copy. When tests that passed now fail, bisection over
the fix units (split at file boundaries first; a unit, one fix or a whole group, is never
split) finds the unit responsible; it is re-run once to tell a real break from a flaky test,
reverted, and the suite re-run until it is back at its baseline. Nothing here writes to the
user's tree: the caller writes the kept units once, atomically.
"""

from __future__ import annotations

import ast
import math
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from migrate import gitsafe
from migrate.fix.fixer import apply_units
from migrate.fix.source_text import Decoded, encode
from migrate.plan.context import CAPTURE_RULES
from migrate.scan.discover import Skipped, read_checked

FORMATS = ("auto", "junit", "exit-code")
SELECTS = ("all", "imports")

# Never copied into the scratch tree: version control, virtual environments, caches.
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
    | {".tox", ".nox", "node_modules", ".venv", "venv", ".eggs"}
)

EXIT_CODE_TEST = "(exit code)"
# Whole-run failures reported in the place of a test's name.
PSEUDO_TESTS = frozenset({EXIT_CODE_TEST, "(timeout)", "(no report)", "(invalid code)"})


class GateError(ValueError):
    """The test command cannot serve as a gate (fails to start, times out on the untouched
    tree, reports nothing); the message says which and why."""


# --------------------------------------------------------------------------- the command


@dataclass
class TestSettings:
    command: str
    format: str = "auto"  # auto | junit | exit-code
    timeout: float | None = None
    retries: int = 0
    select: str = "all"  # all | imports

    @property
    def junit(self) -> bool:
        if self.format != "auto":
            return self.format == "junit"
        return is_pytest(self.command)


def is_pytest(command: str) -> bool:
    """`pytest ...`, `py.test`, `python -m pytest`, `uv run pytest`: per-test results exist."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return any(os.path.basename(w) in ("pytest", "py.test") for w in words)


@dataclass
class TestResult:
    outcome: str  # passed | failed | skipped
    message: str = ""
    file: str | None = None


@dataclass
class SuiteRun:
    phase: str
    applied: int
    seconds: float
    exit_code: int | None
    timed_out: bool = False
    # Per test (pytest node id); None when the command left no JUnit report.
    results: dict[str, TestResult] | None = None
    output_tail: str = ""
    selected_files: int | None = None
    broken: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "phase": self.phase,
            "fixes_applied": self.applied,
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "test_files_selected": self.selected_files,
            "broken": sorted(self.broken),
        }


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def parse_junit(path: Path) -> dict[str, TestResult]:
    """Outcomes by pytest node id from a JUnit XML report (xunit1 names each test's file)."""
    results: dict[str, TestResult] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        classname = case.get("classname", "")
        file = case.get("file")
        if file:
            module = file[: -len(".py")].replace("/", ".") if file.endswith(".py") else file
            rest = classname[len(module) :].lstrip(".") if classname.startswith(module) else ""
            node = "::".join(p for p in (file, rest, name) if p)
        else:
            node = f"{classname}::{name}" if classname else name
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                message = _first_line(child.get("message")) or _first_line(child.text)
                break
            if child.tag == "skipped":
                outcome = "skipped"
        results[node] = TestResult(outcome, message, file)
    return results


def run_suite(
    settings: TestSettings,
    cwd: Path,
    env: dict[str, str],
    *,
    phase: str,
    applied: int,
    ignore: Iterable[Path] = (),
    report_dir: Path,
) -> SuiteRun:
    """Run the command once in `cwd`; a run past the timeout is killed with its children."""
    command = settings.command
    junit = report_dir / "junit.xml"
    if junit.exists():
        junit.unlink()
    if settings.junit:
        # Through the environment, not the command line: `pytest -q && echo ok`, a script or
        # a Makefile that runs pytest still gets them. Another tool (--test-format junit)
        # writes its report to $MIGRATE_TEST_JUNIT.
        extra = [f"--junitxml={junit}", "-o", "junit_family=xunit1"]
        extra += [f"--ignore={p}" for p in ignore]
        addopts = " ".join(filter(None, [env.get("PYTEST_ADDOPTS"), shlex.join(extra)]))
        env = {**env, "PYTEST_ADDOPTS": addopts, "MIGRATE_TEST_JUNIT": str(junit)}
    log = report_dir / "output.log"
    start = time.monotonic()
    proc = None
    with open(log, "wb") as out:
        try:
            with _interrupts_deferred():
                try:
                    # Its own session: the terminal's Ctrl-C reaches us, and we stop the
                    # whole group.
                    proc = subprocess.Popen(
                        command,
                        shell=True,
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise GateError(f"--test: cannot run {settings.command!r}: {exc}") from None
            timed_out = not _wait_polling(proc, settings.timeout)
            if timed_out:
                _kill_group(proc)
        except BaseException:
            if proc is not None:
                _kill_group(proc)
            raise
    seconds = time.monotonic() - start
    tail = log.read_bytes()[-4000:].decode("utf-8", "replace")
    run = SuiteRun(phase, applied, seconds, proc.returncode, timed_out, output_tail=tail)
    if settings.junit and not timed_out and junit.exists():
        try:
            run.results = parse_junit(junit)
        except ET.ParseError:
            run.results = None
    elif not settings.junit and not timed_out:
        ok = proc.returncode == 0
        last = _last_line(tail)
        message = "" if ok else f"exit code {proc.returncode}" + (f": {last}" if last else "")
        run.results = {EXIT_CODE_TEST: TestResult("passed" if ok else "failed", message)}
    return run


@contextmanager
def _interrupts_deferred():
    """Hold Ctrl-C and SIGTERM while the run starts, and raise them once its handle is held.
    One that lands inside Popen after the fork (while it waits for the exec) would otherwise
    leave the run going unseen in its own session, where no Ctrl-C of the terminal reaches
    it. A Python-level handler, not a blocked mask: the run inherits a mask, not a handler."""
    held = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None]
    if threading.current_thread() is not threading.main_thread() or not held:
        yield
        return
    caught: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if caught:
            signal.raise_signal(caught[0])  # the restored handler: KeyboardInterrupt


def _wait_polling(proc: subprocess.Popen, timeout: float | None) -> bool:
    """Wait for the run in short steps; False once past `timeout`. The steps came with a
    loaded CI run whose Ctrl-C waited out the whole trial (2a8db73); its cause was not the
    wait: the CI runner starts the suite with SIGINT ignored, and the `migrate` under test
    inherits that (tests/interrupts.py, 4e4a5f4)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = 0.2 if deadline is None else min(0.2, max(deadline - time.monotonic(), 0))
        try:
            proc.wait(timeout=step)
            return True
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                return False


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


# --------------------------------------------------------------------------- the copy


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


def _skip(folder: str, names: list[str]) -> set[str]:
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


# --------------------------------------------------------------------------- test selection


def _module_names(rel: Path) -> list[str]:
    """Dotted names a file may be imported as: its path from the root, and every suffix of
    it (a `src/` layout, a tests folder on sys.path)."""
    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _imported(tree: ast.AST, package: list[str]) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                module = ".".join([*base, *([node.module] if node.module else [])])
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
            dirs[:] = sorted(set(dirs) - _skip(folder, dirs))
            files.extend(Path(folder) / n for n in names if n.endswith(".py"))
        by_name: dict[str, set[Path]] = {}
        for f in files:
            for name in _module_names(f.relative_to(root)):
                by_name.setdefault(name, set()).add(f)
        self.edges: dict[Path, set[Path]] = {}
        for f in files:
            rel = f.relative_to(root).with_suffix("")
            package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
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


# --------------------------------------------------------------------------- the gate


@dataclass
class HeldWith:
    """A unit not tried once a unit it depends on was reverted: the planner holds it."""

    unit: int
    reason: str  # the planner's (what it assumed of the reverted unit)


@dataclass
class Reverted:
    unit: int
    tests: dict[str, str]  # test -> first line of its failure
    # The units whose plan assumed this one migrates, held with it without a trial of their own.
    held: list[HeldWith] = field(default_factory=list)

    def reason(self, units: list) -> str:
        """Why its dependents are held: the one real reason, for the whole group."""
        f = units[self.unit].findings[0]
        tests = ", ".join(sorted(self.tests))
        return f"{f.rule} at {f.path}:{f.line} stays: the tests failed with it ({tests})"


@dataclass
class GateReport:
    units: list  # the units the gate was given (fixer.FixUnit)
    kept: list[int] = field(default_factory=list)
    reverted: list[Reverted] = field(default_factory=list)
    flaky: dict[str, str] = field(default_factory=dict)
    baseline_failing: list[str] = field(default_factory=list)
    runs: list[SuiteRun] = field(default_factory=list)
    seconds: float = 0.0
    command: str = ""
    estimate: int = 0
    # The suite never came back to its baseline: nothing is kept.
    unsettled: bool = False

    @property
    def suite_seconds(self) -> float:
        base = [r.seconds for r in self.runs if r.phase.startswith("baseline")]
        return base[0] if base else 0.0

    def to_dict(self) -> dict:
        def unit(i: int) -> dict:
            u = self.units[i]
            return {
                "fixes": [
                    {"rule": f.rule, "path": f.path, "line": f.line, "column": f.column}
                    for f in u.findings
                ],
                "applicability": sorted({str(f.applicability) for f in u.findings}),
            }

        return {
            "version": 1,
            "command": self.command,
            "kept": [unit(i) for i in self.kept],
            "reverted": [
                {
                    **unit(r.unit),
                    "broke": [{"test": t, "failure": m} for t, m in r.tests.items()],
                    "held_with": [{**unit(h.unit), "plan": h.reason} for h in r.held],
                }
                for r in self.reverted
            ],
            "flaky": [{"test": t, "why": why} for t, why in sorted(self.flaky.items())],
            "baseline_failing": self.baseline_failing,
            "unsettled": self.unsettled,
            "runs": [r.to_dict() for r in self.runs],
            "suite_runs": len(self.runs),
            "estimated_runs": self.estimate,
            "seconds": round(self.seconds, 3),
            "one_suite_seconds": round(self.suite_seconds, 3),
        }


def estimate_runs(units: int, retries: int) -> int:
    """Suite runs when one unit is at fault: baseline(s), the full trial, bisection, a re-run
    of the culprit (flaky or not), the confirming run."""
    return 1 + retries + 1 + math.ceil(math.log2(max(units, 1))) + 2


def _rewrites_a_capture(unit) -> bool:
    """A unit rewriting a `torch.jit.script`/`trace` (MIG101-103). The planner lets other
    fixes (an `is_scripting()` fold, a removed `@torch.jit.ignore`) go because those captures
    are rewritten in this run (issue 27: a script rewritten in the run blocks nothing):
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
            shutil.copytree(self.root, copy, symlinks=True, ignore=_skip)
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
                    f"(exit code {run.exit_code}): {_last_line(run.output_tail)}"
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
            last = _last_line(run.output_tail)
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


# --------------------------------------------------------------------------- the report


def _where(unit) -> str:
    f = unit.findings[0]
    rules = "+".join(dict.fromkeys(m.rule for m in unit.findings))
    more = f" (group of {len(unit.findings)})" if len(unit.findings) > 1 else ""
    return f"{f.path}:{f.line}:{f.column} {rules}{more}"


def load_report(path: Path) -> dict:
    """A --test-report JSON file, or ValueError naming the file and what is wrong."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--test-report {path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--test-report {path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or "reverted" not in doc:
        raise ValueError(f"--test-report {path}: not a `migrate apply --test` report")
    return doc


def render_text(report: GateReport) -> str:
    """The --test section of apply's text output."""
    lines = [f"Tested with `{report.command}`:"]
    kept = sum(len(report.units[i].findings) for i in report.kept)
    lines.append(f"  kept {kept} fix{'es' * (kept != 1)} ({len(report.kept)} units)")
    for r in report.reverted:
        lines.append(f"  reverted {_where(report.units[r.unit])}: it broke")
        lines.extend(f"    {test}: {message}" for test, message in sorted(r.tests.items()))
        if r.held:
            lines.append(f"    held with it, not tried (because {r.reason(report.units)}):")
            lines.extend(f"      {_where(report.units[h.unit])}: {h.reason}" for h in r.held)
    if report.baseline_failing:
        n = len(report.baseline_failing)
        lines.append(f"  {n} test{'s' * (n != 1)} already failing before any fix: ignored")
    for test, why in sorted(report.flaky.items()):
        lines.append(f"  flaky, ignored: {test} ({why})")
    if report.unsettled:
        lines.append("  the suite never came back to its baseline: no fix kept")
    suite = report.suite_seconds
    ratio = f", {report.seconds / suite:.1f}x one suite run ({suite:.1f} s)" if suite else ""
    lines.append(
        f"  {len(report.runs)} suite runs (estimate {report.estimate}) in "
        f"{report.seconds:.1f} s{ratio}"
    )
    return "\n".join(lines) + "\n"
