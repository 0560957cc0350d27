"""Name resolution on the standard library's ast: imports, aliases, scopes, repo re-exports.

libcst's QualifiedNameProvider costs ~100x an ast parse, so detection resolves names with
this small table instead; libcst is only used where a rewrite is written (migrate/fix/imports.py).
"""

from __future__ import annotations

import ast
import re
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from migrate.analysis.astwalk import children, lines_matching, walk_tree
from migrate.analysis.parsed import ParsedFile

# A binding is the qualified name an identifier stands for, or None for "a local value".
Binding = str | None

_IMPORT = re.compile("import")

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
    star_modules: list[str] = field(default_factory=list)  # `from m import *`, in order


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
        text: str | None = None,
    ) -> None:
        self.module = module
        self.module_only = module_only
        self.is_package = is_package
        self.exports = exports or {}
        # Dotted folder of a module outside any package (tools/export.py -> "tools"): run as
        # a script, its folder is on sys.path, so `from compat import x` means tools/compat.py.
        self.script_dir = script_dir
        self.scopes: _Scopes = _Scopes(self)
        self.scope_of_node: dict[int, Scope] = {}
        self.repo_imports: set[str] = set()  # qualnames imported from non-torch modules
        # What the checks and the facts derive from this tree under these names, kept for
        # every analysis that reads this table (PythonContext.shared).
        self.analyses: dict[str, object] = {}
        # Function bodies collected only when something asks about them (see _defer); not
        # with a "\r" line break, which the parser counts as a line (lines_matching: None).
        self._import_lines = lines_matching(text, _IMPORT) if text is not None else None
        self._pending: dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef, Scope]] = {}
        self._pending_starts: list[tuple[int, int]] = []
        self._pending_nodes: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self._filling = False
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
        for node in walk_tree(target):
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
                scope.star_modules.append(base)
                self._note_import(base)  # its export table is read like a named import's
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
            if self._defer(node, scope, inner):
                return
        for stmt in node.body:
            self._collect_node(stmt, inner)

    # ---- function bodies on demand --------------------------------------------------
    # Most function bodies of a file are never asked about: the walk enters only the
    # statements that spell something it can act on. A function defined at module or class
    # level whose lines hold no `import` binds nothing any other scope sees (its imports would
    # be the only thing `import_scopes` and `repo_imports` read), so its body is collected
    # the first time a lookup needs it: a node inside it (`scope_for`), its scope (`scopes`).
    def _defer(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, outer: Scope, inner: Scope
    ) -> bool:
        lines = self._import_lines
        if lines is None or outer.kind not in ("module", "class") or node.end_lineno is None:
            return False
        if self._filling:  # a class in a deferred body: collected with it (starts stay sorted)
            return False
        at = bisect_left(lines, node.lineno)
        if at < len(lines) and lines[at] <= node.end_lineno:
            return False
        self._pending[id(node)] = (node, inner)
        self._pending_starts.append((node.lineno, node.col_offset))
        self._pending_nodes.append(node)
        return True

    def _fill(self, node: ast.AST) -> None:
        entry = self._pending.pop(id(node), None)
        if entry is not None:
            func, inner = entry
            self._filling = True
            try:
                for stmt in func.body:
                    self._collect_node(stmt, inner)
            finally:
                self._filling = False

    def _fill_all(self) -> None:
        for func, _ in list(self._pending.values()):
            self._fill(func)

    def _fill_around(self, node: ast.AST) -> None:
        """Collect the deferred body that holds `node` (deferred bodies do not nest: only
        module- and class-level functions are deferred, in source order)."""
        line = getattr(node, "lineno", None)
        if line is None:  # comprehension, withitem, match_case...: no position to look up
            self._fill_all()
            return
        at = bisect_right(self._pending_starts, (line, node.col_offset)) - 1  # type: ignore[attr-defined]
        if at < 0:
            return
        func = self._pending_nodes[at]
        end = (func.end_lineno or 0, func.end_col_offset or 0)
        if (node.end_lineno or line, node.end_col_offset or 0) <= end:  # type: ignore[attr-defined]
            self._fill(func)

    def import_scopes(self) -> Iterator[Scope]:
        """Every scope that can hold an import (a deferred body holds none): what readers of
        `Scope.imports` iterate, without collecting the deferred bodies."""
        return iter(dict.values(self.scopes))

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
        scope = self.scope_of_node.get(id(node))
        if scope is None and self._pending:
            self._fill_around(node)
            scope = self.scope_of_node.get(id(node))
        return scope if scope is not None else self.module_scope

    def scope_chain(self, name: str, scope: Scope) -> Iterator[Scope]:
        """The scopes a read of `name` in `scope` looks in, innermost first: a class body
        only where the read is (it is not visible from the functions nested in it), and a
        `global` declaration goes straight to the module's scope (at module level it changes
        nothing). Every lookup of a name walks this one chain (`binding`, `lookup`)."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind == "class" and not first:
                current = current.parent
                continue
            first = False
            if name in current.globals_ and current is not self.module_scope:
                current = self.module_scope
                continue
            yield current
            current = current.parent

    def lookup(self, name: str, scope: Scope) -> tuple[str, Scope | str | None]:
        """Where `name` read in `scope` is bound: ("import", qualname), ("local", the scope
        that binds it) or ("free", None) for builtins and undefined names. `binding` asks
        what the name stands for; the planner's facts ask where, to follow a local value."""
        for current in self.scope_chain(name, scope):
            if name in current.imports:
                if current.kind != "module" and name in current.locals:
                    return "local", current  # imported and rebound in a function: unclear
                return "import", self.canonical(current.imports[name])
            if name in current.locals or name in current.aliases or name in current.defs:
                return "local", current
        return "free", None

    def binding(self, name: str, scope: Scope, _depth: int = 0) -> Binding:
        for current in self.scope_chain(name, scope):
            if name in current.imports:
                if current.kind == "module" or name not in current.locals:
                    # At module level an import beats a fallback def (try/except ImportError).
                    return self.canonical(current.imports[name])
                return None
            if name in current.aliases and _depth < 8:
                return self.qualname(current.aliases[name], current, _depth + 1)
            if name in current.locals:
                return None
        return self._from_star_import(name)

    def _from_star_import(self, name: str) -> Binding:
        """A name no scope binds, in a module with `from m import *`: what m exports under it
        (the repository's export tables), else `torch` for `torch` itself, the one name a star
        import hands on that means the same module everywhere (timm's layers use it so)."""
        stars = self.module_scope.star_modules
        for base in reversed(stars):  # the last star import wins
            qual = self.exports.get(f"{base}.{name}")
            if qual:
                return self.canonical(qual)
        return "torch" if stars and name == "torch" else None

    def star_names(self) -> set[str]:
        """The names `_from_star_import` can resolve (the walk's line pruning spells them)."""
        stars = self.module_scope.star_modules
        if not stars:
            return set()
        prefixes = tuple(f"{base}." for base in stars)
        names = {key.rsplit(".", 1)[1] for key in self.exports if key.startswith(prefixes)}
        return names | {"torch"}

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

    def spellings(self, quals: frozenset[str]) -> set[str]:
        """The names a reference to one of `quals` can be spelled with in this module: their
        last part (`script`, also a method `.save`), a name an import in any scope or a
        module-level alias binds to one of them, a re-exported name that resolves to one. A
        line spelling none of them holds no such reference."""
        words = {q.rpartition(".")[2] for q in quals}
        for scope in self.import_scopes():
            words.update(local for local, q in scope.imports.items() if self.canonical(q) in quals)
        module_scope = self.module_scope
        words.update(
            name
            for name, value in module_scope.aliases.items()
            if self.qualname(value, module_scope) in quals
        )
        words.update(key.rpartition(".")[2] for key in self.exports if self.canonical(key) in quals)
        return words

    def module_exports(self) -> dict[str, str]:
        """Module-level names of this module that stand for torch APIs: {module.name: qual}."""
        out = {}
        scope = self.module_scope
        for name in set(scope.imports) | set(scope.aliases):
            qual = self.binding(name, scope)
            if qual and (qual.startswith("torch") or qual.split(".")[0] in _repo_roots(self)):
                out[f"{self.module}.{name}" if self.module else name] = qual
        return out


def shared_table(
    file: ParsedFile,
    module: str = "",
    is_package: bool = False,
    exports: Mapping[str, str] | None = None,
    script_dir: str = "",
    module_only: bool = False,
) -> ScopeTable:
    """The file's scope table for these arguments, built once per scan: the checks' walk,
    the repository pass and the planner's facts read the same table of the same tree
    (migrate.analysis.parsed). Raises what parsing the file raised."""
    key = (
        "scopes",
        module,
        is_package,
        frozenset(exports.items()) if exports else None,
        script_dir,
        module_only,
    )
    text = None if module_only else file.text
    return file.derived(
        key,
        lambda tree: ScopeTable(tree, module, is_package, exports, script_dir, module_only, text),
    )


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


class _Scopes(dict):
    """ScopeTable.scopes: {scope node: Scope}. Reading a deferred function's scope, or all of
    them, first collects its body."""

    def __init__(self, table: ScopeTable) -> None:
        super().__init__()
        # Weak: a table and its scopes holding each other would leave every parsed tree to
        # the cycle collector, which a scan runs rarely (tests/test_no_reference_cycles.py).
        self._table = weakref.ref(table)

    def _fill(self, node: ast.AST | None = None) -> None:
        table = self._table()
        if table is not None and table._pending:
            table._fill(node) if node is not None else table._fill_all()

    def __getitem__(self, node: ast.AST) -> Scope:
        self._fill(node)
        return super().__getitem__(node)

    def get(self, node: ast.AST, default=None):  # type: ignore[override]
        self._fill(node)
        return super().get(node, default)

    def values(self):  # type: ignore[override]
        self._fill()
        return super().values()

    def items(self):  # type: ignore[override]
        self._fill()
        return super().items()

    def __iter__(self):
        self._fill()
        return super().__iter__()


def _repo_roots(table: ScopeTable) -> set[str]:
    return {q.split(".")[0] for q in table.repo_imports}
