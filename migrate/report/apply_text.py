"""What `migrate apply` prints: diffs (dry run), what was fixed, what is left and why."""

from __future__ import annotations

import io
from collections import Counter
from itertools import groupby

from rich.console import Console
from rich.text import Text

from migrate.findings import FixKind
from migrate.printable import printable, printable_lines
from migrate.report.causes import cause_line, shared_causes
from migrate.report.intent import evidence_line, intent_line, shown


def _diff_text(diff: str) -> Text:
    """The diff coloured; its file names and source lines escaped for the terminal."""
    text = Text()
    for line in printable_lines(diff).splitlines(keepends=True):
        style = None
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        text.append(line, style=style)
    return text


def render_apply(result, dry_run: bool, color: bool = False, hook: str | None = None) -> str:
    """apply's text report. `hook` is the pre-commit fix hook's form (migrate.cli.precommit):
    "alone" prints only what it could not fix (pre-commit says which files it changed),
    "with-scan" only how many are left, since the migrate-scan hook lists each of them."""
    buffer = io.StringIO()
    out = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=10_000,
        highlight=False,
        emoji=False,  # `file.py:100:5` is a location, not the :100: emoji
        markup=False,
        soft_wrap=True,
    )
    if dry_run:
        for fix in result.changed:
            out.print(_diff_text(fix.diff()), end="")
    for err in result.errors:
        out.print(Text(printable(f"error: {err.path}: {err.message}"), style="red"))
    for note in result.notes:
        out.print(Text(printable(f"note: {note.path}: {note.message}"), style="yellow"))
    applied = result.applied
    files = len(result.changed)
    verb = "Would fix" if dry_run else "Fixed"
    if hook is None:
        out.print(
            Text(
                f"{verb} {len(applied)} finding{'s' * (len(applied) != 1)} in {files} "
                f"file{'s' * (files != 1)}.",
                style="bold green" if applied else "bold",
            )
        )
        by_rule = Counter(f.rule for f in applied)
        for code, count in sorted(by_rule.items()):
            out.print(f"  {count:>3}  {code}")
    held = {(h.finding.path, h.finding.key): h.reason for h in result.held}
    unsafe = sum(1 for h in result.held if "--unsafe-fixes" in h.reason)
    if unsafe:
        out.print(
            Text(
                f"{unsafe} unsafe fix{'es' * (unsafe != 1)} not written: they can change "
                "behaviour (each says how); review them and pass --unsafe-fixes to write them.",
                style="yellow",
            )
        )
    remaining = result.remaining
    if remaining and hook == "with-scan":
        n = len(remaining)
        out.print(
            Text(
                f"{n} finding{'s' * (n != 1)} left for review: the migrate-scan hook lists "
                f"{'them' if n != 1 else 'it'}.",
                style="bold yellow",
            )
        )
    elif remaining:
        out.print(
            Text(
                f"{len(remaining)} left for review (read the rule with `migrate explain CODE`):",
                style="bold yellow",
            )
        )
        for _, group in groupby(remaining, key=lambda f: f.path):
            _print_remaining(out, list(group), held)
    if shown(result.scan):
        out.print(intent_line(result.scan))
    evidence = evidence_line(result.scan)
    if evidence:
        out.print(evidence)
    return buffer.getvalue()


def _print_remaining(out: Console, found: list, held: dict) -> None:
    """One file's findings left for review; a reason several share, once under them."""
    texts = []
    for f in found:
        reason = held.get((f.path, f.key))
        texts.append(printable(f"{f.message}; not applied: {reason}" if reason else f.message))
    heads, causes = shared_causes(texts)
    where = [f"{f.line}:{f.column}" for f in found]
    for i, (f, head) in enumerate(zip(found, heads, strict=True)):
        if f.fix is not FixKind.AUTO:
            kind = f.fix.value
        else:
            kind = f"auto ({f.applicability}), not applied"
        out.print(f"  {printable(f.path)}:{f.line}:{f.column} {f.rule} [{kind}] {head}")
        if i in causes:
            out.print(Text(f"    {cause_line(causes[i], where)}", style="dim"))


def unprotected_note(folders: list[str], written: int) -> str:
    """One line after apply wrote in folders no git work tree holds (it writes there as ruff
    and black do; the line says how to review first next time)."""
    where = ", ".join(folders)
    files = f"{written} file{'s' * (written != 1)}"
    return (
        f"note: {where} {'is' if len(folders) == 1 else 'are'} not in a git work tree, so no "
        f"version control protects the {files} just rewritten; run `migrate apply --dry-run` "
        "first to see the diff (or --out DIR to write a copy)"
    )
