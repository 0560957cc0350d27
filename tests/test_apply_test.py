"""apply --test (issue 12): only the fixes the project's own tests still pass are written.

The sample repository brings its own tiny `torch` package, which shadows the real one in
its test runs: the point here is the gating (baseline, trials, bisection, one write), and a
suite that imports real torch would cost 2-3 s a run instead of a fraction of one. The
stand-in behaves like torch where the sample's tests look: `torch.export.save` writes a
different artifact than `torch.jit.save`, and `torch.jit.is_scripting()` is True inside a
scripted function. Only the library (`mylib`) is migrated; its tests keep scripting and
loading as they did, and exactly two of the fixes break one of them.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from migrate.fix import test_command
from migrate.fix.test_command import is_pytest, parse_junit
from migrate.fix.test_selection import ImportGraph
from migrate.fix.testgate import _split, estimate_runs
from tests.interrupts import AS_FROM_A_TERMINAL, running

PYTEST = "python -m pytest -q -p no:cacheprovider"
ROOT = Path(__file__).resolve().parent.parent

FAKE_TORCH = {
    "torch/__init__.py": "from torch import export, jit\n",
    "torch/jit.py": """
        _depth = 0


        def script(fn):
            def scripted(*args, **kwargs):
                global _depth
                _depth += 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    _depth -= 1

            return scripted


        def annotate(kind, value):
            return value


        def unused(fn):
            return fn


        def is_scripting():
            return _depth > 0


        def trace(model, example):
            return model


        def save(model, path):
            with open(path, "w") as f:
                f.write("torchscript")
        """,
    "torch/export.py": """
        def export(model, args):
            return model


        def save(program, path):
            with open(path, "w") as f:
                f.write("pt2")
        """,
}

LIBRARY = {
    "mylib/__init__.py": "",
    # Safe fixes (MIG104, MIG111) and an unsafe one (MIG101) that all keep the tests green.
    "mylib/ops.py": """
        from typing import List

        import torch


        @torch.jit.script
        def double(x: int) -> int:
            return 2 * x


        def collect(n: int) -> List[int]:
            out = torch.jit.annotate(List[int], [])
            for i in range(n):
                out.append(i)
            return out


        class Helper:
            @torch.jit.unused
            def name(self) -> str:
                return "helper"
        """,
    # The unsafe fix that breaks test_mode: MIG110 folds is_scripting() to False.
    "mylib/mode.py": """
        import torch


        def describe() -> str:
            if torch.jit.is_scripting():
                return "scripted"
            return "eager"
        """,
    # A group (the capture and its save, written together or not at all) that breaks
    # test_save: the artifact is no longer a TorchScript archive.
    "mylib/save.py": """
        import os

        import torch


        def export(model, example, out_dir: str) -> str:
            traced = torch.jit.trace(model, example)
            path = os.path.join(out_dir, "model.pt")
            torch.jit.save(traced, path)
            return path
        """,
    "tests/test_ops.py": """
        from mylib.ops import Helper, collect, double


        def test_double():
            assert double(3) == 6


        def test_collect():
            assert collect(3) == [0, 1, 2]


        def test_helper():
            assert Helper().name() == "helper"


        def test_known_bug():
            assert double(0) == 1, "already failing before any fix"
        """,
    "tests/test_mode.py": """
        import torch

        from mylib.mode import describe


        def test_eager():
            assert describe() == "eager"


        def test_scripted():
            assert torch.jit.script(describe)() == "scripted"
        """,
    "tests/test_save.py": """
        from mylib.save import export


        def test_export(tmp_path):
            with open(export(object(), None, str(tmp_path))) as f:
                assert f.read() == "torchscript"
        """,
}


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def make_sample(root: Path, extra: dict[str, str] | None = None) -> Path:
    write_tree(root, {**FAKE_TORCH, **LIBRARY, **(extra or {})})
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def environment(tmp_path: Path) -> dict[str, str]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return {
        **os.environ,
        "MIGRATE_CACHE_DIR": str(tmp_path / "cache"),
        # Third-party pytest plugins cost seconds a run; the sample needs none.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # The scratch copies land here, so a test can see that none is left behind.
        "TMPDIR": str(scratch),
    }


def migrate(root: Path, tmp_path: Path, *args: str, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "migrate", "apply", "mylib", "--no-cache", *args],
        cwd=root,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def units_of(entries: list[dict]) -> list[tuple[str, ...]]:
    return sorted(tuple(f"{f['path']}:{f['rule']}" for f in e["fixes"]) for e in entries)


def test_reverts_exactly_the_two_breaking_units(tmp_path):
    root = make_sample(tmp_path / "repo")
    before = snapshot(root)
    report_path = tmp_path / "report.json"
    proc = migrate(
        root,
        tmp_path,
        "--unsafe-fixes",
        "--test",
        PYTEST,
        "--test-select",
        "imports",
        "--test-report",
        str(report_path),
    )
    assert proc.returncode == 1, proc.stderr  # fixes left for review
    report = json.loads(report_path.read_text())
    documented = (ROOT / "docs" / "apply-test-report.md").read_text()
    for key in report:
        assert f"| `{key}` |" in documented
    assert units_of(report["reverted"]) == [
        ("mylib/mode.py:MIG110",),
        ("mylib/save.py:MIG102", "mylib/save.py:MIG201"),
    ]
    broke = {r["fixes"][0]["rule"]: r["broke"] for r in report["reverted"]}
    assert broke["MIG110"] == [
        {
            "test": "tests/test_mode.py::test_scripted",
            "failure": "AssertionError: assert 'eager' == 'scripted'",
        }
    ]
    assert [b["test"] for b in broke["MIG102"]] == ["tests/test_save.py::test_export"]
    assert units_of(report["kept"]) == [
        ("mylib/ops.py:MIG101",),
        ("mylib/ops.py:MIG104",),
        ("mylib/ops.py:MIG111",),
    ]
    assert report["baseline_failing"] == ["tests/test_ops.py::test_known_bug"]
    assert report["flaky"] == []
    # Two culprits among five units: twice (bisection + re-run + confirm), plus baseline and
    # the first trial.
    assert len(report["runs"]) <= 2 * (math.ceil(math.log2(5)) + 3) + 2
    assert report["runs"][0]["phase"] == "baseline"
    # --test-select imports: a trial of ops.py's fixes runs only the file importing it.
    assert any(r["test_files_selected"] == 1 for r in report["runs"][1:])
    after = snapshot(root)
    changed = sorted(k for k in after if after[k] != before[k])
    assert changed == ["mylib/ops.py"]
    assert "@torch.jit.script" not in after["mylib/ops.py"].decode()
    assert "torch.jit.annotate" not in after["mylib/ops.py"].decode()
    for phase in ("baseline", "trial", "bisecting", "confirming"):
        assert phase in proc.stderr
    assert "reverted mylib/mode.py:5:8 MIG110: it broke" in proc.stdout
    assert "1 test already failing before any fix: ignored" in proc.stdout
    assert list((tmp_path / "scratch").glob("migrate-test-*")) == []  # no copy left behind
    # The HTML plan shows what the tests reverted.
    html = tmp_path / "plan.html"
    subprocess.run(
        [sys.executable, "-m", "migrate", "report", ".", "--format", "html"]
        + ["--test-report", str(report_path), "-o", str(html)],
        cwd=root,
        env=environment(tmp_path),
        check=True,
        capture_output=True,
    )
    page = html.read_text()
    assert "<h2>Tested with <code>python -m pytest -q -p no:cacheprovider</code></h2>" in page
    assert "<code>tests/test_mode.py::test_scripted</code>" in page
    assert "3 fixes kept, 2 units reverted" in page
    # The user's suite is back at its baseline: only the known bug fails.
    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf"],
        cwd=root,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
    )
    assert "1 failed, 6 passed" in suite.stdout
    assert "test_known_bug" in suite.stdout


CHECK_SCRIPT = {
    # Not pytest: only the exit code says whether the library still works.
    "check.py": """
        import sys

        import torch
        from mylib.mode import describe

        sys.exit(0 if torch.jit.script(describe)() == "scripted" else 3)
        """,
}


def test_exit_code_command_and_dry_run_write_nothing(tmp_path):
    root = make_sample(tmp_path / "repo", CHECK_SCRIPT)
    before = snapshot(root)
    report_path = tmp_path / "report.json"
    proc = migrate(
        root,
        tmp_path,
        "--dry-run",
        "--unsafe-fixes",
        "--test",
        "python check.py",
        "--test-report",
        str(report_path),
    )
    assert proc.returncode == 1, proc.stderr
    assert snapshot(root) == before
    report = json.loads(report_path.read_text())
    assert units_of(report["reverted"]) == [("mylib/mode.py:MIG110",)]
    assert report["reverted"][0]["broke"] == [{"test": "(exit code)", "failure": "exit code 3"}]
    # check.py does not look at save.py: its group is kept this time.
    assert ("mylib/save.py:MIG102", "mylib/save.py:MIG201") in units_of(report["kept"])
    # The diff shows the kept fixes only.
    assert "+++ b/mylib/ops.py" in proc.stdout
    assert "+++ b/mylib/save.py" in proc.stdout
    assert "+++ b/mylib/mode.py" not in proc.stdout


def flaky_test(counter: Path, fails_on) -> dict[str, str]:
    return {
        "tests/test_flaky.py": f"""
            from pathlib import Path

            COUNTER = Path({str(counter)!r})


            def test_sometimes():
                runs = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
                COUNTER.write_text(str(runs))
                assert not ({fails_on}), f"run {{runs}} fails"
            """
    }


def test_flaky_in_the_baseline_never_reverts(tmp_path):
    counter = tmp_path / "counter"
    root = make_sample(tmp_path / "repo", flaky_test(counter, "runs % 2 == 0"))
    report_path = tmp_path / "report.json"
    proc = migrate(
        root,
        tmp_path,
        "--test",
        # Compound: pytest gets its report options through PYTEST_ADDOPTS all the same.
        f"{PYTEST} && echo done",
        "--test-retries",
        "1",
        "--test-report",
        str(report_path),
    )
    report = json.loads(report_path.read_text())
    assert report["flaky"] == [
        {
            "test": "tests/test_flaky.py::test_sometimes",
            "why": "passed and failed on the untouched tree",
        }
    ]
    assert report["reverted"] == []
    assert len(report["kept"]) == 3  # the safe fixes: MIG101, MIG104 and MIG111
    assert [r["phase"] for r in report["runs"]] == ["baseline 1", "baseline 2", "trial (all fixes)"]
    assert "flaky, ignored: tests/test_flaky.py::test_sometimes" in proc.stdout


def test_flip_without_a_change_is_flaky_not_a_culprit(tmp_path):
    counter = tmp_path / "counter"
    # Passes in the baseline, fails once in the first trial, then passes again.
    root = make_sample(tmp_path / "repo", flaky_test(counter, "runs == 2"))
    before = snapshot(root)
    report_path = tmp_path / "report.json"
    migrate(root, tmp_path, "--test", PYTEST, "--test-report", str(report_path))
    report = json.loads(report_path.read_text())
    assert report["reverted"] == []
    assert report["flaky"] == [
        {
            "test": "tests/test_flaky.py::test_sometimes",
            "why": "failed, then passed with the same fixes",
        }
    ]
    phases = [r["phase"] for r in report["runs"]]
    assert phases[:2] == ["baseline", "trial (all fixes)"]
    assert phases[-2:] == ["re-run of the culprit", "confirming"]
    assert len(report["kept"]) == 3
    after = snapshot(root)
    assert [k for k in after if after[k] != before.get(k)] == ["mylib/ops.py"]


def hanging_gate(started: Path) -> dict[str, str]:
    """A gate command that logs each run's pid; the second run (the first trial, fixes
    applied in the copy) hangs until stopped."""
    return {
        "gate.py": f"""
            import os
            import time
            from pathlib import Path

            log = Path({str(started)!r})
            runs = log.read_text().count("\\n") + 1 if log.exists() else 1
            with log.open("a") as f:
                f.write(f"{{os.getpid()}}\\n")
            if runs == 2:
                time.sleep(600)  # until the test interrupts it
            """
    }


def wait_until(done, what: str) -> None:
    """Event-driven: returns once `done()` holds; the 600 s deadline only stops a hang."""
    deadline = time.monotonic() + 600
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after 600 s")
        time.sleep(0.02)


# Each moment is seen, not guessed: a line apply prints right before the step, or the pid the
# trial command itself writes once it runs.
MOMENTS = {
    "as the gate starts": "fix units to test",  # before the copy and the baseline run
    "as the trial starts": "trial (all fixes)",  # printed right before the trial is started
    "while the trial runs": None,  # the trial wrote its pid: it is running
}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_during_a_trial_leaves_the_tree_byte_identical(tmp_path, moment):
    started = tmp_path / "started"
    root = make_sample(tmp_path / "repo", hanging_gate(started))
    before = snapshot(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "apply", "mylib", "--no-cache", "--unsafe-fixes"]
        + ["--test", "python gate.py"],
        cwd=root,
        env=environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **AS_FROM_A_TERMINAL,  # SIGINT not ignored, whatever the CI runner hands the suite
    )
    seen = []
    if MOMENTS[moment] is None:
        wait_until(lambda: started.exists() and started.read_text().count("\n") == 2, "trial")
    else:
        while MOMENTS[moment] not in (seen[-1] if seen else ""):
            seen.append(proc.stderr.readline())
            assert seen[-1], f"apply ended before {moment}: {''.join(seen)}"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    err = "".join(seen) + err
    log = started.read_text() if started.exists() else ""
    assert proc.returncode == 130, (out, err, log)
    assert "interrupted" in err
    assert snapshot(root) == before
    assert list((tmp_path / "scratch").glob("migrate-test-*")) == []  # the copy is gone
    # Every run it started was stopped (SIGKILL to the group; the trial's python is the
    # shell's child, so it may take a moment to go).
    for pid in map(int, log.split()):
        wait_until(lambda pid=pid: not running(pid), f"gate run {pid} still running")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_while_the_run_is_being_started_stops_it(tmp_path, monkeypatch):
    """A SIGINT that lands inside Popen, after the fork, before Popen returns (it waits
    there for the exec): the run exists but has no handle yet. It must still be stopped."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set in the main thread only")
    real_popen = subprocess.Popen
    runs = []

    def popen(*args, **kwargs):
        runs.append(real_popen(*args, **kwargs))
        signal.raise_signal(signal.SIGINT)  # Ctrl-C now, inside Popen
        return runs[-1]

    monkeypatch.setattr(test_command.subprocess, "Popen", popen)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            test_command.run_suite(
                test_command.TestSettings("sleep 600", format="exit-code"),
                tmp_path,
                dict(os.environ),
                phase="trial",
                applied=1,
                report_dir=tmp_path,
            )
        assert len(runs) == 1
        assert not running(runs[0].pid)  # stopped and reaped
    finally:
        signal.signal(signal.SIGINT, previous)
        for run in runs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()


def test_another_tool_writing_junit(tmp_path):
    junit_writer = {
        "check.py": """
            import os

            import torch
            from mylib.mode import describe

            ok = torch.jit.script(describe)() == "scripted"
            failure = "" if ok else '<failure message="describe() changed"/>'
            with open(os.environ["MIGRATE_TEST_JUNIT"], "w") as f:
                f.write(
                    '<testsuite><testcase classname="checks" name="mode">'
                    + failure
                    + '</testcase><testcase classname="checks" name="other"/></testsuite>'
                )
            """,
    }
    root = make_sample(tmp_path / "repo", junit_writer)
    report_path = tmp_path / "report.json"
    proc = migrate(
        root,
        tmp_path,
        "--dry-run",
        "--unsafe-fixes",
        "--test",
        "python check.py",
        "--test-format",
        "junit",
        "--test-report",
        str(report_path),
    )
    report = json.loads(report_path.read_text())
    assert [r["broke"] for r in report["reverted"]] == [
        [{"test": "checks::mode", "failure": "describe() changed"}]
    ], proc.stderr


def test_baseline_timeout_is_an_error(tmp_path):
    root = make_sample(tmp_path / "repo")
    before = snapshot(root)
    proc = migrate(
        root,
        tmp_path,
        "--test",
        "python -c 'import time; time.sleep(30)'",
        "--test-timeout",
        "0.5",
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: --test: the untouched tree's test run timed out after 0.5 s (raise --test-timeout)"
    )
    assert snapshot(root) == before


def test_a_command_failing_before_any_fix_is_an_error(tmp_path):
    root = make_sample(tmp_path / "repo")
    proc = migrate(root, tmp_path, "--test", "python -c 'raise SystemExit(4)'")
    assert proc.returncode == 2
    assert "already fails on the untouched tree (exit code 4)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_refuses_a_file_that_is_not_a_test_report(tmp_path):
    root = make_sample(tmp_path / "repo")
    (tmp_path / "bad.json").write_text('{"version": 1}')
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "report", ".", "--format", "html"]
        + ["--test-report", str(tmp_path / "bad.json")],
        cwd=root,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"error: --test-report {tmp_path / 'bad.json'}: not a `migrate apply --test` report\n"
    )


def test_test_select_imports_needs_pytest(tmp_path):
    root = make_sample(tmp_path / "repo", CHECK_SCRIPT)
    proc = migrate(root, tmp_path, "--test", "python check.py", "--test-select", "imports")
    assert proc.returncode == 2
    assert "--test-select imports needs a pytest command" in proc.stderr


def test_config_names_the_test_command(tmp_path):
    root = make_sample(tmp_path / "repo", CHECK_SCRIPT)
    (root / "pyproject.toml").write_text(
        '[tool.migrate]\ntest = "python check.py"\ntest-timeout = 30\nunsafe-fixes = true\n'
    )
    proc = migrate(root, tmp_path, "--dry-run", "--test-from-config")
    assert "Tested with `python check.py`" in proc.stdout
    assert "reverted mylib/mode.py:5:8 MIG110" in proc.stdout


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("test = 3", "`test` must be a command line (a string)"),
        (
            'test = "pytest"\ntest-timeout = 0',
            "`test-timeout` must be a number of seconds above 0 and at most 86400, not 0",
        ),
    ],
)
def test_config_rejects_bad_test_keys(tmp_path, table, message):
    root = make_sample(tmp_path / "repo")
    (root / "pyproject.toml").write_text(f"[tool.migrate]\n{table}\n")
    proc = migrate(root, tmp_path, "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr.endswith(f"pyproject.toml [tool.migrate]: {message}\n"), proc.stderr


# --------------------------------------------------------------------------- pieces


def test_import_graph_reaches_through_packages(tmp_path):
    make_sample(tmp_path)
    write_tree(
        tmp_path,
        {
            "mylib/facade.py": "from .mode import describe\n",
            "tests/test_facade.py": "from mylib import facade\n",
        },
    )
    graph = ImportGraph(tmp_path)
    names = lambda files: sorted(p.name for p in files)  # noqa: E731
    assert names(graph.tests_reaching([tmp_path / "mylib/mode.py"])) == [
        "test_facade.py",
        "test_mode.py",
    ]
    # Every module imports the package, so a change to its __init__ reaches every test.
    assert len(graph.tests_reaching([tmp_path / "mylib/__init__.py"])) == 4
    assert names(graph.tests_reaching([tmp_path / "mylib/save.py"])) == ["test_save.py"]


def test_bisection_splits_at_file_boundaries_first():
    paths = {0: "a.py", 1: "a.py", 2: "a.py", 3: "b.py", 4: "c.py", 5: "c.py"}
    assert _split([0, 1, 2, 3, 4, 5], paths.__getitem__) == ([0, 1, 2], [3, 4, 5])
    assert _split([0, 1, 2], paths.__getitem__) == ([0], [1, 2])
    assert estimate_runs(64, 0) == 1 + 1 + 6 + 2
    assert estimate_runs(64, 0) <= 2 * math.log2(64) + 3


def test_pytest_detection():
    assert is_pytest("pytest -q")
    assert is_pytest("python -m pytest tests/")
    assert is_pytest("uv run /opt/bin/py.test")
    assert not is_pytest("python check.py")
    assert not is_pytest("make test")


def test_junit_node_ids_and_first_failure_line(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(
        """<testsuites><testsuite>
        <testcase classname="tests.test_a.TestX" name="test_one" file="tests/test_a.py"/>
        <testcase classname="tests.test_a" name="test_two" file="tests/test_a.py">
          <failure message="assert 1 == 2&#10;more">long text</failure></testcase>
        <testcase classname="tests.test_a" name="test_three" file="tests/test_a.py">
          <skipped message="no"/></testcase>
        </testsuite></testsuites>"""
    )
    results = parse_junit(report)
    assert {k: (v.outcome, v.message) for k, v in results.items()} == {
        "tests/test_a.py::TestX::test_one": ("passed", ""),
        "tests/test_a.py::test_two": ("failed", "assert 1 == 2"),
        "tests/test_a.py::test_three": ("skipped", ""),
    }


def test_a_trial_past_the_timeout_counts_as_failing(tmp_path):
    slow = {
        # Hangs (rather than fails) when the MIG110 fix changes describe().
        "check.py": """
            import time

            import torch
            from mylib.mode import describe

            if torch.jit.script(describe)() != "scripted":
                time.sleep(600)
            """,
    }
    root = make_sample(tmp_path / "repo", slow)
    report_path = tmp_path / "report.json"
    migrate(
        root,
        tmp_path,
        "--dry-run",
        "--unsafe-fixes",
        "--test",
        "python check.py",
        "--test-timeout",
        # 50x a passing run here (Python, the stand-in torch, one call: 0.1 s), so that a
        # trial that passes does not time out on a loaded machine; each one that hangs
        # costs this long.
        "5",
        "--test-report",
        str(report_path),
    )
    report = json.loads(report_path.read_text())
    assert units_of(report["reverted"]) == [("mylib/mode.py:MIG110",)]
    assert report["reverted"][0]["broke"] == [
        {"test": "(timeout)", "failure": "the run timed out after 5 s"}
    ]
    assert any(r["timed_out"] for r in report["runs"])


def test_git_work_tree_from_a_subfolder(tmp_path):
    """The copy is of the git work tree (without .git); the command runs in the copy's
    counterpart of the current folder, never in the user's tree."""
    root = tmp_path / "repo"
    guard = {
        "check.py": f"""
            import sys
            from pathlib import Path

            here = Path(__file__).resolve().parent
            assert here != Path({str(root.resolve())!r}), "ran in the user's tree"
            assert not (here / ".git").exists(), "the copy holds .git"
            import torch
            from mylib.mode import describe

            sys.exit(0 if torch.jit.script(describe)() == "scripted" else 3)
            """,
    }
    make_sample(root, guard)
    env = environment(tmp_path)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env.update(GIT_COMMITTER_EMAIL="t@t")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "sample"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", "../mylib", "--no-cache", "--unsafe-fixes"]
        + ["--test", "python ../check.py"],
        cwd=root / "tests",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "reverted mylib/mode.py:5:8 MIG110" in proc.stdout.replace("../", ""), proc.stderr
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
    ).stdout
    assert sorted(status.split()) == ["M", "M", "mylib/ops.py", "mylib/save.py"]


def test_apply_units_writes_exactly_the_units_given(tmp_path):
    from migrate.findings import Edit
    from migrate.fix.fixer import apply_units
    from migrate.pipeline.scan import PlannedScanner as Scanner
    from migrate.plan.units import WITH_UNSAFE, FixUnit, fix_units
    from migrate.scan.engine import ScanOptions

    make_sample(tmp_path)
    source = (tmp_path / "mylib/ops.py").read_text()
    scan = Scanner(ScanOptions(use_git=False, cache=False)).scan([str(tmp_path / "mylib/ops.py")])
    units, _ = fix_units(scan.findings, WITH_UNSAFE)
    by_rule = {u.findings[0].rule: u for u in units}
    path = scan.findings[0].path
    only_annotate = apply_units(path, source, [by_rule["MIG111"]])
    assert "torch.jit.annotate" not in only_annotate
    assert "@torch.jit.script" in only_annotate and "@torch.jit.unused" in only_annotate
    assert apply_units(path, source, []) == source
    everything = apply_units(path, source, units)
    assert "torch.jit" not in everything
    annotate = by_rule["MIG111"].edits[0]
    clash = FixUnit(by_rule["MIG101"].findings, [Edit(annotate.start, annotate.end + 1, "x")])
    with pytest.raises(ValueError, match="overlap"):
        apply_units(path, source, [by_rule["MIG111"], clash])


def test_the_copied_folder_is_the_project_not_the_folder_run_from(tmp_path, monkeypatch):
    from migrate.fix.gate_workspace import repository_root

    project = tmp_path / "work" / "proj"
    write_tree(project, {"pyproject.toml": "", "pkg/a.py": "x = 1\n"})
    monkeypatch.chdir("/")  # `cd / && migrate apply --test ... /path/proj` once copied `/`
    assert repository_root([str(project / "pkg")]) == project
    monkeypatch.chdir(tmp_path / "work")
    assert repository_root([str(project / "pkg")]) == project
    bare = tmp_path / "bare"  # no project marker: the folder it is run from, as before
    write_tree(bare, {"pkg/a.py": "x = 1\n"})
    monkeypatch.chdir(bare)
    assert repository_root(["pkg"]) == bare


@pytest.mark.parametrize("where", ["root", "tmpdir"])
def test_a_copy_that_would_hold_the_disk_or_its_own_scratch_folder_is_refused(tmp_path, where):
    root = make_sample(tmp_path / "repo")
    env = environment(tmp_path)
    cwd, target = (Path("/"), str(root / "mylib")) if where == "root" else (root, "mylib")
    if where == "tmpdir":
        env["TMPDIR"] = str(root / "scratch")
        (root / "scratch").mkdir()
    before = snapshot(root)
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", target, "--no-cache", "--test", PYTEST],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    if where == "root":
        assert last == (
            "error: --test: the folder to copy for the test runs would be the filesystem "
            "root; run migrate from the repository's folder"
        )
    else:
        assert f"holds the temporary folder {os.path.realpath(root / 'scratch')}" in last
    assert snapshot(root) == before
