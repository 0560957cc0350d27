"""MIG120: any other torch.jit API."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitOtherApi(PythonCheck):
    code = "MIG120"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            f"`{ref.qualname}` is part of the deprecated TorchScript stack",
            symbol=ref.qualname,
        )
