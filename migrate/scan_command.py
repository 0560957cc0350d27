"""`migrate scan` without typer, and the command-line helpers every command shares.

The pre-commit hook runs `migrate scan FILE...` on every commit: typer and click are a sixth
of such a run's start-up, so migrate.entry sends that command line here directly, and the
typer command in migrate.cli calls the same `run_scan` for every other spelling.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that a file being written is cleaned up."""


def error_verdict(exc: BaseException, debug: bool) -> tuple[int, str] | None:
    """How a command ends on an exception: (exit code, its one line for stderr), or None to
    let it propagate (a traceback with --debug)."""
    from migrate.config import ConfigError
    from migrate.discover import UsageError

    if isinstance(exc, Terminated):
        return 143, "terminated"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    if debug or not isinstance(exc, Exception):
        return None
    if isinstance(exc, (UsageError, ConfigError, ValueError)):
        return EXIT_ERROR, f"error: {exc}"
    return EXIT_ERROR, f"error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"


def split_codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def use_color(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


@contextmanager
def progress_bar(enabled: bool, label: str):
    """A rich progress bar on a TTY; nothing in CI or pipes."""
    if not enabled or os.environ.get("CI") or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    # stderr: stdout carries the report, which may be redirected while stderr is a terminal.
    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=None)
        yield lambda n: progress.advance(task, n)


@contextmanager
def debug_env(debug: bool):
    """--debug reaches the worker processes: a check that crashes on a file raises there
    instead of turning the file into an error record."""
    if not debug or os.environ.get("MIGRATE_DEBUG"):
        yield
        return
    os.environ["MIGRATE_DEBUG"] = "1"
    try:
        yield
    finally:
        del os.environ["MIGRATE_DEBUG"]


def os_reason(exc: OSError) -> str:
    return exc.strerror.lower() if exc.strerror else str(exc)


def build_options(
    paths, select, ignore, exclude, cuda, jobs, config_file, isolated, no_cache=False, intent=None
):
    from migrate.config import CUDA_TARGETS, INTENTS, resolve_config
    from migrate.engine import ScanOptions
    from migrate.registry import unknown_codes

    if jobs is not None and jobs < 0:
        raise ValueError(f"--jobs must be 0 (one per CPU) or more, not {jobs}")
    config = resolve_config(paths, config_file, isolated)
    select_list = split_codes(select) if select else config.select
    ignore_list = (split_codes(ignore) or []) + list(config.ignore)
    for flag, codes in (("--select", select_list or []), ("--ignore", ignore_list)):
        bad = unknown_codes(codes)
        if bad:
            raise ValueError(f"{flag}: unknown rule {', '.join(bad)} (see `migrate rules`)")
    cuda_target = cuda or config.cuda
    if cuda_target not in CUDA_TARGETS:
        raise ValueError(f"--cuda must be one of {', '.join(CUDA_TARGETS)}, not {cuda_target}")
    if intent is not None and intent not in INTENTS:
        raise ValueError(f"--intent must be one of {', '.join(INTENTS)}, not {intent}")
    # Config excludes are relative to the pyproject's folder, like ruff's.
    excludes = list(exclude or []) + list(config.exclude)
    options = ScanOptions(
        select=select_list,
        ignore=ignore_list,
        exclude=excludes,
        per_file_ignores=config.per_file_ignores,
        cuda=cuda_target,
        intent=intent or config.intent,
        scripted_functions=config.scripted_functions,
        jobs=jobs,
        cache=not no_cache,
    )
    return options, config


def _stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def run_scan(
    paths: list[str],
    format: str | None = None,
    output: Path | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    exclude: list[str] | None = None,
    exit_zero: bool = False,
    cuda: str | None = None,
    jobs: int | None = None,
    config_file: str | None = None,
    isolated: bool = False,
    no_cache: bool = False,
    debug: bool = False,
    intent: str | None = None,
) -> int:
    """`migrate scan`: write the report, answer the exit code."""
    from migrate.engine import Scanner
    from migrate.fixplan import attach_unlocks
    from migrate.report import FORMATS

    try:
        options, config = build_options(
            paths, select, ignore, exclude, cuda, jobs, config_file, isolated, no_cache, intent
        )
        fmt = format or config.format
        if fmt not in FORMATS:
            raise ValueError(f"--format must be one of {', '.join(FORMATS)}, not {fmt}")
        with progress_bar(True, "scanning") as progress, debug_env(debug):
            scanner = Scanner(options, progress)
            result = scanner.scan(paths)
            attach_unlocks(scanner, result)
        rendered = FORMATS[fmt](result, color=output is None and use_color())
        # One line per unreadable input, on stderr whatever the format.
        for err in result.errors:
            _stderr_line(f"error: {err.path}: {err.message}")
        if output:
            try:
                output.write_text(rendered, encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"--output {output}: {os_reason(exc)}") from None
        else:
            sys.stdout.write(rendered)
    except BaseException as exc:
        verdict = error_verdict(exc, debug)
        if verdict is None:
            raise
        code, line = verdict
        _stderr_line(line)
        return code
    if result.errors:
        return EXIT_ERROR
    if result.findings and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
