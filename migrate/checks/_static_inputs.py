"""Example inputs a scripted module's own source fixes (issue 27), for an export that has
none in scope: `torch.jit.script(Gate().eval())` followed by a save, the module never called
where it is scripted.

Inferred only when `forward(self, x)` hands its one input, as the first thing it does with
it, to a layer whose constructor fixes the input's last size: `h = self.fc(x)` with
`self.fc = nn.Linear(4, 4)` in `__init__` takes a (batch, 4) float tensor. The example is
`torch.randn(2, 4)` (seeded, as the recorded-evidence path writes it, migrate/record/hooks),
with the batch axis dynamic (`Dim.AUTO`): export specialises sizes 0 and 1, and the calls the
tool cannot see may pass any batch. Everything else is refused with its reason: a forward
that reshapes, indexes or branches on its input first, several inputs, a first use inside a
branch or a loop, a layer built elsewhere or twice, a size that is not a literal, a
convolution (the constructor fixes the channels, not the length, height or width) or an
embedding (the vocabulary, not the sequence length), a class with a base class of its own.

A class another module defines is known by the facts its file publishes in the scan's first
pass (its static inputs, one entry per class with a `forward`, in the repository facts);
the scripting file asks for it and is analysed again in the repository pass. A file the
scan's prefilter skipped (no TorchScript word at all) publishes nothing: its classes get no
inferred inputs.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from migrate.analysis.astwalk import children, walk_tree
from migrate.analysis.dataflow import value_origin
from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.checks.base import PythonContext

_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_SIZED = {
    "torch.nn.Linear": ("in_features", 0),
}
# Layers whose constructor fixes only part of the input's shape: refused, saying what is open.
_PARTLY_SIZED = {
    "torch.nn.Conv1d": "the channels, not the length",
    "torch.nn.Conv2d": "the channels, not the height and width",
    "torch.nn.Conv3d": "the channels, not the depth, height and width",
    "torch.nn.Embedding": "the vocabulary, not the sequence length (nor the index range used)",
    "torch.nn.LSTM": "the features, not the sequence length or the batch layout",
    "torch.nn.GRU": "the features, not the sequence length or the batch layout",
}
_LAYER_KEYWORDS = frozenset({"in_features", "out_features", "bias"})
_BATCH = 2  # export specialises 0 and 1


@dataclass(frozen=True)
class Inferred:
    """A (batch, features) float32 input: what the class fixes, and where it says so."""

    features: int
    layer: str  # the constructor statement, `self.fc = nn.Linear(4, 4)`
    line: int  # its line in the defining file
    display: str  # the defining file

    @property
    def shape(self) -> list[int]:
        return [_BATCH, self.features]

    def note(self) -> str:
        return (
            f"example input `torch.randn({_BATCH}, {self.features})` inferred from "
            f"`{self.layer}` ({self.display}:{self.line}), the layer `forward` first gives its "
            "input to; the batch axis is dynamic (`Dim.AUTO`)"
        )

    def fact(self, qual: str) -> str:
        data = {"features": self.features, "layer": self.layer, "line": self.line}
        return f"{qual} {json.dumps({**data, 'display': self.display}, sort_keys=True)}"


def infer(ctx: PythonContext, cls: ast.ClassDef) -> Inferred | str | None:
    """The example input `cls`'s source fixes, or why it does not; None without a forward."""
    methods = {
        s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    forward = methods.get("forward")
    if forward is None:
        return None
    bases = [ctx.qualname(b) for b in cls.bases]
    if len(bases) != 1 or bases[0] not in _MODULE_BASES or cls.keywords:
        return f"`{cls.name}` has a base class besides `nn.Module`, which may build its layers"
    name = _single_input(forward)
    if not isinstance(name, ast.arg):
        return name
    first = _first_use(ctx, forward, name.arg)
    if isinstance(first, str):
        return first
    attr = _self_call(forward, first)
    if attr is None:
        around = _holder(forward, first)
        outer = _holder(forward, around)
        if isinstance(around, ast.Attribute) and isinstance(outer, ast.Call):
            around = outer  # `x.view(-1, 4)`, not `x.view`
        return (
            f"`forward` first uses its input in `{_short(ctx.source(around))}`"
            f" (line {first.lineno}), which does not say what size it takes"
        )
    return _layer(ctx, cls, methods.get("__init__"), attr)


def _single_input(forward: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.arg | str:
    args = forward.args
    positional = [*args.posonlyargs, *args.args]
    if args.vararg or args.kwarg or args.kwonlyargs or len(positional) != 2 or args.defaults:
        return "`forward` does not take exactly one input"
    arg = positional[1]
    if arg.annotation is not None and "Tensor" not in ast.unparse(arg.annotation):
        return f"`forward`'s input is annotated `{ast.unparse(arg.annotation)}`, not a tensor"
    return arg


def _first_use(ctx: PythonContext, forward: ast.AST, name: str) -> ast.Name | str:
    """The first read of the input in `forward`'s top-level statements, outside any branch."""
    for stmt in forward.body:  # type: ignore[attr-defined]
        # An assignment reads its value before it binds its targets.
        parts = [stmt.value, *stmt.targets] if isinstance(stmt, ast.Assign) else [stmt]
        names = [
            n
            for part in parts
            for n in sorted(
                (n for n in walk_tree(part) if isinstance(n, ast.Name) and n.id == name),
                key=lambda n: (n.lineno, n.col_offset),
            )
        ]
        if not names:
            continue
        first = names[0]
        if not isinstance(first.ctx, ast.Load):
            return "`forward` rebinds its input before using it"
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr)):
            return f"`forward` first uses its input inside `{_keyword(stmt)}` (line {stmt.lineno})"
        if any(isinstance(n, (ast.Lambda, ast.comprehension)) for n in walk_tree(stmt)):
            return f"`forward` first uses its input in a nested scope (line {stmt.lineno})"
        return first
    return "`forward` never uses its input"


def _keyword(stmt: ast.stmt) -> str:
    return type(stmt).__name__.lower().replace("async", "async ")


def _holder(root: ast.AST, node: ast.AST) -> ast.AST:
    """The expression around `node` (its call, attribute or operation)."""
    for candidate in walk_tree(root):
        for child in children(candidate):
            if child is node:
                return candidate if isinstance(candidate, ast.expr) else node
    return node


def _self_call(forward: ast.AST, use: ast.Name) -> str | None:
    """`attr` when the use is the one argument of `self.attr(x)`."""
    holder = _holder(forward, use)
    self_name = forward.args.args[0].arg  # type: ignore[attr-defined]
    if (
        isinstance(holder, ast.Call)
        and holder.args == [use]
        and not holder.keywords
        and isinstance(holder.func, ast.Attribute)
        and isinstance(holder.func.value, ast.Name)
        and holder.func.value.id == self_name
    ):
        return holder.func.attr
    return None


def _layer(ctx: PythonContext, cls: ast.ClassDef, init, attr: str) -> Inferred | str:
    stores = [
        node
        for node in walk_tree(cls)
        if isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ]
    built = [
        s
        for s in (init.body if init is not None else [])
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and s.targets[0] in stores
    ]
    if len(stores) != 1 or len(built) != 1:
        return f"`self.{attr}` is not built once in `__init__`"
    stmt = built[0]
    value = stmt.value
    qual = ctx.qualname(value.func) if isinstance(value, ast.Call) else None
    text = _short(ctx.source(stmt))
    if qual in _PARTLY_SIZED:
        return f"`{text}` fixes {_PARTLY_SIZED[qual]}"
    if qual not in _SIZED or not isinstance(value, ast.Call):
        return f"`forward` first gives its input to `{text}`, whose input size the tool cannot tell"
    keyword, index = _SIZED[qual]
    size = value.args[index] if len(value.args) > index else None
    for kw in value.keywords:
        if kw.arg not in _LAYER_KEYWORDS:
            return f"`{text}` passes `{kw.arg}=`: the example's dtype or device is not known"
        if kw.arg == keyword:
            size = kw.value
    if not (
        isinstance(size, ast.Constant)
        and type(size.value) is int
        and size.value > 0
        and not any(isinstance(a, ast.Starred) for a in value.args)
    ):
        return f"`{text}` does not give its input size as a number"
    return Inferred(size.value, text, stmt.lineno, ctx.path)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- repository


def publish(ctx: PythonContext) -> None:
    """Phase 1: what this file's top-level classes fix, for the files that script them."""
    module = ctx.table.module
    if not module or "forward" not in ctx.text:
        return
    facts: list[str] = []
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.ClassDef):
            found = infer(ctx, stmt)
            qual = f"{module}.{stmt.name}"
            if isinstance(found, Inferred):
                facts.append(found.fact(qual))
            elif found is not None:
                facts.append(f"{qual} {json.dumps({'refused': found})}")
    ctx.facts.tell_static_inputs(facts)


def published(repo: RepositoryFacts, qual: str) -> Inferred | str | None:
    """What the defining file published for the class `qual` (None: nothing)."""
    if not repo:
        return None
    fact = repo.static_inputs_by_class().get(qual)
    if fact is None:
        return None
    data = json.loads(fact.partition(" ")[2])
    if "refused" in data:
        return data["refused"]
    return Inferred(data["features"], data["layer"], data["line"], data["display"])


def arrived(repo: RepositoryFacts, facts: FileFacts | None) -> bool:
    """The repository pass: a class this file asked about has published facts."""
    asked = facts.static_asked() if facts is not None else ()
    return any(published(repo, qual) is not None for qual in asked)


_MODULE_METHODS = frozenset({"eval"})


def for_capture(ctx: PythonContext, module: ast.expr) -> Inferred | str | None:
    """The example the captured module's class fixes: `Cls(...)`, `Cls(...).eval()`, or a name
    bound once to one of them. None when the class cannot be named (nothing to say)."""
    expr: ast.expr | None = module
    for _ in range(4):
        if isinstance(expr, ast.Name):
            expr = value_origin(ctx, expr)
            continue
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and isinstance(expr.func.value, ast.Call)
        ):
            if expr.func.attr not in _MODULE_METHODS or expr.args or expr.keywords:
                return f"`.{expr.func.attr}(...)` on the module may change the dtype or device"
            expr = expr.func.value
            continue
        break
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, (ast.Name, ast.Attribute)):
        return None
    if isinstance(expr.func, ast.Name):
        definition = ctx.table.definition(expr.func.id, ctx.table.scope_for(expr))
        if isinstance(definition, ast.ClassDef):
            return infer(ctx, definition)
    qual = ctx.qualname(expr.func)
    if not qual or "." not in qual or qual.startswith("torch."):
        return None
    found = published(ctx.repo_facts, qual)
    if found is None:
        ctx.facts.ask_static_inputs(qual)
    return found


class AsksForInputs:
    """A check whose findings join a capture's group (a save of it, its mobile lowering): in
    the repository pass it is analysed again with the capture once the class published."""

    def rerun(self, repo, facts, remembered, module=str, text=None) -> bool:
        return arrived(repo, facts)
