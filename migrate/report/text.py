"""Human output: findings grouped by file, then a summary by rule and by fix kind."""

from __future__ import annotations

import io
from collections import Counter
from itertools import groupby

from rich.console import Console
from rich.text import Text

from migrate.findings import FixKind, ScanResult
from migrate.registry import all_rules

FIX_STYLE = {FixKind.AUTO: "green", FixKind.ASSISTED: "yellow", FixKind.MANUAL: "magenta"}


def _console(buffer: io.StringIO, color: bool) -> Console:
    return Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=10_000,
        highlight=False,
        soft_wrap=True,
    )


def render(result: ScanResult, color: bool = False) -> str:
    buffer = io.StringIO()
    out = _console(buffer, color)
    rules = all_rules()
    for path, group in groupby(result.findings, key=lambda f: f.path):
        out.print(Text(path, style="bold underline"))
        for f in group:
            line = Text("  ")
            line.append(f"{f.line}:{f.column}", style="dim")
            line.append(" ")
            line.append(f.rule, style="bold red")
            line.append(" ")
            kind = f"{f.fix.value}, {f.applicability}" if f.autofix else f.fix.value
            line.append(f"[{kind}]", style=FIX_STYLE[f.fix])
            line.append(f" {f.message}")
            out.print(line)
        out.print()
    render_summary(out, result, rules)
    if result.errors:
        # The error lines themselves go to stderr (migrate.cli), whatever the format.
        n = len(result.errors)
        out.print(
            Text(
                f"{n} file{'s' * (n != 1)} could not be analysed (see the error lines).",
                style="bold red",
            )
        )
    return buffer.getvalue()


def render_summary(out: Console, result: ScanResult, rules: dict) -> None:
    n = len(result.findings)
    if not n:
        out.print(
            Text(
                f"No TorchScript or CUDA 12.8 findings in {result.files_seen} "
                f"file{'s' * (result.files_seen != 1)}.",
                style="green",
            )
        )
        return
    files = len({f.path for f in result.findings})
    out.print(
        Text(
            f"Found {n} finding{'s' * (n != 1)} in {files} file{'s' * (files != 1)} "
            f"({result.files_seen} scanned).",
            style="bold",
        )
    )
    by_rule = Counter(f.rule for f in result.findings)
    width = max(len(str(c)) for c in by_rule.values())
    for code, count in sorted(by_rule.items()):
        rule = rules.get(code)
        name = rule.name if rule else ""
        out.print(f"  {count:>{width}}  {code}  {name}")
    by_fix = Counter(f.fix for f in result.findings)
    parts = Text("By fix: ")
    for i, kind in enumerate(FixKind):
        if i:
            parts.append(", ")
        parts.append(f"{by_fix.get(kind, 0)} {kind.value}", style=FIX_STYLE[kind])
    out.print(parts)
    if by_fix.get(FixKind.AUTO):
        out.print(
            Text("Run `migrate apply --dry-run` to review the automatic rewrites.", style="dim")
        )
