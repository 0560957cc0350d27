"""One run of the project's test command for `migrate apply --test`: started in its own
session, killed with its children past the timeout, and its results read per test from a
JUnit report (pytest) or from its exit code.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

FORMATS = ("auto", "junit", "exit-code")
SELECTS = ("all", "imports")

EXIT_CODE_TEST = "(exit code)"
# Whole-run failures reported in the place of a test's name.
PSEUDO_TESTS = frozenset({EXIT_CODE_TEST, "(timeout)", "(no report)", "(invalid code)"})


class GateError(ValueError):
    """The test command cannot serve as a gate (fails to start, times out on the untouched
    tree, reports nothing); the message says which and why."""


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
        last = last_line(tail)
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


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
