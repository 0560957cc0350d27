"""The shared walk over one parsed module: finds the catalogued references (names and
attribute chains that resolve to a rule's symbol) and feeds the checks' node hooks."""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

from migrate.analysis.astwalk import children
from migrate.analysis.textsearch import as_literal, is_word_char
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.scan.checkset import CheckSet

# The node types whose children include statements: the only place the walk prunes.
_BLOCKS = frozenset(
    getattr(ast, name)
    for name in (
        "Module",
        "FunctionDef",
        "AsyncFunctionDef",
        "ClassDef",
        "If",
        "For",
        "AsyncFor",
        "While",
        "With",
        "AsyncWith",
        "Try",
        "TryStar",
        "ExceptHandler",
        "match_case",
    )
    if hasattr(ast, name)
)


class Walker:
    """One pass over a module: finds catalogued references and feeds node hooks."""

    def __init__(self, ctx: PythonContext, checks: CheckSet) -> None:
        self.ctx = ctx
        self.checks = checks
        self.table = ctx.table
        self.hooks = checks.hooks_for(ctx.text)
        self.parents = ctx.parents
        # The torch-rooted names of each scope, resolved once: most names in a module
        # (locals, self, builtins) resolve to nothing, and a reference starts with a name.
        self._bound: dict[tuple[str, int], str | None] = {}
        # Skipping a chain skips its inner nodes' hooks: only when no check hooks them.
        self._may_skip_chains = not (ast.Name in self.hooks or ast.Attribute in self.hooks)
        self._export_roots: set[str] | None = None
        # (name, what it stands for) of each import and module-level alias, resolved once for
        # both questions below.
        self._bound_imports = [
            (name, qual)
            for scope in self.table.import_scopes()
            for name in (*scope.imports, *scope.aliases)
            if (qual := self.table.binding(name, scope)) is not None
        ]
        # And the names a `from m import *` hands on, as the module resolves them (its own
        # import of the name, else m's export): spelled like imports, `torch` handed on by a
        # star made every line saying `torch` hot (a thousand lines of one test module).
        module = self.table.module_scope
        self._bound_imports += [
            (name, qual)
            for name in sorted(self.table.star_names())
            if (qual := self.table.binding(name, module)) is not None
        ]
        # Whether any name of the module can start a reference: most files parsed for a node
        # hook's word (an export call, a class) import nothing that reaches a rule's symbol,
        # and then no name or chain there needs resolving.
        self._refs = self._may_refer()
        self.hot = self._hot_spellings()

    def _hot_spellings(self) -> list[int] | None:
        """The lines a statement must touch for the walk to enter it: lines that spell a name
        that can itself be a reference to a catalogued symbol, a segment every chain from a
        bound module down to one writes out (`CheckSet.chain_words`: `jit` after
        `import torch`), or what a node hook tests for (its `hook_spellings`,
        `hook_symbols`). A statement on none of them holds neither, so the walk skips it.
        Returns the sorted line numbers, or None when every statement is visited (a hook
        without spellings, a carriage return in the text). The line index numbers lines as
        the parser does (`source_lines`), so a form feed or another character that
        str.splitlines breaks at keeps pruning on."""
        patterns: list[str] = []
        extra: list[str] = []
        for listed in self.hooks.values():
            for check in listed:
                spelled = check.hook_spellings()
                if spelled is None:
                    return None
                patterns.extend(spelled)
                extra.extend(check.hook_symbols)
        symbols = tuple(dict.fromkeys(extra))
        for name, qual in self._bound_imports:
            if self._remappable(qual):
                words = None  # a re-export can turn any chain from it into a torch name
            elif self.checks.may_reach(qual, symbols):
                words = self.checks.chain_words(qual, symbols)
            else:
                continue
            if words is None:
                # Short names (`F`, `nn`) are matched as words, not inside other words.
                patterns.append(re.escape(name) if len(name) > 2 else rf"\b{name}\b")
            else:
                patterns.extend(words)
        index = self.ctx.index
        text = self.ctx.text
        if "\r" in text or len(index.lines) != text.count("\n") + (not text.endswith("\n")):
            return None
        lines: set[int] = set()
        for pattern in dict.fromkeys(patterns):
            lines.update(_lines_matching(pattern, text, index.starts))
        return sorted(lines)

    def _may_refer(self) -> bool:
        """Whether `lookup` can find a reference in this module: a name bound by an import or
        a module-level alias can start a chain reaching an enabled check's symbol, or be
        turned into one by a re-export (a name a star import hands on among them)."""
        return any(
            self._remappable(qual) or self.checks.may_reach(qual) for _, qual in self._bound_imports
        )

    def _remappable(self, qual: str) -> bool:
        """Whether a chain from a name bound to `qual` can be turned into another name by a
        repository re-export (`ScopeTable.canonical`): never a torch name; otherwise only one
        under a package whose re-exports the scan collected."""
        exports = self.table.exports
        if not exports or qual == "torch" or qual.startswith("torch."):
            return False
        if self._export_roots is None:
            self._export_roots = {key.split(".")[0] for key in exports}
        roots = self._export_roots
        script_dir = self.table.script_dir
        return qual.split(".")[0] in roots or bool(script_dir and script_dir.split(".")[0] in roots)

    def _rooted(self, qual: str) -> bool:
        return qual.startswith("torch") or qual.split(".")[0] in self.checks.roots

    def _wanted(self, child: ast.AST) -> bool:
        """Whether the walk enters `child`: not a statement that spells nothing hot."""
        if not isinstance(child, ast.stmt):
            return True
        start = child.lineno
        for decorator in getattr(child, "decorator_list", ()):
            start = min(start, decorator.lineno)
        end = child.end_lineno or start
        lines = self.hot
        at = bisect_left(lines, start)  # type: ignore[arg-type]
        return at < len(lines) and lines[at] <= end  # type: ignore[index]

    def lookup(self, expr: ast.AST) -> tuple[str, PythonCheck] | None:
        if not self._refs or not isinstance(expr, (ast.Name, ast.Attribute)):
            return None
        qual = self.table.qualname(expr)
        if not qual or not (qual.startswith("torch") or qual.split(".")[0] in self.checks.roots):
            return None
        check = self.checks.for_symbol(qual)
        return (qual, check) if check else None

    def emit(self, expr: ast.expr, found: tuple[str, PythonCheck], role: str, **kw) -> None:
        qual, check = found
        ref = Reference(expr, qual, role, scope=self.table.scope_for(expr), **kw)
        check.on_reference(ref, self.ctx)

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        hooks = self.hooks.get(kind)
        if hooks:
            for check in hooks:
                check.on_node(node, self.ctx)
        method = _METHODS.get(kind)
        self.parents.append(node)
        if method is None:
            pruned = self.hot is not None and kind in _BLOCKS
            for child in children(node):
                if not pruned or self._wanted(child):
                    self.visit(child)
        else:
            method(self, node)
        self.parents.pop()

    def generic_visit(self, node: ast.AST, skip: Iterable[ast.AST] = ()) -> None:
        skipped = {id(s) for s in skip}
        pruned = self.hot is not None and type(node) in _BLOCKS
        for child in children(node):
            if id(child) not in skipped and (not pruned or self._wanted(child)):
                self.visit(child)

    def _reference_in(self, node: ast.AST, expr: ast.AST, role: str, **kw) -> bool:
        """Emit `expr` (the callee, the subscripted value) when it is a reference, then walk
        the rest of `node`; False when it is none."""
        found = self.lookup(expr)
        if not found:
            return False
        self.emit(expr, found, role, **kw)  # type: ignore[arg-type]
        self.generic_visit(node, skip=[expr])
        return True

    def visit_Call(self, node: ast.Call) -> None:
        if self._reference_in(node, node.func, "call", call=node):
            return
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and self.table.binding("isinstance", self.table.scope_for(node)) is None
        ):
            targets = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            skip: list[ast.AST] = []
            for target in targets:
                hit = self.lookup(target)
                if hit:
                    self.emit(target, hit, "isinstance", owner=node)
                    skip.append(target)
            if skip:
                self.visit(node.args[0])
                for target in targets:
                    if target not in skip:
                        self.visit(target)
                return
        self.generic_visit(node)

    def _visit_decorated(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        handled: list[ast.AST] = []
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            found = self.lookup(target)
            if found:
                if isinstance(dec, ast.Call):
                    self.emit(target, found, "decorator_call", call=dec, owner=node)
                    for arg in (*dec.args, *dec.keywords):
                        self.visit(arg)
                else:
                    self.emit(target, found, "decorator", owner=node)
                handled.append(dec)
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                found = self.lookup(base)
                if found:
                    self.emit(base, found, "base", owner=node)
                    handled.append(base)
        self.generic_visit(node, skip=handled)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_decorated

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not self._reference_in(node, node.value, "subscript", owner=node):
            self.generic_visit(node)

    def _visit_name(self, node: ast.Name | ast.Attribute) -> None:
        if self._inert(node):
            return
        if isinstance(node.ctx, ast.Load):
            found = self.lookup(node)
            if found:
                self.emit(node, found, "reference")
                return
        self.generic_visit(node)

    visit_Name = visit_Attribute = _visit_name

    def _inert(self, node: ast.Name | ast.Attribute) -> bool:
        """Whether no part of a name or attribute chain can be a reference (its first name
        is a local, a builtin or another package's), so the walk can skip the chain; a chain
        on a call or subscript (`f().x.y`) has only that base visited."""
        if not self._may_skip_chains:
            return False
        chain: list[ast.AST] = []
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            chain.append(base)
            base = base.value
        if isinstance(base, ast.Name):
            return not self._could_resolve(base)
        if not chain:
            return False
        # The parents a full walk would have stacked (`node` itself is already there).
        inner = chain[1:]
        self.parents.extend(inner)
        self.visit(base)
        del self.parents[len(self.parents) - len(inner) :]
        return True

    def _could_resolve(self, name: ast.Name) -> bool:
        if not self._refs:
            return False
        scope = self.table.scope_for(name)
        key = (name.id, id(scope))
        if key not in self._bound:
            self._bound[key] = self.table.binding(name.id, scope)
        qual = self._bound[key]
        if qual is None:
            return False
        return self._rooted(qual) or self._remappable(qual)

    def run(self) -> None:
        if self._refs or self.hooks:  # otherwise the walk would find and feed nothing
            self.visit(self.ctx.tree)
        for check in self.checks.python:
            check.on_end(self.ctx)


def _lines_matching(pattern: str, text: str, starts: list[int]) -> Iterator[int]:
    """The (1-based) lines on which a match of `pattern` starts: after each match, the
    search goes on from the next line's start."""
    literal = as_literal(pattern)
    word = _whole_word(pattern) if literal is None else None
    regex = re.compile(pattern) if literal is None and word is None else None

    def first(pos: int) -> int:
        if literal is not None:
            return text.find(literal, pos)
        if word is not None:  # `\bword\b` by string search, its neighbours checked
            at = text.find(word, pos)
            while at >= 0 and not _bounded(text, at, at + len(word)):
                at = text.find(word, at + 1)
            return at
        match = regex.search(text, pos)  # type: ignore[union-attr]
        return match.start() if match else -1

    at = first(0)
    while at >= 0:
        line = bisect_right(starts, at)  # the line holding offset `at`
        yield line
        if line >= len(starts):
            return
        at = first(starts[line])


_WHOLE_WORD = re.compile(r"\\b(\w+)\\b")


def _whole_word(pattern: str) -> str | None:
    """The word of a `\\bword\\b` pattern (word characters only), else None."""
    match = _WHOLE_WORD.fullmatch(pattern)
    return match.group(1) if match else None


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] (word characters) has a `\\b` on both sides."""
    return (start == 0 or not is_word_char(text[start - 1])) and (
        end == len(text) or not is_word_char(text[end])
    )


# Per node type: the visit_* function, looked up once (not by name for every node). Kept
# here, not as bound methods on the walker: those would make each walker a reference cycle,
# and its tree (millions of nodes over a scan) would wait for the cycle collector.
_METHODS = {
    getattr(ast, name[6:]): getattr(Walker, name)
    for name in dir(Walker)
    if name.startswith("visit_") and hasattr(ast, name[6:])
}
