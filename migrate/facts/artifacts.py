"""Artifact flow: who writes a TorchScript archive, who reads one, and by which path.

A *producer* is `torch.jit.save(m, p)`, `x.save(p)` on a TorchScript value (a name bound from
torch.jit.script/trace/trace_module/freeze/load, optimize_for_mobile, also through another
module or `self.attr`), any `._save_for_lite_interpreter(p)` and, in a file importing
Lightning, `.to_torchscript(file_path=p)` (issue 19). A *consumer* is
`torch.jit.load(p)` or `_load_for_lite_interpreter(p)` (torch.jit or torch.jit.mobile).

The path expression is evaluated to a key: string literals, module constants (also imported,
relatively or through a package re-export), names bound once (or reaching in straight-line
code) in the same scope, `os.path.join`, `pathlib.Path`, `/`, `+`, f-strings,
`.with_suffix()`, `.parent`, `os.path.dirname` and `__file__` (the file's display path).
A part that only names a folder may stay symbolic (`{pkg.cfg.ROOT}/ranker.pt`,
`$ARTIFACTS/x.pt` for an environment variable); a path whose file name is unknown
(a parameter, argv, an argparse value, a loop variable, a file object) has key None.

Limits: keys compare text after normalisation, so a relative path written two ways
(`"a/../x.pt"` and `"x.pt"`) matches but `Path(__file__).parent / "x.pt"` and `"x.pt"`
only match when the script sits at the root it is run from; calls through the repository's
own wrappers (`def save(m, path): torch.jit.save(m, path)`) give key None at the wrapper;
each call of such a wrapper is a site of its own, keyed by the path it passes
(migrate.facts.wrappers).
"""

from __future__ import annotations

import ast
import posixpath
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from migrate.analysis.pyscope import Scope, ScopeTable
from migrate.analysis.textsearch import WholeWords
from migrate.checks.repository_wrappers import Wrapper
from migrate.facts._repo import (
    FileIndex,
    Repo,
    Span,
    _is_param,
    calls_spelled,
    self_name,
    unwrap_call,
)
from migrate.facts.wrappers import wrapper_sites

SAVE = "torch.jit.save"
LOADS = {
    "torch.jit.load": "torch.jit.load",
    "torch.jit._load_for_lite_interpreter": "torch.jit._load_for_lite_interpreter",
    "torch.jit.mobile._load_for_lite_interpreter": "torch.jit.mobile._load_for_lite_interpreter",
    "torch._C._load_for_lite_interpreter": "torch._C._load_for_lite_interpreter",
}
METHOD_SAVE = "ScriptModule.save"
METHOD_LITE = "ScriptModule._save_for_lite_interpreter"
WRAPPER = "to_torchscript"
WRAPPER_SAVE = "LightningModule.to_torchscript"
_CALL_NAMES = frozenset(
    {"save", "_save_for_lite_interpreter", WRAPPER, *(q.rpartition(".")[2] for q in LOADS)}
)
_CALLS = frozenset({SAVE, *LOADS})
# A file holds a site only if it spells one of these calls (checked before any table).
_CALL_WORDS = WholeWords(
    ("save", "load", "_save_for_lite_interpreter", "_load_for_lite_interpreter", "to_torchscript")
)
_PATH_TYPES = frozenset(
    f"pathlib.{t}" for t in ("Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath")
)
_JOINS = frozenset({"os.path.join", "posixpath.join", "ntpath.join"}) | _PATH_TYPES
_SAME = frozenset(
    {
        "str",
        "os.fspath",
        "os.path.abspath",
        "os.path.realpath",
        "os.path.normpath",
        "os.path.expanduser",
        "os.path.expandvars",
    }
)
_SAME_METHODS = frozenset({"resolve", "absolute", "expanduser", "as_posix"})
_ENV = frozenset({"os.environ.get", "os.getenv"})
_FIXED = {
    "os.getcwd": ".",
    "pathlib.Path.cwd": ".",
    "pathlib.Path.home": "~",
    "tempfile.gettempdir": "$TMPDIR",
}
_PRECISE_FSTRING_PARTS = sys.version_info >= (3, 12)
MEMORY = "<memory "  # the key of an in-memory archive starts so
# pytest's per-test folders: each test function (each `mktemp` call) gets a folder of its
# own, so `tmp_path / "m.pt"` in two tests names two files, never one.
_PER_TEST_DIRS = frozenset({"tmp_path", "tmpdir"})
_DIR_FACTORIES = frozenset({"tmp_path_factory", "tmpdir_factory"})


@dataclass(frozen=True)
class Site:
    """One producer or consumer of a TorchScript archive.

    role: "producer" | "consumer". api: the qualified call (`torch.jit.save`,
    `torch.jit.load`, `torch.jit._load_for_lite_interpreter`, ...) or `ScriptModule.save` /
    `ScriptModule._save_for_lite_interpreter` / `LightningModule.to_torchscript` for the
    methods. span: the call (its start is where MIG201/202/204/205/140 report). path: the path argument (None when absent). key: the
    normalised artifact path, None when unknown. path_def: the string literal holding the
    file extension, maybe in another file (the one place a rename should edit), None when the
    key is None or no literal holds it. path_shared: how many sites use that literal.
    """

    role: str
    api: str
    span: Span
    path: Span | None
    key: str | None
    path_def: Span | None = None
    path_shared: int = 0
    # The file name when only it is known (`os.path.join(out_dir, "model.pt")` with `out_dir`
    # a parameter): writers and readers are then linked by it, loosely.
    basename: str | None = None

    @property
    def file_name(self) -> str | None:
        if self.key and self.key.startswith(MEMORY):
            return self.key  # an io.BytesIO: no file, named by where it is made
        return posixpath.basename(self.key) if self.key else self.basename

    @property
    def lite(self) -> bool:
        """The mobile (lite interpreter) format."""
        return "_for_lite_interpreter" in self.api


@dataclass(frozen=True)
class _Value:
    text: str
    literals: tuple[tuple[str, Span], ...] = ()


def _spells_a_site_call(text: str) -> bool:
    # Every word of _CALL_WORDS holds `save`, `load` or `to_torchscript`: plain substring
    # searches first, then the whole-word test (as a regex it cost ~2 s serially over a
    # 9,500-file repository).
    if "save" not in text and "load" not in text and WRAPPER not in text:
        return False
    return _CALL_WORDS.search(text)


def find_sites(
    repo: Repo, wrappers: Mapping[str, Wrapper], torchscript_names: Collection[str] = ()
) -> list[Site]:
    """Every producer and consumer, the calls of the repository's own `wrappers` (by
    qualname) included. `torchscript_names`: names bound at module level to a TorchScript
    module somewhere; a file without "jit" can only save one it imports."""
    sites: list[Site] = []
    for f in repo:
        text = f.src.text
        if f.src.no_sites or not _spells_a_site_call(text):
            continue
        if "jit" not in text and "_for_lite_interpreter" not in text and WRAPPER not in text:
            if ".save(" not in text or not any(n in text for n in torchscript_names):
                continue
        for call in f.calls(_CALL_NAMES):
            site = _site(repo, f, call)
            if site is not None:
                sites.append(site)
    sites += wrapper_sites(repo, wrappers, _make)  # calls of the repository's own (MIG121)
    sites.sort(key=lambda s: s.span)
    shared: dict[Span, int] = {}
    for site in sites:
        if site.path_def is not None:
            shared[site.path_def] = shared.get(site.path_def, 0) + 1
    return [
        replace(s, path_shared=shared[s.path_def]) if s.path_def is not None else s for s in sites
    ]


def may_hold_site(text: str, tree: ast.Module, table: ScopeTable) -> bool:
    """Whether the file can hold a call `find_sites` takes for a site; False is certain.

    Asked by the scan, which has the tree and a scope table at hand (see
    values.may_capture, whose reasoning this follows). Certain without the repository: a
    `.save(` on a name bound to a plain module (`torch.save`) saves no TorchScript module;
    any other `.save(` may.
    """
    if not _spells_a_site_call(text):
        return False
    for call in calls_spelled(text, tree, table, _CALL_NAMES, _CALLS):
        func = call.func
        if table.qualname(func) in _CALLS:
            return True
        if isinstance(func, ast.Attribute):
            if func.attr in ("_save_for_lite_interpreter", WRAPPER):
                return True
            if func.attr == "save":
                receiver = table.qualname(func.value) if isinstance(func.value, ast.Name) else None
                if receiver is None or "." in receiver:
                    return True
    return False


def _site(repo: Repo, f: FileIndex, call: ast.Call) -> Site | None:
    func = call.func
    qual = f.qualname(func)
    if qual == SAVE:
        return _make(repo, f, call, "producer", SAVE, _arg(call, 1, "f"))
    if qual in LOADS:
        return _make(repo, f, call, "consumer", LOADS[qual], _arg(call, 0, "f"))
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "_save_for_lite_interpreter":
        return _make(repo, f, call, "producer", METHOD_LITE, _arg(call, 0, "f"))
    if func.attr == "save" and is_torchscript(repo, f, func.value):
        return _make(repo, f, call, "producer", METHOD_SAVE, _arg(call, 0, "f"))
    if func.attr == WRAPPER and _imports_lightning(f):
        path = _arg(call, 0, "file_path")
        if path is None or (isinstance(path, ast.Constant) and path.value is None):
            return None  # returns the module, writes nothing
        return _make(repo, f, call, "producer", WRAPPER_SAVE, path)
    return None


def _imports_lightning(f: FileIndex) -> bool:
    """The file imports Lightning (the roots MIG140 names), so `.to_torchscript` is its."""
    from migrate.registry import all_rules, code_with

    roots = set(all_rules()[code_with("framework-producer")].extra.get("frameworks") or ())
    return any(
        qual.split(".")[0] in roots
        for scope in f.table.import_scopes()
        for qual in scope.imports.values()
    )


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return None
    return call.args[index] if len(call.args) > index else None


def _make(
    repo: Repo, f: FileIndex, call: ast.Call, role: str, api: str, path: ast.expr | None
) -> Site:
    if path is None:
        return Site(role, api, f.span(call), None, None)
    memory = _memory_buffer(f, path)
    if memory is not None:
        return Site(role, api, f.span(call), f.span(path), memory)
    value = evaluate(repo, f, path, f.table.scope_for(path))
    key = normalise(value.text) if value is not None else None
    path_def = _extension_literal(value, key) if value is not None and key else None
    basename = None if key else _literal_file_name(repo, f, path)
    return Site(role, api, f.span(call), f.span(path), key, path_def, basename=basename)


def _memory_buffer(f: FileIndex, path: ast.expr) -> str | None:
    """`buffer` bound once to `io.BytesIO()` in the scope that reads it: an in-memory
    archive, named by where that buffer is made (a save and a load of one buffer link)."""
    if not isinstance(path, ast.Name):
        return None
    found = f.value_of(path)
    if found is None:
        return None
    owner, value, _ = found
    if (
        isinstance(value, ast.Call)
        and owner.qualname(value.func) == "io.BytesIO"
        and not value.args
    ):
        span = owner.span(value)
        return f"{MEMORY}{span.display}:{span.line}:{span.column}>"
    return None


def _literal_file_name(repo: Repo, f: FileIndex, path: ast.expr) -> str | None:
    """`name.pt` when the path's last part is a literal file name and the folder is not known
    (`os.path.join(folder, "name.pt")`, `folder / "name.pt"`, `f"{folder}/name.pt"`)."""
    last: ast.expr | None = None
    if isinstance(path, ast.Call) and f.qualname(path.func) == "os.path.join" and path.args:
        last = path.args[-1]
    elif isinstance(path, ast.BinOp) and isinstance(path.op, (ast.Div, ast.Add)):
        last = path.right
    elif isinstance(path, ast.JoinedStr) and path.values:
        last = path.values[-1]
    if not (isinstance(last, ast.Constant) and isinstance(last.value, str)):
        return None
    name = posixpath.basename(last.value.replace("\\", "/"))
    if isinstance(path, ast.BinOp) and isinstance(path.op, ast.Add) and "/" not in last.value:
        return None  # `prefix + ".pt"`: only an ending, not a name
    if isinstance(path, ast.JoinedStr) and "/" not in last.value:
        return None
    return name if posixpath.splitext(name)[1] else None


def normalise(text: str) -> str | None:
    text = text.replace("\\", "/")
    if not text:
        return None
    return posixpath.normpath(text)


def _extension_literal(value: _Value, key: str) -> Span | None:
    suffix = posixpath.splitext(posixpath.basename(key))[1]
    if not suffix:
        return None
    for text, span in reversed(value.literals):
        if suffix in text:
            return span
    return None


# --------------------------------------------------------------------------- TorchScript values


def is_torchscript(repo: Repo, f: FileIndex, expr: ast.expr, depth: int = 0) -> bool:
    """Does `expr` hold a TorchScript module (by every binding we can see, any one of them)?"""
    if depth > 6:
        return False
    if isinstance(expr, ast.Call):
        return unwrap_call(repo, f, expr) is not None
    if isinstance(expr, ast.Name):
        kind, where = f.table.lookup(expr.id, f.table.scope_for(expr))
        if kind == "local":
            assert isinstance(where, Scope)
            return _bound_to_torchscript(repo, f, where, expr.id, depth)
        if kind == "import":
            return _module_value_is_torchscript(repo, str(where), depth)
        return False
    if isinstance(expr, ast.Attribute):
        if isinstance(expr.value, ast.Name):
            values = self_attribute_values(f, expr)
            if values is not None:
                return any(is_torchscript(repo, f, v, depth + 1) for v in values)
        qual = f.qualname(expr)
        return qual is not None and _module_value_is_torchscript(repo, qual, depth)
    return False


def _bound_to_torchscript(repo: Repo, f: FileIndex, scope: Scope, name: str, depth: int) -> bool:
    for store in f.stores(scope, name):
        holder = f.parent(store)
        value = getattr(holder, "value", None)
        if isinstance(holder, (ast.Assign, ast.AnnAssign)) and value is not None:
            if is_torchscript(repo, f, value, depth + 1):
                return True
    return False


def _module_value_is_torchscript(repo: Repo, qual: str, depth: int) -> bool:
    found = repo.module_binding(qual)
    if found is None:
        return False
    target, name = found
    return _bound_to_torchscript(repo, target, target.table.module_scope, name, depth + 1)


def self_attribute_values(f: FileIndex, node: ast.Attribute) -> list[ast.expr] | None:
    """For `self.x` read in a method: every value the class's methods assign to `self.x`
    (None when `node` is not an attribute of the method's `self`)."""
    if not isinstance(node.value, ast.Name):
        return None
    func = f.enclosing_function(node)
    if func is None or self_name(func) != node.value.id:
        return None
    cls = f.enclosing_class(func)
    if cls is None:
        return None
    values = []
    for other in f.attributes(node.attr):
        if isinstance(other.ctx, ast.Load) or not isinstance(other.value, ast.Name):
            continue
        method = f.enclosing_function(other)
        if method is None or f.enclosing_class(method) is not cls:
            continue
        if self_name(method) != other.value.id:
            continue
        holder = f.parent(other)
        if isinstance(holder, (ast.Assign, ast.AnnAssign)) and holder.value is not None:
            values.append(holder.value)
    return values


# --------------------------------------------------------------------------- path values


def evaluate(
    repo: Repo, f: FileIndex, expr: ast.expr, scope: Scope, *, prefix: bool = False, depth: int = 0
) -> _Value | None:
    """The text of a path expression, or None. `prefix`: the value is only a folder part of
    a longer path, so a stable but unknown name may stand in symbolically."""
    if depth > 12:
        return None
    nxt = depth + 1
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            return _Value(expr.value, ((expr.value, f.span(expr)),))
        return None
    if isinstance(expr, ast.JoinedStr):
        return _fstring(repo, f, expr, scope, prefix, nxt)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Div)):
        left = evaluate(repo, f, expr.left, scope, prefix=True, depth=nxt)
        right = evaluate(repo, f, expr.right, scope, prefix=prefix, depth=nxt)
        if left is None or right is None:
            return None
        if isinstance(expr.op, ast.Add):
            return _Value(left.text + right.text, left.literals + right.literals)
        return _join([left, right])
    if isinstance(expr, ast.Name):
        return _name(repo, f, expr, scope, prefix, nxt)
    if isinstance(expr, ast.Attribute):
        return _attribute(repo, f, expr, scope, prefix, nxt)
    if isinstance(expr, ast.Call):
        return _call(repo, f, expr, scope, prefix, nxt)
    if isinstance(expr, ast.Subscript) and f.qualname(expr.value) == "os.environ":
        name = expr.slice
        if prefix and isinstance(name, ast.Constant) and isinstance(name.value, str):
            return _Value(f"${name.value}")
    return None


def _fstring(
    repo: Repo, f: FileIndex, expr: ast.JoinedStr, scope: Scope, prefix: bool, depth: int
) -> _Value | None:
    parts: list[_Value] = []
    last = len(expr.values) - 1
    for index, part in enumerate(expr.values):
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            # Before 3.12 the pieces of an f-string carry the position of the whole string.
            span = f.span(part if _PRECISE_FSTRING_PARTS else expr)
            parts.append(_Value(part.value, ((part.value, span),)))
            continue
        if not isinstance(part, ast.FormattedValue) or part.format_spec is not None:
            return None
        value = evaluate(repo, f, part.value, scope, prefix=prefix or index < last, depth=depth)
        if value is None:
            return None
        parts.append(value)
    return _Value("".join(p.text for p in parts), tuple(x for p in parts for x in p.literals))


def _join(parts: list[_Value]) -> _Value:
    text = ""
    for part in parts:
        text = posixpath.join(text, part.text) if text else part.text
    return _Value(text, tuple(x for p in parts for x in p.literals))


def _name(
    repo: Repo, f: FileIndex, expr: ast.Name, scope: Scope, prefix: bool, depth: int
) -> _Value | None:
    kind, where = f.table.lookup(expr.id, scope)
    if kind == "free":
        return _Value(f.display) if expr.id == "__file__" else None
    if kind == "import":
        return _qualified(repo, str(where), prefix, depth)
    assert isinstance(where, Scope)
    opened = _opened_file(f, where, expr.id)
    if opened is not None:
        return evaluate(repo, f, opened, where, prefix=prefix, depth=depth)
    if prefix and expr.id in _PER_TEST_DIRS and _is_param(where, expr.id):
        return _Value(f"$pytest-{expr.id}[{f.display}:{where.node.lineno}]")  # type: ignore[attr-defined]
    found = f.value_of(expr)
    if found is not None:
        owner, value, value_scope = found
        result = evaluate(repo, owner, value, value_scope, prefix=prefix, depth=depth)
        if result is not None:
            return result
    if prefix and where is f.table.module_scope:
        return _Value(f"{{{f.module}.{expr.id}}}" if f.module else f"{{{expr.id}}}")
    return None


def _opened_file(f: FileIndex, scope: Scope, name: str) -> ast.expr | None:
    """The path of `with open(path, ...) as name` when that is the name's only binding."""
    stores = f.stores(scope, name)
    holder = f.parent(stores[0]) if len(stores) == 1 else None
    if not isinstance(holder, ast.withitem) or holder.optional_vars is not stores[0]:
        return None
    call = holder.context_expr
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open" and call.args:
        return call.args[0] if f.table.lookup("open", scope)[0] == "free" else None
    if isinstance(func, ast.Attribute) and func.attr == "open":
        if f.qualname(func) == "io.open":
            return call.args[0] if call.args else None
        return func.value  # Path(...).open(...)
    return None


def _qualified(repo: Repo, qual: str, prefix: bool, depth: int) -> _Value | None:
    """A module-level name of another module, by its qualified name."""
    found = repo.module_binding(qual)
    if found is not None:
        target, name = found
        scope = target.table.module_scope
        if name in scope.imports:  # re-exported from outside the repository
            qual = target.table.canonical(scope.imports[name])
        else:
            value = target.single_value(scope, name)
            if value is not None:
                result = evaluate(repo, target, value, scope, prefix=prefix, depth=depth)
                if result is not None:
                    return result
            qual = f"{target.module}.{name}"
    return _Value(f"{{{qual}}}") if prefix else None


def _attribute(
    repo: Repo, f: FileIndex, expr: ast.Attribute, scope: Scope, prefix: bool, depth: int
) -> _Value | None:
    if expr.attr in ("parent", "name", "stem"):
        base = evaluate(repo, f, expr.value, scope, prefix=True, depth=depth)
        if base is None:
            return None
        text = base.text.rstrip("/")
        if expr.attr == "parent":
            return _Value(posixpath.dirname(text) or ".", base.literals)
        name = posixpath.basename(text)
        return _Value(name if expr.attr == "name" else posixpath.splitext(name)[0], base.literals)
    qual = f.qualname(expr)
    return _qualified(repo, qual, prefix, depth) if qual else None


def _call(
    repo: Repo, f: FileIndex, call: ast.Call, scope: Scope, prefix: bool, depth: int
) -> _Value | None:
    qual = f.qualname(call.func)
    if isinstance(call.func, ast.Name) and f.table.lookup(call.func.id, scope)[0] == "free":
        qual = call.func.id  # a builtin such as str()
    args = call.args
    if call.keywords and qual not in _ENV:
        return None
    if any(isinstance(a, ast.Starred) for a in args):
        return None
    if qual in _FIXED:
        return _Value(_FIXED[qual]) if prefix or not _FIXED[qual].startswith("$") else None
    if qual in _JOINS:
        if not args:
            return _Value(".")
        parts = []
        for index, arg in enumerate(args):
            last = index == len(args) - 1
            part = evaluate(repo, f, arg, scope, prefix=prefix or not last, depth=depth)
            if part is None:
                return None
            parts.append(part)
        return _join(parts)
    if qual in _SAME and len(args) == 1:
        return evaluate(repo, f, args[0], scope, prefix=prefix, depth=depth)
    if qual == "os.path.dirname" and len(args) == 1:
        base = evaluate(repo, f, args[0], scope, prefix=True, depth=depth)
        return _Value(posixpath.dirname(base.text), base.literals) if base else None
    if qual == "os.path.basename" and len(args) == 1:
        base = evaluate(repo, f, args[0], scope, prefix=prefix, depth=depth)
        return _Value(posixpath.basename(base.text), base.literals) if base else None
    if qual in _ENV:
        name = args[0] if args else None
        if prefix and isinstance(name, ast.Constant) and isinstance(name.value, str):
            return _Value(f"${name.value}")
        return None
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if (
        prefix
        and func.attr == "mktemp"
        and isinstance(func.value, ast.Name)
        and func.value.id in _DIR_FACTORIES
    ):
        span = f.span(call)  # a new numbered folder at each call
        return _Value(f"$pytest-mktemp[{span.display}:{span.line}:{span.column}]")
    if func.attr in _SAME_METHODS and not args:
        return evaluate(repo, f, func.value, scope, prefix=prefix, depth=depth)
    if func.attr == "joinpath":
        parts = [evaluate(repo, f, func.value, scope, prefix=True, depth=depth)]
        for index, arg in enumerate(args):
            last = index == len(args) - 1
            parts.append(evaluate(repo, f, arg, scope, prefix=prefix or not last, depth=depth))
        return None if any(p is None for p in parts) else _join(parts)  # type: ignore[arg-type]
    if func.attr in ("with_suffix", "with_name") and len(args) == 1:
        base = evaluate(repo, f, func.value, scope, prefix=True, depth=depth)
        new = evaluate(repo, f, args[0], scope, prefix=False, depth=depth)
        if base is None or new is None:
            return None
        if func.attr == "with_suffix":
            text = posixpath.splitext(base.text)[0] + new.text
        else:
            text = posixpath.join(posixpath.dirname(base.text), new.text)
        return _Value(text, base.literals + new.literals)
    return None
