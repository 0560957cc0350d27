"""The check of the rules whose whole fix is deleting a TorchScript-only decorator
(MIG104, MIG106, MIG107): each rule sets its code and its advice."""

from __future__ import annotations

from migrate.checks._drop_route import report_marker_call
from migrate.checks._edits import remove_decorator
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class DecoratorRemoval(PythonCheck):
    """Shared shape of the rules whose whole fix is deleting a decorator."""

    advice = "remove the decorator"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        short = ref.qualname.rsplit(".", 1)[-1]
        if ref.role in ("decorator", "decorator_call"):
            decorator = ref.call if ref.role == "decorator_call" else ref.node
            ctx.report(
                self.rule,
                decorator,
                f"`@{ref.qualname}` only steers TorchScript: {self.advice}",
                symbol=ref.qualname,
                edits=[remove_decorator(ctx, decorator)],
            )
        elif not report_marker_call(self.rule, ctx, ref):
            ctx.report(
                self.rule,
                ref.call or ref.node,
                f"`{short}` is TorchScript-only; use it as a decorator or drop it by hand",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
