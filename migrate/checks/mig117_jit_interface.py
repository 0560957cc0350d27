"""MIG117: @torch.jit.interface (manual; under intent drop, the class and the annotations
naming it go)."""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import parent
from migrate.checks._edits import drop_definition, drop_statement
from migrate.checks.base import Edit, PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

_MANUAL = (
    "`torch.jit.interface` has no export equivalent: use a typing.Protocol and export "
    "each concrete configuration"
)


class JitInterface(PythonCheck):
    code = "MIG117"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        cls = ref.owner
        if (
            self.options.get("intent") == "drop"
            and ref.role == "decorator"
            and isinstance(cls, ast.ClassDef)
            and any(cls is s for s in ctx.tree.body)
        ):
            edits, problem = _annotations_go(ctx, cls)
            if problem is None:
                ctx.report(
                    self.rule,
                    ref.node,
                    f"`@torch.jit.interface` class `{cls.name}` only typed TorchScript "
                    "submodules (intent drop): the class and the annotations naming it go",
                    symbol=ref.qualname,
                    fix=FixKind.AUTO,
                    edits=[drop_definition(ctx, cls), *edits],
                    applicability="safe",
                    interface=cls.name,
                )
                return
            ctx.report(
                self.rule,
                ref.node,
                f"{_MANUAL} (intent drop: `{cls.name}` {problem})",
                symbol=ref.qualname,
            )
            return
        ctx.report(self.rule, ref.call or ref.node, _MANUAL, symbol=ref.qualname)


def _annotations_go(ctx: PythonContext, cls: ast.ClassDef) -> tuple[list[Edit], str | None]:
    """Edits removing every annotation that names `cls` outside it, or why one cannot go."""
    edits: list[Edit] = []
    inside = range(cls.lineno, (cls.end_lineno or cls.lineno) + 1)
    for node in walk_tree(ctx.tree):
        if not (isinstance(node, ast.Name) and node.id == cls.name) or node.lineno in inside:
            continue
        holder = parent(ctx, node)
        if isinstance(holder, ast.arg) and holder.annotation is node:
            start = ctx.start(holder) + len(holder.arg)
            edits.append(Edit(start, ctx.end(node), ""))
        elif isinstance(holder, ast.AnnAssign) and holder.annotation is node:
            if holder.value is None:
                edits.append(drop_statement(ctx, holder))
            else:
                edits.append(Edit(ctx.end(holder.target), ctx.start(holder.value), " = "))
        elif isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)) and holder.returns is node:
            start = ctx.start(node)
            arrow = ctx.text.rfind("->", 0, start)
            cut = len(ctx.text[:arrow].rstrip())
            edits.append(Edit(cut, ctx.end(node), ""))
        else:
            return [], f"is used at line {node.lineno} other than as an annotation"
    return edits, None
