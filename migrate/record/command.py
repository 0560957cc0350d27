"""The `migrate record` command (registered by migrate/cli/commands.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from migrate.record import EVIDENCE_NAME


def record(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="The command to run, after `--` (e.g. -- python -m pytest -q)."),
    ] = None,
    evidence: Annotated[
        Path | None,
        typer.Option(
            "--evidence",
            metavar="FILE",
            help=f"Evidence file to merge into (default: {EVIDENCE_NAME} here).",
        ),
    ] = None,
) -> None:
    """Run CMD once, recording what each TorchScript call site captured, the inputs' shapes,
    the calls of the result and the paths saved and loaded (structure only, never values)."""
    from migrate.record.merge import EvidenceError
    from migrate.record.run import record as run_record

    root = Path.cwd()
    # The default file belongs in this folder: confined to it (named relative, so that a
    # refusal names `.migrate` as the user sees it).
    out, confine = (evidence, None) if evidence is not None else (Path(EVIDENCE_NAME), Path("."))
    try:
        code = run_record(list(command or []), out, root, confine)
    except (ValueError, EvidenceError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)
