"""MIG114: torch.jit.isinstance(x, T) -> isinstance(x, T) for plain classes."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import is_free
from migrate.checks._edits import replace
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


def _plain_class(node: ast.expr) -> bool:
    if isinstance(node, (ast.Name, ast.Attribute)):
        return True
    if isinstance(node, ast.Tuple):
        return all(_plain_class(e) for e in node.elts)
    return False


class JitIsinstance(PythonCheck):
    code = "MIG114"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        if call is None or len(call.args) != 2 or call.keywords:
            ctx.report(
                self.rule,
                call or ref.node,
                "`torch.jit.isinstance` used indirectly",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        if not _plain_class(call.args[1]):
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.isinstance` with `{ctx.source(call.args[1])}`: the builtin cannot "
                "check a parameterized type; test the container and its items yourself",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
            )
            return
        if not is_free(ctx, "isinstance", ref.scope or ctx.table.module_scope):
            ctx.report(
                self.rule,
                call,
                "`isinstance` is shadowed here; rewrite by hand",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
            )
            return
        ctx.report(
            self.rule,
            call,
            "`torch.jit.isinstance` on a plain class is the builtin `isinstance`",
            symbol=ref.qualname,
            edits=[replace(ctx, call.func, "isinstance")],
        )
