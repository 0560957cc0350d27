"""Value flow of capture results beyond the scope that binds them.

A capture (`torch.jit.script/trace/trace_module(...)`, also under `.eval()`-style chains and
`torch.jit.freeze(...)`) bound at module level (`encoder = torch.jit.trace(...)` in module M)
or to `self.attr` in a method is tracked to the uses a per-scope analysis cannot see:

- in other modules: `from M import encoder [as e]`, `import M; M.encoder`,
  `from pkg import M; M.encoder`, relative imports and package re-exports
  (`from .encoders import encoder` in pkg/__init__.py, then `from pkg import encoder`);
- in M itself: reads inside functions, methods and class bodies (module-level reads are the
  per-scope analysis's business and are not listed);
- for `self.attr`: every read of `self.attr` in the methods of the same class.

Each use is classified: "call" (`encoder(x)`), "attribute" (`encoder.graph`, with the
attribute), "argument" (passed to a call), "returned", "import" (an import statement that
brings the name into a module; its reads are listed separately) and "other" (stored in a
container, rebound, `from M import *`). Limits: `obj.attr` through another object than
`self`, subclasses, `getattr` and values passed around by callers are not followed;
a star import is reported as an "other" use at the import so that nobody assumes "no uses".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate.analysis.pyscope import ScopeTable, resolve_relative
from migrate.analysis.textsearch import WholeWords
from migrate.facts._repo import (
    TORCHSCRIPT_MAKERS,
    TORCHSCRIPT_PASSES,
    FileIndex,
    Repo,
    Span,
    calls_spelled,
    self_name,
    terminal_names,
)

CAPTURES = frozenset({"torch.jit.script", "torch.jit.trace", "torch.jit.trace_module"})
TRACES = frozenset({"torch.jit.trace", "torch.jit.trace_module"})
TORCHSCRIPT_ONLY = frozenset(
    {
        "graph",
        "code",
        "inlined_graph",
        "_c",
        "save",
        "run_method",
        "code_with_constants",
        "_save_for_lite_interpreter",
        "graph_for",
        "original_name",
        "define",
        "_method_names",
    }
)
_MAKER_NAMES = terminal_names(TORCHSCRIPT_MAKERS)
# Any spelling of these APIs, aliases included, holds one of the words somewhere in the file.
MAKER_WORDS = WholeWords(_MAKER_NAMES)  # as whole words: `\b(?:script|trace|...)\b`
_CHAIN = frozenset({"eval", "train", "to", "cpu", "cuda", "float", "half", "double"})


@dataclass(frozen=True)
class ValueUse:
    """One use of a capture's value outside the scope that binds it.

    kind: "call" | "attribute" | "argument" | "returned" | "import" | "other".
    attribute: the attribute read, for kind "attribute". module: dotted module of the use.
    """

    span: Span
    kind: str
    attribute: str | None = None
    module: str = ""

    @property
    def torchscript_only(self) -> bool:
        return self.kind == "attribute" and self.attribute in TORCHSCRIPT_ONLY


@dataclass
class CaptureValue:
    """A capture call and where its value goes. binding: "module" (a module-level name),
    "attribute" (`self.<name>`) or "local" (bound elsewhere: not followed here, no uses)."""

    call: Span
    api: str
    binding: str
    name: str | None
    qualname: str | None  # M.name for module bindings, M.Class.name for self attributes
    outer: Span  # the whole bound expression: the call with its passes and `.eval()` chain
    uses: list[ValueUse] = field(default_factory=list)

    @property
    def torchscript_only_uses(self) -> list[ValueUse]:
        return [u for u in self.uses if u.torchscript_only]


def find_captures(repo: Repo) -> tuple[list[CaptureValue], dict[str, int], set[str]]:
    """Every capture call with its outside uses, the trace calls per file, and the names
    bound at module level to any TorchScript module (captures, loads, freezes...)."""
    captures: list[CaptureValue] = []
    by_qual: dict[str, CaptureValue] = {}
    by_attr: list[tuple[FileIndex, ast.ClassDef, CaptureValue]] = []
    traces: dict[str, int] = {}
    module_names: set[str] = set()
    for f in repo:
        text = f.src.text
        if f.src.no_makers or not _maker_text(text):
            continue
        for call in f.calls(_MAKER_NAMES):
            api = f.qualname(call.func)
            if api not in TORCHSCRIPT_MAKERS:
                continue
            if api not in CAPTURES:
                holder = f.parent(call)
                if (
                    isinstance(holder, ast.Assign)
                    and f.table.scope_for(call) is f.table.module_scope
                ):
                    module_names.update(t.id for t in holder.targets if isinstance(t, ast.Name))
                continue
            if api in TRACES:
                traces[f.display] = traces.get(f.display, 0) + 1
            capture = _bind(f, call, api, by_attr)
            captures.append(capture)
            if capture.binding == "module" and capture.qualname:
                by_qual.setdefault(capture.qualname, capture)
                module_names.add(capture.name or "")
    _module_uses(repo, by_qual)
    for f, cls, capture in by_attr:
        capture.uses.extend(_self_uses(f, cls, capture.name or ""))
    for capture in captures:
        capture.uses.sort(key=lambda u: (u.span.display, u.span.line, u.span.column))
    captures.sort(key=lambda c: c.call)
    return captures, traces, module_names


def _maker_text(text: str) -> bool:
    return ("jit" in text or "optimize_for_mobile" in text) and MAKER_WORDS.search(text)


def may_capture(text: str, tree: ast.Module, table: ScopeTable) -> bool:
    """Whether the file can hold a call `find_captures` takes for a maker; False is certain.

    Asked by the scan, which has the tree and a scope table at hand (the capture search would
    parse the file again, and most files that pass its text gate call no maker). The scan's
    table may know repository re-exports; they only turn other names into torch ones, so
    every call that resolves to a maker without them still does; and `calls_spelled`
    yields every call `FileIndex.calls` would that can resolve to a maker.
    """
    if not _maker_text(text):
        return False
    return any(
        table.qualname(call.func) in TORCHSCRIPT_MAKERS
        for call in calls_spelled(text, tree, table, _MAKER_NAMES, TORCHSCRIPT_MAKERS)
    )


def _bind(
    f: FileIndex,
    call: ast.Call,
    api: str,
    by_attr: list[tuple[FileIndex, ast.ClassDef, CaptureValue]],
) -> CaptureValue:
    node: ast.expr = call
    while True:
        holder = f.parent(node)
        grand = f.parent(holder) if holder is not None else None
        if (
            isinstance(holder, ast.Attribute)
            and holder.attr in _CHAIN
            and isinstance(grand, ast.Call)
            and grand.func is holder
        ):
            node = grand
        elif (
            isinstance(holder, ast.Call)
            and holder.args
            and holder.args[0] is node
            and f.qualname(holder.func) in TORCHSCRIPT_PASSES
        ):
            node = holder
        else:
            break
    span, outer = f.span(call), f.span(node)
    holder = f.parent(node)
    target = None
    if isinstance(holder, ast.Assign) and holder.value is node and len(holder.targets) == 1:
        target = holder.targets[0]
    elif isinstance(holder, ast.AnnAssign) and holder.value is node:
        target = holder.target
    scope = f.table.scope_for(call)
    if isinstance(target, ast.Name) and scope is f.table.module_scope:
        qual = f"{f.module}.{target.id}" if f.module else target.id
        return CaptureValue(span, api, "module", target.id, qual, outer)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        method = f.enclosing_function(call)
        cls = f.enclosing_class(method) if method is not None else None
        if cls is not None and self_name(method) == target.value.id:
            qual = f"{f.module}.{cls.name}.{target.attr}"
            capture = CaptureValue(span, api, "attribute", target.attr, qual, outer)
            by_attr.append((f, cls, capture))
            return capture
    name = target.id if isinstance(target, ast.Name) else None
    return CaptureValue(span, api, "local", name, None, outer)


def _module_uses(repo: Repo, by_qual: dict[str, CaptureValue]) -> None:
    if not by_qual:
        return
    # Qualified names that stand for each capture, grown by package re-exports.
    aliases: dict[str, CaptureValue] = dict(by_qual)
    for _ in range(8):
        grown = False
        for f in repo:
            if not _may_refer(f, aliases):
                continue
            scope = f.table.module_scope
            for local, imported in scope.imports.items():
                capture = aliases.get(f.table.canonical(imported))
                qual = f"{f.module}.{local}"
                if capture is not None and qual not in aliases and f.module:
                    aliases[qual] = capture
                    grown = True
        if not grown:
            break
    words = {q.rpartition(".")[2] for q in aliases}
    modules = {q.rpartition(".")[0] for q in aliases}
    for f in repo:
        if _may_refer(f, aliases):
            _uses_in(f, aliases, words)
        if "*" in f.src.text and any(m.rpartition(".")[2] in f.src.text for m in modules):
            _star_imports(f, modules, aliases)


def _may_refer(f: FileIndex, aliases: dict[str, CaptureValue]) -> bool:
    """Text test before any table: naming M.name takes both words (`from M import name`,
    `M.name`, `from . import M`), except in M itself."""
    text = f.src.text
    for qual, capture in aliases.items():
        module, _, name = qual.rpartition(".")
        if name in text and (
            module.rpartition(".")[2] in text or capture.call.display == f.display
        ):
            return True
    return False


def _uses_in(f: FileIndex, aliases: dict[str, CaptureValue], words: set[str]) -> None:
    module_scope = f.table.module_scope
    names = {w for w in words if w in f.src.text}
    for scope in f.table.import_scopes():
        for local, imported in scope.imports.items():
            if f.table.canonical(imported) in aliases:
                names.add(local)
    for name in names:
        own = aliases.get(f"{f.module}.{name}")
        if own is not None and own.call.display != f.display:
            own = None  # a re-export of the name, not this module's capture
        for load in f.loads(name):
            scope = f.table.scope_for(load)
            kind, where = f.table.lookup(name, scope)
            capture = None
            if kind == "import":
                capture = aliases.get(str(where))
            elif kind == "local" and where is module_scope and scope is not module_scope:
                capture = own
            if capture is not None:
                capture.uses.append(_classify(f, load))
    for word in words:
        for attr in f.attributes(word):
            capture = aliases.get(f.qualname(attr) or "")
            if capture is not None:
                capture.uses.append(_classify(f, attr))
    for node in f.import_froms():
        base = node.module or ""
        if node.level:
            base = resolve_relative(f.module, f.is_package, node.level, node.module)
        for alias in node.names:
            capture = aliases.get(f.table.canonical(f"{base}.{alias.name}"))
            if capture is not None:
                capture.uses.append(ValueUse(f.span(node), "import", None, f.module))


def _star_imports(f: FileIndex, modules: set[str], aliases: dict[str, CaptureValue]) -> None:
    for node in f.import_froms():
        if not any(a.name == "*" for a in node.names):
            continue
        base = node.module or ""
        if node.level:
            base = resolve_relative(f.module, f.is_package, node.level, node.module)
        for qual, capture in aliases.items():
            if qual.rpartition(".")[0] == base:
                capture.uses.append(ValueUse(f.span(node), "other", "*", f.module))


def _self_uses(f: FileIndex, cls: ast.ClassDef, attr: str) -> list[ValueUse]:
    uses = []
    for node in f.attributes(attr):
        if not isinstance(node.ctx, ast.Load) or not isinstance(node.value, ast.Name):
            continue
        method = f.enclosing_function(node)
        if method is None or f.enclosing_class(method) is not cls:
            continue
        if self_name(method) == node.value.id:
            uses.append(_classify(f, node))
    return uses


def _classify(f: FileIndex, node: ast.expr) -> ValueUse:
    holder = f.parent(node)
    span = f.span(node)
    if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
        return ValueUse(span, "other", None, f.module)
    if isinstance(holder, ast.Call):
        kind = "call" if holder.func is node else "argument"
        return ValueUse(span, kind, None, f.module)
    if isinstance(holder, ast.keyword):
        return ValueUse(span, "argument", None, f.module)
    if isinstance(holder, ast.Attribute) and holder.value is node:
        return ValueUse(span, "attribute", holder.attr, f.module)
    if isinstance(holder, (ast.Return, ast.Yield, ast.YieldFrom)):
        return ValueUse(span, "returned", None, f.module)
    return ValueUse(span, "other", None, f.module)
