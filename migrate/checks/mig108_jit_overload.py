"""MIG108: torch.jit._overload / _overload_method -> typing.overload (decorators kept)."""

from __future__ import annotations

import ast

from migrate.checks._edits import block_of, drop_definition, replace
from migrate.checks.base import Edit, PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

_TORCH_OVERLOADS = ("torch.jit._overload", "torch.jit._overload_method")


class JitOverload(PythonCheck):
    code = "MIG108"
    node_types = (ast.If, ast.Try)

    def hook_spellings(self) -> tuple[str, ...]:
        return ("overload",)  # a shim imports typing's `overload` on one side

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if not any(node is s for s in ctx.tree.body):
            return
        for name in _shim_names(node):
            if _shim(ctx, name) is not node:
                continue
            # `if TYPE_CHECKING: typing.overload else: torch.jit._overload`: keep typing's.
            text = "from typing import overload" + (f" as {name}" if name != "overload" else "")
            ctx.report(
                self.rule,
                node,
                f"`{name}` is TorchScript's overload on one path and typing's on the other: "
                "import `typing.overload` alone, keep the decorators",
                symbol="torch.jit._overload",
                edits=[Edit(*ctx.span(node), text)],
            )

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.role != "decorator":
            ctx.report(
                self.rule,
                ref.call or ref.node,
                f"`{ref.qualname}` outside a decorator; use `typing.overload` by hand",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        if isinstance(ref.node, ast.Name) and _shim(ctx, ref.node.id) is not None:
            return  # reported once, on the shim
        stub = ref.owner
        if self.options.get("intent") == "drop" and _implemented(ctx, stub):
            ctx.report(
                self.rule,
                ref.node,
                f"`@{ref.qualname}` marks a stub only TorchScript reads (intent drop): the stub "
                "goes, the last definition stays",
                symbol=ref.qualname,
                edits=[drop_definition(ctx, stub)],
            )
            return
        spelled, imports = _spell_overload(ctx)
        ctx.report(
            self.rule,
            ref.node,
            f"`@{ref.qualname}` only steers TorchScript: the stubs keep `typing.overload`",
            symbol=ref.qualname,
            edits=[replace(ctx, ref.node, spelled)],
            imports=imports,
        )


def is_stub(node: ast.AST | None) -> bool:
    """A def whose body is only a docstring, `...` or `pass`."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return all(
        isinstance(s, ast.Pass)
        or isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Constant)
        and (s.value.value is Ellipsis or isinstance(s.value.value, str))
        for s in node.body
    )


def _implemented(ctx: PythonContext, stub: ast.AST | None) -> bool:
    """A stub followed, in its block, by a definition of the same name that is not one."""
    if not is_stub(stub):
        return False
    block = block_of(ctx, stub)  # type: ignore[arg-type]
    if block is None:
        return False
    later = block[1][block[1].index(stub) + 1 :]
    return any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        and s.name == stub.name  # type: ignore[union-attr]
        and not is_stub(s)
        for s in later
    )


def _spell_overload(ctx: PythonContext) -> tuple[str, tuple[str, ...]]:
    scope = ctx.table.module_scope
    for name, qual in scope.imports.items():
        if qual == "typing.overload" and ctx.table.binding(name, scope) == qual:
            return name, ()
    taken = "overload" in scope.imports or "overload" in scope.locals or "overload" in scope.defs
    if not taken:
        return "overload", ("from typing import overload",)
    return ctx.spell("typing.overload")


def _sides(statement: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(statement, ast.If):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.Try) and not statement.orelse and not statement.finalbody:
        return [statement.body, *(h.body for h in statement.handlers)]
    return []


def _shim_names(statement: ast.stmt) -> set[str]:
    names = set()
    for side in _sides(statement):
        if len(side) == 1 and isinstance(side[0], ast.ImportFrom):
            names.update(a.asname or a.name for a in side[0].names)
    return names


def _shim(ctx: PythonContext, name: str) -> ast.stmt | None:
    """The module-level if/else or try/except binding `name` to typing's overload on one
    side and TorchScript's on the other."""
    for statement in ctx.tree.body:
        sources = [_imported_overload(side, name) for side in _sides(statement)]
        if (
            "typing.overload" in sources
            and any(s in _TORCH_OVERLOADS for s in sources)
            and all(s == "typing.overload" or s in _TORCH_OVERLOADS for s in sources)
        ):
            return statement
    return None


def _imported_overload(side: list[ast.stmt], name: str) -> str | None:
    """What a block that is one `from m import x as name` binds `name` to."""
    if len(side) != 1 or not isinstance(side[0], ast.ImportFrom) or side[0].level:
        return None
    for alias in side[0].names:
        if (alias.asname or alias.name) == name and len(side[0].names) == 1:
            return f"{side[0].module}.{alias.name}"
    return None
