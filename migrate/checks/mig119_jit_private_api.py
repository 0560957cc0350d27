"""MIG119: private TorchScript internals (torch.jit._*, torch._C._jit_*); under intent drop a
statement that only switches a TorchScript executor setting goes."""

from __future__ import annotations

from migrate.checks._executor_switch import dropped_switch
from migrate.checks.base import PythonCheck, PythonContext, Reference


class JitPrivateApi(PythonCheck):
    code = "MIG119"
    prefilter = (r"_C\._jit",)

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if dropped_switch(self, ref, ctx):
            return
        self.report_reference(
            ref, ctx, f"`{ref.qualname}` is a TorchScript internal with no direct replacement"
        )
