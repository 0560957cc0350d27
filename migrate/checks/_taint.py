"""Which values in a module's forward are tensors: a light, flow-insensitive taint analysis
(MIG131). Forward's tensor parameters, module tensors (parameters, buffers) and whatever
torch ops, tensor methods and arithmetic compute from them are tensors; shapes, sizes,
`len`, `isinstance`, `is None` are not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from migrate.analysis.astwalk import children, walk_tree
from migrate.checks.base import PythonContext

# Tensor metadata: shape-like results, which export guards on instead of branching on data.
_META_ATTRS = frozenset(
    {
        "shape",
        "ndim",
        "dtype",
        "device",
        "is_cuda",
        "is_cpu",
        "is_sparse",
        "is_quantized",
        "is_meta",
        "layout",
        "requires_grad",
        "is_leaf",
        "names",
        "grad_fn",
    }
)


_META_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "stride",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "get_device",
        "element_size",
        "storage_offset",
        "data_ptr",
        "type",
        "__len__",
    }
)


VALUE_METHODS = frozenset({"item", "tolist"})


_NEUTRAL_BUILTINS = frozenset(
    {
        "len",
        "isinstance",
        "issubclass",
        "hasattr",
        "getattr",
        "callable",
        "type",
        "id",
        "range",
        "print",
        "str",
        "repr",
    }
)


_ITER_BUILTINS = frozenset({"zip", "enumerate", "reversed", "list", "tuple", "iter", "sorted"})


_VALUE_BUILTINS = frozenset(
    {"bool", "int", "float", "abs", "min", "max", "sum", "round", "any", "all"}
)


_TORCH_META_PREFIXES = (
    "torch.is_",
    "torch.jit.",
    "torch.compiler.",
    "torch.cuda.",
    "torch.backends.",
    "torch._C",
    "torch.get_",
    "torch.are_",
    "torch.finfo",
    "torch.iinfo",
    "torch.Size",
    "torch.device",
    "torch.numel",
    "torch.fx.",
    "torch._dynamo.",
)


_MODULE_TENSOR_ATTRS = frozenset({"weight", "bias", "running_mean", "running_var"})


_PARAMETER_CALLS = frozenset(
    {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.tensor"}
)


TENSOR = "tensor"


VALUE = "value"  # a Python number taken out of a tensor (`.item()`, `bool()`)
# The result of a call the analysis cannot see into (a helper from another module, a helper
# returning a Python value computed from tensors): conditions on it are never rewritten.
MAYBE = "maybe"


_RANK = {None: 0, MAYBE: 1, VALUE: 2, TENSOR: 3}
# Return annotations that say "a Python value, not a tensor".
_SCALAR_ANNOTATIONS = frozenset({"bool", "int", "float", "str", "None", "complex"})


def join_kinds(*kinds: str | None) -> str | None:
    return max(kinds, key=lambda k: _RANK[k]) if kinds else None


@dataclass
class Func:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    owner: ast.ClassDef | None
    label: str
    params: dict[str, str | None] = field(default_factory=dict)
    env: dict[str, str | None] = field(default_factory=dict)


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


class Analysis:
    def __init__(self, ctx: PythonContext, classes: Mapping[str, list[ast.ClassDef]]) -> None:
        self.ctx = ctx
        self.classes = classes
        self.tensor_attrs: dict[int, set[str]] = {}
        self.returns: dict[tuple, str | None] = {}  # (def, argument kinds) -> result kind

    # ---- classes ----------------------------------------------------------------------
    def lineage(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        out, todo = [], [cls]
        while todo:
            c = todo.pop(0)
            if c in out:
                continue
            out.append(c)
            for base in c.bases:
                name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                todo.extend(self.classes.get(name, []))
        return out

    def method(self, cls: ast.ClassDef, name: str) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
        for c in self.lineage(cls):
            found = _methods(c).get(name)
            if found is not None:
                return c, found  # type: ignore[return-value]
        return None

    def module_tensors(self, cls: ast.ClassDef) -> set[str]:
        """Attributes of self that hold tensors: parameters, buffers, torch-created values."""
        if id(cls) in self.tensor_attrs:
            return self.tensor_attrs[id(cls)]
        found: set[str] = set()
        for c in self.lineage(cls):
            for node in walk_tree(c):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    qual = self.ctx.qualname(node.value.func) or ""
                    tensor = qual in _PARAMETER_CALLS or (
                        qual.startswith("torch.")
                        and not qual.startswith("torch.nn.")
                        and not qual.startswith(_TORCH_META_PREFIXES)
                    )
                    if tensor:
                        for t in node.targets:
                            if is_self_attr(t):
                                found.add(t.attr)  # type: ignore[attr-defined]
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("register_buffer", "register_parameter")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    found.add(node.args[0].value)
        self.tensor_attrs[id(cls)] = found
        return found

    # ---- expressions ------------------------------------------------------------------
    def kind(self, expr: ast.AST | None, fn: Func) -> str | None:
        env = fn.env
        if expr is None:
            return None
        if isinstance(expr, ast.Name):
            return env.get(expr.id)
        if isinstance(expr, ast.Constant):
            return None
        if isinstance(expr, ast.Attribute):
            if is_self_attr(expr) and fn.owner is not None:
                return TENSOR if expr.attr in self.module_tensors(fn.owner) else None
            base = self.kind(expr.value, fn)
            if base == TENSOR:
                return None if expr.attr in _META_ATTRS else TENSOR
            if base is None and expr.attr in _MODULE_TENSOR_ATTRS and _root_is_self(expr):
                return TENSOR
            return base
        if isinstance(expr, ast.Call):
            return self.call_kind(expr, fn)
        if isinstance(expr, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
                return None
            return join_kinds(
                self.kind(expr.left, fn), *(self.kind(c, fn) for c in expr.comparators)
            )
        if isinstance(expr, ast.BoolOp):
            kinds = [self.kind(v, fn) for v in expr.values]
            if MAYBE in kinds:
                return MAYBE
            return VALUE if join_kinds(*kinds) else None
        if isinstance(expr, ast.UnaryOp):
            k = self.kind(expr.operand, fn)
            if k == MAYBE:
                return MAYBE
            return VALUE if k and isinstance(expr.op, ast.Not) else k
        if isinstance(expr, ast.BinOp):
            return join_kinds(self.kind(expr.left, fn), self.kind(expr.right, fn))
        if isinstance(expr, ast.IfExp):
            return join_kinds(self.kind(expr.body, fn), self.kind(expr.orelse, fn))
        if isinstance(expr, (ast.Subscript, ast.Starred)):
            return self.kind(expr.value, fn)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return join_kinds(*(self.kind(e, fn) for e in expr.elts))
        if isinstance(expr, ast.NamedExpr):
            return self.kind(expr.value, fn)
        return None

    def call_kind(self, call: ast.Call, fn: Func) -> str | None:
        args = [*call.args, *(k.value for k in call.keywords)]
        func = call.func
        if isinstance(func, ast.Attribute) and not is_self_attr(func):
            base = self.kind(func.value, fn)
            if base in (TENSOR, MAYBE):
                if func.attr in _DATA_PREDICATES or func.attr in VALUE_METHODS:
                    return VALUE
                if func.attr in _META_METHODS or _predicate_name(func.attr):
                    return None
                return base
            qual = self.ctx.qualname(func) or ""
            if qual.startswith("torch."):
                if qual.startswith(_TORCH_META_PREFIXES):
                    return None
                return TENSOR if join_kinds(*(self.kind(a, fn) for a in args)) else None
            if base == VALUE:
                return VALUE
        if (
            isinstance(func, ast.Name)
            and self.ctx.table.binding(func.id, fn_scope(self, fn)) is None
        ):
            if func.id in _NEUTRAL_BUILTINS and func.id not in fn.env:
                return None
            if func.id in _VALUE_BUILTINS and func.id not in fn.env:
                return VALUE if join_kinds(*(self.kind(a, fn) for a in args)) else None
            if func.id in _ITER_BUILTINS:
                return join_kinds(*(self.kind(a, fn) for a in args))
        qual = self.ctx.qualname(func) or ""
        if qual.startswith(_TORCH_META_PREFIXES):
            return None
        arg_kind = join_kinds(*(self.kind(a, fn) for a in args))
        if qual.startswith("torch."):
            return TENSOR if arg_kind else None
        if is_self_attr(func) and fn.owner is not None:
            found = self.method(fn.owner, func.attr)  # type: ignore[attr-defined]
            if found is not None:  # a method of the module: what its returns compute
                owner, target = found
                callee = Func(target, fn.owner, f"{owner.name}.{target.name}")
                return self.returns_kind(call, callee, fn)
            return TENSOR if arg_kind else None  # `self.submodule(x)`: a module call
        if isinstance(func, ast.Name):
            target = self.ctx.table.definition(func.id, fn_scope(self, fn))
            if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return self.returns_kind(call, Func(target, None, target.name), fn)
            if isinstance(target, ast.ClassDef):
                return None  # an instance of a class of this file
            if _predicate_name(func.id):
                return None  # `is_sparse(x)`, `has_edges(g)`: Python booleans
        # A callable the analysis cannot see into (another module's helper, a local value).
        return MAYBE if arg_kind else None

    def call_params(self, call: ast.Call, callee: Func, fn: Func) -> dict[str, str | None]:
        """Kinds of the callee's parameters at this call."""
        pairs = parameters(callee.node, callee.owner is not None)
        kinds: dict[str, str | None] = {}
        for (arg, _default), value in zip(pairs, call.args, strict=False):
            if isinstance(value, ast.Starred):
                break
            kinds[arg.arg] = self.kind(value, fn)
        by_name = {arg.arg: default for arg, default in pairs}
        for kw in call.keywords:
            if kw.arg in by_name:
                kinds[kw.arg] = self.kind(kw.value, fn)
        for arg, default in pairs:
            if arg.arg not in kinds:
                kinds[arg.arg] = param_kind(arg, default)
        return kinds

    def returns_kind(self, call: ast.Call, callee: Func, fn: Func) -> str | None:
        """What a call of a function of this file gives: its return annotation, else what
        its return statements compute with the call's arguments."""
        annotation = callee.node.returns
        text = ast.unparse(annotation) if annotation is not None else ""
        if "Tensor" in text:
            return TENSOR
        callee.params = self.call_params(call, callee, fn)
        key = (id(callee.node), tuple(sorted(callee.params.items(), key=str)))
        if key in self.returns:
            return self.returns[key]
        self.returns[key] = MAYBE  # a recursive call while this one is being worked out
        self.run(callee)
        kinds = [
            self.kind(node.value, callee)
            for node in body_nodes(callee.node)
            if isinstance(node, ast.Return) and node.value is not None
        ]
        if not any(kinds):
            result = None  # Python values only (`"mps" in str(x.device)`, `x.dim() > 2`)
        elif text not in _SCALAR_ANNOTATIONS and all(k == TENSOR for k in kinds):
            result = TENSOR
        else:
            result = MAYBE  # a Python value computed from tensors, or a mix
        self.returns[key] = result
        return result

    # ---- functions --------------------------------------------------------------------
    def run(self, fn: Func) -> None:
        """Flow-insensitive fixpoint over the function's assignments (nested defs included)."""
        fn.env = dict(fn.params)
        nodes = list(body_nodes(fn.node))
        for _ in range(8):
            before = dict(fn.env)
            for node in nodes:
                if (
                    isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node is not fn.node
                ):
                    for arg in all_args(node.args):
                        fn.env[arg.arg] = join_kinds(
                            fn.env.get(arg.arg), param_kind(arg, None, fn.env.get(arg.arg))
                        )
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        self.bind(target, node.value, fn)
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    self.bind(node.target, node.value, fn)
                elif isinstance(node, ast.AugAssign):
                    self.bind(node.target, node.value, fn, keep=True)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    self.bind(node.target, node.iter, fn)
                elif isinstance(node, ast.NamedExpr):
                    self.bind(node.target, node.value, fn)
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    self.bind(node.optional_vars, node.context_expr, fn)
            if fn.env == before:
                break

    def bind(self, target: ast.AST, value: ast.AST, fn: Func, keep: bool = False) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=False):
                    self.bind(t, v, fn)
                return
            for t in target.elts:
                self.bind(t, value, fn)
            return
        if isinstance(target, ast.Starred):
            self.bind(target.value, value, fn)
            return
        if isinstance(target, ast.Name):
            kind = self.kind(value, fn)
            fn.env[target.id] = join_kinds(fn.env.get(target.id), kind)

    def helper_calls(self, fn: Func) -> Iterable[tuple[ast.Call, Func]]:
        """Calls from fn to methods of its class and to functions of this module."""
        scope = fn_scope(self, fn)
        for node in body_nodes(fn.node):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if is_self_attr(func) and fn.owner is not None:
                found = self.method(fn.owner, func.attr)  # type: ignore[attr-defined]
                if found:
                    owner, target = found
                    yield node, Func(target, fn.owner, f"{owner.name}.{target.name}")
            elif isinstance(func, ast.Name):
                target = self.ctx.table.definition(func.id, scope)
                if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    self.ctx.table.scope_for(target) is self.ctx.table.module_scope
                ):
                    yield node, Func(target, None, target.name)


def _predicate_name(name: str) -> bool:
    """`is_cuda()`, `has_value()`, `is_sparse(x)`: names that answer yes or no."""
    return name.startswith(("is_", "has_"))


# Tensor methods that answer yes or no from the data: a Python bool taken out of a tensor.
_DATA_PREDICATES = frozenset({"is_nonzero", "equal", "allclose"})


def fn_scope(analysis: Analysis, fn: Func):
    return analysis.ctx.table.scopes.get(fn.node, analysis.ctx.table.module_scope)


def is_self_attr(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _root_is_self(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "self"


def all_args(args: ast.arguments) -> list[ast.arg]:
    out = [*args.posonlyargs, *args.args]
    if args.vararg:
        out.append(args.vararg)
    out.extend(args.kwonlyargs)
    return out


def param_kind(arg: ast.arg, default: ast.expr | None, fallback: str | None = TENSOR) -> str | None:
    ann = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    if "Tensor" in ann:
        return TENSOR
    if ann:
        return None
    if default is not None:
        return TENSOR if isinstance(default, ast.Constant) and default.value is None else None
    return fallback


def parameters(
    node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool
) -> list[tuple[ast.arg, ast.expr | None]]:
    positional = [*node.args.posonlyargs, *node.args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(node.args.defaults))
    defaults += node.args.defaults
    pairs = list(zip(positional, defaults, strict=False))
    if method and pairs and pairs[0][0].arg == "self":
        pairs = pairs[1:]
    pairs += list(zip(node.args.kwonlyargs, node.args.kw_defaults, strict=False))
    return pairs


def initial_params(
    node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool
) -> dict[str, str | None]:
    out = {arg.arg: param_kind(arg, default) for arg, default in parameters(node, method)}
    if node.args.vararg:
        out[node.args.vararg.arg] = param_kind(node.args.vararg, None)
    return out


def body_nodes(node: ast.AST) -> Iterable[ast.AST]:
    """Nodes of a function body, nested defs included, nested classes and lambdas excluded."""
    stack = list(children(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.ClassDef, ast.Lambda)):
            continue
        yield child
        stack.extend(children(child))
