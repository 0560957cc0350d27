"""MIG113: torch.jit.Attribute(v, T) -> v; in an annotation, -> T."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent
from migrate.checks._edits import call_arg, replace_with_arg
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


def _in_annotation(ctx: PythonContext, call: ast.Call) -> bool:
    holder = parent(ctx, call)
    if isinstance(holder, (ast.AnnAssign, ast.arg)):
        return holder.annotation is call
    return isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)) and holder.returns is call


class JitAttribute(PythonCheck):
    code = "MIG113"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        if call is not None and _in_annotation(ctx, call):
            declared = call_arg(call, 1, "type")
            if declared is not None:
                ctx.report(
                    self.rule,
                    call,
                    "`torch.jit.Attribute(v, T)` as an annotation; annotate with the type `T`",
                    symbol=ref.qualname,
                    edits=[replace_with_arg(ctx, call, declared)],
                )
                return
        value = call_arg(call, 0, "value") if call is not None else None
        if value is None or (call is not None and _in_annotation(ctx, call)):
            ctx.report(
                self.rule,
                call or ref.node,
                "`torch.jit.Attribute` used as a type; annotate the attribute instead",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.report(
            self.rule,
            call,
            "`torch.jit.Attribute(v, T)` only typed ScriptModule attributes; keep just the value",
            symbol=ref.qualname,
            edits=[replace_with_arg(ctx, call, value)],
        )
