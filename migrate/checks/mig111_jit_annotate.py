"""MIG111: torch.jit.annotate(T, v) -> v (`x: T = v` where it is a plain assignment)."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent
from migrate.checks._edits import call_arg, drop_statement, parenthesize_if_needed, replace
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitAnnotate(PythonCheck):
    code = "MIG111"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        value = call_arg(ref.call, 1, "the_value") if ref.call is not None else None
        kind = call_arg(ref.call, 0, "the_type") if ref.call is not None else None
        if value is None or ref.call is None:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                "`torch.jit.annotate` without a value to keep",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        call = ref.call
        holder = parent(ctx, call)
        target = holder.targets[0] if isinstance(holder, ast.Assign) else None
        if target is not None and (len(holder.targets) != 1 or holder.value is not call):
            target = None
        text = parenthesize_if_needed(ctx, value, _moved(ctx, value, call), call)
        if target is not None and ctx.source(target).strip() == ctx.source(value).strip():
            message, edit = (
                "the assignment only typed its own value: it goes",
                drop_statement(ctx, holder),
            )
        elif (
            isinstance(target, ast.Name)
            and kind is not None
            and target.id not in (ref.scope.globals_ if ref.scope else ())
        ):
            message = "the type moves to the assignment's annotation"
            edit = replace(ctx, holder, f"{target.id}: {ctx.source(kind)} = {text}")
        else:
            message = "keep just the value"
            edit = replace(ctx, call, text)
        ctx.report(
            self.rule,
            call,
            f"`torch.jit.annotate(T, v)` only typed TorchScript containers; {message}",
            symbol=ref.qualname,
            edits=[edit],
        )


def _moved(ctx: PythonContext, value: ast.expr, call: ast.Call) -> str:
    """The value's text written where the call starts: its later lines shifted left as far
    as the value moves (a dict on its own lines inside the call keeps its shape)."""
    text = ctx.source(value)
    if "\n" not in text or value.lineno == call.lineno:
        return text
    shift = _indent(ctx, value.lineno) - _indent(ctx, call.lineno)
    if shift <= 0:
        return text
    first, *rest = text.split("\n")
    moved = [line[shift:] if line[:shift].strip() == "" else line for line in rest]
    return "\n".join([first, *moved])


def _indent(ctx: PythonContext, line: int) -> int:
    text = ctx.index.line_text(line)
    return len(text) - len(text.lstrip())
