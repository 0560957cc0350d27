"""A capture's example inputs: read from the source (trace's own rules for one input or a
tuple), fixed by the module's class (migrate/checks/_static_inputs.py), or generated from
what `migrate record` saw at run time, with the sizes it saw vary as dynamic shapes."""

from __future__ import annotations

import ast
import sys

from migrate.analysis.dataflow import is_free, is_pure, parent, value_origin
from migrate.analysis.pyscope import Scope
from migrate.checks import _static_inputs as static_inputs
from migrate.checks.base import PythonContext
from migrate.checks.export.builder import FixBuilder
from migrate.checks.export.spelling import export_call

# Calls that make a tensor, and tensor methods that give one back: an example input built
# with them is one input, not a tuple of inputs.
TENSOR_FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "randn rand randint zeros ones empty full tensor as_tensor arange linspace eye "
        "randn_like rand_like zeros_like ones_like full_like empty_like from_numpy stack cat"
    ).split()
)
TENSOR_METHODS = frozenset(
    "to cuda cpu float half double bfloat16 long int bool unsqueeze squeeze view reshape "
    "contiguous clone detach requires_grad_ permute transpose expand repeat flatten".split()
)


def is_tensor_expr(ctx: PythonContext, expr: ast.expr, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, ast.Call):
        if ctx.qualname(expr.func) in TENSOR_FACTORIES:
            return True
        func = expr.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in TENSOR_METHODS
            and is_tensor_expr(ctx, func.value, depth + 1)
        )
    if isinstance(expr, ast.Name):
        origin = value_origin(ctx, expr)
        return origin is not None and is_tensor_expr(ctx, origin, depth + 1)
    return False


def tensor_factory_call(ctx: PythonContext):
    return lambda call: ctx.qualname(call.func) in TENSOR_FACTORIES


def tuple_display(ctx: PythonContext, items: list[ast.expr]) -> str:
    texts = [ctx.source(e) for e in items]
    return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"


def example_args(ctx: PythonContext, expr: ast.expr, scope: Scope) -> str | None:
    """torch.jit.trace's example inputs as export's `args` tuple, or None when unknowable.

    Mirrors what trace does (`make_tuple`): a tensor or dict is one input, a tuple is the
    inputs, a list is turned into a tuple.
    """
    if isinstance(expr, ast.Tuple) or _builtin_call(ctx, expr, "tuple", scope):
        return ctx.source(expr)
    if isinstance(expr, ast.List):
        return tuple_display(ctx, expr.elts)
    if isinstance(expr, ast.Dict) or is_tensor_expr(ctx, expr):
        return f"({ctx.source(expr)},)"
    if isinstance(expr, ast.Name):
        origin = value_origin(ctx, expr)
        if isinstance(origin, ast.Tuple) or _builtin_call(ctx, origin, "tuple", scope):
            return expr.id
        if isinstance(origin, ast.List):
            if is_free(ctx, "tuple", scope):
                return f"tuple({expr.id})"
            return None
        if isinstance(origin, ast.Dict):
            return f"({expr.id},)"
    # Unknown shape: normalize at run time, right for a tensor, a tuple and a list alike.
    if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)) and is_pure(expr):
        if all(is_free(ctx, n, scope) for n in ("tuple", "list", "isinstance")):
            src = ctx.source(expr)
            return f"tuple({src}) if isinstance({src}, (tuple, list)) else ({src},)"
    return None


def _builtin_call(ctx: PythonContext, expr: ast.expr | None, name: str, scope: Scope) -> bool:
    """`expr` is a call of the builtin `name` (not shadowed here)."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == name
        and is_free(ctx, name, scope)
    )


# What `migrate record` saw at run time (migrate/record/hooks.py). Each helper below answers
# None, or the text unchanged, when there is no evidence for the site.


def recorded_hooks():
    """migrate.record.hooks while a scan reads evidence (imported by then), else None."""
    if "migrate.record.evidence" not in sys.modules:
        return None
    from migrate.record import hooks

    return hooks if hooks.active() is not None else None


def recorded_inputs_form(ctx: PythonContext, fix: FixBuilder, inputs: ast.expr) -> str | None:
    """Export's `args` for trace inputs the source leaves open (one input or a tuple of
    them), as the recorded run saw them; None without evidence."""
    hooks = recorded_hooks()
    if hooks is None:
        return None
    call = parent(ctx, inputs)
    while call is not None and not isinstance(call, ast.Call):
        call = parent(ctx, call)
    if call is None:
        return None
    args, note = hooks.inputs_form(ctx, inputs, call)
    if note:
        fix.note(note)
    return args


def recorded_example(ctx: PythonContext, call: ast.Call, scope: Scope, fix: FixBuilder):
    """(args, kwargs) texts generated from the recorded calls, or the suffix saying why not."""
    hooks = recorded_hooks()
    if hooks is None:
        return ""
    example, note = hooks.example_inputs(ctx, call, lambda q: fix.need(ctx.spell(q, scope)))
    if example is None:
        return f" ({note})" if note else ""
    fix.note(note)
    return example


def static_example(ctx, call, module: ast.expr, scope: Scope, fix: FixBuilder) -> str | None:
    """The export call with example inputs the module's class fixes (migrate/checks/
    _static_inputs.py), or " (why not)" as a message suffix, or None (nothing to say)."""
    if recorded_hooks() is not None:
        return None  # a run with evidence: what it recorded decides, not a guess
    found = static_inputs.for_capture(ctx, module)
    if found is None:
        return None
    if isinstance(found, str):
        return f" (the class gives no example: {found})"
    from migrate.record.hooks import generated_inputs

    spell = lambda q: fix.need(ctx.spell(q, scope))  # noqa: E731
    args, dynamic = generated_inputs(spell, [found.shape], [[0]])
    fix.note(found.note())
    export = export_call(ctx, fix, scope, module, args, None)
    return f"{export[:-1]}, dynamic_shapes={dynamic})"


def recorded_dynamic_shapes(
    ctx: PythonContext, call: ast.Call, scope: Scope, fix: FixBuilder, export: str
) -> str:
    """The export call `export` with the sizes the recorded run saw vary as `dynamic_shapes`."""
    hooks = recorded_hooks()
    if hooks is None:
        return export
    spec, note, problem = hooks.dynamic_shapes(ctx, call, lambda q: fix.need(ctx.spell(q, scope)))
    if problem:
        fix.fail(problem)
        return export
    if note:
        fix.note(note)
    if spec is None or not export.endswith(")"):
        return export
    return f"{export[:-1]}, dynamic_shapes={spec})"


def recorded_load(ctx: PythonContext, call: ast.Call, fix: FixBuilder, path: ast.expr) -> dict:
    """A load's finding data from the recorded run: the files it read and the recorded saves
    that wrote them (the planner links a run-time path to those producers)."""
    hooks = recorded_hooks()
    found = hooks.load_writers(ctx, call) if hooks is not None else None
    if found is None:
        return {}
    loaded, writers = found
    if not isinstance(path, ast.Constant):  # a literal path is linked without the run
        wrote = f"written by the save at {', '.join(writers)}" if writers else "no save recorded"
        shown = ", ".join(f"`{p}`" for p in loaded[:2]) + (" ..." if len(loaded) > 2 else "")
        fix.note(f"evidence: the recorded run loaded {shown} ({wrote})")
    return {"recorded_loaded": loaded, "recorded_writers": writers}
