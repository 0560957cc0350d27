"""The `migrate` command's entry point.

`migrate scan PATH...` with value-less switches, what a pre-commit hook runs on every commit,
goes straight to migrate.cli.scan_command without importing typer; any other command line is
typer's to read (migrate.cli.commands), which then runs the same code.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

# The switches `migrate scan` takes without a value; tests/test_cli_fast_path.py holds this
# table to the command typer builds.
PLAIN_SCAN_FLAGS = {
    "--no-cache": "no_cache",
    "--exit-zero": "exit_zero",
    "--isolated": "isolated",
    "--debug": "debug",
    "--compare-intents": "compare_intents",
}


def plain_scan(argv: list[str]) -> tuple[list[str], dict[str, bool]] | None:
    """`migrate scan PATH...`, perhaps with value-less switches: (paths, switches), or None
    for anything typer should read."""
    if len(argv) < 2 or argv[0] != "scan":
        return None
    paths, flags = [], {}
    for arg in argv[1:]:
        if arg in PLAIN_SCAN_FLAGS:
            flags[PLAIN_SCAN_FLAGS[arg]] = True
        elif arg.startswith("-"):  # an option with a value, --help, `--`, `-`
            return None
        else:
            paths.append(arg)
    return (paths, flags) if paths else None


def main() -> None:
    from migrate.analysis.parsed import GC_THRESHOLDS

    # A command's process keeps the scan's trees to its end: rare collections throughout
    # (a scan raises them only while it runs, for whoever embeds it).
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        _run(sys.argv[1:])
    finally:
        # A scan leaves its trees and tables alive to the end (millions of objects); the
        # cycle collector's last pass over them at interpreter exit took longer than the
        # collections of the whole scan. Frozen, they are freed without being traversed.
        gc.freeze()


def console_main() -> None:
    """`main` as the process's whole life (the `migrate` script, `python -m migrate`): it
    ends through `os._exit` once the exit handlers have run and its output is flushed. The
    interpreter's teardown frees the scan's objects one by one (0.13 s after a scan of
    torch + executorch), which a process about to end need not do."""
    status = {"code": 1}  # an uncaught exception's, unless main says otherwise
    atexit.register(_leave, status)  # first registered: runs after every later handler
    try:
        main()
        status["code"] = 0
    except SystemExit as exc:
        code = exc.code
        status["code"] = 0 if code is None else code if isinstance(code, int) else 1
        raise
    except KeyboardInterrupt:
        atexit.unregister(_leave)  # the interpreter reports the signal as it exits
        raise


def _leave(status: dict[str, int]) -> None:
    code = status["code"]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what the interpreter exits with then
            code = code or 120
    os._exit(code)


def _run(argv: list[str]) -> None:
    plain = plain_scan(argv)
    if plain is None:
        from migrate.cli import commands as cli

        cli.app()
        return
    from migrate.cli.scan_command import run_scan

    paths, flags = plain
    sys.exit(run_scan(paths, **flags))
