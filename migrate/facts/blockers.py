"""What in a captured module's forward keeps torch.export from capturing it.

For every capture call (`torch.jit.script(Cls(...))`, `torch.jit.trace(Cls(...), x)`,
`torch.jit.trace_module(...)`, or a name bound to `Cls(...)` and then captured; the class
may come from another module), the class is resolved in the repository and the methods
reachable from `forward` are collected: `self.method(...)` calls (looked up through the
class and its in-repo base classes, `super().method(...)` from the next base), and the
`forward` of submodules assigned as `self.sub = Other(...)` and called as `self.sub(...)`.
A *blocker* is a reachable method decorated `@torch.jit.ignore`, `@torch.jit.ignore(drop=...)`
or `@torch.jit.unused` (decorator names resolved through imports and aliases). A *data read*
is a reachable `x.item()`, `x.tolist()` or `int(x.max())`: Python reading tensor values, which
export specializes on or fails at (the class may live in another file than the capture). One
under `if not torch.compiler.is_compiling():` is left out (export skips it); one under
`if not torch.jit.is_scripting():` names that guard, which keeps it from export only once
MIG110 rewrites it (the planner asks). A method reached both guarded and not counts as
first reached.

Limits: base classes are searched depth first (the MRO of simple hierarchies); methods
reached through `getattr`, function references or other objects than `self` are not seen;
a class outside the repository (torchvision, ...) has no facts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrate.analysis.astwalk import children, walk_tree
from migrate.analysis.pyscope import Scope
from migrate.analysis.tensor_reads import data_read
from migrate.facts._repo import FileIndex, Repo, Span, self_name, terminal_names, unwrap_call
from migrate.facts.values import CAPTURES, MAKER_WORDS

_CAPTURE_NAMES = terminal_names(CAPTURES)
DECORATORS = frozenset({"torch.jit.ignore", "torch.jit.unused"})
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ClassRef = tuple[FileIndex, ast.ClassDef]


@dataclass(frozen=True)
class Blocker:
    """A method reachable from the captured forward that export cannot run as TorchScript did.

    line: the `def` line; decorator: its source (`torch.jit.ignore(drop=True)`, `jit.unused`);
    via: the methods from `forward` to this one (`("forward", "helper", "to_numpy")`).
    """

    display: str
    line: int
    method: str
    decorator: str
    class_name: str = ""
    column: int = 1
    via: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataRead:
    """A read of tensor data into Python (`int(...)`, `item()`) in a method `forward` reaches."""

    display: str
    line: int
    method: str
    read: str
    guard: tuple[str, int, int] | None = None  # the `torch.jit.is_scripting()` around it


@dataclass(frozen=True)
class Method:
    """A reachable method: its class, name and the span of its whole `def`."""

    display: str
    class_name: str
    method: str
    span: Span
    guard: tuple[str, int, int] | None = None  # reached only under this guard (DataRead.guard)


@dataclass(frozen=True)
class CapturedClass:
    """The class a capture call captures: where it is defined, its `forward` (None when it has
    none, e.g. a function captured), every method reachable from it and the blockers."""

    display: str
    class_name: str
    forward: Span | None
    methods: tuple[Method, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    span: Span | None = None  # the whole class statement, decorators of its methods included
    # A class of the repository that `forward`'s return annotation names (`Tuple[Tensor,
    # Out]`): export returns only tensors, numbers and their containers (issue 27).
    returns_class: str | None = None
    data_reads: tuple[DataRead, ...] = ()


def find_captured_classes(repo: Repo) -> dict[tuple[str, int, int], CapturedClass]:
    """Capture call start (display, line, column) -> the class it captures."""
    out: dict[tuple[str, int, int], CapturedClass] = {}
    cache: dict[int, CapturedClass] = {}
    for f in repo:
        if f.src.no_makers or "jit" not in f.src.text or not MAKER_WORDS.search(f.src.text):
            continue
        for call in f.calls(_CAPTURE_NAMES):
            if f.qualname(call.func) not in CAPTURES or not call.args:
                continue
            found = _class_of(repo, f, call.args[0], 0)
            if found is None:
                continue
            key = id(found[1])
            if key not in cache:
                cache[key] = _analyse(repo, found)
            out[f.span(call).start] = cache[key]
    return out


def _class_of(repo: Repo, f: FileIndex, expr: ast.expr, depth: int) -> _ClassRef | None:
    """The in-repo class whose instance `expr` is: `Cls(...)`, a name bound to one, or a
    call of a repository function whose only `return` gives one (`build_model()`)."""
    if depth > 6:
        return None
    if isinstance(expr, ast.Call):
        if unwrap_call(repo, f, expr) is not None:
            return None
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in ("eval", "train", "to", "cpu", "cuda"):
            return _class_of(repo, f, func.value, depth + 1)
        found = _resolve_def(repo, f, func, f.table.scope_for(expr))
        if found is None or isinstance(found[1], ast.ClassDef):
            return found  # type: ignore[return-value]
        owner, factory = found
        returns = [n for n in _own_nodes(factory) if isinstance(n, ast.Return)]
        if len(returns) == 1 and returns[0].value is not None:
            return _class_of(repo, owner, returns[0].value, depth + 1)
        return None
    if isinstance(expr, ast.Name):
        found_value = f.value_of(expr)
        if found_value is not None:
            owner, value, _scope = found_value
            return _class_of(repo, owner, value, depth + 1)
    return None


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes of a function body, nested functions and classes left out."""
    out: list[ast.AST] = []
    stack = list(getattr(func, "body", []))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (*_FUNCS, ast.ClassDef, ast.Lambda)):
            stack.extend(children(node))
    return out


def _resolve_class(repo: Repo, f: FileIndex, ref: ast.expr, scope: Scope) -> _ClassRef | None:
    """The ClassDef a class reference (`Cls`, `mod.Cls`) names."""
    found = _resolve_def(repo, f, ref, scope)
    if found is not None and isinstance(found[1], ast.ClassDef):
        return found[0], found[1]
    return None


def _resolve_def(
    repo: Repo, f: FileIndex, ref: ast.expr, scope: Scope
) -> tuple[FileIndex, ast.AST] | None:
    """The def or class statement a reference (`name`, `mod.name`) names in the repository."""
    if isinstance(ref, ast.Name):
        kind, where = f.table.lookup(ref.id, scope)
        if kind == "local" and isinstance(where, Scope):
            node = where.defs.get(ref.id)
            return (f, node) if node is not None else None
        if kind != "import":
            return None
        qual: str | None = str(where)
    else:
        qual = f.qualname(ref)
    return repo.definition(qual) if qual else None


def _mro(repo: Repo, cls: _ClassRef, seen: set[int] | None = None) -> list[_ClassRef]:
    seen = seen if seen is not None else set()
    if id(cls[1]) in seen:
        return []
    seen.add(id(cls[1]))
    out = [cls]
    f, node = cls
    scope = f.table.scope_for(node)
    for base in node.bases:
        found = _resolve_class(repo, f, base, scope)
        if found is not None:
            out.extend(_mro(repo, found, seen))
    return out


def _method(
    mro: list[_ClassRef], name: str, start: int = 0
) -> tuple[int, _ClassRef, ast.AST] | None:
    for index in range(start, len(mro)):
        f, cls = mro[index]
        for stmt in cls.body:
            if isinstance(stmt, _FUNCS) and stmt.name == name:
                return index, mro[index], stmt
    return None


def _submodule_classes(repo: Repo, mro: list[_ClassRef], attr: str) -> list[_ClassRef]:
    """Classes of `self.<attr> = Cls(...)` assignments in the methods of the hierarchy."""
    out = []
    for f, cls in mro:
        for node in f.attributes(attr):
            if isinstance(node.ctx, ast.Load) or not isinstance(node.value, ast.Name):
                continue
            method = f.enclosing_function(node)
            if method is None or f.enclosing_class(method) is not cls:
                continue
            holder = f.parent(node)
            if self_name(method) == node.value.id and isinstance(holder, ast.Assign):
                found = _class_of(repo, f, holder.value, 0)
                if found is not None:
                    out.append(found)
    return out


def _analyse(repo: Repo, cls: _ClassRef) -> CapturedClass:
    f, node = cls
    mro = _mro(repo, cls)
    forward = _method(mro, "forward")
    if forward is None:
        return CapturedClass(f.display, node.name, None, span=f.span(node))
    methods: list[Method] = []
    blockers: list[Blocker] = []
    reads: list[DataRead] = []
    seen: set[int] = set()
    # (position in the hierarchy, hierarchy, owner, method, path from forward, guard)
    todo = [(forward[0], mro, forward[1], forward[2], ("forward",), None)]
    while todo:
        index, hierarchy, (owner, owner_cls), func, via, outer = todo.pop()
        if id(func) in seen:
            continue
        seen.add(id(func))
        name = func.name  # type: ignore[attr-defined]
        methods.append(Method(owner.display, owner_cls.name, name, owner.span(func), outer))
        for dec in func.decorator_list:  # type: ignore[attr-defined]
            target = dec.func if isinstance(dec, ast.Call) else dec
            if owner.qualname(target) in DECORATORS:
                blockers.append(
                    Blocker(
                        owner.display,
                        func.lineno,  # type: ignore[attr-defined]
                        name,
                        ast.get_source_segment(owner.src.text, dec) or ast.unparse(dec),
                        owner_cls.name,
                        owner.span(func).column,
                        via,
                    )
                )
        me = self_name(func)
        guards = _guarded_nodes(owner, func)
        for call in walk_tree(func):
            if not isinstance(call, ast.Call):
                continue
            guard = outer or guards.get(id(call))
            read = data_read(call)
            if read is not None and guard != _COMPILING:
                reads.append(DataRead(owner.display, call.lineno, name, read, guard))
            callee = call.func
            if isinstance(callee, ast.Attribute):
                receiver = callee.value
                if isinstance(receiver, ast.Name) and receiver.id == me:
                    found = _method(hierarchy, callee.attr)
                    if found is not None:
                        step = (*via, callee.attr)
                        todo.append((found[0], hierarchy, found[1], found[2], step, guard))
                elif _is_super(receiver):
                    found = _method(hierarchy, callee.attr, index + 1)
                    if found is not None:
                        step = (*via, callee.attr)
                        todo.append((found[0], hierarchy, found[1], found[2], step, guard))
            if (
                isinstance(callee, ast.Attribute)
                and isinstance(callee.value, ast.Name)
                and callee.value.id == me
                and _method(hierarchy, callee.attr) is None
            ):
                for sub in _submodule_classes(repo, hierarchy, callee.attr):
                    sub_mro = _mro(repo, sub)
                    found = _method(sub_mro, "forward")
                    if found is not None:
                        step = (*via, f"{callee.attr}.forward")
                        todo.append((found[0], sub_mro, found[1], found[2], step, guard))
    return CapturedClass(
        f.display,
        node.name,
        forward[1][0].span(forward[2]),
        tuple(methods),
        tuple(blockers),
        span=f.span(node),
        returns_class=_returned_class(repo, forward[1][0], forward[2]),
        data_reads=tuple(sorted(reads, key=lambda r: (r.display, r.line))),
    )


_COMPILING = ("", 0, 0)  # the guard `not torch.compiler.is_compiling()`: export skips it
_GUARDS = frozenset({"torch.jit.is_scripting", "torch.compiler.is_compiling"})


def _guarded_nodes(f: FileIndex, func: ast.AST) -> dict[int, tuple[str, int, int]]:
    """id(node) -> its guard, for the nodes of `if not torch.jit.is_scripting() [and ...]:`
    bodies (the rest of the `and` too): the guard call's start, or _COMPILING for
    `torch.compiler.is_compiling()`. The outermost guard wins."""
    out: dict[int, tuple[str, int, int]] = {}
    for node in walk_tree(func):
        if not isinstance(node, ast.If):
            continue
        test, rest = node.test, []
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test, rest = test.values[0], test.values[1:]
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            continue
        asked = test.operand
        if not isinstance(asked, ast.Call) or f.qualname(asked.func) not in _GUARDS:
            continue
        guard = _COMPILING
        if f.qualname(asked.func) == "torch.jit.is_scripting":
            guard = f.span(asked).start
        for stmt in [*node.body, *rest]:
            for inner in walk_tree(stmt):
                out.setdefault(id(inner), guard)
    return out


def _returned_class(repo: Repo, f: FileIndex, forward: ast.AST) -> str | None:
    """A class of the repository named in `forward`'s return annotation."""
    annotation = getattr(forward, "returns", None)
    if annotation is None:
        return None
    scope = f.table.scope_for(annotation)
    for node in walk_tree(annotation):
        if isinstance(node, ast.Name) and node.id[:1].isupper():
            if _resolve_class(repo, f, node, scope) is not None:
                return node.id
    return None


def _is_super(expr: ast.expr) -> bool:
    return (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "super"
    )
