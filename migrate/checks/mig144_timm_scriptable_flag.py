"""MIG144: timm scriptable=True / set_scriptable(True) -> dropped."""

from __future__ import annotations

import ast

from migrate.checks import _wrappers as wr
from migrate.checks._edits import drop_statement
from migrate.checks._flow import parent
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

WHY = "makes timm pick layers `torch.jit.script` can compile, and nothing is scripted any more"


class TimmScriptableFlag(PythonCheck):
    code = "MIG144"
    prefilter = (r"scriptable",)
    node_types = (ast.Call,)
    hook_words = ("scriptable",)  # the keyword it tests for

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        if ref.role != "call" or call is None:
            ctx.report(
                self.rule,
                ref.node,
                f"`set_scriptable` used indirectly: it {WHY}; remove it",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        mode = wr.bind(call, ("mode",)).get("mode")
        statement = wr.statement_call(ctx, call)
        head = f"`set_scriptable({ctx.source(mode) if mode is not None else ''})` {WHY}"
        if (
            statement is not None
            and wr.is_literal(mode, True)
            and len(call.args) + len(call.keywords) == 1
        ):
            ctx.report(
                self.rule,
                call,
                f"{head}; removed",
                symbol=ref.qualname,
                fix=FixKind.AUTO,
                edits=[drop_statement(ctx, statement)],
            )
            return
        where = (
            "drop the `with` and keep its body"
            if isinstance(parent(ctx, call), ast.withitem)
            else "remove it"
        )
        ctx.report(self.rule, call, f"{head}; {where}", symbol=ref.qualname, fix=FixKind.ASSISTED)

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        assert isinstance(node, ast.Call)
        flag = wr.keyword(node, "scriptable")
        if flag is None or wr.is_literal(flag.value, False):
            return
        qual = ctx.qualname(node.func)
        if qual not in self.rule.extra["calls"]:
            return
        name = qual.rsplit(".", 1)[-1]
        head = f"`{name}(scriptable=...)` {WHY}"
        if not wr.is_literal(flag.value, True):
            ctx.report(
                self.rule, flag, f"{head}; drop the keyword", symbol=qual, fix=FixKind.ASSISTED
            )
            return
        statement = wr.statement_call(ctx, node)
        if statement is not None and len(node.args) + len(node.keywords) == 1:
            edit = drop_statement(ctx, statement)
        else:
            edit = wr.drop_argument(ctx, node, flag)
        ctx.report(self.rule, flag, f"{head}; removed", symbol=qual, fix=FixKind.AUTO, edits=[edit])
