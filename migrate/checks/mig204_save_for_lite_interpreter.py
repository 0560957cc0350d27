"""MIG204: m._save_for_lite_interpreter(path) -> an ExecuTorch .pte."""

from __future__ import annotations

import ast

from migrate.checks import _static_inputs as static_inputs
from migrate.checks.base import PythonCheck, PythonContext
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.captures import capture_fix
from migrate.checks.export.origins import capture_line, mobile_source_fix, source_of
from migrate.checks.export.spelling import lowered
from migrate.checks.export.uses import lite_save, recorded_program_save
from migrate.findings import FixKind

SYMBOL = "torch.jit.ScriptModule._save_for_lite_interpreter"


class SaveForLiteInterpreter(static_inputs.AsksForInputs, PythonCheck):
    code = "MIG204"
    node_types = (ast.Call,)
    hook_words = ("_save_for_lite_interpreter",)

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "_save_for_lite_interpreter"
        ):
            return
        head = "`_save_for_lite_interpreter` writes a lite-interpreter `.ptl`"
        value = node.func.value
        source = source_of(ctx, value)
        fix = FixBuilder()
        together = ""
        recorded: dict = {}
        if source.kind == "capture":
            fix = capture_fix(ctx, source.node)  # type: ignore[arg-type]
            together = f" together with its capture{capture_line(source.node)}"
        elif source.kind == "mobile":
            fix, together = mobile_source_fix(ctx, source.node)  # type: ignore[arg-type]
        elif source.kind == "program":
            scope = ctx.table.scope_for(node)
            lite_save(ctx, node, lowered(ctx, fix, ctx.source(value), scope), scope, fix)
        else:
            fix.fail(
                f"the tool cannot see that `{short(ctx.source(value))}` is an exported "
                "program: export the model (`torch.export.export(module, args)`) and lower that"
            )
            recorded = recorded_program_save(ctx, node, fix)  # the run saw it save programs
        if not fix.auto:
            ctx.report(
                self.rule, node, f"{head}; {fix.problem}", symbol=SYMBOL, fix=FixKind.ASSISTED
            )
            return
        ctx.report(
            self.rule,
            node,
            f"{head}; writes an ExecuTorch `.pte` instead{together}{fix.suffix()}",
            symbol=SYMBOL,
            edits=fix.edits,
            imports=fix.imports,
            group=fix.group(),
            **recorded,
        )
