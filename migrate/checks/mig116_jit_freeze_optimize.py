"""MIG116: torch.jit.freeze(m) / optimize_for_inference(m) -> m."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import bound_name
from migrate.checks._edits import call_arg, drop_statement, replace_with_arg
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitFreezeOptimize(PythonCheck):
    code = "MIG116"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        name = ref.qualname.rsplit(".", 1)[-1]
        module = call_arg(ref.call, 0, "mod") if ref.call is not None else None
        if module is None:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                f"`torch.jit.{name}` used indirectly",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            f"`torch.jit.{name}` is a TorchScript graph pass; export and ExecuTorch lowering "
            "fold constants themselves",
            symbol=ref.qualname,
            edits=[self._edit(ctx, ref.call, module)],
        )

    @staticmethod
    def _edit(ctx: PythonContext, call: ast.Call, module: ast.expr):
        # `m = torch.jit.freeze(m)` would become `m = m`: the statement goes instead
        bound = bound_name(ctx, call)
        if bound is not None and isinstance(module, ast.Name) and bound[1] == module.id:
            return drop_statement(ctx, bound[0])
        return replace_with_arg(ctx, call, module)
