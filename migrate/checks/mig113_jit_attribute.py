"""MIG113: torch.jit.Attribute(v, T) -> v."""

from __future__ import annotations

from migrate.checks._edits import call_arg, replace_with_arg
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitAttribute(PythonCheck):
    code = "MIG113"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        value = call_arg(ref.call, 0, "value") if ref.call is not None else None
        if value is None:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                "`torch.jit.Attribute` used as a type; annotate the attribute instead",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            "`torch.jit.Attribute(v, T)` only typed ScriptModule attributes; keep just the value",
            symbol=ref.qualname,
            edits=[replace_with_arg(ctx, ref.call, value)],
        )
