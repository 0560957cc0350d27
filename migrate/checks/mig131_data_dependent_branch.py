"""MIG131: `if`/`while`/ternary conditions on tensor values inside captured modules' forward.

Which classes are captured is a repository fact: a node hook collects the classes this file
passes to capture calls (the file's facts, migrate.analysis.repository_facts), and the engine
analyses the files defining classes captured elsewhere again with the whole repository's set.

Detection is a light, flow-insensitive taint analysis: forward's tensor parameters, module
tensors (parameters, buffers) and whatever torch ops, tensor methods and arithmetic compute
from them are tensors; shapes, sizes, `len`, `isinstance`, `is None` are not. The common
if/else forms are rewritten to `torch.cond(pred, true_fn, false_fn, operands)`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.checks._captures import (
    CAPTURE_ATTRS,
    CAPTURE_CALLS,
    capture_target,
    captured_index,
    class_refs,
    ref_name,
    shared_fact,
)
from migrate.checks._cond_rewrite import BranchCounter, CondRewriter, Refused, short
from migrate.checks._taint import (
    VALUE_METHODS,
    Analysis,
    Func,
    body_nodes,
    initial_params,
    is_self_attr,
    join_kinds,
)
from migrate.checks.base import Edit, PythonCheck, PythonContext
from migrate.findings import FixKind


@dataclass
class _FileState:
    captures: list[ast.Call] = field(default_factory=list)
    classes: dict[str, list[ast.ClassDef]] = field(default_factory=dict)


class DataDependentBranch(PythonCheck):
    code = "MIG131"
    # Files exporting without any `jit` word must still report what they capture. Many more
    # files name torch.export in an import, annotation or docstring than call it, and a call
    # counts as a capture only when its callee ends in `export(_for_training)` (on_node): so
    # parse only the files that also spell such a call (through spaces, a line continuation,
    # a closing parenthesis or a comment). A `jit` capture is parsed for its own word.
    prefilter = (r"torch\.export|onnx\.export",)
    prefilter_also = r"\bexport(?:_for_training)?(?:[\s\\)]|#[^\n]*)*\("
    node_types = (ast.Call, ast.ClassDef)

    def hooked_types(self, text: str) -> tuple[type, ...]:
        # Every class is recorded; a call is a capture only when its callee's last name is
        # one of CAPTURE_ATTRS, each of which holds one of these words.
        if "script" in text or "trace" in text or "export" in text:
            return self.node_types
        return (ast.ClassDef,)

    def hook_spellings(self) -> tuple[str, ...]:
        # The `class` keyword; a capture's callee ends in one of these names, a whole word.
        return (r"\bclass\b", *(rf"\b{name}\b" for name in sorted(CAPTURE_ATTRS)))

    def __init__(self, rule, options=None) -> None:
        super().__init__(rule, options)
        self._state: dict[int, _FileState] = {}

    # ---- the repository pass ------------------------------------------------------------
    # Model files rarely say `jit`: the prefilter skips them, so remember their class names.
    remember = r"[ \t]*class[ \t]+(\w+)"

    def rerun(
        self,
        repo: RepositoryFacts,
        facts: FileFacts | None,
        remembered: set[str],
        module: Callable[[], str] = str,
        text: Callable[[], str] | None = None,
    ) -> bool:
        index = captured_index(repo)
        captured = index.by_name.keys()  # the names no other class can be captured under
        if facts is None:
            return any(index.captures(name, module) for name in captured & remembered)
        # Phase 1 already analysed the file with what it captures itself.
        own = facts.captured_classes()
        names = captured & facts.defined_classes()
        return any(index.captures(name, module, own) for name in names)

    # ---- the walk -------------------------------------------------------------------------
    def _file(self, ctx: PythonContext) -> _FileState:
        state = self._state.get(id(ctx))
        if state is None:
            state = self._state[id(ctx)] = _FileState()
        return state

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if isinstance(node, ast.ClassDef):
            self._file(ctx).classes.setdefault(node.name, []).append(node)
            return
        func = node.func  # type: ignore[attr-defined]
        last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if last in CAPTURE_ATTRS and ctx.qualname(func) in CAPTURE_CALLS:
            self._file(ctx).captures.append(node)  # type: ignore[arg-type]

    def on_end(self, ctx: PythonContext) -> None:
        state = self._state.pop(id(ctx), None) or _FileState()
        local: set[str] = set()  # matched against this file's classes by name, as written
        shared: set[str] = set()  # what other files learn (_captures.shared_fact)
        for call in state.captures:
            target = capture_target(call)
            for ref in class_refs(ctx, target, call) if target is not None else ():
                local.add(ref_name(ref))
                fact = shared_fact(ctx, ref)
                if fact is not None:
                    shared.add(fact)
        if shared:
            ctx.facts.tell_captured_classes(shared)
        if state.classes:
            ctx.facts.tell_defined_classes(state.classes)
        index = captured_index(ctx.repo_facts)
        module = ctx.table.module
        wanted = local | {n for n in state.classes if index.captures(n, lambda: module)}
        roots = [c for name in sorted(wanted) for c in state.classes.get(name, [])]
        if roots:
            for finding in analyze_classes(ctx, roots, state.classes):
                report(self, ctx, finding)


def _expand(
    roots: list[ast.ClassDef], classes: Mapping[str, list[ast.ClassDef]]
) -> list[ast.ClassDef]:
    """Captured classes plus their same-file bases and the submodules they build."""
    seen: dict[int, ast.ClassDef] = {}
    todo = list(roots)
    while todo:
        cls = todo.pop()
        if id(cls) in seen:
            continue
        seen[id(cls)] = cls
        for base in cls.bases:
            name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
            todo.extend(classes.get(name or "", []))
        for node in walk_tree(cls):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                todo.extend(c for c in classes.get(node.func.id, []) if c is not cls)
    return list(seen.values())


@dataclass
class Condition:
    node: ast.If | ast.While | ast.IfExp
    fn: Func
    edits: list[Edit] = field(default_factory=list)
    imports: tuple[str, ...] = ()
    reason: str | None = None
    sources: str = ""


def analyze_classes(
    ctx: PythonContext,
    roots: list[ast.ClassDef],
    classes: Mapping[str, list[ast.ClassDef]],
) -> list[Condition]:
    analysis = Analysis(ctx, classes)
    funcs: dict[int, Func] = {}
    todo: list[Func] = []
    for cls in _expand(roots, classes):
        found = analysis.method(cls, "forward")
        if found is None:
            continue
        owner, node = found
        if id(node) in funcs:
            continue
        fn = Func(node, cls, f"{owner.name}.forward", initial_params(node, True))
        funcs[id(node)] = fn
        todo.append(fn)
    rounds = 0
    while todo and rounds < 64:
        rounds += 1
        fn = todo.pop(0)
        analysis.run(fn)
        for call, callee in analysis.helper_calls(fn):
            kinds = analysis.call_params(call, callee, fn)
            known = funcs.get(id(callee.node))
            if known is None:
                callee.params = kinds
                funcs[id(callee.node)] = callee
                todo.append(callee)
            else:
                merged = {k: join_kinds(known.params.get(k), v) for k, v in kinds.items()}
                if merged != known.params:
                    known.params = merged
                    todo.append(known)
    found: list[Condition] = []
    for fn in funcs.values():
        for node in body_nodes(fn.node):
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and analysis.kind(node.test, fn):
                found.append(Condition(node, fn))
    found.sort(key=lambda c: (c.node.lineno, c.node.col_offset))
    counter = BranchCounter(ctx.text)
    for cond in found:
        cond.sources = condition_sources(cond.node.test, cond.fn, analysis)
        try:
            plan = CondRewriter(ctx, analysis, cond.fn, counter)
            cond.edits, cond.imports = plan.rewrite(cond.node)
        except Refused as exc:
            cond.reason = str(exc)
    return found


def condition_sources(test: ast.expr, fn: Func, analysis: Analysis) -> str:
    names: list[str] = []
    via: list[str] = []
    for node in walk_tree(test):
        if isinstance(node, ast.Name) and fn.env.get(node.id) and node.id not in names:
            names.append(node.id)
        elif isinstance(node, ast.Attribute) and is_self_attr(node):
            if analysis.kind(node, fn) and f"self.{node.attr}" not in names:
                names.append(f"self.{node.attr}")
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in VALUE_METHODS:
                via.append(f"`.{node.func.attr}()`")
            elif isinstance(node.func, ast.Name) and node.func.id in ("bool", "float", "int"):
                via.append(f"`{node.func.id}()`")
    text = ", ".join(f"`{n}`" for n in names) or "a tensor"
    if via:
        text += " via " + ", ".join(dict.fromkeys(via))
    return text


def report(check: DataDependentBranch, ctx: PythonContext, cond: Condition) -> None:
    node = cond.node
    analysis_text = short(ctx.source(node.test))
    keyword = {ast.If: "if", ast.While: "while", ast.IfExp: "ternary"}[type(node)]
    if keyword == "if" and ctx.index.line_text(node.lineno)[node.col_offset :].startswith("elif"):
        keyword = "elif"
    where = cond.fn.label
    shown = (
        f"... if {analysis_text} else ..." if keyword == "ternary" else f"{keyword} {analysis_text}"
    )
    head = f"`{shown}` in `{where}` branches on tensor values ({cond.sources})"
    if cond.edits:
        message = f"{head}: rewrite to `torch.cond`"
        fix = FixKind.AUTO
    else:
        message = f"{head}; export cannot capture it, rewrite by hand: {cond.reason}"
        fix = FixKind.ASSISTED
    ctx.report(
        check.rule,
        node.test,
        message,
        symbol="torch.cond",
        fix=fix,
        edits=cond.edits,
        imports=cond.imports,
        condition=ctx.source(node.test),
        function=where,
        kind=keyword,
        reason=cond.reason,
    )
