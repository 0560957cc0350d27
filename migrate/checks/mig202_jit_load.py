"""MIG202: torch.jit.load(f) -> torch.export.load(f).module()."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitLoadToExportLoad(PythonCheck):
    code = "MIG202"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`torch.jit.load` needs the TorchScript runtime; load a `.pt2` with "
            "`torch.export.load(f).module()`",
            symbol=ref.qualname,
        )
