"""Human output: findings grouped by file, then a summary by rule and by fix kind."""

from __future__ import annotations

import io
from collections import Counter
from itertools import groupby

from migrate.findings import FixKind, ScanResult
from migrate.printable import printable
from migrate.registry import all_rules
from migrate.report.causes import cause_line, shared_causes
from migrate.report.intent import evidence_line, intent_line, shown

FIX_STYLE = {FixKind.AUTO: "green", FixKind.ASSISTED: "yellow", FixKind.MANUAL: "magenta"}

# A report line: (text, rich style or None) segments. The layout is built once; rich is
# imported only to colour it on a terminal (a third of a one-file pre-commit run's imports).
Line = list[tuple[str, str | None]]


def render(result: ScanResult, color: bool = False) -> str:
    lines = report_lines(result, all_rules())
    if not color and all(text.isprintable() for line in lines for text, _ in line):
        # What rich writes for printable text without colour; it would also strip control
        # characters and expand tabs, which a message quoting source code can hold.
        return plain_text(lines)
    return rich_text(lines, color)


def plain_text(lines: list[Line]) -> str:
    return "".join("".join(text for text, _ in line) + "\n" for line in lines)


def rich_text(lines: list[Line], color: bool) -> str:
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    out = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=10_000,
        highlight=False,
        emoji=False,  # `file.py:100:5` is a location, not the :100: emoji
        soft_wrap=True,
    )
    for line in lines:
        styled = Text()
        for text, style in line:
            styled.append(text, style=style)
        out.print(styled)
    return buffer.getvalue()


def report_lines(result: ScanResult, rules: dict) -> list[Line]:
    lines: list[Line] = []
    for path, group in groupby(result.findings, key=lambda f: f.path):
        # Names and messages come from the tree (messages quote its code): escaped.
        lines.append([(printable(path), "bold underline")])
        found = list(group)
        heads, causes = shared_causes([printable(f.message) for f in found])
        for i, (f, head) in enumerate(zip(found, heads, strict=True)):
            kind = f"{f.fix.value}, {f.applicability}" if f.autofix else f.fix.value
            lines.append(
                [
                    ("  ", None),
                    (f"{f.line}:{f.column}", "dim"),
                    (" ", None),
                    (f.rule, "bold red"),
                    (" ", None),
                    (f"[{kind}]", FIX_STYLE[f.fix]),
                    (f" {head}", None),
                ]
            )
            if i in causes:  # a reason several findings share: once, under the last of them
                where = [f"{g.line}:{g.column}" for g in found]
                lines.append([("    ", None), (cause_line(causes[i], where), "dim")])
        lines.append([])
    lines += summary_lines(result, rules)
    evidence = evidence_line(result)
    if evidence:
        lines.append([(evidence, None)])
    if result.errors:
        # The error lines themselves go to stderr (migrate.cli), whatever the format.
        n = len(result.errors)
        message = f"{n} file{'s' * (n != 1)} could not be analysed (see the error lines)."
        lines.append([(message, "bold red")])
    return lines


def summary_lines(result: ScanResult, rules: dict) -> list[Line]:
    n = len(result.findings)
    if not n:
        seen = result.files_seen
        text = f"No TorchScript or CUDA 12.8 findings in {seen} file{'s' * (seen != 1)}."
        return [[(text, "green")]]
    files = len({f.path for f in result.findings})
    head = (
        f"Found {n} finding{'s' * (n != 1)} in {files} file{'s' * (files != 1)} "
        f"({result.files_seen} scanned)."
    )
    lines: list[Line] = [[(head, "bold")]]
    by_rule = Counter(f.rule for f in result.findings)
    width = max(len(str(c)) for c in by_rule.values())
    for code, count in sorted(by_rule.items()):
        rule = rules.get(code)
        name = rule.name if rule else ""
        lines.append([(f"  {count:>{width}}  {code}  {name}", None)])
    by_fix: Line = [("By fix: ", None)]
    counts = Counter(f.fix for f in result.findings)
    for i, kind in enumerate(FixKind):
        if i:
            by_fix.append((", ", None))
        by_fix.append((f"{counts.get(kind, 0)} {kind.value}", FIX_STYLE[kind]))
    lines.append(by_fix)
    if shown(result):
        lines.append([(intent_line(result), None)])
    if counts.get(FixKind.AUTO):
        lines.append([("Run `migrate apply --dry-run` to review the automatic rewrites.", "dim")])
    return lines
