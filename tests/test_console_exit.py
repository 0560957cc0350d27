"""The console script ends its process through os._exit (the interpreter's teardown would
free a scan's objects one by one): the exit code, the output and the exit handlers a run
registers are still what a normal exit gives."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

from tests.scan_support import ROOT, clean_env


def _python(code: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(tmp_path),
        timeout=120,
    )


def _ends_with(body: str, tmp_path) -> subprocess.CompletedProcess:
    """console_main with `main` replaced by `body` (which registers an exit handler)."""
    return _python(
        f"""
        import atexit
        from migrate.cli import entry

        def fake_main():
            atexit.register(lambda: print("handler ran", flush=True))
            print("output", end="")  # unflushed: the exit flushes it
            {body}

        entry.main = fake_main
        entry.console_main()
        """,
        tmp_path,
    )


def test_exit_codes_output_and_late_exit_handlers(tmp_path):
    done = _ends_with("pass", tmp_path)
    assert (done.returncode, done.stdout) == (0, "outputhandler ran\n")
    told = _ends_with("raise SystemExit(3)", tmp_path)
    assert (told.returncode, told.stdout) == (3, "outputhandler ran\n")
    message = _ends_with("raise SystemExit('bad input')", tmp_path)
    assert message.returncode == 1 and "bad input" in message.stderr
    crash = _ends_with("raise RuntimeError('boom')", tmp_path)
    assert crash.returncode == 1 and "RuntimeError: boom" in crash.stderr
    assert crash.stdout == "outputhandler ran\n"
    interrupted = _ends_with("raise KeyboardInterrupt", tmp_path)
    assert interrupted.returncode == -signal.SIGINT


def test_a_scan_through_the_console_entry_prints_its_whole_report(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "scan", str(ROOT / "fixtures"), "--no-cache"]
        + ["--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(tmp_path),
        timeout=300,
    )
    assert run.returncode == 1, run.stderr
    assert len(json.loads(run.stdout)["findings"]) > 500  # the whole report, parsed
