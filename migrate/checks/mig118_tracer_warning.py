"""MIG118: warnings filters for torch.jit.TracerWarning."""

from __future__ import annotations

import ast

from migrate.checks._edits import delete_lines
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

_FILTERS = ("warnings.filterwarnings", "warnings.simplefilter")


class TracerWarning(PythonCheck):
    code = "MIG118"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        statement = self._filter_statement(ctx)
        if statement is not None:
            ctx.report(
                self.rule,
                statement,
                "filter for `torch.jit.TracerWarning` is dead once tracing is gone; remove it",
                symbol=ref.qualname,
                edits=[delete_lines(ctx, statement)],
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
                if (
                    isinstance(holder, ast.Expr)
                    and ctx.qualname(node.func) in _FILTERS
                    and _alone_on_lines(ctx, holder)
                    and _removable(parents[i - 2] if i >= 2 else None, holder)
                ):
                    return holder
                return None
        return None


def _alone_on_lines(ctx: PythonContext, statement: ast.stmt) -> bool:
    start, end = ctx.line_span(statement)
    text = ctx.text[start:end]
    return text.strip().endswith(")") or text.rstrip().endswith(")") or "#" in text


def _removable(parent: ast.AST | None, statement: ast.stmt) -> bool:
    """Deleting must not leave an empty block."""
    if parent is None:
        return True
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and statement in block:
            return len(block) > 1
    return True
