"""Check base classes and the per-file contexts they report through.

Checks never print or write: they call `ctx.report(...)`, attaching the edits that fix the
finding (ruff-style: a fix is a list of text edits plus the imports it needs).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from migrate.analysis.repository_facts import NO_FACTS, FileFacts, RepositoryFacts
from migrate.findings import Applicability, Edit, Finding, Fix, FixKind, ImportSpec

T = TypeVar("T")

if TYPE_CHECKING:
    from migrate.analysis.pyscope import Scope, ScopeTable
    from migrate.registry import Rule


__all__ = ["Edit", "Fix", "ImportSpec"]


@dataclass
class GroupFix:
    """A fix shared by several findings (a capture, its saves, its lowering).

    `members` holds (rule code, reported node) for every finding that carries it; the
    group's name is its first member's position, so it is the same in every check.
    """

    members: list[tuple[str, ast.AST]]

    @property
    def name(self) -> str:
        code, node = self.members[0]
        return f"{code}@{node.lineno}:{node.col_offset}"  # type: ignore[attr-defined]

    def member_keys(self, ctx: FileContext) -> tuple[str, ...]:
        assert isinstance(ctx, PythonContext)
        keys = []
        for code, node in self.members:
            line, col = ctx.index.position(ctx.start(node))
            keys.append(f"{code}@{line}:{col + 1}")
        return tuple(dict.fromkeys(keys))


@dataclass(frozen=True)
class TextGroupFix:
    """A group fix of a text check: its members' keys (FileContext.key); the first names it."""

    keys: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.keys[0]

    def member_keys(self, ctx: FileContext) -> tuple[str, ...]:
        return self.keys


class Check:
    """Common part of Python and text checks."""

    code: ClassVar[str] = ""

    def __init__(self, rule: Rule, options: dict | None = None) -> None:
        self.rule = rule
        self.options = options or {}


# A line of Python source ends at \r\n, \r or \n only; str.splitlines also breaks at form
# feeds, vertical tabs and other characters Python reads as whitespace inside a line.
_SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def source_lines(text: str) -> list[str]:
    """`text`'s lines as Python numbers them, each with its own line ending."""
    # The same lines then, and splitlines is six times faster than the pattern (the
    # substring tests cost a few percent of it; a character-class search, more than it).
    if not any(c in text for c in _OTHER_BREAKS):
        return text.splitlines(keepends=True)
    return _SOURCE_LINE.findall(text)


class LineIndex:
    """Offsets <-> (line, column) for a text kept with its original newlines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = source_lines(text)
        self.starts = [0, *accumulate(map(len, self.lines))]

    def offset(self, line: int, col: int) -> int:
        """line 1-based, col 0-based characters."""
        if line - 1 >= len(self.lines):
            return len(self.text)
        return self.starts[line - 1] + col

    def position(self, offset: int) -> tuple[int, int]:
        """(line 1-based, col 0-based) of an offset."""
        import bisect

        line = bisect.bisect_right(self.starts, offset) - 1
        line = min(line, max(len(self.lines) - 1, 0))
        return line + 1, offset - self.starts[line]

    def line_text(self, line: int) -> str:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1].rstrip("\r\n")
        return ""


class FileContext:
    """What every check sees of one file, and where its findings go."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.index = LineIndex(text)
        self.findings: list[Finding] = []

    @property
    def posix(self) -> PurePosixPath:
        return PurePosixPath(self.path)

    def key(self, code: str, start: int) -> str:
        """How a group fix names the finding of `code` reported at offset `start`."""
        line, col = self.index.position(start)
        return f"{code}@{line}:{col + 1}"

    def add(
        self,
        rule: Rule,
        start: int,
        end: int,
        message: str,
        *,
        symbol: str,
        fix: FixKind | None = None,
        edits: Iterable[Edit] = (),
        imports: Iterable[str | ImportSpec] = (),
        applicability: Applicability | str | None = None,
        group: GroupFix | TextGroupFix | None = None,
        **data: object,
    ) -> Finding:
        line, col = self.index.position(start)
        end_line, end_col = self.index.position(end)
        kind = fix if fix is not None else rule.fix
        autofix = None
        edits = tuple(edits)
        if edits and kind is FixKind.AUTO:
            autofix = Fix(
                edits=edits,
                imports=tuple(
                    i if isinstance(i, ImportSpec) else ImportSpec.parse(i) for i in imports
                ),
                applicability=Applicability(applicability or rule.applicability),
                group=group.name if group is not None else None,
                members=group.member_keys(self) if group is not None else (),
            )
        finding = Finding(
            path=self.path,
            line=line,
            column=col + 1,
            end_line=end_line,
            end_column=end_col + 1,
            rule=rule.code,
            symbol=symbol,
            message=message,
            fix=kind,
            data=tuple(sorted(data.items())),
            autofix=autofix,
        )
        self.findings.append(finding)
        return finding


# --------------------------------------------------------------------------- Python


@dataclass
class Reference:
    """A use of a catalogued torch symbol found by the shared walk."""

    node: ast.expr  # the Name/Attribute that resolves to `qualname`
    qualname: str
    role: str  # call | decorator | decorator_call | base | isinstance | subscript | reference
    call: ast.Call | None = None  # the call when role is call/decorator_call
    owner: ast.AST | None = None  # decorated def/class, or the subscript/isinstance call
    scope: Scope | None = None


class PythonContext(FileContext):
    def __init__(
        self,
        path: str,
        text: str,
        tree: ast.Module,
        table: ScopeTable,
    ) -> None:
        super().__init__(path, text)
        self.tree = tree
        self.table = table
        self.parents: list[ast.AST] = []  # ancestors of the node being visited
        self._byte_lines: dict[int, bytes] = {}
        # Repository pass: what this file tells the others (merged by union over the
        # repository), and the merged facts when the engine runs it again
        # (migrate.analysis.repository_facts).
        self.facts = FileFacts()
        self.repo_facts: RepositoryFacts = NO_FACTS
        # Findings a check judged in phase 1 for outcomes of the repository pass, by check
        # and outcome (PythonCheck.settle picks one instead of a second analysis).
        self.variants: dict[str, dict[frozenset[str], list[Finding]]] = {}
        self._memo: dict[str, object] = {}
        # The run's migration intent (drop | keep-scriptable | None), for the rewrites the
        # checks share (migrate.checks._export_rewrite) as their options give it to checks.
        self.intent: str | None = None

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """Per-file value computed once, for checks whose hooks run on every node."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]

    def shared(self, key: str, compute: Callable[[], T]) -> T:
        """Per-file value that depends only on the tree and its scope table (not on options,
        the intent or the repository's facts): computed once for every analysis of the file
        that reads the same table (phase 1, the repository pass, the intent comparison, the
        planner's facts). Read it, never change it."""
        analyses = self.table.analyses
        if key not in analyses:
            analyses[key] = compute()
        return analyses[key]  # type: ignore[return-value]

    # ---- positions ------------------------------------------------------------------
    def _char_col(self, line: int, byte_col: int) -> int:
        # ast columns are UTF-8 byte offsets; reports and edits use characters.
        text = self.index.line_text(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> int:
        line = node.lineno  # type: ignore[attr-defined]
        return self.index.offset(line, self._char_col(line, node.col_offset))  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        line = node.end_lineno  # type: ignore[attr-defined]
        return self.index.offset(line, self._char_col(line, node.end_col_offset))  # type: ignore[attr-defined]

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.start(node), self.end(node)

    def source(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_span(self, node: ast.AST) -> tuple[int, int]:
        """Whole lines of a statement or decorator, newline included (for deletions)."""
        first = self.index.offset(node.lineno, 0)  # type: ignore[attr-defined]
        last = self.index.offset(node.end_lineno + 1, 0)  # type: ignore[attr-defined]
        return first, last

    # ---- names ----------------------------------------------------------------------
    def qualname(self, expr: ast.AST) -> str | None:
        return self.table.qualname(expr)

    def spell(self, qualname: str, scope: Scope | None = None) -> tuple[str, tuple[str, ...]]:
        """How to write `qualname` in this file, and the import it needs if any.

        Prefers an existing `import torch as T` style binding of the top package.
        """
        top, _, rest = qualname.partition(".")
        scope = scope or self.table.module_scope
        for name, qual in self.table.module_scope.imports.items():
            if qual == top and self.table.binding(name, scope) == top:
                return (f"{name}.{rest}" if rest else name), ()
        return qualname, (f"import {top}",)

    def report(
        self,
        rule: Rule,
        node: ast.AST,
        message: str,
        *,
        symbol: str,
        fix: FixKind | None = None,
        edits: Iterable[Edit] = (),
        imports: Iterable[str | ImportSpec] = (),
        applicability: Applicability | str | None = None,
        group: GroupFix | None = None,
        **data: object,
    ) -> Finding:
        start, end = self.span(node)
        return self.add(
            rule,
            start,
            end,
            message,
            symbol=symbol,
            fix=fix,
            edits=edits,
            imports=imports,
            applicability=applicability,
            group=group,
            **data,
        )


class PythonCheck(Check):
    """A check over Python files. Symbol-driven checks only implement on_reference."""

    # Extra regexes for the text prefilter (beyond the TorchScript words every file needs).
    prefilter: ClassVar[Sequence[str]] = ()
    # When set, this check's prefilter words make a file worth parsing only where this regex
    # matches as well (a word that is common in prose, needed with a call's spelling).
    prefilter_also: ClassVar[str] = ""
    # ast node types passed to on_node during the shared walk.
    node_types: ClassVar[tuple[type, ...]] = ()
    # When set, on_node can act only on a file whose text holds one of these strings (the
    # attribute or keyword it tests for): the walk does not call it on other files' nodes.
    hook_words: ClassVar[tuple[str, ...]] = ()
    # Qualnames on_node resolves names to (beyond the catalogued symbols): the walk enters a
    # statement that holds a name bound to one of them, or to a module above one.
    hook_symbols: ClassVar[tuple[str, ...]] = ()
    # Repository pass: for files the prefilter skipped, the engine keeps the first group of
    # each match of this regex, so that `rerun` can select them without reading them again.
    # It is matched at the start of a line only (the engine anchors it: no `^` here).
    remember: ClassVar[str] = ""
    # Words one of which every match of `remember` spells (none: it is tried on every file).
    remember_words: tuple[str, ...] = ()
    # Every match of `remember` starts on a line that says `import` (an import statement):
    # it is tried on those lines alone, on its own.
    remember_imports: ClassVar[bool] = False

    def hook_spellings(self) -> tuple[str, ...] | None:
        """Regular expressions one of which matches on a line of every node on_node acts on
        (the attribute, keyword or name it tests for): the walk skips statements that lie
        wholly on other lines. None: no such spelling, the walk visits every statement. An
        empty tuple: on_node acts only on nodes holding a name that can resolve to a
        catalogued symbol or to one of `hook_symbols`."""
        return tuple(re.escape(w) for w in self.hook_words) if self.hook_words else None

    def hooked_types(self, text: str) -> tuple[type, ...]:
        """The node types whose on_node can act on a file with this text."""
        if self.hook_words and not any(word in text for word in self.hook_words):
            return ()
        return self.node_types

    def rerun(
        self,
        repo: RepositoryFacts,
        facts: FileFacts | None,
        remembered: set[str],
        module: Callable[[], str] = str,
        text: Callable[[], str] | None = None,
    ) -> bool:
        """After phase 1: analyse this file again, alone, with the repository's merged facts?

        `facts` is what the file reported in phase 1 (None when it was not parsed);
        `remembered` holds the `remember` words of a file that was not parsed; `module()`
        answers the file's dotted module name (computed on demand: most files never need it);
        `text()` its source text, read on demand (None where no file backs it).
        """
        return False

    def prepare_pass(self, repo: RepositoryFacts) -> None:
        """Build, once, what `rerun` reads of the repository's merged facts, before the pass
        starts (the workers of a pooled pass, forked after, inherit it)."""

    def settle(
        self, variants: Mapping[frozenset[str], list[Finding]], repo: RepositoryFacts
    ) -> list[Finding] | None:
        """The findings analysing the file again with the repository's merged facts (`repo`)
        would give, picked from the `variants` it judged in phase 1; None: analyse again."""
        return None

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        self.report_reference(ref, ctx, f"`{ref.qualname}` is TorchScript: {self.rule.title}")

    def report_reference(
        self, ref: Reference, ctx: PythonContext, message: str, **fix: Any
    ) -> Finding:
        """Report `ref` on its call (its name when it is not called) under the symbol it
        resolves to; `fix` holds ctx.report's fix keywords (fix, edits, applicability...)."""
        node = ref.call if ref.call is not None else ref.node
        return ctx.report(self.rule, node, message, symbol=ref.qualname, **fix)

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:  # pragma: no cover - hook
        pass

    def on_end(self, ctx: PythonContext) -> None:  # pragma: no cover - hook
        pass


# --------------------------------------------------------------------------- text files


class TextCheck(Check):
    """A line-based check over non-Python files (requirements, Dockerfiles, CI YAML...)."""

    # Cheap regex: files whose text never matches are not looked at.
    prefilter: ClassVar[str] = ""

    def applies_to(self, path: PurePosixPath) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, ctx: FileContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


# `#` comments, `//` / `/*` ones in C, C++, Java, Kotlin and Gradle files (MIG4xx), and
# `<!--` / `..` ones in Markdown and reStructuredText (MIG501).
SUPPRESS_RE = re.compile(
    r"(?:#|//|/\*|<!--|^[ \t]*\.\.)\s*migrate:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?"
)


def is_suppressed(line_text: str, code: str) -> bool:
    for match in SUPPRESS_RE.finditer(line_text):
        codes = match.group("codes")
        if codes is None:
            return True
        if any(code.startswith(c.strip().upper()) for c in codes.split(",") if c.strip()):
            return True
    return False
