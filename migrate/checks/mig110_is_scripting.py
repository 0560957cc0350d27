"""MIG110: torch.jit.is_scripting() / is_tracing() -> torch.compiler.is_compiling()."""

from __future__ import annotations

from migrate.checks._edits import replace
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind


class IsScriptingToIsCompiling(PythonCheck):
    code = "MIG110"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        name = ref.qualname.rsplit(".", 1)[-1]
        if ref.role == "call" and ref.call is not None and not ref.call.args:
            spelled, imports = ctx.spell("torch.compiler.is_compiling", ref.scope)
            ctx.report(
                self.rule,
                ref.call,
                f"`{name}()` is never true under torch.export; use `torch.compiler.is_compiling()`",
                symbol=ref.qualname,
                edits=[replace(ctx, ref.call, f"{spelled}()")],
                imports=imports,
            )
        else:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                f"`{name}` referenced without a call; replace it with `torch.compiler.is_compiling`",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
