"""MIG116: torch.jit.freeze(m) / optimize_for_inference(m) -> m."""

from __future__ import annotations

from migrate.checks._edits import call_arg, replace_with_arg
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitFreezeOptimize(PythonCheck):
    code = "MIG116"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        name = ref.qualname.rsplit(".", 1)[-1]
        module = call_arg(ref.call, 0, "mod") if ref.call is not None else None
        if module is None:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                f"`torch.jit.{name}` used indirectly",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            f"`torch.jit.{name}` is a TorchScript graph pass; export and ExecuTorch lowering "
            "fold constants themselves",
            symbol=ref.qualname,
            edits=[replace_with_arg(ctx, ref.call, module)],
        )
