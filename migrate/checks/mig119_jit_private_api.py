"""MIG119: private TorchScript internals (torch.jit._*, torch._C._jit_*); under intent drop a
statement that only switches a TorchScript executor setting goes."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent
from migrate.checks._edits import drop_statement
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import Applicability, FixKind

# Setters of the TorchScript executor / fuser state: they change nothing eager code runs.
EXECUTOR_SWITCHES = ("torch._C._jit_set_", "torch._C._jit_override_can_fuse_on_")


class JitPrivateApi(PythonCheck):
    code = "MIG119"
    prefilter = (r"_C\._jit",)

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        statement = parent(ctx, ref.call) if ref.call is not None else None
        if (
            self.options.get("intent") == "drop"
            and ref.role == "call"
            and ref.qualname.startswith(EXECUTOR_SWITCHES)
            and isinstance(statement, ast.Expr)
        ):
            # The planner holds it while anything in the repository still scripts or traces.
            self.report_reference(
                ref,
                ctx,
                f"`{ref.qualname}` only tunes TorchScript's executor (intent drop): the call "
                "goes once nothing scripts or traces code; unsafe: TorchScript code of other "
                "libraries run in the same process no longer gets the setting",
                fix=FixKind.AUTO,
                applicability=Applicability.UNSAFE,
                edits=[drop_statement(ctx, statement)],
            )
            return
        self.report_reference(
            ref, ctx, f"`{ref.qualname}` is a TorchScript internal with no direct replacement"
        )
