"""The repository's own TorchScript wrappers in the artifact flow.

A call of a wrapper that writes the archive to its path parameter
(`convert_to_torchscript(net, DENOISE_PATH)`, `save_net_with_metadata(m, PATH)`) is a
producer of the file that call names; one of a wrapper that loads from its path parameter is
a consumer. Their keys are evaluated at the call site, as any other path is (literals,
constants, imported ones...), so a wrapper that saves and a wrapper that loads, or a plain
`torch.jit.load`, of one path are linked. The wrappers are those MIG121 reports: the scan's
repository pass decoded them once from what the files told (RepoFacts gets them from it);
only facts built without that pass search the files here, with the same
migrate.checks.repository_wrappers. Callees are resolved through imports and package
re-exports (Repo.module_binding).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.textsearch import WholeWords
from migrate.checks.repository_wrappers import Wrapper, find_wrappers
from migrate.facts._repo import FileIndex, Repo

WRAPPER_API = "wrapper"  # Site.api prefix: "wrapper medlib.utils.save_net_with_metadata"


def find_wrappers_in(repo: Repo) -> dict[str, Wrapper]:
    """Every wrapper of the repository by qualname, searched in its files: for facts built
    without a repository pass that looked for them (a folder analysed alone, a scan whose
    rules left the wrapper rule out)."""
    found: dict[str, Wrapper] = {}
    for f in repo:
        text = f.src.text
        if "jit" not in text or "def " not in text:
            continue
        for w in find_wrappers(f.ctx).values():
            found[w.qual] = w
    return found


def wrapper_calls(repo: Repo, wrappers: Mapping[str, Wrapper]):
    """(file, call, wrapper) for every call of a wrapper (by qualname) in the repository."""
    if not wrappers:
        return
    names = frozenset(w.name for w in wrappers.values())
    words = WholeWords(names)
    for f in repo:
        if not words.search(f.src.text):
            continue
        for call in f.calls(names):
            w = _callee(repo, f, call, wrappers)
            if w is not None:
                yield f, call, w


def _callee(repo: Repo, f: FileIndex, call: ast.Call, wrappers) -> Wrapper | None:
    func = call.func
    qual = f.qualname(func)
    if qual is None:
        if (
            isinstance(func, ast.Name)
            and f.table.lookup(func.id, f.table.scope_for(func))[0] == "local"
        ):
            return wrappers.get(_qualname(f.module, func.id))
        return None
    found = repo.module_binding(qual)
    if found is None:
        return None
    target, name = found
    return wrappers.get(_qualname(target.module, name))


def _qualname(module: str, name: str) -> str:
    return f"{module}.{name}" if module else name  # as Wrapper.qual spells it


def wrapper_sites(repo: Repo, wrappers: Mapping[str, Wrapper], make_site) -> list:
    """The producer and consumer Sites of the calls of `wrappers` (by qualname; see the
    module docstring); `make_site(repo, file, call, role, api, path)` builds one
    (artifacts._make)."""
    sites = []
    # Only a wrapper that writes or reads an archive makes its calls sites: the others' calls
    # are not searched (a wrapper named `trace` or `graph` is spelled in most files).
    paths = {q: w for q, w in wrappers.items() if w.producer or w.consumer}
    for f, call, w in wrapper_calls(repo, paths):
        roles = w.call_roles(call)
        args = w.bound(call) or {}
        for role, spec in (("producer", w.producer), ("consumer", w.consumer)):
            if role in roles and spec is not None:
                api = f"{WRAPPER_API} {w.qual}"
                sites.append(make_site(repo, f, call, role, api, args.get(spec.param)))
    return sites


# ---- example inputs for a wrapper that moves to torch.export ------------------------------
# Calls whose result is a tensor of the sizes written in its arguments; the random ones
# become zeros of those sizes (export reads the example's shape and dtype, not its values,
# and a draw would move the program's later random numbers).
_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.full", "torch.linspace", "torch.arange", "torch.eye"}
)
_RANDOM = frozenset({"torch.randn", "torch.rand"})
_METHODS = frozenset(
    {"reshape", "view", "float", "double", "unsqueeze", "permute", "transpose", "flatten"}
)
_LITERALS = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.operator, ast.unaryop)


def wrapper_example(facts, display: str, line: int, column: int, param: str):
    """(offset, text) inserting `param=[example]` into the wrapper call starting there: the
    argument the program calls the module it makes with, followed from the call (its result
    bound and called; saved by another wrapper call or written to its path, then loaded by
    a consumer of that file and called), through local bindings, and through the calls of
    the function whose parameter it is, to an expression of literal sizes. None when no
    such call is found, or the calls disagree."""
    repo = facts.repo
    f = repo.files.get(display)
    call = _call_at(f, line, column) if f is not None else None
    if call is None:
        return None
    texts = set()
    for owner, use in _module_calls(facts, f, call):
        if len(use.args) != 1 or use.keywords or isinstance(use.args[0], ast.Starred):
            return None
        texts.add(_portable(repo, owner, use.args[0], 0))
    if len(texts) != 1 or None in texts:
        return None
    end = f.ctx.end(call) - 1
    text = f.src.text
    if text[end : end + 1] != ")":
        return None
    before = text[:end].rstrip()
    sep = "" if before.endswith("(") else " " if before.endswith(",") else ", "
    return end, f"{sep}{param}=[{texts.pop()}]"


def _call_at(f: FileIndex, line: int, column: int) -> ast.Call | None:
    for node in walk_tree(f.tree):
        if isinstance(node, ast.Call) and node.lineno == line and f.span(node).column == column:
            return node
    return None


def _module_calls(facts, f: FileIndex, call: ast.Call, depth: int = 0):
    """(file, call) for each call of the module a capture call makes, as far as it is seen."""
    if depth > 4:
        return
    site = facts.site_at(*f.span(call).start)
    if site is not None and site.role == "producer":
        yield from _read_back(facts, site, depth)
    holder = f.parent(call)
    if isinstance(holder, ast.Call) and call in holder.args:
        outer = facts.site_at(*f.span(holder).start)
        if outer is not None and outer.role == "producer":
            yield from _read_back(facts, outer, depth)
    elif isinstance(holder, ast.Assign) and len(holder.targets) == 1:
        target = holder.targets[0]
        if isinstance(target, ast.Name):
            yield from _name_calls(facts, f, target, depth, follow=True)


def _name_calls(facts, f: FileIndex, target: ast.Name, depth: int, follow: bool):
    scope = f.table.scope_for(target)
    for load in f.loads(target.id):
        if f.table.scope_for(load) is not scope or load.lineno < target.lineno:
            continue
        holder = f.parent(load)
        if isinstance(holder, ast.Call) and holder.func is load:
            yield f, holder
        elif follow and isinstance(holder, ast.Call) and load in holder.args:
            site = facts.site_at(*f.span(holder).start)
            if site is not None and site.role == "producer":
                yield from _read_back(facts, site, depth + 1)


def _read_back(facts, producer, depth: int):
    """The calls of what each consumer of the producer's file loads."""
    for consumer in facts.consumers_of(producer) or _same_path_nearby(facts, producer):
        g = facts.repo.files.get(consumer.span.display)
        load = _call_at(g, consumer.span.line, consumer.span.column) if g is not None else None
        holder = g.parent(load) if load is not None else None
        if not isinstance(holder, ast.Assign) or len(holder.targets) != 1:
            continue
        target = holder.targets[0]
        if isinstance(target, ast.Tuple) and target.elts:  # `net, meta = load_net(...)`
            target = target.elts[0]
        if isinstance(target, ast.Name):
            yield from _name_calls(facts, g, target, depth + 1, follow=False)


def _same_path_nearby(facts, producer) -> list:
    """Where the path's value is unknown (`path = str(tmp_path / "n.pt")`): the consumers in
    the same function that read the same local name, bound once there."""
    f = facts.repo.files.get(producer.span.display)
    if f is None or producer.path is None:
        return []
    spelled = f.src.text.splitlines()[producer.path.line - 1][
        producer.path.column - 1 : producer.path.end_column - 1
    ]
    save = _call_at(f, producer.span.line, producer.span.column)
    if save is None or not spelled.isidentifier() or producer.path.end_line != producer.path.line:
        return []
    scope = f.table.scope_for(save)
    if f.table.scope_for(save) is f.table.module_scope or len(f.stores(scope, spelled)) != 1:
        return []
    out = []
    for c in facts.consumers:
        if c.span.display != f.display or c.path is None or c.path.line != c.path.end_line:
            continue
        line = f.src.text.splitlines()[c.path.line - 1]
        load = _call_at(f, c.span.line, c.span.column)
        if (
            line[c.path.column - 1 : c.path.end_column - 1] == spelled
            and load is not None
            and f.table.scope_for(load) is scope
        ):
            out.append(c)
    return out


def _portable(repo: Repo, f: FileIndex, expr: ast.expr, depth: int) -> str | None:
    """`expr` written so that it means the same in any file importing torch, or None."""
    if depth > 6:
        return None
    if all(isinstance(n, (*_LITERALS, ast.expr_context)) for n in walk_tree(expr)):
        return ast.unparse(expr)
    if isinstance(expr, ast.Call):
        args = [_portable(repo, f, a, depth + 1) for a in expr.args]
        keywords = {k.arg: _dtype(f, k.value) for k in expr.keywords}
        if None in args or None in keywords or None in keywords.values():
            return None
        spelled = ", ".join([*args, *(f"{k}={v}" for k, v in keywords.items())])
        qual = f.qualname(expr.func) or ""
        if qual in _RANDOM:
            return f"torch.zeros({spelled})"
        if qual in _FACTORIES:
            return f"{qual}({spelled})"
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in _METHODS:
            receiver = _portable(repo, f, expr.func.value, depth + 1)
            return f"{receiver}.{expr.func.attr}({spelled})" if receiver else None
        return None
    if isinstance(expr, ast.Name):
        found = f.value_of(expr)
        if found is not None:
            owner, value, _ = found
            return _portable(repo, owner, value, depth + 1)
        return _through_callers(repo, f, expr, depth)
    return None


def _dtype(f: FileIndex, expr: ast.expr) -> str | None:
    qual = f.qualname(expr) or ""
    return qual if qual.startswith("torch.") else None


def _through_callers(repo: Repo, f: FileIndex, name: ast.Name, depth: int) -> str | None:
    """A parameter of a module-level function: what every call of it in the repository
    passes there (one spelling, or None)."""
    kind, scope = f.table.lookup(name.id, f.table.scope_for(name))
    func = getattr(scope, "node", None)
    if kind != "local" or not isinstance(func, ast.FunctionDef) or func not in f.tree.body:
        return None
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if name.id not in params:
        return None
    index = params.index(name.id)
    texts = set()
    for g in repo:
        if func.name not in g.src.text:
            continue
        for call in g.calls(frozenset({func.name})):
            qual = g.qualname(call.func)
            target = repo.module_binding(qual) if qual else None
            local = qual is None and g is f and isinstance(call.func, ast.Name)
            if not local and (target is None or target != (f, func.name)):
                continue
            passed = call.args[index] if len(call.args) > index else None
            passed = next((k.value for k in call.keywords if k.arg == name.id), passed)
            if passed is None or isinstance(passed, ast.Starred):
                return None
            texts.add(_portable(repo, g, passed, depth + 1))
    return texts.pop() if len(texts) == 1 and None not in texts else None
