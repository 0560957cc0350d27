"""MIG115: torch.jit.fork(f, *a) -> f(*a); torch.jit.wait(x) -> x."""

from __future__ import annotations

from migrate.checks._edits import parenthesize_if_needed, replace, replace_with_arg
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class JitForkWait(PythonCheck):
    code = "MIG115"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        name = ref.qualname.rsplit(".", 1)[-1].lstrip("_")
        call = ref.call
        if name == "fork" and call is not None and call.args:
            fn, *rest = call.args
            args = [ctx.source(a) for a in rest] + [ctx.source(k) for k in call.keywords]
            fn_text = parenthesize_if_needed(ctx, fn, ctx.source(fn))
            ctx.report(
                self.rule,
                call,
                "`torch.jit.fork` has no export equivalent; call the function directly",
                symbol=ref.qualname,
                edits=[replace(ctx, call, f"{fn_text}({', '.join(args)})")],
            )
        elif name == "wait" and call is not None and len(call.args) == 1 and not call.keywords:
            value = call.args[0]
            ctx.report(
                self.rule,
                call,
                "`torch.jit.wait` on a direct call's result is the value itself",
                symbol=ref.qualname,
                edits=[replace_with_arg(ctx, call, value)],
            )
        else:
            ctx.report(
                self.rule,
                call or ref.node,
                f"`torch.jit.{name}`: TorchScript futures have no export equivalent",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
