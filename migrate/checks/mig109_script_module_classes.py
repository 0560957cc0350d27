"""MIG109: ScriptModule / ScriptFunction / TracedModule / RecursiveScriptModule types."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent
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
        if ctx.intent == "drop" and self._out_of_union(ref, ctx, short):
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
            role=ref.role,  # only a base class makes the scripting compiler run (the planner)
        )

    def _out_of_union(self, ref: Reference, ctx: PythonContext, short: str) -> bool:
        """Under drop, `Union[torch.jit.ScriptModule, nn.Module]` (or `X | Y`) loses the
        TorchScript member: what the code returns or accepts is the other one now."""
        members, union = _union_of(ctx, ref.node)
        if union is None or len(members) < 2:
            return False
        rest = [m for m in members if m is not ref.node]
        if any(ctx.qualname(m) and ctx.qualname(m).startswith("torch.jit.") for m in rest):  # type: ignore[union-attr]
            return False
        if len(rest) == 1:
            text = ctx.source(rest[0])
        elif isinstance(union, ast.Subscript):
            text = f"{ctx.source(union.value)}[{', '.join(ctx.source(m) for m in rest)}]"
        else:
            text = " | ".join(ctx.source(m) for m in rest)
        ctx.report(
            self.rule,
            ref.node,
            f"`{short}` in a union (intent drop): nothing makes one any more, so the union "
            f"becomes `{text}`",
            symbol=ref.qualname,
            edits=[replace(ctx, union, text)],
            applicability="safe",
        )
        return True


def _union_of(ctx: PythonContext, node: ast.AST) -> tuple[list[ast.expr], ast.AST | None]:
    """The members of the `Union[...]` subscript or `|` chain `node` is a direct member of."""
    holder = parent(ctx, node)
    if isinstance(holder, ast.Tuple):
        sub = parent(ctx, holder)
        if isinstance(sub, ast.Subscript) and sub.slice is holder:
            if (ctx.qualname(sub.value) or "").endswith("Union"):
                return list(holder.elts), sub
        return [], None
    if isinstance(holder, ast.BinOp) and isinstance(holder.op, ast.BitOr):
        top = holder
        while isinstance(up := parent(ctx, top), ast.BinOp) and isinstance(up.op, ast.BitOr):
            top = up
        members: list[ast.expr] = []

        def flatten(n: ast.expr) -> None:
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
                flatten(n.left)
                flatten(n.right)
            else:
                members.append(n)

        flatten(top)
        return members, top
    return [], None
