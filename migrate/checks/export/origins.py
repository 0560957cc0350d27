"""Where a value that is saved or lowered comes from (a capture, an exported program, a
TorchScript load, a mobile lowering), and the fix that follows from it."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrate.analysis.dataflow import value_origin
from migrate.checks.base import PythonContext
from migrate.checks.export.alternatives import capture_of
from migrate.checks.export.apis import EP_MAKERS, JIT_CAPTURES, JIT_PASSES, OPTIMIZE_FOR_MOBILE
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.captures import capture_fix
from migrate.checks.export.uses import lowering_with_fallback, mobile_fix


@dataclass
class Source:
    """Where a saved / lowered value comes from."""

    kind: str  # capture | program | jit_load | mobile | unknown
    node: ast.expr | None = None


def source_of(ctx: PythonContext, expr: ast.expr) -> Source:
    """Follow plain aliases (`b = a`) and TorchScript passes (`torch.jit.freeze(a)`) back to
    the call that made the value."""
    origin: ast.expr | None = expr
    for _ in range(8):
        origin = value_origin(ctx, expr)
        if origin is None and isinstance(expr, ast.Name):
            origin = lowering_with_fallback(ctx, expr) or capture_of(ctx, expr)
        if isinstance(origin, ast.Name):
            expr = origin
            continue
        if (
            isinstance(origin, ast.Call)
            and ctx.qualname(origin.func) in JIT_PASSES
            and origin.args
            and not isinstance(origin.args[0], ast.Starred)
        ):
            expr = origin.args[0]
            continue
        break
    if isinstance(origin, ast.Call):
        qual = ctx.qualname(origin.func)
        if qual in JIT_CAPTURES:
            return Source("capture", origin)
        if qual in EP_MAKERS:
            return Source("program", origin)
        if qual == "torch.jit.load":
            return Source("jit_load", origin)
        if qual == OPTIMIZE_FOR_MOBILE:
            return Source("mobile", origin)
    return Source("unknown", origin)


def capture_line(call: ast.expr | None) -> str:
    return f" (line {call.lineno})" if call is not None else ""


def mobile_source_fix(ctx: PythonContext, call: ast.Call) -> tuple[FixBuilder, str]:
    """The fix for an optimize_for_mobile call: its capture's group, or a local lowering
    (and the words saying it went with its capture)."""
    fix = FixBuilder()
    if not call.args or isinstance(call.args[0], ast.Starred):
        return fix.fail("nothing to lower"), ""
    value = call.args[0]
    source = source_of(ctx, value)
    if source.kind == "capture":
        return capture_fix(ctx, source.node), (  # type: ignore[arg-type]
            f" together with its capture{capture_line(source.node)}"
        )
    if source.kind == "program":
        mobile_fix(ctx, call, ctx.source(value), ctx.table.scope_for(call), fix)
        return fix, ""
    return fix.fail(
        f"the tool cannot see that `{short(ctx.source(value))}` is an exported program: "
        "export the model (`torch.export.export(module, args)`) and lower that"
    ), ""
