"""MIG102: torch.jit.trace(m, x) -> torch.export.export(m, (x,))."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitTraceToExport(PythonCheck):
    code = "MIG102"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`torch.jit.trace` freezes control flow and is deprecated; capture with "
            "`torch.export.export(module, args)`",
            symbol=ref.qualname,
        )
