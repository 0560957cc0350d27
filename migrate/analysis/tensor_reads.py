"""Python reading a tensor's data: what `torch.export` and `torch.compile` specialize on or
fail at, asked by the checks (a guard that keeps such code out of a compiler) and by the
facts (what a captured `forward` reaches)."""

from __future__ import annotations

import ast

_DATA_READS = frozenset({"item", "tolist", "numpy"})
_CASTS = frozenset({"int", "float", "bool"})
_SHAPES = frozenset({"size", "dim", "numel", "stride", "ndimension"})  # known while tracing


def data_read(node: ast.AST) -> str | None:
    """`x.item()`, `x.tolist()`, `int(x.max())`, `int(x[0])`: Python reading tensor data,
    which export and torch.compile specialize on or fail at (`int(x.size(0))` reads a shape,
    known while tracing); its spelling, or None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _DATA_READS and not node.args:
        return f"{func.attr}()"
    if (
        isinstance(func, ast.Name)
        and func.id in _CASTS
        and len(node.args) == 1
        and isinstance(node.args[0], (ast.Call, ast.Subscript))
        and getattr(getattr(node.args[0], "func", None), "attr", None) not in _SHAPES
    ):
        return f"{func.id}(...)"
    return None
