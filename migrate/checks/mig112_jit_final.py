"""MIG112: torch.jit.Final[T] -> typing.Final[T]."""

from __future__ import annotations

import ast

from migrate.checks._edits import replace
from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitFinal(PythonCheck):
    code = "MIG112"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        held = ref.owner
        if (
            self.options.get("intent") == "drop"
            and isinstance(held, ast.Subscript)
            and held.value is ref.node
        ):
            ctx.report(
                self.rule,
                held,
                "`torch.jit.Final[T]` only told TorchScript the attribute is a constant "
                "(intent drop): annotate with `T`",
                symbol=ref.qualname,
                edits=[replace(ctx, held, ctx.source(held.slice))],
            )
            return
        spelled, imports = ctx.spell("typing.Final", ref.scope)
        ctx.report(
            self.rule,
            ref.node,
            "`torch.jit.Final` is a TorchScript alias; use `typing.Final`",
            symbol=ref.qualname,
            edits=[replace(ctx, ref.node, spelled)],
            imports=imports,
        )
