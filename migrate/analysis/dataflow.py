"""Light data flow inside one scope: where did a name's value come from, where does it go?

Deliberately conservative: a name counts as holding one value only between the statement
that binds it and the next binding in the same block. Anything less clear (rebound on
another path, declared global, read inside a nested function) is reported as a problem,
and the checks leave such sites to a person.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import Protocol

from migrate.analysis.astwalk import children, walk_tree
from migrate.analysis.pyscope import Scope, ScopeTable


class PythonContext(Protocol):
    """What these helpers read of a file: its tree, its scope table and the names it resolves
    (a check's context is one; so is the facts' view of a parsed file)."""

    tree: ast.Module
    table: ScopeTable

    def qualname(self, expr: ast.AST) -> str | None: ...


# Calls whose result is a TorchScript module (or, after the rewrite, an exported program).
CAPTURE_CALLS = frozenset(
    {
        "torch.jit.script",
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.jit.load",
        "torch.jit.freeze",
        "torch.jit.optimize_for_inference",
        "torch.utils.mobile_optimizer.optimize_for_mobile",
    }
)

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def scope_statements(scope: Scope) -> list[ast.stmt]:
    """Statements of a function or module body, nested blocks included, nested defs excluded."""
    cached = getattr(scope, "_statements", None)
    if cached is None:
        cached = _collect_statements(scope)
        scope._statements = cached  # type: ignore[attr-defined]
    return cached


def _collect_statements(scope: Scope) -> list[ast.stmt]:
    body = getattr(scope.node, "body", [])
    out: list[ast.stmt] = []
    stack = list(reversed(body)) if isinstance(body, list) else []
    while stack:
        stmt = stack.pop()
        out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(reversed([s for s in block if isinstance(s, ast.stmt)]))
                for handler in block:
                    if isinstance(handler, ast.ExceptHandler):
                        stack.extend(reversed(handler.body))
    return sorted(out, key=lambda s: (s.lineno, s.col_offset))


def assignments(scope: Scope, name: str) -> list[ast.Assign]:
    """`name = ...` statements in the scope (single-name targets among their targets)."""
    index = getattr(scope, "_assignments", None)
    if index is None:
        # Indexed once per scope: module-level scripts ask for every name they bind.
        index = {}
        for stmt in scope_statements(scope):
            if isinstance(stmt, ast.Assign):
                for target in {t.id for t in stmt.targets if isinstance(t, ast.Name)}:
                    index.setdefault(target, []).append(stmt)
        scope._assignments = index  # type: ignore[attr-defined]
    return index.get(name, [])


def origin_call(ctx: PythonContext, name: str, scope: Scope, before_line: int) -> ast.Call | None:
    """The last `name = <capture call>(...)` before a line, if the value came from one."""
    last = None
    for stmt in assignments(scope, name):
        if stmt.lineno >= before_line:
            break
        last = stmt
    if last is None or not isinstance(last.value, ast.Call):
        return None
    call = last.value
    # Look through method chains such as torch.jit.trace(m, x).eval()
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        if ctx.qualname(call.func) in CAPTURE_CALLS:
            break
        call = call.func.value
    return call if ctx.qualname(call.func) in CAPTURE_CALLS else None


# --------------------------------------------------------------------------- tree helpers


def _cache(ctx: PythonContext, key: str) -> dict:
    return ctx.__dict__.setdefault(f"_flow_{key}", {})


def parent(ctx: PythonContext, node: ast.AST) -> ast.AST | None:
    """The node holding `node` (None for the module, a node not in the tree, or a shared
    operator/context singleton). Links are recorded one module-level statement at a time,
    the one whose lines hold the node; a node without a position links the whole tree."""
    parents = _cache(ctx, "parents")
    found = parents.get(id(node))
    if found is not None:
        return found
    state = _cache(ctx, "linked")
    if state.get("all"):
        return None
    line = getattr(node, "lineno", None)
    body = ctx.tree.body  # type: ignore[attr-defined]
    if line is not None and body:
        if "starts" not in state:
            state["starts"] = [_first_line(s) for s in body]
        # The statements starting at or before the line, nearest first: the one holding it
        # is among those whose lines reach it (a few share a line: `a = 1; b = 2`).
        for i in range(bisect_right(state["starts"], line) - 1, -1, -1):
            statement = body[i]
            if statement.end_lineno < line:  # type: ignore[attr-defined]
                break
            if i not in state:
                state[i] = True
                parents[id(statement)] = ctx.tree
                _link(statement, parents)
            if id(node) in parents:
                return parents[id(node)]
    state["all"] = True
    _link(ctx.tree, parents)
    return parents.get(id(node))


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", ())
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _link(root: ast.AST, parents: dict[int, ast.AST]) -> None:
    stack: list[ast.AST] = [root]
    while stack:
        holder = stack.pop()
        for child in children(holder):
            parents[id(child)] = holder
            stack.append(child)


def pos(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def end_pos(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def statement_of(ctx: PythonContext, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = parent(ctx, current)
    return current


def block_of(ctx: PythonContext, stmt: ast.stmt) -> tuple[ast.AST, list[ast.stmt]] | None:
    """The statement list holding `stmt`, with its owner."""
    owner = parent(ctx, stmt)
    if owner is None:
        return None
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return owner, block
    return None


def scope_names(ctx: PythonContext, scope: Scope) -> list[ast.Name]:
    """Every Name node evaluated in `scope` (nested functions, lambdas and classes excluded)."""
    cache = _cache(ctx, "names")
    key = id(scope.node)
    if key not in cache:
        cache[key] = sorted(
            (
                n
                for n in walk_tree(scope.node)
                if isinstance(n, ast.Name) and ctx.table.scope_for(n) is scope
            ),
            key=pos,
        )
    return cache[key]


def is_free(ctx: PythonContext, name: str, scope: Scope) -> bool:
    """No scope from here to the module binds `name` (a builtin, or nothing)."""
    current: Scope | None = scope
    while current is not None:
        if (
            name in current.locals
            or name in current.imports
            or name in current.defs
            or name in current.aliases
        ):
            return False
        current = current.parent
    return True


def inside_loop(ctx: PythonContext, node: ast.AST, scope: Scope) -> bool:
    current = parent(ctx, node)
    while current is not None and current is not scope.node:
        if isinstance(current, _LOOPS):
            return True
        if isinstance(current, _NESTED):
            return False
        current = parent(ctx, current)
    return False


# --------------------------------------------------------------------------- where values go


def bound_name(ctx: PythonContext, value: ast.expr) -> tuple[ast.stmt, str] | None:
    """(`name = value` statement, name) when `value` is the whole right-hand side."""
    holder = parent(ctx, value)
    if (
        isinstance(holder, ast.Assign)
        and holder.value is value
        and len(holder.targets) == 1
        and isinstance(holder.targets[0], ast.Name)
    ):
        return holder, holder.targets[0].id
    if (
        isinstance(holder, ast.AnnAssign)
        and holder.value is value
        and isinstance(holder.target, ast.Name)
    ):
        return holder, holder.target.id
    return None


def name_uses(
    ctx: PythonContext,
    stmt: ast.stmt,
    name: str,
    scope: Scope,
    alternatives: list[ast.Assign] | tuple[()] = (),
) -> tuple[list[ast.Name], str | None]:
    """The reads of `name` that see the value bound by `stmt`, or why that is unclear.

    `alternatives` (from `alternative_bindings`) are the bindings of the other branches of
    the `try`/`if` holding `stmt`: the caller gives them values of the same kind, so they
    count as one binding with `stmt`, and the reads after the whole statement are its uses."""
    if name in scope.globals_:
        return [], f"`{name}` is declared global or nonlocal"
    if name in scope.imports or name in scope.defs:
        return [], f"`{name}` is also imported or defined in this scope"
    names = _names_by_id(ctx, scope).get(name, [])
    own = _target_of(stmt)
    block = block_of(ctx, stmt)
    block_ids = _block_ids(ctx, block) if block is not None else frozenset()
    next_store: tuple[int, int] | None = None
    for node in names:
        if isinstance(node.ctx, ast.Load) or node is own:
            continue
        other = statement_of(ctx, node)
        if any(other is alt for alt in alternatives):
            continue
        same_block = isinstance(other, (ast.Assign, ast.AnnAssign)) and id(other) in block_ids
        if not same_block:
            return [], f"`{name}` is rebound on another path (line {node.lineno})"
        if pos(node) > end_pos(stmt) and (next_store is None or pos(node) < next_store):
            next_store = pos(other)  # type: ignore[arg-type]
    uses = []
    for node in names:
        if not isinstance(node.ctx, ast.Load):
            continue
        if pos(node) < end_pos(stmt) and pos(node) >= pos(stmt):
            continue  # the right-hand side of the binding itself
        if pos(node) < pos(stmt):
            if inside_loop(ctx, stmt, scope):
                return [], f"`{name}` is read before it is bound in the loop (line {node.lineno})"
            continue
        if next_store is not None and pos(node) >= next_store:
            continue
        if alternatives and block is not None:
            owner = block[0]
            if isinstance(owner, ast.ExceptHandler):
                owner = parent(ctx, owner) or owner
            if pos(node) < end_pos(owner) and not (
                pos(node) > end_pos(stmt) and id(statement_of(ctx, node)) in block_ids
            ):
                return (
                    [],
                    f"`{name}` is read inside the `{type(owner).__name__.lower()}` (line {node.lineno})",
                )
        uses.append(node)
    nested = _nested_read(ctx, name, scope)
    if nested is not None:
        return [], f"`{name}` is read inside a nested function or class (line {nested.lineno})"
    return uses, None


def _block_ids(ctx: PythonContext, block: tuple[ast.AST, list[ast.stmt]]) -> frozenset[int]:
    cache = _cache(ctx, "block_ids")
    key = id(block[1])
    if key not in cache:
        cache[key] = frozenset(id(s) for s in block[1])
    return cache[key]


def _names_by_id(ctx: PythonContext, scope: Scope) -> dict[str, list[ast.Name]]:
    cache = _cache(ctx, "names_by_id")
    key = id(scope.node)
    if key not in cache:
        index: dict[str, list[ast.Name]] = {}
        for node in scope_names(ctx, scope):
            index.setdefault(node.id, []).append(node)
        cache[key] = index
    return cache[key]


def _target_of(stmt: ast.stmt) -> ast.AST | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0]
    if isinstance(stmt, ast.AnnAssign):
        return stmt.target
    return None


def _nested_read(ctx: PythonContext, name: str, scope: Scope) -> ast.Name | None:
    """First read of `name` inside a function/class nested in `scope` that sees its binding."""
    cache = _cache(ctx, "nested")
    key = id(scope.node)
    if key not in cache:
        # One walk per scope, not one per finding: module-level scripts have many findings.
        first: dict[str, ast.Name] = {}
        for node in walk_tree(scope.node):
            if not isinstance(node, ast.Name) or node.id in first:
                continue
            inner = ctx.table.scope_for(node)
            if inner is scope:
                continue
            current: Scope | None = inner
            while current is not None and current is not scope:
                if (
                    node.id in current.locals
                    or node.id in current.imports
                    or (node.id in current.defs)
                ):
                    break
                current = current.parent
            if current is scope:
                first[node.id] = node
        cache[key] = first
    return cache[key].get(name)


def reaching_value(ctx: PythonContext, node: ast.Name) -> ast.expr | None:
    """The right-hand side of the `name = value` statement whose value `node` reads."""
    scope = ctx.table.scope_for(node)
    candidates = []
    for stmt in _single_bindings(ctx, scope).get(node.id, []):
        if pos(stmt) >= pos(node):
            break
        candidates.append(stmt)
    for stmt in reversed(candidates):
        uses, problem = name_uses(ctx, stmt, node.id, scope)
        if problem is None and any(u is node for u in uses):
            return stmt.value
    return None


def _single_bindings(ctx: PythonContext, scope: Scope) -> dict[str, list[ast.stmt]]:
    """`name = value` statements of a scope (the whole right-hand side bound to one name)."""
    cache = _cache(ctx, "single_bindings")
    key = id(scope.node)
    if key not in cache:
        index: dict[str, list[ast.stmt]] = {}
        for stmt in scope_statements(scope):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                found = bound_name(ctx, stmt.value)
                if found:
                    index.setdefault(found[1], []).append(stmt)
        cache[key] = index
    return cache[key]


def value_origin(ctx: PythonContext, expr: ast.expr) -> ast.expr | None:
    """The expression a value was computed by: itself, or what a name was bound to."""
    if isinstance(expr, ast.Name):
        return reaching_value(ctx, expr)
    return expr


def available_at(ctx: PythonContext, expr: ast.expr, scope: Scope, stmt: ast.stmt) -> bool:
    """Every local name in `expr` is bound only before `stmt` (so `expr` can move there)."""
    for node in walk_tree(expr):
        if not isinstance(node, ast.Name):
            continue
        if node.id not in scope.locals:
            continue
        stores = [
            n
            for n in scope_names(ctx, scope)
            if n.id == node.id and not isinstance(n.ctx, ast.Load)
        ]
        if any(pos(s) >= pos(stmt) for s in stores):
            return False
    return True


_PURE = (
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.UnaryOp,
    ast.BinOp,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.keyword,
)


def is_pure(expr: ast.expr, allowed_call=lambda call: False) -> bool:
    """Evaluating `expr` again has no side effects (names, attributes, literals, operators)."""
    for node in walk_tree(expr):
        if isinstance(node, ast.Call):
            if not allowed_call(node):
                return False
        elif not isinstance(node, _PURE):
            return False
    return True


# --------------------------------------------------------------------------- module globals


def global_reads(ctx: PythonContext, stmt: ast.stmt, name: str) -> list[ast.Name] | None:
    """Every read of a module-level `name` bound once, by `stmt`, including the reads inside
    functions and methods that see it (none binds the name itself); None when some code
    rebinds it (another binding, a `global` declaration, `del`) or reads it before `stmt`."""
    module = ctx.table.module_scope
    if ctx.table.scope_for(stmt) is not module:
        return None
    own = _target_of(stmt)
    reads: list[ast.Name] = []
    for node in walk_tree(ctx.tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        if node is own:
            continue
        inner = ctx.table.scope_for(node)
        if not isinstance(node.ctx, ast.Load):
            if inner is module:
                return None
            continue  # a function's own local of that name: not the global
        if not _sees_module_binding(name, inner, module):
            continue
        if inner is module and pos(node) < end_pos(stmt):
            return None
        reads.append(node)
    return sorted(reads, key=pos)


def _sees_module_binding(name: str, scope: Scope | None, module: Scope) -> bool:
    current = scope
    while current is not None and current is not module:
        if current.kind != "class" and (
            name in current.locals or name in current.imports or name in current.defs
        ):
            return False
        current = current.parent
    return True


# --------------------------------------------------------------------------- alternatives


def alternative_bindings(ctx: PythonContext, stmt: ast.stmt, name: str) -> list[ast.Assign] | None:
    """The other bindings of `name` that take the place of `stmt` on another path: `stmt`
    is the last binding of `name` in one branch of a `try`/`except` or `if`/`else`, and each
    other branch ends its bindings of `name` with one `name = value` statement. None when
    `stmt` has no such siblings."""
    found = block_of(ctx, stmt)
    if found is None:
        return None
    owner, block = found
    if isinstance(owner, ast.ExceptHandler):
        owner = parent(ctx, owner)
    if isinstance(owner, ast.Try):
        branches = [owner.body, *(h.body for h in owner.handlers)]
    elif isinstance(owner, ast.If) and owner.orelse:
        branches = [owner.body, owner.orelse]
    else:
        return None
    if not any(b is block for b in branches):
        return None  # an `else`/`finally` block of a try
    if _last_binding(block, name) is not stmt:
        return None
    others: list[ast.Assign] = []
    for branch in branches:
        if branch is block:
            continue
        last = _last_binding(branch, name)
        if not isinstance(last, ast.Assign):
            return None
        others.append(last)
    return others


def _last_binding(block: list[ast.stmt], name: str) -> ast.stmt | None:
    """The last top-level statement of a block binding `name` as a single-name target."""
    last = None
    for stmt in block:
        targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            last = stmt
    return last
