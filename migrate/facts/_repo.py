"""The repository index the fact builders share: files by module, lazy per-file name tables.

Every per-file structure (ScopeTable, parent links, binding index) is built on first use, so
files that no fact ever looks into cost one text search and nothing else. A file's names are
resolved by its ScopeTable (migrate.analysis.pyscope: `qualname`, `lookup`), the scan's own
table of the file where the scan parsed it; across files, `Repo.module_binding` follows a
name to the module-level binding it stands for.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

from migrate.analysis.astwalk import children, walk_lines
from migrate.analysis.dataflow import reaching_value
from migrate.analysis.parsed import ParsedFile, parsed_file
from migrate.analysis.pyscope import Scope, ScopeTable, shared_table
from migrate.analysis.textsearch import WholeWords
from migrate.checks.base import LineIndex, PythonContext


@dataclass(frozen=True)
class SourceFile:
    """One Python file. `module` is its dotted name ("pkg.models" for a package __init__);
    `display` is the path every position refers to. `parsed` may be left out: the tree is
    then parsed on first use (most files of a repository are only text-searched)."""

    display: str
    module: str
    text: str
    parsed: ast.Module | None = None
    # The scan's walk found no call that can be a TorchScript maker (values.may_capture):
    # the capture search skips the file without parsing it.
    no_makers: bool = False
    no_sites: bool = False  # nor a call that can write or read an archive (may_hold_site)
    # Dotted folder of a module outside any package (the scan's; its scope table is shared).
    script_dir: str = ""

    @functools.cached_property
    def parsed_file(self) -> ParsedFile | None:
        """The scan's parse of this text (migrate.analysis.parsed); None when given a tree."""
        return parsed_file(self.display, self.text) if self.parsed is None else None

    @functools.cached_property
    def tree(self) -> ast.Module:
        if self.parsed_file is None:
            return self.parsed  # type: ignore[return-value]
        try:
            return self.parsed_file.tree
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # the scan reports it (an error record); here it just has no facts
            return ast.Module(body=[], type_ignores=[])


@dataclass(frozen=True, order=True)
class Span:
    """Where a node is: line 1-based, column 1-based in characters, end exclusive (the
    convention of migrate.findings.Finding)."""

    display: str
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def start(self) -> tuple[str, int, int]:
        return self.display, self.line, self.column


# Calls whose result is a TorchScript module.
TORCHSCRIPT_MAKERS = frozenset(
    {
        "torch.jit.script",
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.jit.freeze",
        "torch.jit.load",
        "torch.jit.optimize_for_inference",
        "torch.utils.mobile_optimizer.optimize_for_mobile",
        "torch.jit._load_for_lite_interpreter",
        "torch.jit.mobile._load_for_lite_interpreter",
    }
)
# Calls that turn one TorchScript module into another (their first argument is the input).
TORCHSCRIPT_PASSES = frozenset(
    {
        "torch.jit.freeze",
        "torch.jit.optimize_for_inference",
        "torch.utils.mobile_optimizer.optimize_for_mobile",
    }
)
# Methods of nn.Module that return the module itself.
SELF_RETURNING = frozenset(
    {"eval", "train", "to", "cpu", "cuda", "float", "half", "double", "requires_grad_"}
)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def terminal_names(quals: frozenset[str]) -> frozenset[str]:
    """torch.jit.load -> load: the name a call of the API is spelled with, alias aside."""
    return frozenset(q.rpartition(".")[2] for q in quals)


def calls_spelled(
    text: str, tree: ast.Module, table: ScopeTable, names: frozenset[str], quals: frozenset[str]
) -> Iterator[ast.Call]:
    """The calls whose function is spelled with one of `names` (`x.load(...)`, `load(...)`)
    or with a name bound to one of `quals` (an import in any scope, a module-level alias):
    every call that can resolve to one of `quals` and is spelled that way. Only the
    statements on the lines that hold one of those words are walked."""
    words = set(names) | table.spellings(quals)
    for node in walk_lines(tree, WholeWords(words).lines(text)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in words:
                yield node


class FileIndex:
    """One file's lazily built lookups."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.display = src.display
        self.module = src.module
        self.is_package = src.display.replace("\\", "/").endswith("__init__.py")
        self._table: ScopeTable | None = None
        self._ctx: PythonContext | None = None
        self._parents: dict[int, ast.AST] | None = None
        self._stores: dict[tuple[int, str], list[ast.Name]] = {}
        self._loads: dict[str, list[ast.Name]] = {}
        self._attrs: dict[str, list[ast.Attribute]] = {}
        self._calls: list[ast.Call] = []
        self._import_froms: list[ast.ImportFrom] = []
        self._ascii: bool | None = None  # asked only for a column on a non-ASCII line
        self._lines: LineIndex | None = None

    # ---- lazy structures ----------------------------------------------------------------
    @property
    def tree(self) -> ast.Module:
        return self.src.tree

    @property
    def table(self) -> ScopeTable:
        if self._table is None:
            parsed = self.src.parsed_file
            if parsed is not None and parsed.error is None:  # the table the scan built
                table = shared_table(
                    parsed, self.module, self.is_package, None, self.src.script_dir
                )
            else:
                table = ScopeTable(self.tree, self.module, self.is_package)
            self._table = table
        return self._table

    @property
    def ctx(self) -> PythonContext:
        """A check context over this file, for the per-scope helpers of migrate.analysis.dataflow."""
        if self._ctx is None:
            self._ctx = PythonContext(self.display, self.src.text, self.tree, self.table)
        return self._ctx

    def _index(self) -> None:
        if self._parents is not None:
            return
        table = self.table
        parents: dict[int, ast.AST] = {}
        stack: list[ast.AST] = [self.tree]
        while stack:
            holder = stack.pop()
            for child in children(holder):  # faster than ast.iter_child_nodes, same order
                parents[id(child)] = holder
                stack.append(child)
            if isinstance(holder, ast.Name):
                if isinstance(holder.ctx, ast.Load):
                    self._loads.setdefault(holder.id, []).append(holder)
                else:
                    scope = table.scope_for(holder)
                    if holder.id in scope.globals_:
                        scope = table.module_scope
                    self._stores.setdefault((id(scope.node), holder.id), []).append(holder)
            elif isinstance(holder, ast.Attribute):
                self._attrs.setdefault(holder.attr, []).append(holder)
            elif isinstance(holder, ast.Call):
                self._calls.append(holder)
            elif isinstance(holder, ast.ImportFrom):
                self._import_froms.append(holder)
        self._parents = parents

    def parent(self, node: ast.AST) -> ast.AST | None:
        self._index()
        return self._parents.get(id(node))  # type: ignore[union-attr]

    def stores(self, scope: Scope, name: str) -> list[ast.Name]:
        self._index()
        return self._stores.get((id(scope.node), name), [])

    def loads(self, name: str) -> list[ast.Name]:
        self._index()
        return self._loads.get(name, [])

    def attributes(self, attr: str) -> list[ast.Attribute]:
        self._index()
        return self._attrs.get(attr, [])

    def calls(self, names: frozenset[str]) -> Iterator[ast.Call]:
        """Calls of a function or method named one of `names`, or of an imported alias
        (`from torch.jit import load as L`): the others cannot be the API asked for."""
        self._index()
        aliases = {local for scope in self.table.import_scopes() for local in scope.imports}
        aliases.update(self.table.module_scope.aliases)
        for call in self._calls:
            func = call.func
            if isinstance(func, ast.Attribute):
                if func.attr in names:
                    yield call
            elif isinstance(func, ast.Name) and (func.id in names or func.id in aliases):
                yield call

    def import_froms(self) -> list[ast.ImportFrom]:
        self._index()
        return self._import_froms

    # ---- positions ----------------------------------------------------------------------
    def _col(self, line: int, byte_col: int) -> int:
        if self._ascii is None:
            self._ascii = self.src.text.isascii()
        if self._ascii:
            return byte_col
        if self._lines is None:
            self._lines = LineIndex(self.src.text)
        text = self._lines.line_text(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        return Span(
            self.display,
            line,
            self._col(line, node.col_offset) + 1,  # type: ignore[attr-defined]
            end_line,
            self._col(end_line, node.end_col_offset) + 1,  # type: ignore[attr-defined]
        )

    # ---- names --------------------------------------------------------------------------
    def qualname(self, expr: ast.AST) -> str | None:
        return self.table.qualname(expr)

    def single_value(self, scope: Scope, name: str) -> ast.expr | None:
        """The value of `name` when the scope binds it exactly once, by `name = value`."""
        if name in scope.imports or name in scope.defs or _is_param(scope, name):
            return None
        stores = self.stores(scope, name)
        if len(stores) != 1:
            return None
        holder = self.parent(stores[0])
        if isinstance(holder, ast.Assign) and any(t is stores[0] for t in holder.targets):
            return holder.value
        if isinstance(holder, ast.AnnAssign) and holder.value is not None:
            return holder.value
        return None

    def value_of(self, node: ast.Name) -> tuple[FileIndex, ast.expr, Scope] | None:
        """The expression a read of a local name evaluates to, if one binding reaches it."""
        scope = self.table.scope_for(node)
        kind, where = self.table.lookup(node.id, scope)
        if kind != "local":
            return None
        assert isinstance(where, Scope)
        if where is scope:
            value = reaching_value(self.ctx, node)
            if value is not None:
                return self, value, scope
        value = self.single_value(where, node.id)
        return (self, value, where) if value is not None else None

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        current = self.parent(node)
        while current is not None and not isinstance(current, _FUNCS):
            current = self.parent(current)
        return current

    def enclosing_class(self, func: ast.AST) -> ast.ClassDef | None:
        holder = self.parent(func)
        return holder if isinstance(holder, ast.ClassDef) else None


def _is_param(scope: Scope, name: str) -> bool:
    node = scope.node
    if not isinstance(node, (*_FUNCS, ast.Lambda)):
        return False
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return any(a is not None and a.arg == name for a in every)


def self_name(func: ast.AST) -> str | None:
    """The first parameter of a method (`self`), unless it is a static method."""
    if not isinstance(func, _FUNCS):
        return None
    for dec in func.decorator_list:
        if isinstance(dec, ast.Name) and dec.id in ("staticmethod", "classmethod"):
            return None
    params = [*func.args.posonlyargs, *func.args.args]
    return params[0].arg if params else None


def unwrap_call(repo: Repo, f: FileIndex, expr: ast.expr) -> ast.Call | None:
    """The TorchScript-making call an expression evaluates, looking through `.eval()`-style
    chains and passes such as `torch.jit.freeze(...)`; None if it is not one."""
    for _ in range(16):
        if not isinstance(expr, ast.Call):
            return None
        qual = f.qualname(expr.func)
        if qual in TORCHSCRIPT_MAKERS:
            return expr
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in SELF_RETURNING:
            expr = func.value
            continue
        return None
    return None


@dataclass
class Repo:
    """All files, by display path and by module."""

    files: dict[str, FileIndex] = field(default_factory=dict)
    modules: dict[str, FileIndex] = field(default_factory=dict)

    @classmethod
    def build(cls, sources: list[SourceFile]) -> Repo:
        repo = cls()
        for src in sources:
            index = FileIndex(src)
            repo.files[src.display] = index
            if src.module:
                # Two files claiming one module (scripts in several roots): keep the first.
                repo.modules.setdefault(src.module, index)
        return repo

    def __iter__(self) -> Iterator[FileIndex]:
        return iter(self.files.values())

    def split(self, qual: str) -> tuple[FileIndex, str] | None:
        """`pkg.paths.RANKER_PATH` -> (the file of pkg.paths, "RANKER_PATH")."""
        module, _, name = qual.rpartition(".")
        f = self.modules.get(module)
        return (f, name) if f is not None and name else None

    def module_binding(self, qual: str, depth: int = 0) -> tuple[FileIndex, str] | None:
        """The module-level binding a qualified name stands for, following re-exports
        (`from .paths import X` in a package __init__) through the repository."""
        found = self.split(qual)
        if found is None or depth > 8:
            return None
        f, name = found
        scope = f.table.module_scope
        target = None
        if name in scope.imports and name not in scope.defs:
            target = f.table.canonical(scope.imports[name])
        elif name in scope.aliases:
            target = f.table.qualname(scope.aliases[name], scope)
        if target and target != qual:
            return self.module_binding(target, depth + 1) or (f, name)
        return f, name

    def definition(self, qual: str) -> tuple[FileIndex, ast.AST] | None:
        """The def/class statement a qualified name stands for, in the repository."""
        found = self.module_binding(qual)
        if found is None:
            return None
        f, name = found
        node = f.table.module_scope.defs.get(name)
        return (f, node) if node is not None else None
