"""GitHub Actions workflow commands: one ::error/::warning line per finding."""

from __future__ import annotations

from migrate.findings import FixKind, ScanResult
from migrate.printable import printable


def _escape_data(value: str) -> str:
    """A workflow command's text: `%`, CR and LF as the runner reads them, then every other
    control character escaped (the log viewer runs terminal escapes)."""
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return printable(value)


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def render(result: ScanResult, color: bool = False) -> str:
    lines = []
    for f in result.findings:
        level = "warning" if f.fix is FixKind.MANUAL else "error"
        props = ",".join(
            [
                f"file={_escape_property(f.path)}",
                f"line={f.line}",
                f"col={f.column}",
                f"endLine={f.end_line}",
                f"endColumn={f.end_column}",
                f"title={_escape_property(f'{f.rule} ({f.fix.value} fix)')}",
            ]
        )
        lines.append(f"::{level} {props}::{_escape_data(f'{f.rule} {f.message}')}")
    for e in result.errors:
        lines.append(f"::error file={_escape_property(e.path)}::{_escape_data(e.message)}")
    return "\n".join(lines) + ("\n" if lines else "")
