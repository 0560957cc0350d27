"""MIG203: optimize_for_mobile(ts) -> ExecuTorch lowering."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class OptimizeForMobile(PythonCheck):
    code = "MIG203"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`optimize_for_mobile` targets the deprecated lite interpreter; lower with "
            "`to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()`",
            symbol=ref.qualname,
        )
