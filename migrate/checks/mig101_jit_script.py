"""MIG101: torch.jit.script on functions, classes (removed) and module instances (export)."""

from __future__ import annotations

import ast

from migrate.checks._edits import drop_statement, remove_decorator, replace_with_arg
from migrate.checks._export_rewrite import capture_fix, result_uses
from migrate.checks._flow import parent
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

# Uses that need a TorchScript archive: a plain function has none to give.
_ARCHIVE_METHODS = ("save", "_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter")
_ARCHIVE_CALLS = ("torch.jit.save", "torch.utils.mobile_optimizer.optimize_for_mobile")


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
            archive = self.archive_use(ctx, call, ref)
            if archive is not None:
                ctx.report(
                    self.rule,
                    call,
                    f"`torch.jit.script` on a {kind} whose result is saved (line {archive}): "
                    "export needs an nn.Module; wrap it in one and export that",
                    symbol=ref.qualname,
                    fix=FixKind.ASSISTED,
                    target=kind,
                )
                return
            holder = parent(ctx, call)
            if (
                isinstance(holder, ast.Assign)
                and isinstance(arg, ast.Name)
                and [ctx.source(t) for t in holder.targets] == [arg.id]
            ):
                ctx.report(
                    self.rule,
                    call,
                    f"`{arg.id} = torch.jit.script({arg.id})` on a {kind}: export traces plain "
                    "Python, remove the statement",
                    symbol=ref.qualname,
                    edits=[drop_statement(ctx, holder)],
                    target=kind,
                )
                return
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on a {kind}: export traces plain Python, use it directly",
                symbol=ref.qualname,
                edits=[replace_with_arg(ctx, call, arg)],
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

    @staticmethod
    def archive_use(ctx: PythonContext, call: ast.Call, ref: Reference) -> int | None:
        """Line of a use of the scripted function that needs an archive, if any."""
        scope = ref.scope or ctx.table.module_scope
        uses, _ = result_uses(ctx, call, scope)
        for use in uses:
            holder = parent(ctx, use)
            if isinstance(holder, ast.Attribute) and holder.attr in _ARCHIVE_METHODS:
                return use.lineno
            if (
                isinstance(holder, ast.Call)
                and holder.args
                and holder.args[0] is use
                and ctx.qualname(holder.func) in _ARCHIVE_CALLS
            ):
                return use.lineno
        return None

    def report_module(
        self, ref: Reference, ctx: PythonContext, call: ast.Call, arg: ast.expr
    ) -> None:
        fix = capture_fix(ctx, call)
        if not fix.auto:
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on a module instance: {fix.problem}",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
                target="module",
            )
            return
        ctx.report(
            self.rule,
            call,
            "`torch.jit.script` on a module instance: captured with `torch.export.export` (the "
            f"name keeps the ExportedProgram, calls go through `.module()`){fix.suffix()}",
            symbol=ref.qualname,
            edits=fix.edits,
            imports=fix.imports,
            target="module",
        )
