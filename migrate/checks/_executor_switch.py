"""A statement that only switches a TorchScript executor or fuser setting, which goes under
`--intent drop` (MIG119's private setters, MIG120's public ones). Each rule's data lists its
setters (`executor_switches:`, qualified names or their prefixes)."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent
from migrate.checks._edits import drop_statement
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import Applicability, FixKind


def dropped_switch(check: PythonCheck, ref: Reference, ctx: PythonContext) -> bool:
    """Report `ref` with the removal of its statement when, under drop, it calls one of the
    rule's setters and nothing reads what the call returns; False when it does not apply.
    The planner holds the removal while anything in the repository still scripts or traces
    code it reaches (the setting is process-wide)."""
    if check.options.get("intent") != "drop" or ref.role != "call" or ref.call is None:
        return False
    switches = tuple(check.rule.extra.get("executor_switches") or ())
    if not ref.qualname.startswith(switches):
        return False
    statement = parent(ctx, ref.call)
    unread = isinstance(statement, ast.Expr) or (
        isinstance(statement, ast.Assign)
        and statement.value is ref.call
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == "_"
    )
    if not unread:
        return False
    check.report_reference(
        ref,
        ctx,
        f"`{ref.qualname}` only tunes TorchScript's executor (intent drop): the call "
        "goes once nothing scripts or traces code; unsafe: TorchScript code of other "
        "libraries run in the same process no longer gets the setting",
        fix=FixKind.AUTO,
        applicability=Applicability.UNSAFE,
        edits=[drop_statement(ctx, statement)],
    )
    return True
