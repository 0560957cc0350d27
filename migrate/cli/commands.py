"""The `migrate` command line: scan | apply | rules | explain | verify | convert."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperArgument, TyperGroup

from migrate import __version__
from migrate.cli.scan_command import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    _sigterm_as_interrupt,
    build_options,
    error_verdict,
    progress_bar,
    run_scan,
    shared_flags,
    use_color,
    write_output,
)
from migrate.printable import printable


class _PlainArgument(TyperArgument):
    """An argument shown as `PATHS...` in usage and help, never as `{paths}... <list[str]>`."""

    def display_type_rich(self, ctx):
        return None

    def _rich_display_name(self) -> str:
        return f"{self.metavar}{'...' if self.nargs != 1 else ''}"

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"


# click's UsageError, whichever click typer runs on (recent typers carry their own copy).
_UsageError = typer.BadParameter.__mro__[1]


class _UsageLine(_UsageError):
    """A command's usage error in one line, as every other error (click prints the usage and
    a hint first, four lines in all)."""

    def show(self, file=None) -> None:
        typer.echo(f"error: {self.format_message()}", err=True)


class _PlainHelpGroup(TyperGroup):
    """Help as `--select CODES`: a placeholder names what to type, a flag shows none (typer
    would print the Python type, `--exit-zero <bool>`, which reads as "takes a value")."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        for command in self.commands.values():
            for param in command.params:
                if isinstance(param, TyperArgument):
                    param.__class__ = _PlainArgument
                    param.metavar = param.metavar or (param.name or "arg").upper()
                elif param.metavar is None and not getattr(param, "is_flag", False):
                    # verify's options: the last word of the name (input_shape -> SHAPE).
                    param.metavar = (param.name or "value").split("_")[-1].upper()

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except _UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # prints the help, as asked
                raise
            raise _UsageLine(exc.format_message(), exc.ctx) from None

    def format_commands(self, ctx, formatter) -> None:
        """The command list with each command's whole first sentence (click cuts it at the
        terminal width with "..."); the help formatter wraps it instead."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    name="migrate",
    help="Move PyTorch code off TorchScript (to torch.export / ExecuTorch) and off CUDA 12.8.",
    cls=_PlainHelpGroup,
    # Plain help wraps at the terminal width; rich's boxed table left options' help a
    # 20-column strip at 80 columns.
    rich_markup_mode=None,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


# Options shared by scan and apply.
PathsArg = Annotated[
    list[str], typer.Argument(metavar="PATHS", help="Files or folders to look at.")
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--select",
        metavar="CODES",
        help="Only these rules or prefixes (MIG1, MIG301); comma-separated.",
    ),
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option("--ignore", metavar="CODES", help="Skip these rules or prefixes."),
]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option("--exclude", metavar="GLOB", help="Glob of paths to skip (repeatable)."),
]
CudaOpt = Annotated[
    str | None,
    typer.Option(
        "--cuda", metavar="VERSION", help="CUDA target for MIG3xx fixes: 13.0 (default) or 13.2."
    ),
]
IntentOpt = Annotated[
    str | None,
    typer.Option(
        "--intent",
        metavar="INTENT",
        help="drop (TorchScript goes entirely) | keep-scriptable (only what warns "
        "changes). Default: [tool.migrate] intent, else none: each site is decided alone.",
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
        help="Worker processes. Default (and 0): one per CPU. The scan starts in this process "
        "and hands the rest to the pool only after 256 kB of parsed source, when as much "
        "again is still to come, so most repositories scan in one process; 1: never a pool.",
    ),
]
ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config", metavar="FILE", help="Read the tool.migrate table from this pyproject.toml."
    ),
]
IsolatedOpt = Annotated[
    bool, typer.Option("--isolated", help="Ignore pyproject.toml configuration.")
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]
EvidenceOpt = Annotated[  # what `migrate record` saw (docs/evidence.md)
    Path | None,
    typer.Option(
        "--evidence",
        metavar="FILE",
        help="What `migrate record` saw (default: .migrate/evidence.json in the scanned root).",
    ),
]
CompareIntentsOpt = Annotated[
    bool,
    typer.Option(
        "--compare-intents",
        help="Without --intent: also count the fixes each intent would write (analyses the "
        "TorchScript files again per intent).",
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache", help="Do not read or write the result cache (~/.cache/torchscript-migrate)."
    ),
]


@contextmanager
def _errors(debug: bool):
    try:
        yield
    except typer.Exit:
        raise
    except BaseException as exc:
        verdict = error_verdict(exc, debug)
        if verdict is None:
            raise
        code, line = verdict
        typer.echo(line, err=True)
        raise typer.Exit(code) from None


@app.command()
def scan(
    paths: PathsArg,
    format: Annotated[
        str | None,
        typer.Option("--format", "-f", metavar="FORMAT", help="text | json | sarif | github"),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the report to a file."),
    ] = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are findings.")
    ] = False,
    cuda: CudaOpt = None,
    intent: IntentOpt = None,
    compare_intents: CompareIntentsOpt = False,
    jobs: JobsOpt = None,
    config_file: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
    evidence: EvidenceOpt = None,
) -> None:
    """Report every TorchScript use and CUDA 12.8 assumption under PATHS."""
    code = run_scan(**locals())  # the same parameters, by name
    if code != EXIT_CLEAN:
        raise typer.Exit(code)


@app.command()
def apply(
    paths: PathsArg,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "--diff", help="Print the diff; write nothing.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Write the migrated copy of the tree here; keep the original.",
        ),
    ] = None,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="Also rewrite files with uncommitted changes.")
    ] = False,
    unsafe_fixes: Annotated[
        bool | None,
        typer.Option(
            "--unsafe-fixes/--no-unsafe-fixes",
            help="Also write fixes that can change behaviour (each rule's fix safety says how).",
            show_default=False,
        ),
    ] = None,
    test: Annotated[
        str | None,
        typer.Option(
            "--test",
            metavar="CMD",
            help="Keep only the fixes this test command still passes (run in a scratch copy).",
        ),
    ] = None,
    test_from_config: Annotated[
        bool,
        typer.Option(
            "--test-from-config",
            help="Like --test, with the command of [tool.migrate] test (printed before it runs).",
        ),
    ] = False,
    test_format: Annotated[
        str,
        typer.Option(
            "--test-format",
            metavar="FORMAT",
            help="auto (per test with pytest, else the exit code) | junit | exit-code.",
        ),
    ] = "auto",
    test_timeout: Annotated[
        float | None,
        typer.Option(
            "--test-timeout", metavar="SECONDS", help="Stop a test run after this long (a failure)."
        ),
    ] = None,
    test_retries: Annotated[
        int,
        typer.Option(
            "--test-retries",
            metavar="N",
            help="Run the baseline N more times; tests that flip are flaky and ignored.",
        ),
    ] = 0,
    test_select: Annotated[
        str,
        typer.Option(
            "--test-select",
            metavar="WHICH",
            help="all | imports (each trial runs the test files that import what changed).",
        ),
    ] = "all",
    test_report: Annotated[
        Path | None,
        typer.Option("--test-report", metavar="FILE", help="Write the --test report as JSON."),
    ] = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    cuda: CudaOpt = None,
    intent: IntentOpt = None,
    compare_intents: CompareIntentsOpt = False,
    jobs: JobsOpt = None,
    config_file: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
    evidence: EvidenceOpt = None,
    # The migrate-fix hook's report (.pre-commit-hooks.yaml; migrate/cli/precommit.py).
    pre_commit: Annotated[
        bool,
        typer.Option(
            "--pre-commit",
            help="Report as the migrate-fix pre-commit hook: only what is left (only how many "
            "when the migrate-scan hook runs too).",
        ),
    ] = False,
) -> None:
    """Rewrite what can be rewritten; --dry-run shows the diff instead."""
    from migrate.pipeline.apply import copy_tree, out_targets, run_apply
    from migrate.report.apply_text import render_apply, unprotected_note

    with _errors(debug), _sigterm_as_interrupt():
        if test_report is not None:
            from migrate.safe_write import check_output

            check_output(test_report)  # before any work: never written through a symlink
        options, config = build_options(paths, **shared_flags(locals()))
        unsafe = config.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
        targets = list(paths)
        if out is not None:
            out_targets(paths, out)  # refuses --out inside the tree or a name collision
            if out.is_dir() and any(out.iterdir()):
                raise ValueError(f"--out {out}: folder exists and is not empty")
            if not dry_run:  # a dry run shows the diff of the tree itself and writes nothing
                targets = [str(p) for p in copy_tree(paths, out)]
                allow_dirty = True
        gate = _test_gate(
            _test_command(test, test_from_config, config),
            test_format,
            test_timeout or config.test_timeout,
            test_retries,
            test_select,
            targets,
            out,
        )
        with progress_bar(gate is None, "migrating") as progress:
            result = run_apply(
                targets,
                options,
                dry_run=dry_run,
                allow_dirty=allow_dirty,
                unsafe_fixes=unsafe,
                progress=progress,
                test_gate=gate,
            )
        for note in result.scan.skipped:
            typer.echo(printable(f"{note.path}: {note.message}; skipped"), err=True)
        hook = None
        if pre_commit:
            from migrate.cli.precommit import fix_hook_form

            hook = fix_hook_form()
        sys.stdout.write(render_apply(result, dry_run=dry_run, color=use_color(), hook=hook))
        if result.unprotected and out is None:
            typer.echo(unprotected_note(result.unprotected, len(result.written)), err=True)
        if result.test_report is not None:
            _report_gate(result.test_report, test_report)
    if result.errors or result.scan.read_nothing:
        raise typer.Exit(EXIT_ERROR)
    # One rule for every command (docs/exit-codes.md): 1 while findings remain in the tree;
    # a dry run writes nothing, so what it would fix remains too.
    if result.remaining or (dry_run and result.changed):
        raise typer.Exit(EXIT_FINDINGS)


def _test_command(given: str | None, from_config: bool, config) -> str | None:
    """The command `apply` tests with. A scanned repository's `[tool.migrate] test` is a shell
    command from whoever wrote the tree: it runs only when asked for by name, on this command
    line, and is printed first."""
    where = f"{config.path} [tool.migrate] test"
    if given is not None and not given.strip():
        raise ValueError("--test: no command given (--test CMD, or --test-from-config)")
    if from_config:
        if given is not None:
            raise ValueError("give --test CMD or --test-from-config, not both")
        if config.test is None:
            found = (
                f"no `test` in {config.path} [tool.migrate]"
                if config.path
                else "no pyproject.toml with a [tool.migrate] table (--config FILE names one)"
            )
            raise ValueError(f"--test-from-config: {found}")
        typer.echo(f"test: running `{config.test}` (from {where})", err=True)
        return config.test
    if given is None and config.test is not None:
        typer.echo(f"note: {where} not run (pass --test-from-config to run it)", err=True)
    return given


def _test_gate(command, fmt, timeout, retries, select, targets, out):
    """apply --test: the gate run_apply calls with the fix units, or None."""
    if not command:
        return None
    from migrate.config import MAX_TEST_TIMEOUT
    from migrate.fix.gate_workspace import repository_root
    from migrate.fix.test_command import FORMATS, SELECTS, TestSettings
    from migrate.fix.testgate import Gate

    if out is not None:
        raise ValueError("--test cannot be combined with --out; run it on the tree itself")
    if fmt not in FORMATS:
        raise ValueError(f"--test-format must be one of {', '.join(FORMATS)}, not {fmt}")
    if select not in SELECTS:
        raise ValueError(f"--test-select must be one of {', '.join(SELECTS)}, not {select}")
    if timeout is not None and not 0 < timeout <= MAX_TEST_TIMEOUT:  # NaN fails both
        raise ValueError(
            f"--test-timeout must be above 0 and at most {MAX_TEST_TIMEOUT:g} seconds, "
            f"not {timeout:g}"
        )
    if retries < 0:
        raise ValueError(f"--test-retries must be 0 or more, not {retries}")
    settings = TestSettings(command, fmt, timeout, retries, select)
    gate = Gate(settings, repository_root(targets), lambda m: typer.echo(f"test: {m}", err=True))
    return gate.run


def _report_gate(report, json_path: Path | None) -> None:
    import json

    from migrate.fix.gate_report import render_text

    sys.stdout.write(render_text(report))
    if json_path is not None:
        write_output(json_path, json.dumps(report.to_dict(), indent=2) + "\n", "--test-report")


@app.command("rules")
def list_rules(
    format: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
) -> None:
    """List every rule: code, name, fix kind and title."""
    import json

    from migrate.registry import all_rules

    if format not in ("text", "json"):
        raise fail(f"--format must be text or json, not {format}")
    rules = all_rules().values()
    if format == "json":
        doc = [
            {
                "code": r.code,
                "name": r.name,
                "fix": r.fix.value,
                "applicability": r.applicability.value if r.fix.value == "auto" else None,
                "title": r.title,
            }
            for r in rules
        ]
        typer.echo(json.dumps(doc, indent=2))
        return
    width = max(len(r.name) for r in rules)
    for r in rules:
        typer.echo(f"{r.code}  {r.name:<{width}}  {r.fix_label:<15}  {r.title}")


@app.command()
def explain(code: Annotated[str, typer.Argument(help="A rule code (MIG101) or name.")]) -> None:
    """Print a rule's documentation."""
    from migrate.cli.docs import render_rule
    from migrate.registry import all_rules

    rules = all_rules()
    key = code.upper()
    rule = rules.get(key) or next((r for r in rules.values() if r.name == code), None)
    if rule is None:
        raise fail(f"unknown rule {code} (see `migrate rules`)")
    typer.echo(render_rule(rule))


@app.command()
def report(
    path: Annotated[str, typer.Argument(help="The repository (or folder) to plan for.")],
    format: Annotated[str, typer.Option("--format", "-f", help="markdown | html")] = "markdown",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the plan to a file."),
    ] = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    cuda: CudaOpt = None,
    intent: IntentOpt = None,
    jobs: JobsOpt = None,
    config_file: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    test_report: Annotated[
        Path | None,
        typer.Option(
            "--test-report",
            metavar="FILE",
            help="Add what `apply --test` kept and reverted (its JSON) to the HTML plan.",
        ),
    ] = None,
    verify_results: Annotated[
        Path | None,
        typer.Option(
            "--verify-results",
            metavar="FILE",
            help="Add a model-registry section from a convert/verify batch's results.jsonl.",
        ),
    ] = None,
    debug: DebugOpt = False,
) -> None:
    """A migration plan for a repository: counts, automatic fixes, review items, effort."""
    from migrate.report.batch_results import load_batch_results
    from migrate.report.plan import build_plan
    from migrate.report.plan_html import render_html
    from migrate.report.plan_markdown import render_markdown

    renderers = {"markdown": render_markdown, "html": render_html}

    with _errors(debug):
        if format not in renderers:
            raise ValueError(f"--format must be one of {', '.join(renderers)}, not {format}")
        if not os.path.exists(path):
            raise ValueError(f"{path}: no such file or directory")
        if output:  # before the scan: a symlink there is refused, never written through
            from migrate.safe_write import check_output

            check_output(output)
        options, _ = build_options([path], **shared_flags(locals()))
        batch_results = load_batch_results(verify_results) if verify_results is not None else None
        with progress_bar(True, "planning") as progress:
            plan = build_plan(path, options, progress)
        if test_report is not None:
            from migrate.fix.gate_report import load_report

            if format != "html":
                raise ValueError("--test-report is shown by --format html only")

            plan.tests = load_report(test_report)
        plan.batch_results = batch_results
        rendered = renderers[format](plan)
        if output:
            write_output(output, rendered)
            # Absolute: `migrate demo` and scripts run it from another folder.
            typer.echo(f"wrote {output.absolute()}", err=True)
        else:
            sys.stdout.write(rendered)
        # The plan lists them too, but a script reading the exit code must see them.
        for err in plan.errors:
            typer.echo(printable(f"error: {err.path}: {err.message}"), err=True)
    if plan.errors:
        raise typer.Exit(EXIT_ERROR)


@app.command(hidden=True)  # a maintainer's command: not in `migrate --help`
def docs(
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 when a generated file is stale.")
    ] = False,
    root: Annotated[
        Path | None,
        typer.Option("--root", help="Checkout to write docs/rules.md (and README.md) in."),
    ] = None,
) -> None:
    """Render docs/rules.md (and a README's rules table, between its markers) from
    rules/*.yaml."""
    from migrate.cli.docs import default_root, generated_files, write_docs

    files = generated_files(root or default_root())
    stale = [f for f in files if f.stale]
    if check:
        for f in stale:
            typer.echo(f"stale: {f.path} (run `migrate docs`)", err=True)
        raise typer.Exit(EXIT_FINDINGS if stale else EXIT_CLEAN)
    for path in write_docs(files):
        typer.echo(f"wrote {path}")
    if not stale:
        typer.echo("docs are up to date")


@app.command()
def demo(
    workdir: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="DIR",
            help="Copy the sample into this folder (default: a new temp folder).",
        ),
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Run `migrate verify` when installed.")
    ] = True,
    sample: Annotated[
        Path | None,
        typer.Option("--sample", metavar="DIR", help="Another repository to run the story on."),
    ] = None,
) -> None:
    """Run scan, report, apply and verify on a copy of the bundled sample repository."""
    from migrate.cli.demo import run_demo

    raise typer.Exit(run_demo(app, workdir, verify=verify, echo=typer.echo, sample=sample))


def _register_verify() -> None:
    """verify/convert live in migrate.verify, which imports torch lazily inside the commands."""
    try:
        from migrate.cli import verify_commands
    except ImportError:  # pragma: no cover - the verify package is part of the wheel
        return
    for name in ("verify", "convert"):
        command = getattr(verify_commands, name, None)
        if command is not None:
            app.command(name)(command)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"torchscript-migrate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Show version."),
    ] = False,
) -> None:
    pass


_register_verify()

# `migrate record -- CMD`: its command lives in migrate/record/command.py.
from migrate.record.command import record as _record  # noqa: E402

app.command("record", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    _record
)
