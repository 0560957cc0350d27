"""MIG203: optimize_for_mobile(ts) -> ExecuTorch lowering (XNNPACK)."""

from __future__ import annotations

from migrate.checks import _static_inputs as static_inputs
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.checks.export.origins import mobile_source_fix
from migrate.findings import FixKind


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
