"""MIG119: private TorchScript internals (torch.jit._*, torch._C._jit_*)."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitPrivateApi(PythonCheck):
    code = "MIG119"
    prefilter = (r"_C\._jit",)

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            f"`{ref.qualname}` is a TorchScript internal with no direct replacement",
            symbol=ref.qualname,
        )
