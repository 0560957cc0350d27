"""A scripted module called with several call structures, exported once per call.

A test comparing a scripted module with the module itself: `jit = torch.jit.script(conv)`
then `assert_close(jit(x, ei), conv(x, ei))` and `assert_close(jit(x, ei, w), conv(x, ei,
w))`. One exported program cannot take both call structures, and the eager module in its
place would compare `conv` with itself. Each call is exported where its inputs exist
instead: `torch.export.export(conv, (x, ei)).module()(x, ei)`, so every signature the test
checked is checked again, the exported program against the eager module. The capture
statement goes.

An argument that export cannot take as input (an object of a class of the repository, not a
tensor, number or container of them) has no export counterpart: the comparison holding that
call checked TorchScript alone and is retired with it (the finding says so), never kept as
a comparison of the module with itself.

A scripted module saved in place and loaded back in the same scope (`torch.jit.save(
torch.jit.script(m), p)`, then `loaded = torch.jit.load(p)` called): the loaded program's
calls give the example, one export, save and load per call structure.
"""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import (
    assignments,
    available_at,
    block_of,
    bound_name,
    is_free,
    name_uses,
    parent,
    pos,
    statement_of,
    value_origin,
)
from migrate.analysis.pyscope import Scope
from migrate.checks._edits import delete_lines, drop_statement
from migrate.checks._selfcompare import is_comparator
from migrate.checks.base import Edit, PythonContext
from migrate.checks.export.apis import LOAD_RULE, SAVE_RULE
from migrate.checks.export.spelling import renamed_path

# Calls whose result export takes as an input (tensors, and what builds them).
_TORCH = "torch"


def export_each_call(ctx: PythonContext, capture: ast.Call, module: ast.expr, calls, fix):
    """Fill `fix` with one export per call of the capture's name, or say why not (fix.fail)."""
    scope = ctx.table.scope_for(capture)
    bound = bound_name(ctx, capture)
    if bound is None or not isinstance(parent(ctx, capture), ast.Assign):
        return fix.fail("the scripted module is not bound to a name by a statement of its own")
    stmt, _ = bound
    if not isinstance(module, ast.Name):
        return fix.fail(f"`{ctx.source(module)}` is not a plain name that can be exported again")
    later = [s for s in assignments(scope, module.id) if pos(s) > pos(stmt)]
    if later:
        return fix.fail(f"`{module.id}` is rebound on line {later[0].lineno} after the capture")
    export = fix.need(ctx.spell("torch.export.export", scope))
    retired: list[int] = []
    for call in calls:
        why = _structure_problem(call)
        if why is not None:
            return fix.fail(f"the call on line {call.lineno} {why}")
        foreign = _foreign_argument(ctx, call, scope)
        if foreign is not None:
            comparison = _comparison_statement(ctx, call)
            if comparison is None:
                return fix.fail(
                    f"the call on line {call.lineno} passes {foreign}, which export does not "
                    "take as input, outside a comparison the tool could retire"
                )
            fix.edits.append(drop_statement(ctx, comparison))
            retired.append(comparison.lineno)
            fix.note(
                f"the comparison on line {comparison.lineno} is retired: it passes {foreign}, "
                "which export does not take as input (only tensors, numbers and their "
                "containers), so only TorchScript could check it"
            )
            continue
        text = _export_of_call(ctx, export, module, call)
        fix.edits.append(Edit(*ctx.span(call.func), f"{text}.module()"))
    if len(retired) == len(calls):
        return fix.fail("no call of the scripted module can be exported")
    fix.edits.append(drop_statement(ctx, stmt))
    fix.applicability = "unsafe"
    fix.note(
        f"each call is exported where its inputs exist ({len(calls) - len(retired)} export "
        f"check(s) against `{module.id}`): one program per call structure"
    )
    return fix


def _export_of_call(ctx: PythonContext, export: str, module: ast.expr, call: ast.Call) -> str:
    """`export(module, (args,), kwargs={...})`: the program that call of the module runs."""
    args = "(" + ", ".join(ctx.source(a) for a in call.args)
    args += ",)" if len(call.args) == 1 else ")"
    text = f"{export}({ctx.source(module)}, {args}"
    if call.keywords:
        kwargs = ", ".join(f'"{k.arg}": {ctx.source(k.value)}' for k in call.keywords)
        text += f", kwargs={{{kwargs}}}"
    return text + ")"


def _structure_problem(call: ast.Call) -> str | None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return "passes * or ** arguments"
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if any(
            isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield)) for n in walk_tree(value)
        ):
            return "computes an argument in place (it would run twice)"
    return None


def _foreign_argument(ctx: PythonContext, call: ast.Call, scope: Scope) -> str | None:
    """`an object of class `C`` when an argument is built by a class outside torch."""
    for value in [*call.args, *(k.value for k in call.keywords)]:
        origin = value_origin(ctx, value) if isinstance(value, ast.Name) else None
        if not isinstance(origin, ast.Call):
            continue
        func = origin.func
        # `C(...)` or `C.make(...)`: a class (capitalized) builds the value.
        root = func.value if isinstance(func, ast.Attribute) else func
        if not isinstance(root, ast.Name) or not root.id[:1].isupper():
            continue
        qual = ctx.table.binding(root.id, scope) or root.id
        if qual.split(".")[0] == _TORCH:
            continue
        return f"`{value.id}`, an object of class `{root.id}`"  # type: ignore[attr-defined]
    return None


def _comparison_statement(ctx: PythonContext, call: ast.Call) -> ast.stmt | None:
    """The statement holding `call` when it is a comparison and nothing else."""
    stmt = statement_of(ctx, call)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        if is_comparator(ctx, stmt.value.func):
            return stmt
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, (ast.Compare, ast.Call)):
        return stmt
    return None


def round_trip(ctx: PythonContext, capture: ast.Call):
    """(save statement, save path, load statement, loaded name, loaded calls) when the
    scripted module is saved in place (`torch.jit.save(torch.jit.script(m), p)`) and the
    same scope loads `p` back into a name that is only called; else None."""
    save = _save_of(ctx, capture)
    if save is None:
        return None
    save_stmt = parent(ctx, save)
    if not isinstance(save_stmt, ast.Expr):
        return None
    path = ctx.source(save.args[1])
    scope = ctx.table.scope_for(capture)
    for stmt in _statements_after(ctx, save_stmt):
        value = getattr(stmt, "value", None)
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(value, ast.Call)
            and ctx.qualname(value.func) == "torch.jit.load"
            and len(value.args) == 1
            and not value.keywords
            and ctx.source(value.args[0]) == path
        ):
            bound = bound_name(ctx, value)
            if bound is None:
                return None
            uses, problem = name_uses(ctx, stmt, bound[1], scope)
            calls = [parent(ctx, u) for u in uses]
            if problem is not None or not uses:
                return None
            if not all(
                isinstance(c, ast.Call) and c.func is u for c, u in zip(calls, uses, strict=True)
            ):
                return None
            return save_stmt, save.args[1], stmt, bound[1], calls
    return None


def _save_of(ctx: PythonContext, capture: ast.Call) -> ast.Call | None:
    """The `torch.jit.save(x, p)` that saves the capture: in place, or through the name it
    is bound to when that save, in the next statements of its block, is the name's only use
    (`c = torch.jit.script(m)` then `torch.jit.save(c, p)`)."""
    save = parent(ctx, capture)
    if _saves(ctx, save, capture):
        return save  # type: ignore[return-value]
    bound = bound_name(ctx, capture)
    if bound is None:
        return None
    stmt, name = bound
    uses, problem = name_uses(ctx, stmt, name, ctx.table.scope_for(capture))
    if problem is not None or len(uses) != 1:
        return None
    save = parent(ctx, uses[0])
    if not _saves(ctx, save, uses[0]) or parent(ctx, save) not in _statements_after(ctx, stmt):
        return None
    return save  # type: ignore[return-value]


def _saves(ctx: PythonContext, save: ast.AST | None, value: ast.expr) -> bool:
    return (
        isinstance(save, ast.Call)
        and ctx.qualname(save.func) == "torch.jit.save"
        and len(save.args) == 2
        and save.args[0] is value
        and not save.keywords
    )


def _statements_after(ctx: PythonContext, stmt: ast.stmt) -> list[ast.stmt]:
    block = block_of(ctx, stmt)
    if block is None:
        return []
    body = block[1]
    return body[body.index(stmt) + 1 :] if stmt in body else []


def round_trip_fix(ctx: PythonContext, capture: ast.Call, module: ast.expr, found, fix):
    """One export, save and load per call structure of the loaded program: an exported
    program takes the one structure it was exported with, so a test calling the loaded
    module two ways saves and loads two programs (`conv.pt2`, `conv_1.pt2`)."""
    save_stmt, path, load_stmt, name, calls = found
    scope = ctx.table.scope_for(capture)
    structures: list[tuple[int, tuple[str | None, ...]]] = []
    chosen: list[ast.Call] = []
    for call in calls:
        why = _structure_problem(call)
        if why is not None:
            return fix.fail(f"the loaded program's call on line {call.lineno} {why}")
        values = [*call.args, *(k.value for k in call.keywords)]
        if not all(available_at(ctx, v, scope, save_stmt) for v in values):
            return fix.fail(
                f"the loaded program's call on line {call.lineno} uses inputs bound after "
                "the save: export needs them where the module is saved"
            )
        if _foreign_argument(ctx, call, scope) is not None:
            return fix.fail(
                f"the loaded program's call on line {call.lineno} passes "
                f"{_foreign_argument(ctx, call, scope)}, which export does not take as input"
            )
        key = (len(call.args), tuple(k.arg for k in call.keywords))
        if key not in structures:
            structures.append(key)
            chosen.append(call)
    names = [name] + [f"{name}_{i}" for i in range(1, len(structures))]
    for extra in names[1:]:
        if not is_free(ctx, extra, scope):
            return fix.fail(f"`{extra}` is taken: the second loaded program needs a name")
    export = fix.need(ctx.spell("torch.export.export", scope))
    save = fix.need(ctx.spell("torch.export.save", scope))
    load = fix.need(ctx.spell("torch.export.load", scope))
    indent = "\n" + ctx.index.line_text(save_stmt.lineno)[: save_stmt.col_offset]
    saves, loads = [], []
    for index, call in enumerate(chosen):
        target = renamed_path(ctx, path, ".pt2" if index == 0 else f"_{index}.pt2", fix)
        program = _export_of_call(ctx, export, module, call)
        saves.append(f"{save}({program}, {target})")
        loads.append(f"{names[index]} = {load}({target}).module()")
    if parent(ctx, capture) is not save_stmt.value:  # saved through a name: that binding goes
        fix.edits.append(delete_lines(ctx, statement_of(ctx, capture)))
    fix.edits.append(Edit(*ctx.span(save_stmt), indent.join(saves)))
    fix.edits.append(Edit(*ctx.span(load_stmt), indent.join(loads)))
    for call in calls:
        key = (len(call.args), tuple(k.arg for k in call.keywords))
        index = structures.index(key)
        if index:
            fix.edits.append(Edit(*ctx.span(call.func), names[index]))
    fix.member(SAVE_RULE, save_stmt.value)
    fix.member(LOAD_RULE, load_stmt.value)  # type: ignore[attr-defined]
    fix.applicability = "unsafe"
    fix.round_trip = True
    many = len(structures) > 1
    fix.note(
        f"example inputs taken from the loaded program's call on line {chosen[0].lineno}"
        + (
            f"; it is called with {len(structures)} structures, so each is exported, saved "
            "and loaded on its own (an exported program takes one)"
            if many
            else ""
        )
    )
    return fix


def capture_of_load(ctx: PythonContext, load: ast.Call) -> ast.Call | None:
    """The `torch.jit.script` call whose in-place save this load reads back (round_trip)."""
    stmt = statement_of(ctx, load)
    block = block_of(ctx, stmt) if stmt is not None else None
    if block is None or not load.args:
        return None
    path = ctx.source(load.args[0])
    for earlier in reversed(block[1][: block[1].index(stmt)]):
        value = getattr(earlier, "value", None)
        if (
            isinstance(earlier, ast.Expr)
            and isinstance(value, ast.Call)
            and ctx.qualname(value.func) == "torch.jit.save"
            and len(value.args) == 2
            and ctx.source(value.args[1]) == path
        ):
            saved = value.args[0]
            if isinstance(saved, ast.Call) and ctx.qualname(saved.func) == "torch.jit.script":
                return saved
            if isinstance(saved, ast.Name):  # saved through a name bound to the script
                for bound in reversed(block[1][: block[1].index(earlier)]):
                    capture = getattr(bound, "value", None)
                    if (
                        isinstance(bound, ast.Assign)
                        and isinstance(capture, ast.Call)
                        and ctx.qualname(capture.func) == "torch.jit.script"
                        and bound_name(ctx, capture) == (bound, saved.id)
                        and _save_of(ctx, capture) is value
                    ):
                        return capture
    return None
