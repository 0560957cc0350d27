"""Apply the edits that findings carry to one file's text, round after round, with the
imports fixed up; what apply writes goes through migrate.safe_write.

Nothing is lost: output that does not parse is never written (`validate`), and the file's
encoding, BOM and line endings are kept (`source_text`).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from migrate.analysis.parsed import tree_of
from migrate.checks.base import source_lines
from migrate.findings import Applicability, Finding, ImportSpec
from migrate.fix.edits import apply_edits, take_units
from migrate.fix.imports import fix_imports
from migrate.fix.source_text import keep_endings
from migrate.plan.units import WRITABLE, FixUnit, Held, fix_units

MAX_ROUNDS = 5


@dataclass
class FileFix:
    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    error: str | None = None
    # BLAKE2 of the bytes `original` was decoded from: apply writes only over those bytes.
    source_digest: bytes | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.fixed != self.original

    def diff(self) -> str:
        if not self.changed:
            return ""
        return "".join(
            difflib.unified_diff(
                source_lines(self.original),
                source_lines(self.fixed),
                fromfile=f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


def _import_specs(findings: Iterable[Finding]) -> list[str]:
    specs: list[str] = []
    for f in findings:
        for spec in f.autofix.imports if f.autofix else ():
            statement = spec.statement() if isinstance(spec, ImportSpec) else spec
            if statement not in specs:
                specs.append(statement)
    return specs


def validate(path: str, text: str) -> str | None:
    """None if `text` is well-formed for its file kind, else the reason."""
    if path.endswith((".py", ".pyi")):
        try:
            tree_of(text, path)
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
    elif path.endswith(".toml"):
        import tomllib

        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            return str(exc)
    elif path.endswith((".yml", ".yaml")):
        import yaml

        try:
            list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            return str(exc).splitlines()[0]
    return None


def fix_rounds(
    path: str,
    text: str,
    analyze: Callable[[str], list[Finding]],
    newline: str = "\n",
    *,
    allowed: Collection[Applicability] = WRITABLE,
    findings: list[Finding] | None = None,
    replan: Callable[[list[Finding]], list[Finding]] | None = None,
) -> FileFix:
    """Run analyze/fix rounds on one file's text until nothing writable is left (tidy.fix_source
    then repairs the layout: what `migrate apply` writes).

    `findings` are the first round's (the planned scan's); later rounds analyse the new text
    and pass it through `replan`, so that a fix the repository planner held back stays held.
    """
    result = FileFix(path, text, text)
    current = text
    was_valid = validate(path, text) is None
    applied: list[Finding] = []
    findings = analyze(current) if findings is None else findings
    held: list[Held] = []
    for _ in range(MAX_ROUNDS):
        units, held = fix_units(findings, allowed)
        if not units:
            break
        taken, edits = take_units(units)
        new = apply_edits(current, edits, newline)
        if path.endswith((".py", ".pyi")):
            try:
                new = fix_imports(fill_emptied_blocks(new, newline), _import_specs(taken))
            except SyntaxError as exc:
                result.error = (
                    f"fix produced invalid code (line {exc.lineno}: {exc.msg}); left untouched"
                )
                return result
        problem = validate(path, new)
        if problem and was_valid:
            result.error = f"fix produced invalid code ({problem}); left untouched"
            return result
        if new == current:
            break
        applied.extend(taken)
        current = new
        findings = analyze(current)
        if replan is not None:
            findings = replan(findings)
    result.fixed = keep_endings(text, current) if current != text else text
    result.applied = applied
    result.remaining = findings
    result.held = held
    return result


_EMPTIED = re.compile(r"expected an indented block after .* on line (\d+)")


def fill_emptied_blocks(text: str, newline: str = "\n") -> str:
    """A block whose every statement a fix removed (two executor switches under an `if`,
    each dropped by its own finding) gets `pass`: each fix alone left a statement there."""
    for _ in range(50):
        try:
            ast.parse(text)
            return text
        except SyntaxError as exc:
            found = _EMPTIED.match(exc.msg or "")
            if found is None:
                return text
            lines = text.split(newline)
            header = int(found.group(1)) - 1
            end = header
            while end < len(lines) and not _ends_header(lines[end]):
                end += 1
            if end >= len(lines):
                return text
            indent = lines[header][: len(lines[header]) - len(lines[header].lstrip())]
            lines.insert(end + 1, f"{indent}    pass")
            text = newline.join(lines)
    return text


def _ends_header(line: str) -> bool:
    code = line.split("#", 1)[0].rstrip()
    return code.endswith(":")


def apply_units(path: str, text: str, units: Iterable[FixUnit], newline: str = "\n") -> str:
    """The file's text with exactly these units written (one round, no re-analysis), or
    ValueError naming why it cannot be (overlapping edits, invalid code): `apply --test`
    builds each trial's files from a subset of the units this way."""
    units = [u.view(path) for u in units]  # a unit spanning files: its edits in this one
    if not units:
        return text
    taken, edits = take_units(units)
    if len(taken) != sum(len(u.findings) for u in units):
        raise ValueError("two of the fixes overlap; they cannot be written together")
    new = apply_edits(text, edits, newline)
    if path.endswith((".py", ".pyi")):
        try:
            new = fix_imports(fill_emptied_blocks(new, newline), _import_specs(taken))
        except SyntaxError as exc:
            raise ValueError(f"fix produced invalid code (line {exc.lineno}: {exc.msg})") from None
    problem = validate(path, new)
    if problem and validate(path, text) is None:
        raise ValueError(f"fix produced invalid code ({problem})")
    return keep_endings(text, new)
