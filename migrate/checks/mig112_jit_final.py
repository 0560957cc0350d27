"""MIG112: torch.jit.Final[T] -> typing.Final[T]."""

from __future__ import annotations

from migrate.checks._edits import replace
from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitFinal(PythonCheck):
    code = "MIG112"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        spelled, imports = ctx.spell("typing.Final", ref.scope)
        ctx.report(
            self.rule,
            ref.node,
            "`torch.jit.Final` is a TorchScript alias; use `typing.Final`",
            symbol=ref.qualname,
            edits=[replace(ctx, ref.node, spelled)],
            imports=imports,
        )
