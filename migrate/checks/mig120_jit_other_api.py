"""MIG120: any other torch.jit API; under intent drop a statement that only calls a public
executor setter goes."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent
from migrate.checks._edits import replace
from migrate.checks._executor_switch import dropped_switch
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

# `torch.jit.Error` derives from Exception (not RuntimeError): beside one of these an except
# clause or pytest.raises catches it anyway.
_CATCHES_IT = frozenset({"Exception", "BaseException"})


class JitOtherApi(PythonCheck):
    code = "MIG120"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.qualname == "torch.jit.Error" and self._redundant(ref, ctx):
            return
        if dropped_switch(self, ref, ctx):
            return
        ctx.report(
            self.rule,
            ref.call or ref.node,
            f"`{ref.qualname}` is part of the deprecated TorchScript stack",
            symbol=ref.qualname,
        )

    def _redundant(self, ref: Reference, ctx: PythonContext) -> bool:
        """`(RuntimeError, torch.jit.Error)` in an except clause or `pytest.raises`: only the
        TorchScript runtime raises it, so under drop it goes from the tuple (unsafe: a script
        that stays, or a loaded archive, still could); beside `Exception` it was redundant
        anyway (safe at any intent)."""
        elements = parent(ctx, ref.node)
        if not isinstance(elements, ast.Tuple) or ref.node not in elements.elts:
            return False
        rest = [e for e in elements.elts if e is not ref.node]
        redundant = any(isinstance(e, ast.Name) and e.id in _CATCHES_IT for e in rest)
        if not rest or not (redundant or ctx.intent == "drop"):
            return False
        text = (
            ctx.source(rest[0]) if len(rest) == 1 else f"({', '.join(ctx.source(e) for e in rest)})"
        )
        why = (
            "`Exception` here catches it already"
            if redundant
            else "only the TorchScript runtime raises it, and the repository drops TorchScript "
            "(intent drop); unsafe: a script that stays or a loaded archive still could"
        )
        ctx.report(
            self.rule,
            ref.node,
            f"`torch.jit.Error` among the exceptions caught: {why}; it goes from the tuple",
            symbol=ref.qualname,
            edits=[replace(ctx, elements, text)],
            applicability="safe" if redundant else "unsafe",
            fix=FixKind.AUTO,
        )
        return True
