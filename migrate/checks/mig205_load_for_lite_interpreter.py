"""MIG205: _load_for_lite_interpreter(path) -> executorch.runtime; calls of the result."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import parent, reaching_value
from migrate.checks.base import Edit, GroupFix, PythonCheck, PythonContext, Reference
from migrate.checks.export.apis import LITE_LOADS, bind_args
from migrate.checks.export.builder import FixBuilder
from migrate.checks.export.inputs import tuple_display
from migrate.checks.export.spelling import renamed_path, spell_from
from migrate.checks.export.uses import result_uses
from migrate.findings import FixKind

CALL_NOTE = (
    "an ExecuTorch method is not callable: use `.execute((x, ...))`, which takes a sequence "
    "of inputs and returns a list of outputs (`[0]` for a single tensor)"
)


class LoadForLiteInterpreter(PythonCheck):
    code = "MIG205"
    node_types = (ast.Call,)

    def hooked_types(self, text: str) -> tuple[type, ...]:
        return self.node_types if _mentions_lite_load(text) else ()

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        head = "`_load_for_lite_interpreter` needs the deprecated lite interpreter"
        call = ref.call
        bound = bind_args(call, ("f", "map_location")) if call is not None else None
        if call is None or ref.role != "call" or not bound or "f" not in bound:
            ctx.report(
                self.rule,
                call or ref.node,
                f"{head}; load a `.pte` with "
                '`Runtime.get().load_program(path).load_method("forward")`',
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        fix = FixBuilder()
        scope = ctx.table.scope_for(call)
        runtime = fix.need(spell_from(ctx, "executorch.runtime", "Runtime", scope))
        path = renamed_path(ctx, bound["f"], ".pte", fix)
        if "map_location" in bound:
            fix.note("map_location dropped (ExecuTorch runs where its delegates run)")
        text = f'{runtime}.get().load_program({path}).load_method("forward")'
        calls = _calls_of_result(ctx, call, scope)
        group = None
        if calls:
            # The load and the calls of what it returns are written together or not at all:
            # an ExecuTorch method is not callable.
            group = GroupFix([(self.code, call), *((self.code, c) for c in calls)])
        ctx.report(
            self.rule,
            call,
            f"{head}; loads the `.pte` through `executorch.runtime`{fix.suffix()}; {CALL_NOTE}",
            symbol=ref.qualname,
            edits=[Edit(*ctx.span(call), text)],
            imports=fix.imports,
            group=group,
        )

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        """Calls of a loaded lite module / ExecuTorch method: a person adapts them."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return
        if not ctx.memo("lite-load-text", lambda: _mentions_lite_load(ctx.text)):
            return
        origin = reaching_value(ctx, node.func)
        if not (isinstance(origin, ast.Call) and _is_lite_load(ctx, origin)):
            return
        if _simple_call(node) and ctx.qualname(origin.func) in LITE_LOADS:
            holder = parent(ctx, node)
            unpacked = isinstance(holder, ast.Assign) and isinstance(
                holder.targets[0], (ast.Tuple, ast.List)
            )
            inputs = tuple_display(ctx, list(node.args))
            text = f"{node.func.id}.execute({inputs})" + ("" if unpacked else "[0]")
            members = [(self.code, origin), (self.code, node)]
            ctx.report(
                self.rule,
                node,
                f"`{node.func.id}(...)` calls a lite-interpreter module: the ExecuTorch method "
                "runs through `.execute((x, ...))`, which returns a list of outputs; "
                + ("unpacked as before" if unpacked else "the first is taken (one output)"),
                symbol="torch.jit.mobile.LiteScriptModule.__call__",
                edits=[Edit(*ctx.span(node), text)],
                group=GroupFix(members),
                loaded_by=origin.lineno,  # its load's group: the load is the consumer site
            )
            return
        ctx.report(
            self.rule,
            node,
            f"`{node.func.id}(...)` calls a lite-interpreter / ExecuTorch module: {CALL_NOTE}",
            symbol="torch.jit.mobile.LiteScriptModule.__call__",
            fix=FixKind.ASSISTED,
        )


def _simple_call(call: ast.Call) -> bool:
    return not call.keywords and not any(isinstance(a, ast.Starred) for a in call.args)


def _calls_of_result(ctx: PythonContext, load: ast.Call, scope) -> list[ast.Call]:
    """The calls `m(x)` of the module a load returns (bound to a name in the scope)."""
    uses, problem = result_uses(ctx, load, scope)
    if problem is not None:
        return []
    found = []
    for use in uses:
        holder = parent(ctx, use)
        if isinstance(holder, ast.Call) and holder.func is use and isinstance(use, ast.Name):
            found.append(holder)
    return found


def _mentions_lite_load(text: str) -> bool:
    return "_load_for_lite_interpreter" in text or "load_method" in text


def _is_lite_load(ctx: PythonContext, call: ast.Call) -> bool:
    if ctx.qualname(call.func) in LITE_LOADS:
        return True
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "load_method"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Attribute)
        and func.value.func.attr == "load_program"
    )
