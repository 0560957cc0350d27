"""MIG118: warnings filters for torch.jit.TracerWarning."""

from __future__ import annotations

import ast

from migrate.checks._edits import delete_lines
from migrate.checks.base import Edit, PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

_FILTERS = ("warnings.filterwarnings", "warnings.simplefilter")


class TracerWarning(PythonCheck):
    code = "MIG118"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        statement = self._filter_statement(ctx)
        if statement is not None:
            holder = ctx.parents[ctx.parents.index(statement) - 1]
            # The only statement of its block becomes `pass` (an empty block does not parse).
            edit = (
                delete_lines(ctx, statement)
                if _removable(holder, statement) and _alone_on_lines(ctx, statement)
                else Edit(*ctx.span(statement), "pass")
            )
            ctx.report(
                self.rule,
                statement,
                "filter for `torch.jit.TracerWarning` is dead once tracing is gone; remove it",
                symbol=ref.qualname,
                edits=[edit],
            )
            return
        ctx.report(
            self.rule,
            ref.node,
            "`torch.jit.TracerWarning` is never raised after the migration",
            symbol=ref.qualname,
            fix=FixKind.MANUAL,
        )

    @staticmethod
    def _filter_statement(ctx: PythonContext) -> ast.Expr | None:
        """The enclosing `warnings.filterwarnings(...)` statement, when it stands alone."""
        parents = ctx.parents
        for i in range(len(parents) - 1, 0, -1):
            node = parents[i]
            if isinstance(node, ast.Call):
                holder = parents[i - 1]
                if isinstance(holder, ast.Expr) and ctx.qualname(node.func) in _FILTERS:
                    return holder
                return None
        return None


def _alone_on_lines(ctx: PythonContext, statement: ast.stmt) -> bool:
    """Nothing but the statement (and a comment) on its lines: deleting them loses nothing."""
    start, end = ctx.line_span(statement)
    before = ctx.text[start : ctx.start(statement)]
    after = ctx.text[ctx.end(statement) : end].strip()
    return not before.strip() and (not after or after.startswith("#"))


def _removable(parent: ast.AST | None, statement: ast.stmt) -> bool:
    """Deleting must not leave an empty block."""
    if parent is None:
        return True
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and statement in block:
            return len(block) > 1
    return True
