"""MIG201: torch.jit.save(m, f) and m.save(f) on a scripted/traced value -> torch.export.save."""

from __future__ import annotations

import ast

from migrate.checks._flow import origin_call
from migrate.checks.base import PythonCheck, PythonContext, Reference

METHOD_SYMBOL = "torch.jit.ScriptModule.save"


class JitSaveToExportSave(PythonCheck):
    code = "MIG201"
    node_types = (ast.Call,)

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`torch.jit.save` writes a TorchScript archive; save the exported program with "
            "`torch.export.save(ep, 'model.pt2')`",
            symbol=ref.qualname,
        )

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save"
            and isinstance(node.func.value, ast.Name)
        ):
            return
        scope = ctx.table.scope_for(node)
        if origin_call(ctx, node.func.value.id, scope, node.lineno) is None:
            return
        ctx.report(
            self.rule,
            node,
            f"`{node.func.value.id}.save()` writes a TorchScript archive; save the exported "
            "program with `torch.export.save(ep, 'model.pt2')`",
            symbol=METHOD_SYMBOL,
        )
