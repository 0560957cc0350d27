"""MIG117: @torch.jit.interface (manual)."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitInterface(PythonCheck):
    code = "MIG117"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`torch.jit.interface` has no export equivalent: use a typing.Protocol and export "
            "each concrete configuration",
            symbol=ref.qualname,
        )
