"""MIG201: torch.jit.save(m, f) and m.save(f) on a scripted/traced value -> torch.export.save."""

from __future__ import annotations

import ast

from migrate.checks import _static_inputs as static_inputs
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.checks.export.apis import bind_args
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.captures import capture_fix
from migrate.checks.export.origins import capture_line, source_of
from migrate.checks.export.uses import jit_save_edits, method_save
from migrate.findings import FixKind

METHOD_SYMBOL = "torch.jit.ScriptModule.save"


class JitSaveToExportSave(static_inputs.AsksForInputs, PythonCheck):
    code = "MIG201"
    node_types = (ast.Call,)
    hook_words = ("save",)  # `x.save(...)` calls

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        bound = bind_args(call, ("m", "f", "_extra_files")) if call is not None else None
        if call is None or ref.role != "call" or not bound or "m" not in bound:
            ctx.report(
                self.rule,
                call or ref.node,
                "`torch.jit.save` used indirectly; save an exported program with "
                "`torch.export.save(ep, 'model.pt2')`",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        self.report_save(ctx, call, bound["m"], "`torch.jit.save`", ref.qualname)

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save"
        ):
            return
        value = node.func.value
        if not isinstance(value, (ast.Name, ast.Call)):
            return
        if source_of(ctx, value).kind == "unknown":
            return  # any other object's .save(): not ours
        self.report_save(ctx, node, value, f"`{ctx.source(node.func)}()`", METHOD_SYMBOL)

    def report_save(
        self, ctx: PythonContext, call: ast.Call, value: ast.expr, what: str, symbol: str
    ) -> None:
        head = f"{what} writes a TorchScript archive"
        scope = ctx.table.scope_for(call)
        source = source_of(ctx, value)
        fix = FixBuilder()
        if source.kind == "capture":
            fix = capture_fix(ctx, source.node)  # type: ignore[arg-type]
            done = f"saved with `torch.export.save` together with its capture{capture_line(source.node)}"
        elif source.kind == "program":
            done = "saved with `torch.export.save`"
            if symbol == METHOD_SYMBOL:
                method_save(ctx, call, ctx.source(value), scope, fix)
            else:
                jit_save_edits(ctx, call, scope, fix)
        elif source.kind == "jit_load":
            fix.fail(
                "it re-saves a loaded TorchScript archive: convert the archive with "
                "`migrate convert` or export the model again"
            )
        elif source.kind == "mobile":
            fix.fail(
                "it saves an `optimize_for_mobile` result: lower to ExecuTorch instead (MIG203)"
            )
        else:
            fix.fail(
                f"the tool cannot see that `{short(ctx.source(value))}` is an exported "
                "program here: export it (`torch.export.export(module, args)`) and save that"
            )
        if not fix.auto:
            ctx.report(
                self.rule, call, f"{head}; {fix.problem}", symbol=symbol, fix=FixKind.ASSISTED
            )
            return
        ctx.report(
            self.rule,
            call,
            f"{head}; {done}{fix.suffix()}",
            symbol=symbol,
            edits=fix.edits,
            imports=fix.imports,
            group=fix.group(),
        )
