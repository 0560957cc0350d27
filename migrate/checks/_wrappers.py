"""Shared parts of the framework-wrapper rules (MIG140-MIG144, issue 19): does this file use
the framework, which argument is which, and the edit that drops one argument of a call."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from migrate.analysis.dataflow import parent
from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.checks.base import Edit, PythonCheck, PythonContext
from migrate.registry import Rule


def framework_import(ctx: PythonContext, rule: Rule) -> str | None:
    """The first import of the file (any scope) that names one of the rule's `frameworks`,
    followed through the repository's own re-exports the scan resolved; None when none."""

    def find() -> str | None:
        roots = set(rule.extra.get("frameworks") or ())
        for scope in ctx.table.import_scopes():
            for qual in scope.imports.values():
                if ctx.table.canonical(qual).split(".")[0] in roots:
                    return qual
        return None

    return ctx.memo(f"framework:{rule.code}", find)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def bind(call: ast.Call, params: tuple[str, ...]) -> dict[str, ast.expr]:
    """Arguments by parameter name (positional ones in `params` order); starred ones skipped."""
    out: dict[str, ast.expr] = {}
    for name, arg in zip(params, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        out[name] = arg
    for kw in call.keywords:
        if kw.arg is not None:
            out[kw.arg] = kw.value
    return out


def is_literal(expr: ast.expr | None, value: object) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is value


def method_names(rule: Rule) -> tuple[str, ...]:
    return tuple(rule.extra.get("methods") or ())


def drop_argument(ctx: PythonContext, call: ast.Call, arg: ast.AST) -> Edit:
    """Delete one argument with its separating comma, keeping the call's line breaks."""
    items = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    index = next(i for i, node in enumerate(items) if node is arg)
    own_lines = _own_lines(ctx, arg, last=index == len(items) - 1)
    if own_lines is not None and len(items) > 1:
        return own_lines
    if len(items) == 1:
        open_paren = ctx.text.index("(", ctx.end(call.func))
        return Edit(open_paren + 1, ctx.end(call) - 1, "")
    if index > 0:
        return Edit(ctx.end(items[index - 1]), ctx.end(arg), "")
    return Edit(ctx.start(arg), ctx.start(items[1]), "")


def _own_lines(ctx: PythonContext, arg: ast.AST, last: bool) -> Edit | None:
    """Deleting the whole lines of an argument written on lines of its own (one argument a
    line, maybe with a comment): the comments of its neighbours stay where they are."""
    first = ctx.index.offset(arg.lineno, 0)  # type: ignore[attr-defined]
    after = ctx.index.offset(arg.end_lineno + 1, 0)  # type: ignore[attr-defined]
    if ctx.text[first : ctx.start(arg)].strip():
        return None
    rest = ctx.text[ctx.end(arg) : after].strip()
    tail = rest[1:].strip() if rest.startswith(",") else rest
    if (rest.startswith(",") or last) and (not tail or tail.startswith("#")):
        return Edit(first, after, "")
    return None


def in_keyword(ctx: PythonContext, names: tuple[str, ...]) -> bool:
    """Is the node being visited inside a keyword argument of one of these names?"""
    return any(isinstance(p, ast.keyword) and p.arg in names for p in ctx.parents)


def statement_call(ctx: PythonContext, call: ast.Call) -> ast.Expr | None:
    """The expression statement that is just this call (`f(x)` on its own line)."""
    holder = parent(ctx, call)
    return holder if isinstance(holder, ast.Expr) else None


class FrameworkMethodCheck(PythonCheck):
    """A rule matching a method name (`.to_torchscript(`), reported only in files that use
    the rule's framework: by importing it, or by importing a module of the repository that
    imports it (`from mypkg.base import LightningModule`). The second is found in the
    repository pass: a file with a match and no framework import asks for the modules it
    imports; modules that import the framework say so (their facts when parsed, their
    remembered import lines when the prefilter skipped them)."""

    def __init__(self, rule: Rule, options: dict | None = None) -> None:
        super().__init__(rule, options)
        frameworks = tuple(rule.extra.get("frameworks") or ())
        roots = "|".join(re.escape(r) for r in frameworks)
        self.remember = rf"[ \t]*(?:from|import)[ \t]+({roots})\b"
        self.remember_words = frameworks

    def uses_framework(self, ctx: PythonContext) -> str | None:
        """What makes this file a user of the framework (an import, or a repository module
        that imports it); None after asking the repository pass about its imports."""
        direct = framework_import(ctx, self.rule)
        if direct is not None:
            return direct
        via = self._through_repo(ctx.repo_facts, ctx.table.repo_imports)
        if via is None:
            ctx.facts.ask_framework(self.code, _prefixes(ctx.table.repo_imports))
        return via

    def on_end(self, ctx: PythonContext) -> None:
        if ctx.table.module and framework_import(ctx, self.rule) is not None:
            ctx.facts.tell_framework_user(self.code, ctx.table.module)

    def rerun(
        self,
        repo: RepositoryFacts,
        facts: FileFacts | None,
        remembered: set[str],
        module: Callable[[], str] = str,
        text: Callable[[], str] | None = None,
    ) -> bool:
        asked = facts.framework_asks(self.code) if facts is not None else ()
        return bool(asked) and self._through_repo(repo, asked) is not None

    def _through_repo(self, repo: RepositoryFacts, imports: Iterable[str]) -> str | None:
        roots = set(self.rule.extra.get("frameworks") or ())
        users = repo.framework_users(self.code)
        for module in sorted(_prefixes(imports)):
            if module in users or roots & set(repo.remembered(module)):
                return module
        return None


def _prefixes(qualnames) -> set[str]:
    """Every module a set of imported names could come from (`a.b.C` -> a, a.b, a.b.C)."""
    out = set()
    for qual in qualnames:
        parts = qual.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out
