"""MIG103: torch.jit.trace_module(m, {"forward": x}) -> torch.export.export(m, (x,))."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitTraceModuleToExport(PythonCheck):
    code = "MIG103"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`torch.jit.trace_module` is deprecated; export each traced method with "
            "`torch.export.export`",
            symbol=ref.qualname,
        )
