"""How the new code names what it calls: a name imported where it is free, else the
module's dotted path; the export call, the ExecuTorch lowering, artifact paths renamed."""

from __future__ import annotations

import ast
import re

from migrate.analysis.dataflow import is_free
from migrate.analysis.pyscope import Scope
from migrate.checks.base import PythonContext
from migrate.checks.export.builder import FixBuilder, short

_PATH_SUFFIX = re.compile(r"\.(?P<ext>pth?|ptl)(?P<end>'''|\"\"\"|'|\")(?P<close>\s*\)?)$")


def spell_from(ctx: PythonContext, module: str, name: str, scope: Scope) -> tuple[str, tuple]:
    """`name` with `from module import name` when that name is free, else `module.name`."""
    qual = f"{module}.{name}"
    if ctx.table.binding(name, scope) == qual:
        return name, ()
    if is_free(ctx, name, scope) and is_free(ctx, name, ctx.table.module_scope):
        return name, (f"from {module} import {name}",)
    return qual, (f"import {module}",)


def lowered(
    ctx: PythonContext, fix: FixBuilder, program: str, scope: Scope, delegate: bool = True
) -> str:
    """ExecuTorch lowering of an exported program, XNNPACK-delegated (or, for the fallback
    branch of a mobile lowering, not delegated: ExecuTorch's portable kernels)."""
    lower = fix.need(spell_from(ctx, "executorch.exir", "to_edge_transform_and_lower", scope))
    if not delegate:
        return f"{lower}({program}).to_executorch()"
    xnnpack = fix.need(
        spell_from(
            ctx,
            "executorch.backends.xnnpack.partition.xnnpack_partitioner",
            "XnnpackPartitioner",
            scope,
        )
    )
    return f"{lower}({program}, partitioner=[{xnnpack}()]).to_executorch()"


def write_bytes(ctx: PythonContext, fix: FixBuilder, path: str, data: str, scope: Scope) -> str:
    if ctx.table.binding("Path", scope) == "pathlib.Path":
        path_cls = "Path"
    else:
        path_cls = fix.need(ctx.spell("pathlib.Path", scope))
    return f"{path_cls}({path}).write_bytes({data})"


def renamed_path(ctx: PythonContext, expr: ast.expr, new_ext: str, fix: FixBuilder) -> str:
    """The source of a path whose literal ending is `.pt`/`.pth`/`.ptl`, given the new one."""
    text = ctx.source(expr)
    literal_end = isinstance(expr, (ast.Constant, ast.JoinedStr)) or (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, (ast.Div, ast.Add))
        and isinstance(expr.right, (ast.Constant, ast.JoinedStr))
    )
    if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "os.path.join" and expr.args:
        literal_end = isinstance(expr.args[-1], (ast.Constant, ast.JoinedStr)) and not (
            expr.keywords
        )
    match = _PATH_SUFFIX.search(text) if literal_end else None
    if match is None or (match.group("close") and not isinstance(expr, ast.Call)):
        fix.note(
            f"`{short(text)}` is not a literal path: if it names a file, use a `{new_ext}` name"
        )
        return text
    return text[: match.start()] + new_ext + match.group("end") + match.group("close")


def export_call(ctx, fix, scope, module: ast.expr, args: str, kwargs: str | None) -> str:
    export = fix.need(ctx.spell("torch.export.export", scope))
    fix.example = (args, kwargs)
    text = f"{export}({ctx.source(module)}, {args}"
    if kwargs:
        text += f", kwargs={kwargs}"
    return text + ")"
