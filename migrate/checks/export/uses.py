"""Every read of a capture's result kept working once it holds an `ExportedProgram`: calls
go through `.module()`, saves become `torch.export.save`, lite-interpreter saves and
`optimize_for_mobile` become ExecuTorch lowering and `.pte` writes. A read the scheme does
not cover fails the fix, naming the line."""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import (
    alternative_bindings,
    assignments,
    bound_name,
    is_free,
    name_uses,
    parent,
    pos,
)
from migrate.analysis.pyscope import Scope
from migrate.checks.base import Edit, PythonContext
from migrate.checks.export.apis import (
    LITE_SAVE_RULE,
    LITE_SAVES,
    MOBILE_RULE,
    OPTIMIZE_FOR_MOBILE,
    SAVE_RULE,
    bind_args,
)
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.extra_files import saved_extra_files
from migrate.checks.export.inputs import recorded_hooks
from migrate.checks.export.spelling import lowered, renamed_path, write_bytes


def result_uses(
    ctx: PythonContext, value: ast.expr, scope: Scope
) -> tuple[list[ast.expr], str | None]:
    """The expressions that read a value: the reads of the name it is bound to, the value
    itself when used in place, nothing when discarded."""
    holder = parent(ctx, value)
    if isinstance(holder, ast.Expr):
        return [], None
    bound = bound_name(ctx, value)
    if bound is not None:
        stmt, name = bound
        uses, problem = name_uses(ctx, stmt, name, scope)
        return list(uses), problem
    if isinstance(holder, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return [], "its result is stored in an attribute or unpacked; the tool cannot follow it"
    return [value], None


def _text_of(ctx: PythonContext, node: ast.expr, capture: ast.expr | None, new: str) -> str:
    return new if node is capture else ctx.source(node)


def program_use(
    ctx: PythonContext,
    use: ast.expr,
    capture: ast.expr | None,
    capture_text: str,
    scope: Scope,
    fix: FixBuilder,
) -> bool:
    """Edits keeping one read of an ExportedProgram working; True when the edit replaced
    the span of `capture` (an in-place use), so the capture edit must not be added."""
    holder = parent(ctx, use)
    value = _text_of(ctx, use, capture, capture_text)
    if isinstance(holder, ast.Call) and holder.func is use:
        fix.edits.append(Edit(ctx.end(use), ctx.end(use), ".module()"))
        return False
    if _mobile_fallback(ctx, use) is not None:
        return False  # `mobile = traced` beside `mobile = optimize_for_mobile(traced)`: mobile_fix
    if isinstance(holder, ast.Assert) and holder.test is use:
        return False  # `assert trace(m, x)` checks that it captures: so does the export
    if isinstance(holder, ast.Call) and holder.args and holder.args[0] is use:
        qual = ctx.qualname(holder.func)
        if qual == "torch.jit.save":
            fix.member(SAVE_RULE, holder)
            return jit_save_edits(ctx, holder, scope, fix)
        if qual in ("torch.export.save", "executorch.exir.to_edge_transform_and_lower"):
            return False
        if qual == OPTIMIZE_FOR_MOBILE:
            mobile_fix(ctx, holder, value, scope, fix)
            return True
    if isinstance(holder, ast.Attribute):
        method = parent(ctx, holder)
        if isinstance(method, ast.Call) and method.func is holder:
            if holder.attr == "save":
                fix.member(SAVE_RULE, method)
                return method_save(ctx, method, value, scope, fix)
            if holder.attr in LITE_SAVES:
                program = lowered(ctx, fix, value, scope)
                lite_save(ctx, method, program, scope, fix)
                return True
    if isinstance(holder, ast.Call) and _lowered_in_callee(ctx, use, holder, capture, fix):
        return False  # the recorded run saw the callee lower it: it takes the program
    return bool(fix.fail(unsupported_use(ctx, use, holder)).auto)


def unsupported_use(ctx: PythonContext, use: ast.expr, holder: ast.AST | None) -> str:
    line = getattr(use, "lineno", 0)
    while isinstance(holder, (ast.Tuple, ast.List)):
        holder = parent(ctx, holder)
    if isinstance(holder, ast.Call) and holder.func is use:
        what = "called"
    elif isinstance(holder, ast.Return):
        what = "returned"
    elif isinstance(holder, ast.Attribute):
        what = f"used through `.{holder.attr}`"
    elif isinstance(holder, ast.Call):
        what = f"passed to `{short(ctx.source(holder.func))}`"
    elif isinstance(holder, (ast.Assign, ast.AnnAssign)):
        what = "assigned to another name"
    else:
        what = "used in a way the tool does not follow"
    return (
        f"the result is {what} (line {line}); after the migration it is an ExportedProgram: "
        "decide there between the program and `.module()`"
    )


def jit_save_edits(ctx: PythonContext, call: ast.Call, scope: Scope, fix: FixBuilder) -> bool:
    bound = bind_args(call, ("m", "f", "_extra_files"))
    if bound is None or "f" not in bound:
        fix.fail(
            f"`torch.jit.save` (line {call.lineno}) takes arguments the tool cannot map: rewrite that save by hand"
        )
        return False
    fix.edits.append(Edit(*ctx.span(call.func), fix.need(ctx.spell("torch.export.save", scope))))
    path = bound["f"]
    new_path = renamed_path(ctx, path, ".pt2", fix)
    if new_path != ctx.source(path):
        fix.edits.append(Edit(*ctx.span(path), new_path))
    extra = bound.get("_extra_files")
    if extra is not None:  # keyword-only in torch.export.save, and text only
        keyword = next((kw for kw in call.keywords if kw.value is extra), None)
        start = ctx.start(keyword if keyword is not None else extra)
        fix.edits.append(
            Edit(start, ctx.end(extra), f"extra_files={saved_extra_files(ctx, extra)}")
        )
    return False


def method_save(
    ctx: PythonContext, call: ast.Call, value: str, scope: Scope, fix: FixBuilder
) -> bool:
    bound = bind_args(call, ("f", "_extra_files"))
    if bound is None or "f" not in bound:
        fix.fail(
            f"`.save()` (line {call.lineno}) takes arguments the tool cannot map: rewrite that save by hand"
        )
        return True
    save = fix.need(ctx.spell("torch.export.save", scope))
    text = f"{save}({value}, {renamed_path(ctx, bound['f'], '.pt2', fix)}"
    if "_extra_files" in bound:
        text += f", extra_files={saved_extra_files(ctx, bound['_extra_files'])}"
    fix.edits.append(Edit(*ctx.span(call), text + ")"))
    return True


def lite_save(
    ctx: PythonContext, call: ast.Call, program: str, scope: Scope, fix: FixBuilder
) -> None:
    """`x._save_for_lite_interpreter(path)` -> write the ExecuTorch buffer to a .pte."""
    assert isinstance(call.func, ast.Attribute)
    if call.func.attr == "_save_for_lite_interpreter":
        fix.member(LITE_SAVE_RULE, call)
    if call.func.attr == "_save_to_buffer_for_lite_interpreter":
        if call.args or call.keywords:
            fix.fail(_lite_options(call, 0))
            return
        fix.edits.append(Edit(*ctx.span(call), f"{program}.buffer"))
        return
    bound = bind_args(call, ("f", "_extra_files"))
    extra = (bound or {}).get("_extra_files")
    if bound is None or "f" not in bound or any(kw.arg is None for kw in call.keywords):
        fix.fail(_lite_options(call, 1))
        return
    path = renamed_path(ctx, bound["f"], ".pte", fix)
    text = write_bytes(ctx, fix, path, f"{program}.buffer", scope)
    if extra is not None:
        text = _with_side_car(ctx, call, fix, scope, path, extra, text)
        if text is None:
            return
    fix.edits.append(Edit(*ctx.span(call), text))


def _with_side_car(
    ctx: PythonContext, call: ast.Call, fix: FixBuilder, scope: Scope, path: str, extra, write: str
) -> str | None:
    """A lite save's `_extra_files` (metadata the archive carried) written beside the `.pte`,
    one file each: `model.pte.config.txt` for the entry `config.txt`. Only where the save is
    a statement of its own and its path is a plain name, constant or `str(name)`."""
    holder = parent(ctx, call)
    plain = isinstance(call.args[0] if call.args else None, (ast.Name, ast.Constant)) or (
        isinstance(arg := (call.args[0] if call.args else None), ast.Call)
        and isinstance(arg.func, ast.Name)
        and arg.func.id == "str"
        and len(arg.args) == 1
        and isinstance(arg.args[0], (ast.Name, ast.Attribute))
    )
    if not isinstance(holder, ast.Expr) or not plain:
        fix.fail(_lite_options(call, 1))
        return None
    names = [n for n in ("extra_name", "extra_data") if is_free(ctx, n, scope)]
    if len(names) != 2:
        fix.fail(_lite_options(call, 1))
        return None
    path_cls = write.split("(", 1)[0]
    indent = ctx.index.line_text(holder.lineno)[: holder.col_offset]
    literal = len(path) > 1 and path[0] in "\"'" and path[-1] == path[0]
    beside = (
        f"{path[:-1]}.{path[-1]} + extra_name" if literal else f'str({path}) + "." + extra_name'
    )
    fix.note(f"`_extra_files` written beside the `.pte` (`{{path}}.{{name}}`, line {call.lineno})")
    return (
        f"{write}\n{indent}for extra_name, extra_data in {ctx.source(extra)}.items():\n"
        f"{indent}    {path_cls}({beside}).write_bytes(\n"
        f"{indent}        extra_data if isinstance(extra_data, bytes) else extra_data.encode()\n"
        f"{indent}    )"
    )


def _lite_options(call: ast.Call, positional: int) -> str:
    """Why a lite-interpreter save cannot become a .pte write, naming the call's line and
    what blocks it (the finding may sit on the capture, lines away)."""
    assert isinstance(call.func, ast.Attribute)
    blocking = [f"`{kw.arg}=`" if kw.arg else "`**`" for kw in call.keywords]
    blocking += ["`*`" for a in call.args if isinstance(a, ast.Starred)]
    extra = sum(not isinstance(a, ast.Starred) for a in call.args) - positional
    if extra > 0:
        more = " more" if positional else ""
        blocking.append(f"{extra}{more} positional argument{'s' * (extra != 1)}")
    elif not call.args and positional:
        blocking.append("no path")
    return (
        f"`{call.func.attr}` (line {call.lineno}) passes {', '.join(blocking)}, which an "
        "ExecuTorch `.pte` write has no place for: rewrite that save by hand"
    )


def mobile_fix(
    ctx: PythonContext, call: ast.Call, program: str, scope: Scope, fix: FixBuilder
) -> None:
    """`optimize_for_mobile(ep)` and the lite-interpreter saves of its result."""
    fix.member(MOBILE_RULE, call)
    bound = bind_args(
        call, ("script_module", "optimization_blocklist", "preserved_methods", "backend")
    )
    if bound is None:
        fix.fail(
            f"`optimize_for_mobile` (line {call.lineno}) takes arguments the tool cannot map: rewrite that call by hand"
        )
        return
    backend = bound.get("backend")
    if backend is not None and not (
        isinstance(backend, ast.Constant) and str(backend.value).lower() == "cpu"
    ):
        fix.fail("a non-CPU mobile backend: pick the matching ExecuTorch partitioner by hand")
        return
    if bound.get("preserved_methods") is not None:
        fix.fail("preserved methods need one exported program each (see MIG105)")
        return
    if "optimization_blocklist" in bound:
        fix.note("optimization_blocklist dropped (XNNPACK lowering decides)")
    lowering = lowered(ctx, fix, program, scope)
    holder = parent(ctx, call)
    if isinstance(holder, ast.Attribute):
        method = parent(ctx, holder)
        if isinstance(method, ast.Call) and method.func is holder and holder.attr in LITE_SAVES:
            lite_save(ctx, method, lowering, scope, fix)
            return
    if isinstance(holder, ast.Expr):
        fix.edits.append(Edit(*ctx.span(call), lowering))
        return
    bound_to = bound_name(ctx, call)
    if bound_to is None:
        fix.fail(
            unsupported_use(ctx, call, holder).replace("ExportedProgram", "ExecuTorch program")
        )
        return
    stmt, name = bound_to
    fallbacks = alternative_bindings(ctx, stmt, name) or []
    for other in fallbacks:
        if _mobile_fallback(ctx, other.value) is not call:
            fix.fail(
                f"`{name}` is bound on another path (line {other.lineno}) to something other "
                f"than the module `optimize_for_mobile` lowers"
            )
            return
    uses, problem = name_uses(ctx, stmt, name, scope, fallbacks)
    if problem is not None:
        fix.fail(problem)
        return
    fix.edits.append(Edit(*ctx.span(call), lowering))
    for other in fallbacks:
        plain = lowered(ctx, fix, ctx.source(other.value), scope, delegate=False)
        fix.edits.append(Edit(*ctx.span(other.value), plain))
        fix.note(
            f"the fallback on line {other.lineno} lowers without XNNPACK (portable kernels), "
            "so both paths write an ExecuTorch program"
        )
    for use in uses:
        holder = parent(ctx, use)
        method = parent(ctx, holder) if isinstance(holder, ast.Attribute) else None
        if (
            isinstance(holder, ast.Attribute)
            and isinstance(method, ast.Call)
            and method.func is holder
            and holder.attr in LITE_SAVES
        ):
            lite_save(ctx, method, name, scope, fix)
        else:
            fix.fail(
                unsupported_use(ctx, use, holder).replace(
                    "an ExportedProgram: decide there between the program and `.module()`",
                    "an ExecuTorch program manager: only its `.buffer` is kept",
                )
            )
            return


def _mobile_fallback(ctx: PythonContext, value: ast.expr) -> ast.Call | None:
    """The `optimize_for_mobile(x)` call that `name = x` stands in for on another path:
    `try: name = optimize_for_mobile(x)` / `except ...: name = x` (or `if`/`else`)."""
    holder = parent(ctx, value)
    if not (isinstance(value, ast.Name) and isinstance(holder, ast.Assign)):
        return None
    bound = bound_name(ctx, value)
    if bound is None:
        return None
    for other in alternative_bindings(ctx, bound[0], bound[1]) or []:
        call = other.value
        if (
            isinstance(call, ast.Call)
            and ctx.qualname(call.func) == OPTIMIZE_FOR_MOBILE
            and call.args
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == value.id
        ):
            return call
    return None


def lowering_with_fallback(ctx: PythonContext, node: ast.Name) -> ast.Call | None:
    """The `optimize_for_mobile(x)` call whose value `node` reads, when another path binds
    the name to `x` itself instead (one binding: both become ExecuTorch programs)."""
    scope = ctx.table.scope_for(node)
    for stmt in reversed([s for s in assignments(scope, node.id) if pos(s) < pos(node)]):
        fallbacks = alternative_bindings(ctx, stmt, node.id)
        if not fallbacks:
            continue
        for binding in (stmt, *fallbacks):
            if isinstance(binding.value, ast.Call) and ctx.qualname(binding.value.func) == (
                OPTIMIZE_FOR_MOBILE
            ):
                lowering = binding
                break
        else:
            return None
        others = [b for b in (stmt, *fallbacks) if b is not lowering]
        uses, problem = name_uses(ctx, lowering, node.id, scope, others)  # type: ignore[arg-type]
        if problem is None and any(u is node for u in uses):
            return lowering.value  # type: ignore[return-value]
        return None
    return None


def _only_lite_saved(ctx: PythonContext, func: ast.AST, name: str) -> str | None:
    """None when `name`, a parameter of `func`, is read there only as the module of lite
    saves (so an exported program passed in does as well); else why not."""
    args = getattr(func, "args", None)
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)] if args else []
    if name not in params:
        return f"`{name}` is not a parameter of the function holding the save"
    for node in walk_tree(func):
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        holder = parent(ctx, node)
        method = parent(ctx, holder) if isinstance(holder, ast.Attribute) else None
        if not (
            isinstance(node.ctx, ast.Load)
            and isinstance(holder, ast.Attribute)
            and holder.attr in LITE_SAVES
            and isinstance(method, ast.Call)
            and method.func is holder
        ):
            return f"`{name}` is also used on line {node.lineno}, where a program may not do"
    return None


def _function_of(ctx: PythonContext, node: ast.AST | None) -> ast.AST | None:
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parent(ctx, node)
    return node


def recorded_program_save(ctx: PythonContext, call: ast.Call, fix: FixBuilder) -> dict:
    """MIG204 on `p._save_for_lite_interpreter(path)` where `p` is a parameter: the run saw
    it save only results of captures (exported programs once migrated), so the save lowers
    `p` as a program; the finding data names those captures for the planner."""
    value = call.func.value  # type: ignore[attr-defined]
    hooks = recorded_hooks()
    if hooks is None or not isinstance(value, ast.Name):
        return {}
    captures, note = hooks.saved_programs(ctx, call)
    if captures is None:
        if note:
            fix.problem = f"{fix.problem}; {note}"
        return {}
    problem = _only_lite_saved(ctx, _function_of(ctx, call), value.id)  # type: ignore[arg-type]
    if problem is not None:
        fix.problem = f"{fix.problem}; {note}, but {problem}"
        return {}
    fix.problem = None
    scope = ctx.table.scope_for(call)
    lite_save(ctx, call, lowered(ctx, fix, value.id, scope), scope, fix)
    fix.note(f"{note} (an exported program once migrated)")
    return {"recorded_programs": captures}


def _lowered_in_callee(ctx: PythonContext, use: ast.expr, holder: ast.Call, capture, fix) -> bool:
    """A capture's result passed to a function of this file that the run saw lower it with a
    lite save, and that reads that parameter only there: the program does as well."""
    hooks = recorded_hooks()
    if hooks is None or capture is None or not isinstance(holder.func, ast.Name):
        return False
    if use not in holder.args or any(isinstance(a, ast.Starred) for a in holder.args):
        return False
    callee = ctx.table.definition(holder.func.id, ctx.table.scope_for(holder))
    params = getattr(getattr(callee, "args", None), "args", None)
    if params is None or holder.args.index(use) >= len(params):
        return False
    param = params[holder.args.index(use)].arg
    recorded = {id(s) for s in hooks.lowered_by(ctx, capture)}
    saves = [  # the callee's lite saves whose lines are those the run saw save this result
        node
        for node in walk_tree(callee)  # type: ignore[arg-type]
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_save_for_lite_interpreter"
        and id(hooks.site(ctx, node, hooks.LITE_SAVES).site) in recorded
    ]
    if not saves or _only_lite_saved(ctx, callee, param) is not None:
        return False
    where = ", ".join(f"line {node.lineno}" for node in saves)
    fix.note(f"evidence: `{holder.func.id}` lowers it as a program (the lite save at {where})")
    return True
