"""Where an exported program would be fixed to what the capture's example showed: a later
call with another structure or shape than the example, sizes a trace followed (made
`Dim.AUTO`), tensor data read into Python in `forward`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import value_origin
from migrate.analysis.pyscope import Scope
from migrate.analysis.tensor_reads import data_read
from migrate.checks.base import PythonContext
from migrate.checks.export.apis import TRACE_MODULE_PARAMS, TRACE_PARAMS, bind_args
from migrate.checks.export.builder import FixBuilder
from migrate.checks.export.inputs import is_tensor_expr

_SHAPED_FACTORIES = frozenset(
    f"torch.{n}" for n in "randn rand zeros ones empty full randint".split()
)


def example_signature(ctx: PythonContext, call: ast.Call, qual: str | None) -> Signature | None:
    """The positional and keyword arguments the capture saw, where the source shows them."""
    if qual == "torch.jit.trace":
        bound = bind_args(call, TRACE_PARAMS) or {}
        inputs, kwargs = bound.get("example_inputs"), bound.get("example_kwarg_inputs")
    elif qual == "torch.jit.trace_module":
        bound = bind_args(call, TRACE_MODULE_PARAMS) or {}
        forward = bound.get("inputs")
        inputs = forward.values[0] if isinstance(forward, ast.Dict) and forward.values else None
        kwargs = None
    else:
        return None  # script: the first call is the example
    keywords: frozenset[str] = frozenset()
    if isinstance(kwargs, ast.Dict):
        if not all(isinstance(k, ast.Constant) for k in kwargs.keys):
            return None
        keywords = frozenset(k.value for k in kwargs.keys)  # type: ignore[union-attr]
    elif kwargs is not None:
        return None
    if inputs is None:
        return Signature([], keywords)
    if isinstance(inputs, ast.Name):
        unseen = Signature([], keywords, spread=inputs.id)
    else:
        unseen = None
    origin = value_origin(ctx, inputs) if isinstance(inputs, ast.Name) else inputs
    if isinstance(origin, (ast.Tuple, ast.List)):
        return Signature(list(origin.elts), keywords, spread=getattr(inputs, "id", None))
    if is_tensor_expr(ctx, inputs):
        return Signature([inputs], keywords)
    return unseen


@dataclass
class Signature:
    """The arguments of a call (or of the capture's example) as the source shows them."""

    args: list[ast.expr]
    keywords: frozenset[str]
    values: dict[str, ast.expr] = field(default_factory=dict)
    spread: str | None = None  # the name holding the example tuple: `m(*inputs)` matches it

    @classmethod
    def of(cls, call: ast.Call) -> Signature | None:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        values = {k.arg: k.value for k in call.keywords if k.arg}
        return cls(list(call.args), frozenset(values), values)


def differing_call(
    ctx: PythonContext, capture: ast.Call, qual: str | None, calls: list[ast.Call]
) -> str | None:
    """Why a later call of the captured name would not match the exported signature."""
    example = example_signature(ctx, capture, qual)
    if qual == "torch.jit.script" and calls:
        example, calls = Signature.of(calls[0]), calls[1:]
    if example is None:
        return None
    for other in calls:
        star = other.args[0] if len(other.args) == 1 else None
        if (
            isinstance(star, ast.Starred)
            and isinstance(star.value, ast.Name)
            and star.value.id == example.spread
            and not other.keywords
            and not example.keywords
        ):
            continue  # `traced(*inputs)` with the very tuple it was traced with
        if example.spread is not None and not example.args:
            return None  # a tuple the source does not show: nothing to compare
        seen = Signature.of(other)
        if seen is None:
            return f"the call on line {other.lineno} passes * or ** arguments"
        if len(seen.args) != len(example.args):
            return (
                f"the call on line {other.lineno} passes {len(seen.args)} positional "
                f"argument(s), the example {len(example.args)}"
            )
        if seen.keywords != example.keywords:
            names = ", ".join(sorted(seen.keywords ^ example.keywords))
            return f"the call on line {other.lineno} differs in keywords ({names})"
        for mine, theirs in zip(seen.args, example.args, strict=True):
            a, b = _shape(ctx, mine), _shape(ctx, theirs)
            if a is None or b is None or a == b:
                continue
            if None not in a and None not in b:
                return (
                    f"the call on line {other.lineno} passes shape {a}, the example {b} "
                    "(export specializes to the example's shapes)"
                )
            if len(a) != len(b):
                return (
                    f"the call on line {other.lineno} passes a {len(a)}-dimensional input, "
                    f"the example a {len(b)}-dimensional one (an exported program keeps the "
                    "example's number of dimensions)"
                )
            if any(t == 1 and m not in (None, 1) for m, t in zip(a, b, strict=True)):
                return (
                    f"the call on line {other.lineno} passes a size other than 1 where the "
                    "example's axis has size 1 (export specializes axes of size 1)"
                )
    return None


def shapes_followed(
    ctx, capture: ast.Call, scope: Scope, fix: FixBuilder, export: str, calls, every: bool = False
) -> str:
    """A trace records `x.size(0)` as an operation: its module runs on inputs of other shapes
    (another graph, another batch). export fixes the example's sizes, so where a later call
    passes other tensors than the example (or, `every`, where the calls cannot be seen: the
    module is handed on), every axis of each positional input becomes `Dim.AUTO` (dynamic
    where the program allows, the rest kept as traced)."""
    example = example_signature(ctx, capture, "torch.jit.trace")
    if example is None or not example.args or example.keywords:
        return export
    shown = [ctx.source(a) for a in example.args]
    other = next(
        (
            c
            for c in calls
            if c.args and [ctx.source(a) for a in c.args] != shown and not c.keywords
        ),
        None,
    )
    if other is not None and any(isinstance(a, ast.Starred) for a in other.args):
        return export
    if other is None and not every:
        return export
    auto = fix.need(ctx.spell("torch.export.Dim", scope))
    inputs = f"({shown[0]},)" if len(shown) == 1 else f"({', '.join(shown)})"
    if fix.example is not None and fix.example[0].isidentifier():
        inputs = fix.example[0]  # the name export is given: its tensors are not made again
    spec = f"tuple(dict.fromkeys(range(t.dim()), {auto}.AUTO) for t in {inputs})"
    where = (
        f"the call on line {other.lineno} passes other inputs than the example"
        if other is not None
        else "its calls are out of sight"
    )
    fix.note(f"{where}: every axis is `Dim.AUTO`, as the trace followed their shapes")
    return f"{export[:-1]}, dynamic_shapes={spec})"


def _shape(ctx: PythonContext, expr: ast.expr) -> tuple[int | None, ...] | None:
    """The shape of a tensor made by `torch.randn(2, c, 3)` and the like: its sizes, None
    where one is not a literal."""
    origin = value_origin(ctx, expr) if isinstance(expr, ast.Name) else expr
    if not isinstance(origin, ast.Call) or ctx.qualname(origin.func) not in _SHAPED_FACTORIES:
        return None
    sizes = origin.args
    if ctx.qualname(origin.func) == "torch.randint":
        sizes = [a for a in origin.args if isinstance(a, ast.Tuple)][:1]
    elif ctx.qualname(origin.func) == "torch.full":
        sizes = origin.args[:1]
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = sizes[0].elts
    if not sizes or any(isinstance(s, ast.Starred) for s in sizes):
        return None
    return tuple(
        s.value if isinstance(s, ast.Constant) and type(s.value) is int else None for s in sizes
    )


def export_limit(ctx: PythonContext, module: ast.expr | None, scope: Scope) -> str | None:
    """A read of tensor data into Python in the captured class's forward (same file; the
    planner follows other files: facts.blockers), which export cannot trace."""
    forward = _forward_of(ctx, module, scope)
    if forward is None:
        return None
    for node in walk_tree(forward):
        read = data_read(node)
        if read is not None:
            return f"`{read}` in `forward` (line {node.lineno}) reads tensor data into Python"
    return None


def _forward_of(ctx: PythonContext, module: ast.expr | None, scope: Scope, depth: int = 0):
    if module is None or depth > 4:
        return None
    if isinstance(module, ast.Name):
        origin = value_origin(ctx, module)
        if origin is not None:
            return _forward_of(ctx, origin, scope, depth + 1)
        return None
    if isinstance(module, ast.Call):
        func = module.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            return _forward_of(ctx, func.value, scope, depth + 1)  # `Net().eval()`
        if isinstance(func, ast.Name):
            cls = ctx.table.definition(func.id, scope)
            if isinstance(cls, ast.ClassDef):
                for stmt in cls.body:
                    if isinstance(stmt, ast.FunctionDef) and stmt.name == "forward":
                        return stmt
    return None
