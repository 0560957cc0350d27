"""One file's analysis: its text parsed once and walked by every enabled check (a Python
file), or read by the text checks (any other file), then the findings that a `# migrate:
ignore` comment or a per-file-ignores entry silences dropped.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from migrate.analysis.astwalk import DEEP_RECURSION, recursion_limit
from migrate.analysis.parsed import parsed_file
from migrate.analysis.pyscope import ScopeTable, shared_table
from migrate.analysis.repository_facts import NO_FACTS, RepositoryFacts
from migrate.checks.base import FileContext, PythonContext, TextCheck, is_suppressed
from migrate.findings import Finding
from migrate.scan.checkset import CheckSet
from migrate.scan.reexports import reexportable
from migrate.scan.walker import Walker


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    parsed: bool = False
    exports: dict[str, str] = field(default_factory=dict)
    repo_imports: set[str] = field(default_factory=set)
    digest: bytes | None = None
    skipped: str | None = None  # not read at all (discover.Skipped): why, for a note
    import_words: set[str] = field(default_factory=set)
    facts: dict[str, set[str]] = field(default_factory=dict)  # what ctx.facts told
    remembered: set[str] = field(default_factory=set)  # checks' `remember` words, unparsed files
    # Findings judged for outcomes of the repository pass (PythonContext.variants).
    variants: dict[str, dict[frozenset[str], list[Finding]]] = field(default_factory=dict)
    # Certain that no call here is a TorchScript maker (the fix planner's capture search then
    # skips the file); False also where nobody looked.
    no_makers: bool = False
    no_sites: bool = False  # likewise for the artifact-site search


def _syntax_error(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" if exc.lineno else "unknown line"
    if exc.msg and "Missing parentheses in call to 'print'" in exc.msg:
        return f"cannot parse ({where}): Python 2 syntax is not supported"
    return f"cannot parse ({where}): {exc.msg}"


def analyze_python(
    display: str,
    text: str,
    checks: CheckSet,
    module: str = "",
    is_package: bool = False,
    exports: dict[str, str] | None = None,
    script_dir: str = "",
    repo_facts: RepositoryFacts | None = None,
    hints: Callable[[str, ast.Module, ScopeTable], tuple[bool, bool]] | None = None,
) -> FileResult:
    result = FileResult(display)
    with recursion_limit(DEEP_RECURSION):
        try:
            # Parsed once per scan: a later stage asking for this text gets this tree.
            parsed = parsed_file(display, text)
            tree = parsed.tree
        except SyntaxError as exc:
            result.error = _syntax_error(exc)
            return result
        except RecursionError:
            result.error = "cannot parse: expressions nested too deeply"
            return result
        except ValueError as exc:
            result.error = f"cannot parse: {exc}"
            return result
        try:
            table = shared_table(parsed, module, is_package, exports, script_dir)
            exported = table.module_exports()
            ctx = PythonContext(display, text, tree, table)
            ctx.repo_facts = repo_facts or NO_FACTS
            ctx.intent = checks.options.get("intent")
            Walker(ctx, checks).run()
        except RecursionError:
            result.error = "cannot analyse: expressions nested too deeply"
            return result
        try:  # hints for the fix planner's searches; without them it searches the file itself
            if hints is not None:  # (no_makers, no_sites): given by the pipeline (Scanner.hints)
                result.no_makers, result.no_sites = hints(text, tree, table)
        except RecursionError:
            result.no_makers = result.no_sites = False
    result.parsed = True
    result.exports = reexportable(exported, checks)
    result.repo_imports = table.repo_imports
    result.facts = ctx.facts.told()
    result.findings = _once(ctx.findings)
    result.variants = {
        code: {outcome: _once(found) for outcome, found in outcomes.items()}
        for code, outcomes in ctx.variants.items()
    }
    return result


def _once(findings: list[Finding]) -> list[Finding]:
    """One finding per rule and span: a check that hears of a node twice (a symbol reference
    and a node hook on the same call) still reports it once."""
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.rule, f.line, f.column, f.end_line, f.end_column, f.symbol)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def analyze_text_file(display: str, text: str, checks: list[TextCheck]) -> FileResult:
    result = FileResult(display, parsed=True)
    ctx = FileContext(display, text)
    for check in checks:
        check.check(ctx)
    result.findings = ctx.findings
    return result


def _comments(text: str, python: bool) -> dict[int, str] | list[str]:
    """Where suppression comments can be: real comments of a Python file (a `# migrate:
    ignore` inside a string does not count), whole lines of any other file."""
    lines = text.splitlines()
    if not python or "migrate:" not in text:
        return lines
    found: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.start[0]] = tok.string
    except (tokenize.TokenError, SyntaxError):
        return lines
    return found


def drop_suppressed(result: FileResult, text: str, per_file_ignores: dict[str, list[str]]) -> None:
    """Drop the findings (and their phase-1 variants) a `# migrate: ignore` comment or a
    per-file-ignores entry silences."""
    if not result.findings:
        return
    comments = _comments(text, result.path.endswith((".py", ".pyi")))
    ignored = [
        code
        for pattern, codes in per_file_ignores.items()
        if fnmatch.fnmatchcase(result.path, pattern)
        or fnmatch.fnmatchcase(result.path, f"*/{pattern}")
        for code in codes
    ]

    def heard(f: Finding) -> bool:
        if any(f.rule.startswith(c.upper()) for c in ignored):
            return False
        if isinstance(comments, dict):
            first, last = comments.get(f.line, ""), comments.get(f.end_line, "")
        else:
            first = comments[f.line - 1] if f.line - 1 < len(comments) else ""
            last = comments[f.end_line - 1] if f.end_line - 1 < len(comments) else ""
        return not (is_suppressed(first, f.rule) or is_suppressed(last, f.rule))

    result.findings = [f for f in result.findings if heard(f)]
    for outcomes in result.variants.values():
        for outcome, found in outcomes.items():
            outcomes[outcome] = [f for f in found if heard(f)]


def check_source(
    text: str, codes: Iterable[str], path: str = "example.py", options: dict | None = None
) -> list[Finding]:
    """Findings for one in-memory file (fixture tests, editors): same checks as a scan."""
    checks = CheckSet(codes, options or {"cuda": "13.0"})
    if path.endswith((".py", ".pyi")):
        result = analyze_python(path, text, checks, module=Path(path).stem)
        if result.error is None:
            text_checks = checks.text_checks_for(PurePosixPath(path))
            result.findings += analyze_text_file(path, text, text_checks).findings
    else:
        result = analyze_text_file(path, text, checks.text_checks_for(PurePosixPath(path)))
    if result.error:
        raise SyntaxError(f"{path}: {result.error}")
    drop_suppressed(result, text, {})
    return sorted(result.findings, key=lambda f: (f.line, f.column, f.rule))
