"""MIG203: optimize_for_mobile(ts) -> ExecuTorch lowering (XNNPACK)."""

from __future__ import annotations

import ast

from migrate.checks import _export_rewrite as rw
from migrate.checks import _static_inputs as static_inputs
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


def mobile_source_fix(ctx: PythonContext, call: ast.Call) -> tuple[rw.Fix, str]:
    """The fix for an optimize_for_mobile call: its capture's group, or a local lowering."""
    fix = rw.Fix()
    if not call.args or isinstance(call.args[0], ast.Starred):
        return fix.fail("nothing to lower"), ""
    value = call.args[0]
    source = rw.source_of(ctx, value)
    if source.kind == "capture":
        return rw.capture_fix(ctx, source.node), (  # type: ignore[arg-type]
            f" together with its capture{rw.capture_line(source.node)}"
        )
    if source.kind == "program":
        rw.mobile_fix(ctx, call, ctx.source(value), ctx.table.scope_for(call), fix)
        return fix, ""
    return fix.fail(
        f"the tool cannot see that `{rw._short(ctx.source(value))}` is an exported program: "
        "export the model (`torch.export.export(module, args)`) and lower that"
    ), ""


class OptimizeForMobile(static_inputs.AsksForInputs, PythonCheck):
    code = "MIG203"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        head = "`optimize_for_mobile` targets the deprecated lite interpreter"
        if ref.role != "call" or ref.call is None:
            ctx.report(
                self.rule,
                ref.node,
                f"{head}; lower with `to_edge_transform_and_lower(ep, "
                "partitioner=[XnnpackPartitioner()]).to_executorch()`",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        fix, together = mobile_source_fix(ctx, ref.call)
        if not fix.auto:
            ctx.report(
                self.rule,
                ref.call,
                f"{head}; {fix.problem}",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            f"{head}; lowered to ExecuTorch with XNNPACK{together}{fix.suffix()}",
            symbol=ref.qualname,
            edits=fix.edits,
            imports=fix.imports,
            group=fix.group(),
        )
