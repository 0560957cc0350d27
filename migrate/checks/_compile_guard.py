"""`if not torch.jit.is_scripting():` around Python that reads tensor data (issue 27).

Such a guard kept code away from the scripting compiler that no compiler can take: a check
like `if int(index.max()) >= n: raise ...`. Folding it to `if True:` under `drop` would hand
that code to `torch.export` and `torch.compile`, which fail on it (a data-dependent guard).
`torch.compiler.is_compiling()` asks the same question of the compilers that replace
TorchScript: the check keeps running in eager mode and stays out of every compiled graph.
"""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import parent
from migrate.analysis.tensor_reads import data_read
from migrate.checks.base import PythonContext

IS_COMPILING = "torch.compiler.is_compiling"


def guarded_data_read(ctx: PythonContext, call: ast.Call) -> int | None:
    """The line where code that runs only outside TorchScript (guarded by `not call`)
    reads tensor data into Python, following `self.method(...)` calls into the class."""
    negation = parent(ctx, call)
    if not (isinstance(negation, ast.UnaryOp) and isinstance(negation.op, ast.Not)):
        return None
    test: ast.AST = negation
    holder = parent(ctx, test)
    if isinstance(holder, ast.BoolOp) and isinstance(holder.op, ast.And):
        if holder.values[0] is not test:
            return None
        test, holder = holder, parent(ctx, holder)
    if not (isinstance(holder, ast.If) and holder.test is test):
        return None
    return _reads_data(ctx, [*holder.body, *(() if test is negation else [test])], set())


def _reads_data(ctx: PythonContext, nodes: list[ast.AST], seen: set[str]) -> int | None:
    methods = _methods(ctx, nodes[0]) if nodes else {}
    for root in nodes:
        for node in walk_tree(root):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if data_read(node) is not None:
                return node.lineno
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and func.attr in methods
                and func.attr not in seen
            ):
                seen.add(func.attr)
                found = _reads_data(ctx, [methods[func.attr]], seen)
                if found is not None:
                    return found
    return None


def _methods(ctx: PythonContext, node: ast.AST) -> dict[str, ast.FunctionDef]:
    """The methods of the class around `node` (none outside a class)."""
    current = parent(ctx, node)
    while current is not None and not isinstance(current, ast.ClassDef):
        current = parent(ctx, current)
    if current is None:
        return {}
    return {s.name: s for s in current.body if isinstance(s, ast.FunctionDef)}
