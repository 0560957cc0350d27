"""MIG105: @torch.jit.export methods (assisted: one exported program per method)."""

from __future__ import annotations

import ast

from migrate.checks._drop_route import report_marker_call
from migrate.checks._edits import remove_decorator
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import Applicability, FixKind


class JitExportMethod(PythonCheck):
    code = "MIG105"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        owner = ref.owner
        if ref.role in ("decorator", "decorator_call") and isinstance(
            owner, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            if self.options.get("intent") == "drop":
                # Nothing will script the class (the planner holds this while a script of
                # it stays): the method is a plain one, called as before.
                self.report_reference(
                    ref,
                    ctx,
                    f"`@torch.jit.export` only adds `{owner.name}` to a scripted module's "
                    "methods (intent drop): the decorator goes, the method stays a plain one; "
                    "to lower it to ExecuTorch too, export a module whose forward calls it",
                    fix=FixKind.AUTO,
                    applicability=Applicability.SAFE,
                    edits=[remove_decorator(ctx, ref.call or ref.node)],
                )
                return
            self.report_reference(
                ref,
                ctx,
                f"`@torch.jit.export` method `{owner.name}` needs its own exported program: wrap it "
                f"in a module whose forward calls `{owner.name}`, export that, and pass "
                '`{"forward": ep, "' + owner.name + '": ep_' + owner.name + "}` to "
                "`to_edge_transform_and_lower` (see `migrate explain MIG105`)",
                fix=FixKind.ASSISTED,
            )
            return
        if report_marker_call(self.rule, ctx, ref):
            return
        self.report_reference(
            ref, ctx, "`torch.jit.export` outside a method decorator", fix=FixKind.MANUAL
        )
