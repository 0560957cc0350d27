"""An archive's extra files across the move: TorchScript's `_extra_files` take text or bytes
and load as bytes; `torch.export.save(..., extra_files=)` takes text only and
`torch.export.load` gives text back. The rewritten save decodes what is bytes, and the
rewritten load encodes what it read, so the code reading the metadata (`.decode("utf-8")`,
`json.loads`) keeps working on the same values."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent, value_origin
from migrate.checks.base import Edit, PythonContext

_SIMPLE = (ast.Assign, ast.AnnAssign, ast.Expr)
_TEXT_MAKERS = frozenset({"str", "repr", "json.dumps", "yaml.dump", "yaml.safe_dump"})


def saved_extra_files(ctx: PythonContext, extra: ast.expr) -> str:
    """What `torch.export.save(..., extra_files=)` is given for TorchScript's `extra`."""
    text = ctx.source(extra)
    made = value_origin(ctx, extra)
    if isinstance(made, ast.Dict) and all(_is_text(ctx, v) for v in made.values):
        return text  # text already
    if not isinstance(made, ast.Dict):
        text = f"({text} or {{}})"  # a parameter may be None (`extra_files=None`)
    return f'{{k: v.decode("utf-8") if isinstance(v, bytes) else v for k, v in {text}.items()}}'


def loaded_as_bytes(ctx: PythonContext, load: ast.AST, extra: ast.expr) -> Edit | None:
    """A statement after the load's, turning the text `torch.export.load` filled `extra`
    with back into the bytes the TorchScript load gave; None where no code can read `extra`
    afterwards (a literal) or the load is not a statement of its own line."""
    if not isinstance(extra, (ast.Name, ast.Attribute)):
        return None
    statement = parent(ctx, load)
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = parent(ctx, statement)
    if not isinstance(statement, _SIMPLE):
        return None
    line = ctx.index.line_text(statement.lineno)
    indent = line[: statement.col_offset]
    last = ctx.index.line_text(statement.end_lineno)  # type: ignore[arg-type]
    end = ctx.end(statement)
    line_end = ctx.index.offset(statement.end_lineno, len(last))  # type: ignore[arg-type]
    rest = ctx.text[end:line_end].strip()
    if indent.strip() or (rest and not rest.startswith("#")):
        return None  # shares its line with other code
    name = ctx.source(extra)
    update = (
        f'{name}.update({{k: v.encode("utf-8") for k, v in {name}.items() if isinstance(v, str)}})'
    )
    if not isinstance(value_origin(ctx, extra), ast.Dict):  # a parameter may be None
        update = f"if {name} is not None:\n{indent}    {update}"
    return Edit(line_end, line_end, f"\n{indent}{update}")


def _is_text(ctx: PythonContext, value: ast.expr | None) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, ast.JoinedStr):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr == "format":
            return isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)
        return (ctx.qualname(func) or "") in _TEXT_MAKERS
    return False
