"""The `torch.export.export(...)` call a `torch.jit.trace`, `trace_module` or `script` of a
module becomes, or the reason it cannot be written (the fix says why)."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import available_at, is_pure, parent, statement_of
from migrate.analysis.pyscope import Scope
from migrate.checks.base import PythonContext
from migrate.checks.export.apis import TRACE_MODULE_PARAMS, TRACE_ONLY, TRACE_PARAMS, bind_args
from migrate.checks.export.builder import short
from migrate.checks.export.inputs import (
    example_args,
    recorded_example,
    recorded_inputs_form,
    static_example,
    tensor_factory_call,
    tuple_display,
)
from migrate.checks.export.spelling import export_call


def not_a_module(ctx: PythonContext, expr: ast.expr, scope: Scope) -> str | None:
    """Why `expr` is known not to be an nn.Module instance (export needs one)."""
    if isinstance(expr, ast.Lambda):
        return "a lambda"
    if isinstance(expr, ast.Name):
        definition = ctx.table.definition(expr.id, scope)
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"the function `{expr.id}`"
        if isinstance(definition, ast.ClassDef):
            return f"the class `{expr.id}` (not an instance)"
    if isinstance(expr, ast.Attribute) and expr.attr == "forward":
        return "a bound method"
    if _module_function(ctx, expr, scope):
        return f"the function `{ctx.source(expr)}`"
    return None


def _module_function(ctx: PythonContext, expr: ast.expr, scope: Scope) -> bool:
    """`utils.pad` where `utils` is an imported module: a lowercase name read off a module is
    a function (an nn.Module instance kept at module level and traced from another file is
    rare, and the eager route drop takes for it still runs)."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
        return False
    if not expr.attr.islower() or not expr.value.id.islower():
        return False
    imported = ctx.table.binding(expr.value.id, scope)
    return imported is not None and imported.rpartition(".")[2].islower()


def _trace_common(ctx, call, scope, fix, params) -> dict[str, ast.expr] | None:
    bound = bind_args(call, params)
    if bound is None:
        fix.fail("arguments passed with * or ** or unknown keywords; rewrite by hand")
        return None
    module = bound.get(params[0])
    if module is None:
        fix.fail("no module to export")
        return None
    why = not_a_module(ctx, module, scope)
    if why is not None:
        fix.fail(f"it traces {why}: torch.export.export needs an nn.Module (wrap it in one)")
        return None
    dropped = [name for name in TRACE_ONLY if name in bound]
    if dropped:
        fix.note(f"dropped trace-only option{'s' * (len(dropped) > 1)} {', '.join(dropped)}")
    return bound


def _inputs(ctx, fix, scope, inputs: ast.expr | None) -> str | None:
    if inputs is None or (isinstance(inputs, ast.Constant) and inputs.value is None):
        return "()"
    args = example_args(ctx, inputs, scope)
    if args is None:  # the structure a recorded run saw decides
        args = recorded_inputs_form(ctx, fix, inputs)
    if args is None:
        fix.fail(
            f"cannot tell whether `{short(ctx.source(inputs))}` is one input or a tuple of "
            "inputs; pass `(x,)` or a tuple"
        )
    return args


def trace_export(ctx, call, scope, fix) -> str | None:
    bound = _trace_common(ctx, call, scope, fix, TRACE_PARAMS)
    if bound is None:
        return None
    kwargs = bound.get("example_kwarg_inputs")
    inputs = bound.get("example_inputs")
    if inputs is None and kwargs is None:
        fix.fail("no example inputs")
        return None
    args = _inputs(ctx, fix, scope, inputs)
    if args is None:
        return None
    if kwargs is not None:
        fix.note("example_kwarg_inputs became kwargs")
    kw_text = ctx.source(kwargs) if kwargs is not None else None
    return export_call(ctx, fix, scope, bound["func"], args, kw_text)


def trace_module_export(ctx, call, scope, fix) -> str | None:
    bound = _trace_common(ctx, call, scope, fix, TRACE_MODULE_PARAMS)
    if bound is None:
        return None
    inputs = bound.get("inputs")
    if not (
        isinstance(inputs, ast.Dict)
        and len(inputs.keys) == 1
        and isinstance(inputs.keys[0], ast.Constant)
        and inputs.keys[0].value == "forward"
    ):
        fix.fail(
            "it traces methods other than `forward` (or a dict built elsewhere): export one "
            "program per method and give ExecuTorch a dict of them (see MIG105)"
        )
        return None
    value = inputs.values[0]
    as_kwargs = bound.get("example_inputs_is_kwarg")
    if as_kwargs is not None:
        if not isinstance(as_kwargs, ast.Constant):
            fix.fail("`example_inputs_is_kwarg` is not a literal")
            return None
        if as_kwargs.value:
            fix.note("keyword example inputs became kwargs")
            return export_call(ctx, fix, scope, bound["mod"], "()", ctx.source(value))
    args = _inputs(ctx, fix, scope, value)
    if args is None:
        return None
    return export_call(ctx, fix, scope, bound["mod"], args, None)


def script_export(ctx, call, scope, uses, fix) -> str | None:
    """`torch.jit.script(m)`'s export, with the first call of its result as the example
    (where that call's inputs exist at the capture), else an example from elsewhere."""
    if not call.args or isinstance(call.args[0], ast.Starred):
        fix.fail("nothing to export")
        return None
    module = call.args[0]
    stmt = statement_of(ctx, call)
    first_call = next(
        (
            parent(ctx, u)
            for u in uses
            if isinstance(parent(ctx, u), ast.Call) and parent(ctx, u).func is u  # type: ignore[union-attr]
        ),
        None,
    )
    if first_call is None or stmt is None:
        problem = (
            "no example inputs in scope (the scripted module is not called here): export it "
            "with `torch.export.export(module, example_args)`"
        )
        return _example_elsewhere(ctx, call, module, scope, fix, problem)
    assert isinstance(first_call, ast.Call)
    factory = tensor_factory_call(ctx)
    values = [*first_call.args, *(k.value for k in first_call.keywords)]
    if (
        any(isinstance(a, ast.Starred) for a in first_call.args)
        or any(k.arg is None for k in first_call.keywords)
        or not all(is_pure(v, factory) and available_at(ctx, v, scope, stmt) for v in values)
    ):
        problem = (
            f"the call on line {first_call.lineno} uses inputs that do not exist yet where the "
            "module is scripted: export it with `torch.export.export(module, example_args)`"
        )
        return _example_elsewhere(ctx, call, module, scope, fix, problem)
    args = tuple_display(ctx, list(first_call.args))
    kwargs = None
    if first_call.keywords:
        kwargs = "{" + ", ".join(f'"{k.arg}": {ctx.source(k.value)}' for k in first_call.keywords)
        kwargs += "}"
    fix.note(f"example inputs taken from the call on line {first_call.lineno}")
    return export_call(ctx, fix, scope, module, args, kwargs)


def _example_elsewhere(ctx, call, module: ast.expr, scope: Scope, fix, problem: str) -> str | None:
    """The export of a scripted module whose calls here give no example: with the inputs a
    recorded run saw, else those its class fixes, else the fix fails with `problem` and what
    the evidence or the class said."""
    recorded = recorded_example(ctx, call, scope, fix)
    if isinstance(recorded, tuple):
        return export_call(ctx, fix, scope, module, *recorded)
    static = static_example(ctx, call, module, scope, fix)
    if static is not None and not static.startswith(" "):
        return static
    fix.fail(f"{problem}{recorded or static or ''}")
    return None
