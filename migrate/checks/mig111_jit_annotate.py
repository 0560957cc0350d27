"""MIG111: torch.jit.annotate(T, v) -> v."""

from __future__ import annotations

from migrate.checks._edits import call_arg, replace_with_arg
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitAnnotate(PythonCheck):
    code = "MIG111"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        value = call_arg(ref.call, 1, "the_value") if ref.call is not None else None
        if value is None:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                "`torch.jit.annotate` without a value to keep",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            "`torch.jit.annotate(T, v)` only typed TorchScript containers; keep just the value",
            symbol=ref.qualname,
            edits=[replace_with_arg(ctx, ref.call, value)],
        )
