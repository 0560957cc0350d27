"""MIG204: m._save_for_lite_interpreter(path) -> an ExecuTorch .pte."""

from __future__ import annotations

import ast

from migrate.checks.base import PythonCheck, PythonContext

SYMBOL = "torch.jit.ScriptModule._save_for_lite_interpreter"


class SaveForLiteInterpreter(PythonCheck):
    code = "MIG204"
    node_types = (ast.Call,)

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "_save_for_lite_interpreter"
        ):
            return
        ctx.report(
            self.rule,
            node,
            "`_save_for_lite_interpreter` writes a lite-interpreter `.ptl`; lower to ExecuTorch "
            "and write a `.pte`",
            symbol=SYMBOL,
        )
