"""`migrate scan` without typer, and the command-line helpers every command shares.

The pre-commit hook runs `migrate scan FILE...` on every commit: typer and click are a sixth
of such a run's start-up, so migrate.cli.entry sends that command line here directly, and the
typer command in migrate.cli.commands calls the same `run_scan` for every other spelling.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from migrate.printable import printable

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
MAX_JOBS = 1024  # --jobs: worker processes


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that a file being written is cleaned up."""


@contextmanager
def _sigterm_as_interrupt():
    import signal

    def _raise(signum, frame):
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread (an embedding test runner): leave it alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def error_verdict(exc: BaseException, debug: bool) -> tuple[int, str] | None:
    """How a command ends on an exception: (exit code, its one line for stderr), or None to
    let it propagate (a traceback with --debug)."""
    from migrate.config import ConfigError
    from migrate.scan.discover import UsageError

    if isinstance(exc, Terminated):
        return 143, "terminated"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    if debug or not isinstance(exc, Exception):
        return None
    # The message may quote a path or a value from the tree: escaped for the terminal.
    if isinstance(exc, (UsageError, ConfigError, ValueError)):
        return EXIT_ERROR, printable(f"error: {exc}")
    return EXIT_ERROR, printable(
        f"error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"
    )


def split_codes(values: list[str] | None, flag: str = "--select") -> list[str] | None:
    """Codes of a repeatable, comma-separated flag; None when it was not given. Given but
    naming nothing (`--select ''`, an unset shell variable) is an error: it must not mean
    "every rule"."""
    if not values:
        return None
    codes = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if not codes:
        raise ValueError(f"{flag}: no rule given (name rules or prefixes: {flag} MIG1,MIG301)")
    return codes


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


# The options every scanning command takes, by parameter name (see `shared_flags`).
SHARED_FLAGS = (
    "select",
    "ignore",
    "exclude",
    "cuda",
    "jobs",
    "config_file",
    "isolated",
    "no_cache",
    "evidence",
    "intent",
    "compare_intents",
)


def shared_flags(values: dict) -> dict:
    """The shared options out of a command's parameters (its `locals()`), for
    `build_options`: each command declares them, one function reads them."""
    return {name: values[name] for name in SHARED_FLAGS if name in values}


def build_options(
    paths,
    *,
    select=None,
    ignore=None,
    exclude=None,
    cuda=None,
    jobs=None,
    config_file=None,
    isolated=False,
    no_cache=False,
    evidence=None,
    intent=None,
    compare_intents=False,
):
    from migrate.config import CUDA_TARGETS, INTENTS, resolve_config
    from migrate.registry import unknown_codes
    from migrate.scan.engine import ScanOptions

    if jobs is not None and jobs < 0:
        raise ValueError(f"--jobs must be 0 (one per CPU) or more, not {jobs}")
    if jobs is not None and jobs > MAX_JOBS:
        raise ValueError(f"--jobs must be at most {MAX_JOBS}, not {jobs}")
    config = resolve_config(paths, config_file, isolated)
    select_list = split_codes(select) if select else config.select
    ignore_list = (split_codes(ignore, "--ignore") or []) + list(config.ignore)
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
        max_file_size=config.max_file_size,
        evidence=_evidence_file(paths, evidence),
        compare_intents=compare_intents,
    )
    return options, config


def print_problems(result, echo) -> None:
    """The one line per input that was skipped or could not be read (ScanResult)."""
    for note in result.skipped:
        echo(printable(f"{note.path}: {note.message}; skipped"))
    for err in result.errors:
        echo(printable(f"error: {err.path}: {err.message}"))


def _evidence_file(paths, evidence) -> str | None:
    """--evidence FILE, else the scanned tree's own `.migrate/evidence.json` when this user's
    `migrate record` wrote it (migrate.record.default_path); a committed one gets a note."""
    if evidence is not None:
        if not Path(evidence).exists():
            raise ValueError(f"--evidence {evidence}: no such file")
        if not Path(evidence).is_file():
            raise ValueError(f"--evidence {evidence}: not a regular file")
        return str(Path(evidence).resolve())
    if not any(Path(p).is_dir() for p in paths[:1]):
        return None  # a scan of files (the pre-commit hook's) reads no evidence
    from migrate.record import default_path

    found, note = default_path(list(paths))
    if note:
        _stderr_line(printable(note))
    return str(found) if found else None


def write_output(output: Path, text: str, flag: str = "--output") -> None:
    """A report written whole (a temp file renamed over it), never through a symlink."""
    from migrate.safe_write import write_atomic

    try:
        write_atomic(output, text.encode("utf-8"))
    except OSError as exc:
        raise ValueError(f"{flag} {output}: {os_reason(exc)}") from None


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
    evidence: Path | None = None,
    intent: str | None = None,
    compare_intents: bool = False,
) -> int:
    """`migrate scan`: write the report, answer the exit code."""
    from migrate.pipeline.scan import PlannedScanner
    from migrate.plan.fixplan import attach_unlocks
    from migrate.report import FORMATS

    try:
        if output:  # before the scan: a symlink there is refused, never written through
            from migrate.safe_write import check_output

            check_output(output)
        options, config = build_options(paths, **shared_flags(locals()))
        fmt = format or config.format
        if fmt not in FORMATS:
            raise ValueError(f"--format must be one of {', '.join(FORMATS)}, not {fmt}")
        with progress_bar(True, "scanning") as progress, debug_env(debug):
            scanner = PlannedScanner(options, progress)
            result = scanner.scan(paths)
            attach_unlocks(scanner, result)
        rendered = FORMATS[fmt](result, color=output is None and use_color())
        # One line per unreadable input, on stderr whatever the format.
        print_problems(result, _stderr_line)
        if result.read_nothing and fmt == "text" and not output:
            rendered = ""  # "no findings in 0 files" under those lines says nothing more
        if output:
            write_output(output, rendered)
        else:
            sys.stdout.write(rendered)
    except BaseException as exc:
        verdict = error_verdict(exc, debug)
        if verdict is None:
            raise
        code, line = verdict
        _stderr_line(line)
        return code
    if result.errors or result.read_nothing:
        return EXIT_ERROR
    if result.findings and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
