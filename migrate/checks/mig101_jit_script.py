"""MIG101: torch.jit.script on functions, classes (removed) and module instances (export)."""

from __future__ import annotations

import ast

from migrate.checks._edits import parenthesize_if_needed, remove_decorator, replace
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitScriptToExport(PythonCheck):
    code = "MIG101"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.role in ("decorator", "decorator_call"):
            decorator = ref.call if ref.role == "decorator_call" else ref.node
            kind = "class" if isinstance(ref.owner, ast.ClassDef) else "function"
            ctx.report(
                self.rule,
                decorator,
                f"`@torch.jit.script` on a {kind}: export traces plain Python, remove the decorator",
                symbol=ref.qualname,
                edits=[remove_decorator(ctx, decorator)],
                target=kind,
            )
            return
        call = ref.call
        if call is None or not call.args:
            ctx.report(
                self.rule,
                call or ref.node,
                "`torch.jit.script` used indirectly",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
                target="unknown",
            )
            return
        arg = call.args[0]
        kind = self.target_kind(arg, ref, ctx)
        if kind in ("function", "class"):
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on a {kind}: export traces plain Python, use it directly",
                symbol=ref.qualname,
                edits=[replace(ctx, call, parenthesize_if_needed(ctx, arg, ctx.source(arg)))],
                target=kind,
            )
            return
        self.report_module(ref, ctx, call, arg)

    def target_kind(self, arg: ast.expr, ref: Reference, ctx: PythonContext) -> str:
        if isinstance(arg, ast.Lambda):
            return "function"
        if isinstance(arg, ast.Name) and ref.scope is not None:
            definition = ctx.table.definition(arg.id, ref.scope)
            if isinstance(definition, ast.ClassDef):
                return "class"
            if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return "function"
        return "module"

    def report_module(
        self, ref: Reference, ctx: PythonContext, call: ast.Call, arg: ast.expr
    ) -> None:
        ctx.report(
            self.rule,
            call,
            "`torch.jit.script` on a module instance: capture it with "
            "`torch.export.export(module, example_args)`; no example inputs are visible here",
            symbol=ref.qualname,
            fix=FixKind.ASSISTED,
            target="module",
        )
