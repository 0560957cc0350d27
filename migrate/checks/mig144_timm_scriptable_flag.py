"""MIG144: `scriptable=True` switches: timm's (reported: they also pick other layer
implementations) and, under intent drop, a repository function's own flag that only turns on
`torch.jit` (removed)."""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import parent
from migrate.checks import _wrappers as wr
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

WHY = "makes timm pick layers `torch.jit.script` can compile"
# timm.layers.create_act: get_act_fn / get_act_layer return the memory-efficient autograd
# activations only when neither `scriptable` nor `exportable` is set (read in timm 1.0).
OTHER_LAYERS = (
    "not removed: it also selects other layer implementations (timm's memory-efficient "
    "activations run only without it), so removing it changes what runs and a test comparing "
    "the two would compare one with itself; `exportable=True` keeps these layers for "
    "torch.export"
)
FLAG = "scriptable"


class TimmScriptableFlag(PythonCheck):
    code = "MIG144"
    prefilter = (r"scriptable",)
    node_types = (ast.Call,)
    hook_words = ("scriptable",)  # the keyword it tests for

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        if ref.role != "call" or call is None:
            ctx.report(
                self.rule,
                ref.node,
                f"`set_scriptable` used indirectly: it {WHY}; {OTHER_LAYERS}",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        mode = wr.bind(call, ("mode",)).get("mode")
        head = f"`set_scriptable({ctx.source(mode) if mode is not None else ''})` {WHY}"
        where = ""
        if isinstance(parent(ctx, call), ast.withitem):
            where = " (to drop it, drop the `with` and keep its body)"
        ctx.report(
            self.rule,
            call,
            f"{head}; {OTHER_LAYERS}{where}",
            symbol=ref.qualname,
            fix=FixKind.ASSISTED,
        )

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        assert isinstance(node, ast.Call)
        flag = wr.keyword(node, FLAG)
        if flag is None or wr.is_literal(flag.value, False):
            return
        qual = ctx.qualname(node.func)
        if qual not in self.rule.extra["calls"]:
            if self.options.get("intent") == "drop" and wr.is_literal(flag.value, True):
                self._own_switch(node, flag, ctx)
            return
        name = qual.rsplit(".", 1)[-1]
        head = f"`{name}(scriptable=...)` {WHY}"
        ctx.report(self.rule, flag, f"{head}; {OTHER_LAYERS}", symbol=qual, fix=FixKind.ASSISTED)

    def _own_switch(self, call: ast.Call, flag: ast.keyword, ctx: PythonContext) -> None:
        """`build(..., scriptable=True)` of a function of this module: removed when the
        parameter only turns on `torch.jit` calls, else reported with what else it does."""
        func = _module_function(ctx, call.func)
        if func is None:
            return
        name = func.name
        problem = _other_use(ctx, func)
        head = f"`{name}(scriptable=True)`"
        if problem is None:
            ctx.report(
                self.rule,
                flag,
                f"{head} only turns on `torch.jit` in `{name}` (line {func.lineno}) and the "
                "repository drops TorchScript (intent drop); removed",
                symbol=f"{name}.scriptable",
                fix=FixKind.AUTO,
                edits=[wr.drop_argument(ctx, call, flag)],
            )
            return
        ctx.report(
            self.rule,
            flag,
            f"{head}: not removed: {problem}",
            symbol=f"{name}.scriptable",
            fix=FixKind.ASSISTED,
        )


def _module_function(ctx: PythonContext, callee: ast.expr) -> ast.FunctionDef | None:
    """The module-level function of this file that a plain-name call reaches (the last
    definition of that name), if it takes a `scriptable` parameter."""
    if not isinstance(callee, ast.Name):
        return None
    found = None
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == callee.id:
            found = stmt
    if found is None:
        return None
    args = found.args
    if FLAG not in [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]:
        return None
    return found  # type: ignore[return-value]


def _default(func: ast.FunctionDef) -> ast.expr | None:
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(
        positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
    ):
        if arg.arg == FLAG:
            return default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == FLAG:
            return kw_default
    return None


def _other_use(ctx: PythonContext, func: ast.FunctionDef) -> str | None:
    """Why the flag does more than turn on `torch.jit` in `func` (None when it does not)."""
    default = _default(func)
    if not (wr.is_literal(default, False) or wr.is_literal(default, None)):
        return f"`{FLAG}` of `{func.name}` has no False default, so the call needs it"
    for node in walk_tree(func):
        if not (isinstance(node, ast.Name) and node.id == FLAG):
            continue
        if isinstance(node.ctx, ast.Store):
            return f"`{func.name}` assigns `{FLAG}` (line {node.lineno})"
        guard = parent(ctx, node)
        negated = isinstance(guard, ast.UnaryOp) and isinstance(guard.op, ast.Not)
        test = guard if negated else node
        holder = parent(ctx, guard) if negated else guard
        if isinstance(holder, ast.If) and holder.test is test and not negated:
            if not holder.orelse and all(_jit_only(ctx, s) for s in holder.body):
                continue
        elif isinstance(holder, ast.IfExp) and holder.test is test:
            if _jit_call(ctx, holder.orelse if negated else holder.body):
                continue
        elif isinstance(guard, ast.keyword | ast.Call):
            call = guard if isinstance(guard, ast.Call) else parent(ctx, guard)
            callee = ctx.qualname(call.func) if isinstance(call, ast.Call) else None
            return (
                f"`{func.name}` passes `{FLAG}` on to `{callee or 'another call'}` "
                f"(line {node.lineno}), which may select another implementation with it"
            )
        return (
            f"in `{func.name}` (line {node.lineno}) `{FLAG}` also steers code other than "
            "`torch.jit`, so it may select another implementation"
        )
    return None


def _jit_call(ctx: PythonContext, expr: ast.expr | None) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    qual = ctx.qualname(expr.func) or ""
    return qual.startswith("torch.jit.")


def _jit_only(ctx: PythonContext, stmt: ast.stmt) -> bool:
    """`x = torch.jit.script(x)`, `return torch.jit.trace(...)`, a bare `torch.jit` call."""
    if isinstance(stmt, ast.Assign | ast.Return | ast.Expr):
        return _jit_call(ctx, stmt.value)
    return False
