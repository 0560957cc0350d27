"""MIG109: ScriptModule / ScriptFunction / TracedModule / RecursiveScriptModule types."""

from __future__ import annotations

from migrate.checks._edits import replace
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class ScriptModuleClasses(PythonCheck):
    code = "MIG109"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        short = ref.qualname.rsplit(".", 1)[-1]
        if ref.role == "base" and short in ("ScriptModule", "RecursiveScriptModule"):
            spelled, imports = ctx.spell("torch.nn.Module", ref.scope)
            ctx.report(
                self.rule,
                ref.node,
                f"subclass `torch.nn.Module` instead of `{short}`",
                symbol=ref.qualname,
                edits=[replace(ctx, ref.node, spelled)],
                imports=imports,
            )
            return
        where = {
            "isinstance": "isinstance check",
            "base": "base class",
            "subscript": "annotation",
        }.get(ref.role, "reference")
        ctx.report(
            self.rule,
            ref.call or ref.node,
            f"`{short}` {where}: after the migration this is an `nn.Module` or an "
            "`ExportedProgram`; decide what the code should accept",
            symbol=ref.qualname,
            fix=FixKind.MANUAL,
        )
