"""Name resolution on the standard library's ast: imports, aliases, scopes, repo re-exports.

libcst's QualifiedNameProvider costs ~100x an ast parse, so detection resolves names with
this small table instead; libcst is only used where a rewrite is written (migrate/fixer.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from migrate.astwalk import children

# A binding is the qualified name an identifier stands for, or None for "a local value".
Binding = str | None

_SCOPE_NODES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class Scope:
    node: ast.AST
    parent: Scope | None
    kind: str  # module | function | class | lambda
    imports: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)  # module-level `name = torch.x`
    locals: set[str] = field(default_factory=set)
    defs: dict[str, ast.AST] = field(default_factory=dict)  # def/class statements by name
    globals_: set[str] = field(default_factory=set)


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """`from ..x import y` inside `module` -> absolute module name of x."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    if target:
        parts.append(target)
    return ".".join(parts)


class ScopeTable:
    """Bindings of every scope in one module, built in one walk over the tree.

    With `module_only`, the bodies of functions, classes and lambdas are not walked: the
    module scope comes out the same (nothing in a body binds a module-level name here), which
    is all an export table needs, at a fraction of the walk; `repo_imports` then holds the
    module-level imports only.
    """

    def __init__(
        self,
        tree: ast.Module,
        module: str = "",
        is_package: bool = False,
        exports: Mapping[str, str] | None = None,
        script_dir: str = "",
        module_only: bool = False,
    ) -> None:
        self.module = module
        self.module_only = module_only
        self.is_package = is_package
        self.exports = exports or {}
        # Dotted folder of a module outside any package (tools/export.py -> "tools"): run as
        # a script, its folder is on sys.path, so `from compat import x` means tools/compat.py.
        self.script_dir = script_dir
        self.scopes: dict[ast.AST, Scope] = {}
        self.scope_of_node: dict[int, Scope] = {}
        self.repo_imports: set[str] = set()  # qualnames imported from non-torch modules
        root = Scope(tree, None, "module")
        self.scopes[tree] = root
        self.module_scope = root
        self._collect(tree, root)

    # ---- building -------------------------------------------------------------------
    def _new_scope(self, node: ast.AST, parent: Scope) -> Scope:
        kind = {
            ast.ClassDef: "class",
            ast.Lambda: "lambda",
        }.get(type(node), "function")
        scope = Scope(node, parent, kind)
        self.scopes[node] = scope
        return scope

    def _bind_local(self, scope: Scope, name: str) -> None:
        scope.locals.add(name)

    def _bind_target(self, scope: Scope, target: ast.AST) -> None:
        # The common targets without a full walk: `x` binds x; `a.b.c` binds nothing (the
        # names of an attribute chain are loads).
        if type(target) is ast.Name:
            if type(target.ctx) is ast.Store:
                self._bind_local(scope, target.id)
            return
        base = target
        while type(base) is ast.Attribute:
            base = base.value  # type: ignore[attr-defined]
        if base is not target and type(base) is ast.Name:
            return
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self._bind_local(scope, node.id)
            elif isinstance(node, ast.Starred):
                continue

    def _collect(self, node: ast.AST, scope: Scope) -> None:
        for child in children(node):
            self._collect_node(child, scope)

    def _collect_node(self, node: ast.AST, scope: Scope) -> None:
        self.scope_of_node[id(node)] = scope
        special = _SPECIAL.get(type(node))
        if special is not None:
            special(self, node, scope)
            return
        # Most nodes bind nothing: one dictionary miss, then the children.
        for child in children(node):
            self._collect_node(child, scope)

    # ---- the nodes that bind or open a scope (dispatched by type, see _SPECIAL) ----------
    def _on_import(self, node: ast.Import, scope: Scope) -> None:
        for alias in node.names:
            if alias.asname:
                scope.imports[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                scope.imports.setdefault(top, top)
            self._note_import(alias.name)

    def _on_import_from(self, node: ast.ImportFrom, scope: Scope) -> None:
        base = node.module or ""
        if node.level:
            base = resolve_relative(self.module, self.is_package, node.level, node.module)
        for alias in node.names:
            if alias.name == "*":
                continue
            qual = f"{base}.{alias.name}" if base else alias.name
            scope.imports[alias.asname or alias.name] = qual
            self._note_import(qual)

    def _on_def(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, scope: Scope
    ) -> None:
        self._bind_local(scope, node.name)
        scope.defs[node.name] = node
        # Decorators, defaults and bases are evaluated in the enclosing scope.
        for dec in node.decorator_list:
            self._collect_node(dec, scope)
        if isinstance(node, ast.ClassDef):
            for base in (*node.bases, *node.keywords):
                self._collect_node(base, scope)
        else:
            for default in (*node.args.defaults, *node.args.kw_defaults):
                if default is not None:
                    self._collect_node(default, scope)
            for arg in self._all_args(node.args):
                if arg.annotation is not None:
                    self._collect_node(arg.annotation, scope)
            if node.returns is not None:
                self._collect_node(node.returns, scope)
        if self.module_only:
            return
        inner = self._new_scope(node, scope)
        if not isinstance(node, ast.ClassDef):
            for arg in self._all_args(node.args):
                self._bind_local(inner, arg.arg)
        for stmt in node.body:
            self._collect_node(stmt, inner)

    def _on_lambda(self, node: ast.Lambda, scope: Scope) -> None:
        if self.module_only:
            return
        inner = self._new_scope(node, scope)
        for arg in self._all_args(node.args):
            self._bind_local(inner, arg.arg)
        self._collect_node(node.body, inner)

    def _on_global(self, node: ast.Global | ast.Nonlocal, scope: Scope) -> None:
        scope.globals_.update(node.names)

    def _on_assign(self, node: ast.Assign, scope: Scope) -> None:
        for target in node.targets:
            if (
                scope.kind == "module"
                and isinstance(target, ast.Name)
                and isinstance(node.value, (ast.Name, ast.Attribute))
            ):
                scope.aliases[target.id] = node.value
            else:
                self._bind_target(scope, target)
        self._collect(node, scope)

    def _on_target(self, node: ast.AST, scope: Scope) -> None:
        # AnnAssign, AugAssign, For, AsyncFor, NamedExpr, comprehension: `.target` binds.
        self._bind_target(scope, node.target)  # type: ignore[attr-defined]
        self._collect(node, scope)

    def _on_withitem(self, node: ast.withitem, scope: Scope) -> None:
        if node.optional_vars is not None:
            self._bind_target(scope, node.optional_vars)
        self._collect(node, scope)

    def _on_except(self, node: ast.ExceptHandler, scope: Scope) -> None:
        if node.name:
            self._bind_local(scope, node.name)
        self._collect(node, scope)

    @staticmethod
    def _all_args(args: ast.arguments) -> Iterator[ast.arg]:
        yield from args.posonlyargs
        yield from args.args
        if args.vararg:
            yield args.vararg
        yield from args.kwonlyargs
        if args.kwarg:
            yield args.kwarg

    def _note_import(self, qual: str) -> None:
        if qual.split(".")[0] not in ("torch", "executorch", "typing", "warnings"):
            self.repo_imports.add(qual)
            if self.script_dir:
                self.repo_imports.add(f"{self.script_dir}.{qual}")

    # ---- lookups --------------------------------------------------------------------
    def definition(self, name: str, scope: Scope) -> ast.AST | None:
        """The def/class statement a name refers to, if it is one in an enclosing scope."""
        current: Scope | None = scope
        while current is not None:
            if name in current.defs:
                return current.defs[name]
            if name in current.locals or name in current.imports:
                return None
            current = current.parent
        return None

    def scope_for(self, node: ast.AST) -> Scope:
        return self.scope_of_node.get(id(node), self.module_scope)

    def binding(self, name: str, scope: Scope, _depth: int = 0) -> Binding:
        current: Scope | None = scope
        first = True
        while current is not None:
            # Class bodies are not visible from the functions nested in them.
            if current.kind == "class" and not first:
                current = current.parent
                continue
            first = False
            if name in current.globals_:
                current = self.module_scope
                first = True
                continue
            if name in current.imports:
                if current.kind == "module" or name not in current.locals:
                    # At module level an import beats a fallback def (try/except ImportError).
                    return self.canonical(current.imports[name])
                return None
            if name in current.aliases and _depth < 8:
                return self.qualname(current.aliases[name], current, _depth + 1)
            if name in current.locals:
                return None
            current = current.parent
        return None

    def qualname(self, expr: ast.AST, scope: Scope | None = None, _depth: int = 0) -> Binding:
        if scope is None:
            scope = self.scope_for(expr)
        if isinstance(expr, ast.Name):
            return self.binding(expr.id, scope, _depth)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value, scope, _depth)
            return self.canonical(f"{base}.{expr.attr}") if base else None
        return None

    def canonical(self, qual: str) -> str:
        """Follow names re-exported by modules of the scanned repository."""
        for _ in range(8):
            if not self.exports or qual.startswith("torch."):
                return qual
            parts = qual.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                head = ".".join(parts[: cut + 1])
                if head not in self.exports and self.script_dir:
                    head = f"{self.script_dir}.{head}"
                if head in self.exports:
                    qual = ".".join([self.exports[head], *parts[cut + 1 :]])
                    break
            else:
                return qual
        return qual

    def module_exports(self) -> dict[str, str]:
        """Module-level names of this module that stand for torch APIs: {module.name: qual}."""
        out = {}
        scope = self.module_scope
        for name in set(scope.imports) | set(scope.aliases):
            qual = self.binding(name, scope)
            if qual and (qual.startswith("torch") or qual.split(".")[0] in _repo_roots(self)):
                out[f"{self.module}.{name}" if self.module else name] = qual
        return out


_SPECIAL = {
    ast.Import: ScopeTable._on_import,
    ast.ImportFrom: ScopeTable._on_import_from,
    ast.FunctionDef: ScopeTable._on_def,
    ast.AsyncFunctionDef: ScopeTable._on_def,
    ast.ClassDef: ScopeTable._on_def,
    ast.Lambda: ScopeTable._on_lambda,
    ast.Global: ScopeTable._on_global,
    ast.Nonlocal: ScopeTable._on_global,
    ast.Assign: ScopeTable._on_assign,
    ast.AnnAssign: ScopeTable._on_target,
    ast.AugAssign: ScopeTable._on_target,
    ast.For: ScopeTable._on_target,
    ast.AsyncFor: ScopeTable._on_target,
    ast.NamedExpr: ScopeTable._on_target,
    ast.comprehension: ScopeTable._on_target,
    ast.withitem: ScopeTable._on_withitem,
    ast.ExceptHandler: ScopeTable._on_except,
}


def _repo_roots(table: ScopeTable) -> set[str]:
    return {q.split(".")[0] for q in table.repo_imports}
