"""The repository's own TorchScript wrappers (issue 27 item 7): a module-level function whose
parameter flows into `torch.jit.script`/`trace`/`trace_module`, the object or path of
`torch.jit.save`, the path of `torch.jit.load` (or a lite loader), or the path of `.save` on
what it scripted. Each call of one is then a capture, a producer or a consumer, by the
arguments it passes (`convert_to_torchscript(net)` captures, `convert_to_torchscript(net,
"n.pt")` also writes `n.pt`).

Shared by MIG121 (reports the call sites, through the repository pass: wrappers travel as
the files' facts, migrate.analysis.repository_facts) and by migrate.facts (the call sites join the artifact flow). One file's
analysis only: no import of the facts.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from migrate.analysis.astwalk import children, walk_lines, walk_tree
from migrate.analysis.names import ImportIndex
from migrate.analysis.repository_facts import RepositoryFacts
from migrate.analysis.textsearch import WholeWords
from migrate.checks.base import PythonContext
from migrate.registry import rule_holding

CAPTURES = frozenset({"torch.jit.script", "torch.jit.trace", "torch.jit.trace_module"})
SAVE = "torch.jit.save"
LOADS = frozenset(
    {
        "torch.jit.load",
        "torch.jit._load_for_lite_interpreter",
        "torch.jit.mobile._load_for_lite_interpreter",
    }
)
_VERBS = {
    "torch.jit.script": "scripts",
    "torch.jit.trace": "traces",
    "torch.jit.trace_module": "traces",
}
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TEST_PARTS = frozenset({"test", "tests", "testing"})


@dataclass
class Role:
    """One thing a wrapper does with a parameter: the parameter, the API, the line."""

    param: str
    api: str
    line: int

    def as_dict(self) -> dict:
        return {"param": self.param, "api": self.api, "line": self.line}


@dataclass
class Wrapper:
    """A function of the repository that scripts, saves or loads what it is given.

    params: its positional parameters in order; vararg: the `*args` name. capture: the
    parameter it scripts or traces; saves: the parameter it saves as a TorchScript module
    (`save_net_with_metadata(jit_obj, ...)`); producer/consumer: the path parameter it
    writes/reads. returns: its result is the TorchScript module it made or loaded.
    round_trip: the lines of a script + save + load through memory (a test helper)."""

    qual: str
    display: str
    line: int
    params: list[str] = field(default_factory=list)
    vararg: str | None = None
    capture: Role | None = None
    saves: Role | None = None
    producer: Role | None = None
    consumer: Role | None = None
    returns: bool = False
    public: bool = True
    end: int = 0  # the definition's last line (its body: line..end)
    # The parameter whose items the made module is called with (`for x in inputs:
    # script_module(x)`): the example an export of it needs, passed by each caller.
    example: str | None = None
    # A wrapper that only scripts and returns (`return torch.jit.script(model.eval())`), no
    # parameter holding them: the keyword parameter an export of it adds for them, passed
    # by each caller (intent drop).
    added_example: str | None = None
    # A wrapper whose body calls other wrappers of its file (and no TorchScript API): their
    # qualnames. It is fixed with them; its calls are call sites like theirs.
    derived: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.qual.rpartition(".")[2]

    @property
    def export_example(self) -> str | None:
        """The parameter an export of it takes its example inputs from (its own or added)."""
        return self.example or self.added_example

    def encode(self) -> str:
        data = {
            "qual": self.qual,
            "display": self.display,
            "line": self.line,
            "params": self.params,
            "vararg": self.vararg,
            "returns": self.returns,
            "public": self.public,
            "end": self.end,
            "example": self.example,
            "added_example": self.added_example,
            "derived": self.derived,
        }
        for role in ("capture", "saves", "producer", "consumer"):
            value = getattr(self, role)
            data[role] = value.as_dict() if value is not None else None
        return json.dumps(data, sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> Wrapper | None:
        try:
            data = json.loads(text)
            roles = {
                k: Role(**data[k]) if data.get(k) else None
                for k in ("capture", "saves", "producer", "consumer")
            }
            return cls(
                qual=data["qual"],
                display=data["display"],
                line=data["line"],
                params=list(data["params"]),
                vararg=data["vararg"],
                returns=bool(data["returns"]),
                public=bool(data["public"]),
                end=int(data.get("end") or data["line"]),
                example=data.get("example"),
                added_example=data.get("added_example"),
                derived=list(data.get("derived") or ()),
                **roles,
            )
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self) -> str:
        """What it does, with where: "scripts `model` (line 13) and saves it to
        `filename_or_obj` (torch.jit.save, line 15)"."""
        parts = []
        if self.capture is not None:
            verb = _VERBS.get(self.capture.api, "scripts")
            parts.append(
                f"{verb} `{self.capture.param}` ({self.capture.api}, line {self.capture.line})"
            )
        if self.saves is not None and self.producer is not None:
            if self.saves.line == self.producer.line:
                parts.append(
                    f"saves `{self.saves.param}` as a TorchScript archive to "
                    f"`{self.producer.param}` ({self.saves.api}, line {self.saves.line})"
                )
                return ", ".join([*parts, *self._consumer()])
        if self.saves is not None:
            parts.append(
                f"saves `{self.saves.param}` as a TorchScript archive "
                f"({self.saves.api}, line {self.saves.line})"
            )
        if self.producer is not None:
            parts.append(
                f"writes the archive to `{self.producer.param}` "
                f"({self.producer.api}, line {self.producer.line})"
            )
        return ", ".join([*parts, *self._consumer()])

    def _consumer(self) -> list[str]:
        if self.consumer is None:
            return []
        return [
            f"loads the archive at `{self.consumer.param}` "
            f"({self.consumer.api}, line {self.consumer.line})"
        ]

    def bound(self, call: ast.Call) -> dict[str, ast.expr] | None:
        """The call's arguments by parameter name (`*args` by the vararg name, as a tuple
        expression when spelled out); None when a `*x`/`**x` argument hides the binding."""
        out: dict[str, ast.expr] = {}
        positional = list(call.args)
        if any(isinstance(a, ast.Starred) for a in positional):
            return None
        if any(k.arg is None for k in call.keywords):
            return None
        for name, arg in zip(self.params, positional, strict=False):
            out[name] = arg
        extra = positional[len(self.params) :]
        if extra and self.vararg is None:
            return None
        if self.vararg is not None:
            out[self.vararg] = ast.Tuple(elts=extra, ctx=ast.Load())
        for kw in call.keywords:
            out[kw.arg] = kw.value  # type: ignore[index]
        return out

    def call_roles(self, call: ast.Call) -> list[str]:
        """capture / producer / consumer: what this call of the wrapper is."""
        args = self.bound(call)
        given = set(args) if args is not None else set(self.params)

        def passed(role: Role | None) -> bool:
            if role is None:
                return False
            if args is None:
                return True
            value = args.get(role.param)
            return value is not None and not (
                isinstance(value, ast.Constant) and value.value is None
            )

        roles = []
        if passed(self.capture) or (self.capture is not None and self.capture.param in given):
            roles.append("capture")
        if (self.saves is not None or self.capture is not None) and passed(self.producer):
            roles.append("producer")
        if passed(self.consumer):
            roles.append("consumer")
        return roles


def is_public(module: str, display: str, name: str) -> bool:
    """Part of what the repository gives its users: not private, not in a test folder."""
    if name.startswith("_"):
        return False
    parts = set(module.split(".")) | set(display.replace("\\", "/").split("/")[:-1])
    stem = display.replace("\\", "/").rsplit("/", 1)[-1]
    return not (parts & _TEST_PARTS or stem.startswith(("test_", "conftest")))


def find_wrappers(ctx: PythonContext) -> dict[str, Wrapper]:
    """The wrappers a file defines at module level, by name: those whose body scripts,
    saves or loads a parameter, then those that hand a parameter to one of them (a wrapper
    calling a wrapper of the same file; repeated until nothing more is found). Found once
    per file and scope table (MIG121's analyses and the facts share them): read only."""
    return ctx.shared("repository wrappers", lambda: _find_wrappers(ctx))


def _find_wrappers(ctx: PythonContext) -> dict[str, Wrapper]:
    words = _api_words()
    if words and not ctx.table.exports and not any(word in ctx.text for word in words):
        # Without the repository's re-exports a name reaches a TorchScript API only through
        # an import or attribute chain that spells one of its segments (`jit`): most parsed
        # files say none of them (they were parsed for torch.export or a CUDA check).
        return {}
    module = ctx.table.module
    found: dict[str, Wrapper] = {}
    others = []
    # Only a function whose lines spell a TorchScript API (as the file can name it) can
    # script, save or load; the others are not walked.
    api_lines = spelled_lines(ctx, _API)
    for stmt in ctx.tree.body:
        if isinstance(stmt, _FUNCS):
            wrapper = (
                _analyse(ctx, stmt, module)
                if _touches(stmt, api_lines) and _calls_api(ctx, stmt, api_lines)
                else None
            )
            if wrapper is not None:
                found[stmt.name] = wrapper
            else:
                others.append(stmt)
    for _ in range(4):
        if not found:
            break
        # Only a function naming a wrapper found so far can hand it a parameter.
        named = spelled_lines(ctx, frozenset(w.qual for w in found.values()))
        more = {
            s.name: w
            for s in others
            if _touches(s, named) and (w := _derived(ctx, s, module, found)) is not None
        }
        if not more:
            break
        found.update(more)
        others = [s for s in others if s.name not in more]
    return found


_API = frozenset({*CAPTURES, SAVE, *LOADS})


def spelled_lines(ctx: PythonContext, quals: frozenset[str]) -> list[int] | None:
    """The lines of the file that spell a name a call of one of `quals` can be written with
    (ScopeTable.spellings), sorted; None when lines cannot be told apart as the parser counts
    them (a carriage return)."""
    return WholeWords(ctx.table.spellings(quals)).lines(ctx.text)


def _touches(func: ast.AST, lines: list[int] | None) -> bool:
    """Whether the definition (from its first decorator to its end) holds one of `lines`
    (all of them, when None)."""
    if lines is None:
        return True
    start = min([func.lineno, *(d.lineno for d in func.decorator_list)])  # type: ignore[attr-defined]
    at = bisect_left(lines, start)
    return at < len(lines) and lines[at] <= (func.end_lineno or start)  # type: ignore[attr-defined]


def _derived(ctx: PythonContext, func, module: str, known: dict[str, Wrapper]) -> Wrapper | None:
    """`func` as a wrapper of the wrappers it calls: each role of a called wrapper that
    receives one of `func`'s parameters is `func`'s role too (the API named is the callee)."""
    if any(
        isinstance(n, ast.Call) and (ctx.qualname(n.func) or "").startswith("torch.jit.")
        for n in walk_tree(func)
    ):
        return None
    w = _shell(ctx, func, module)
    every = set(w.params) | ({w.vararg} if w.vararg else set())
    for call in sorted(
        (n for n in walk_tree(func) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    ):
        callee = _local_callee(ctx, call, known)
        args = callee.bound(call) if callee is not None else None
        if callee is None or args is None:
            continue
        for role in ("capture", "saves", "producer", "consumer"):
            inner = getattr(callee, role)
            name = _param(args.get(inner.param), every) if inner is not None else None
            if name is not None and getattr(w, role) is None:
                setattr(w, role, Role(name, callee.name, call.lineno))
        if callee.example is not None and w.example is None:
            w.example = _param(args.get(callee.example), every)
        if callee.qual not in w.derived:
            w.derived.append(callee.qual)
    if w.capture is None and w.saves is None and w.producer is None and w.consumer is None:
        return None
    return w


def _local_callee(ctx: PythonContext, call: ast.Call, known: dict[str, Wrapper]):
    func = call.func
    if isinstance(func, ast.Name) and func.id in known:
        if ctx.table.binding(func.id, ctx.table.scope_for(func)) is None:
            return known[func.id]
    qual = ctx.qualname(func)
    return next((w for w in known.values() if w.qual == qual), None)


def _shell(ctx: PythonContext, func, module: str) -> Wrapper:
    """A Wrapper of `func` with its parameters and no role yet."""
    args = func.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    qual = f"{module}.{func.name}" if module else func.name
    w = Wrapper(qual, ctx.path, func.lineno, params, args.vararg.arg if args.vararg else None)
    w.params += [a.arg for a in args.kwonlyargs]  # keyword-only: bound by name only
    w.public = is_public(module, ctx.path, func.name)
    w.end = func.end_lineno or func.lineno
    return w


def _calls_api(ctx: PythonContext, func: ast.AST, lines: list[int] | None) -> bool:
    """Whether a call on `lines` inside `func` is a TorchScript API (`save` and `load` spell
    many other calls: `torch.save`, `json.load`); only such a function is analysed."""
    return any(
        type(node) is ast.Call and capture_api(ctx, node) in _API
        for node in walk_lines(func, lines)
    )


def _analyse(ctx: PythonContext, func: ast.FunctionDef | ast.AsyncFunctionDef, module: str):
    w = _shell(ctx, func, module)
    every = set(w.params) | ({w.vararg} if w.vararg else set())
    made: set[str] = set()  # local names bound to a TorchScript module made here
    nodes = [n for n in walk_tree(func) if not (isinstance(n, _FUNCS) and n is not func)]
    for node in sorted(
        (n for n in nodes if isinstance(n, (ast.Assign, ast.Call, ast.Return))),
        key=lambda n: (n.lineno, n.col_offset),
    ):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if _maker(ctx, node.value) and len(node.targets) == 1:
                target = node.targets[0]
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                made.update(n.id for n in names[:1] if isinstance(n, ast.Name))
        elif isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            first = value.elts[0] if isinstance(value, ast.Tuple) and value.elts else value
            if (isinstance(first, ast.Name) and first.id in made) or (
                isinstance(first, ast.Call) and _maker(ctx, first)
            ):
                w.returns = True
        elif isinstance(node, ast.Call):
            _call(ctx, node, w, every, made)
    if w.capture is None and w.saves is None and w.producer is None and w.consumer is None:
        return None
    w.example = _example_param(nodes, made, every)
    if (
        w.example is None
        and w.capture is not None
        and w.capture.api == "torch.jit.script"
        and (w.returns or w.producer is not None)
        and w.saves is None
        and w.consumer is None
    ):  # scripts, then returns or saves it: `return torch.jit.script(model.eval())`
        w.added_example = _added_param(ctx, func, "example_inputs")
    return w


_MODULE_TYPES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def _added_param(ctx: PythonContext, func, name: str) -> str | None:
    """A keyword parameter `name` (made unique) for example inputs, when `func` scripts a
    module (a parameter annotated `nn.Module`, or `param.eval()`: export takes modules only)
    and `name` can be appended to its positional parameters (no `*args`, keyword-only
    parameters or `**kwargs` to place it among)."""
    args = func.args
    if args.vararg or args.kwonlyargs or args.kwarg or not (args.posonlyargs or args.args):
        return None
    modules = {
        a.arg
        for a in (*args.posonlyargs, *args.args)
        if a.annotation is not None and ctx.qualname(a.annotation) in _MODULE_TYPES
    }
    scripted = [
        n.args[0]
        for n in walk_tree(func)
        if isinstance(n, ast.Call) and capture_api(ctx, n) == "torch.jit.script" and n.args
    ]
    if not scripted:
        return None
    for target in scripted:
        evaled = (
            isinstance(target, ast.Call)
            and isinstance(target.func, ast.Attribute)
            and target.func.attr == "eval"
            and not target.args
            and not target.keywords
        )
        base = target.func.value if evaled else target  # type: ignore[union-attr]
        if not isinstance(base, ast.Name) or not (evaled or base.id in modules):
            return None  # neither annotated a module nor `.eval()`-ed: maybe a function
    taken = {a.arg for a in (*args.posonlyargs, *args.args)}
    taken |= {n.id for n in walk_tree(func) if isinstance(n, ast.Name)}
    while name in taken:
        name += "_"
    return name


def _example_param(nodes: list[ast.AST], made: set[str], params: set[str]) -> str | None:
    """`for x in inputs [or ()]:` whose body calls a module made here with `x` alone."""
    for loop in nodes:
        if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name):
            continue
        source = loop.iter
        if isinstance(source, ast.BoolOp) and isinstance(source.op, ast.Or):
            source = source.values[0]
        if not (isinstance(source, ast.Name) and source.id in params):
            continue
        for call in (n for s in loop.body for n in walk_tree(s)):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in made
                and len(call.args) == 1
                and isinstance(call.args[0], ast.Name)
                and call.args[0].id == loop.target.id
                and not call.keywords
            ):
                return source.id
    return None


def _maker(ctx: PythonContext, call: ast.Call) -> bool:
    qual = capture_api(ctx, call)
    return qual in CAPTURES or qual in LOADS


@functools.cache
def _scripting_functions() -> frozenset[str]:
    rule = rule_holding("scripting_functions")
    return frozenset(rule.extra["scripting_functions"]) if rule is not None else frozenset()


@functools.cache
def _api_words() -> tuple[str, ...]:
    """The path segments every TorchScript API a wrapper calls holds (those of `_API` and of
    the other libraries' scripting functions): one of them is written wherever one is
    named."""
    quals = [*_API, *_scripting_functions()]
    shared = set.intersection(*(set(q.split(".")[:-1]) for q in quals))
    return tuple(sorted(shared))


def capture_api(ctx: PythonContext, call: ast.Call) -> str | None:
    """The call's qualified name, or `torch.jit.script` for another library's function that
    scripts its argument the same way (`e3nn.util.jit.script`: the rule data's list)."""
    qual = ctx.qualname(call.func)
    return "torch.jit.script" if qual in _scripting_functions() else qual


def _param(expr: ast.expr | None, params: set[str]) -> str | None:
    """The parameter an argument is (through `.eval()`-style calls)."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and not expr.args:
        expr = expr.func.value
    return expr.id if isinstance(expr, ast.Name) and expr.id in params else None


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[index] if len(call.args) > index else None


def _call(ctx: PythonContext, call: ast.Call, w: Wrapper, params: set[str], made: set[str]):
    qual = capture_api(ctx, call)
    line = call.lineno
    if qual in CAPTURES and w.capture is None:
        name = _param(_arg(call, 0, "obj" if qual == "torch.jit.script" else "func"), params)
        if qual == "torch.jit.trace_module":
            name = _param(_arg(call, 0, "mod"), params)
        if name is not None:
            w.capture = Role(name, qual, line)
    elif qual == SAVE:
        obj, path = _param(_arg(call, 0, "m"), params), _param(_arg(call, 1, "f"), params)
        if obj is not None and w.saves is None:
            w.saves = Role(obj, qual, line)
        if path is not None and w.producer is None:
            w.producer = Role(path, qual, line)
    elif qual in LOADS:
        path = _param(_arg(call, 0, "f"), params)
        if path is not None and w.consumer is None:
            w.consumer = Role(path, qual, line)
    elif isinstance(call.func, ast.Attribute) and call.func.attr == "save":
        receiver = call.func.value
        if isinstance(receiver, ast.Name) and receiver.id in made and w.producer is None:
            path = _param(_arg(call, 0, "f"), params)
            if path is not None:
                w.producer = Role(path, "ScriptModule.save", line)


@dataclass
class RoundTrip:
    """A test helper's body as export can run it: `s = torch.jit.script(net)`, then either
    only calls of `s`, or `torch.jit.save(s, buffer)` / `l = torch.jit.load(buffer)` through
    an `io.BytesIO()` and only calls (or a `return`) of `l`. `inputs` is the helper's
    `*inputs`, the example export needs: every caller passes it."""

    capture: ast.Call
    save: ast.Call | None
    load: ast.Call | None
    inputs: str


def round_trip(ctx: PythonContext, w: Wrapper) -> tuple[RoundTrip | None, str]:
    """The helper's round trip, or None and why not."""
    if w.public:
        return None, "it is public API"
    if w.vararg is None or w.capture is None or w.params[:1] != [w.capture.param]:
        return None, "its callers' example inputs are not its `*inputs`"
    if w.capture.api != "torch.jit.script":
        return None, f"it captures with `{w.capture.api}`"
    func = next(s for s in ctx.tree.body if isinstance(s, _FUNCS) and s.lineno == w.line)
    stmts = [s for s in walk_tree(func) if isinstance(s, ast.stmt)]
    calls = [n for n in walk_tree(func) if isinstance(n, ast.Call)]
    loads: dict[str, list[ast.Name]] = {}
    for node in walk_tree(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.setdefault(node.id, []).append(node)
    parents = {id(c): p for p in walk_tree(func) for c in children(p)}
    by_api: dict[str, list[ast.Call]] = {}
    for call in calls:
        by_api.setdefault(ctx.qualname(call.func) or "", []).append(call)
    if any(api.startswith("torch.jit.") and api not in (*CAPTURES, SAVE, *LOADS) for api in by_api):
        return None, "it uses other TorchScript APIs"
    captures = by_api.get("torch.jit.script", [])
    saves, loaded = by_api.get(SAVE, []), [c for api in LOADS for c in by_api.get(api, [])]
    if len(captures) != 1 or len(saves) > 1 or len(loaded) != len(saves):
        return None, "it is not one script, save and load"
    capture = captures[0]
    scripted = _bound(parents, capture, stmts)
    if scripted is None:
        return None, "its scripted module is not bound to one name"
    if not saves:
        if all(_only_called(parents, n) for n in loads.get(scripted, [])):
            return RoundTrip(capture, None, None, w.vararg), ""
        return None, "its scripted module is used other than by calls"
    save, load = saves[0], loaded[0]
    buffer = _arg(save, 1, "f")
    if not (
        isinstance(_arg(save, 0, "m"), ast.Name)
        and _arg(save, 0, "m").id == scripted  # type: ignore[union-attr]
        and len(loads.get(scripted, [])) == 1
        and isinstance(buffer, ast.Name)
        and _memory_buffer(ctx, parents, buffer.id, stmts)
        and isinstance(_arg(load, 0, "f"), ast.Name)
        and _arg(load, 0, "f").id == buffer.id  # type: ignore[union-attr]
        and len(load.args) + len(load.keywords) == 1
    ):
        return None, "it does not save and load one module through memory"
    if isinstance(parents.get(id(load)), ast.Return):
        return RoundTrip(capture, save, load, w.vararg), ""
    result = _bound(parents, load, stmts)
    if result is None or not all(
        _only_called(parents, n) or isinstance(parents.get(id(n)), ast.Return)
        for n in loads.get(result, [])
    ):
        return None, "its loaded module is used other than by calls"
    return RoundTrip(capture, save, load, w.vararg), ""


def _bound(parents: dict, call: ast.Call, stmts: list[ast.stmt]) -> str | None:
    holder = parents.get(id(call))
    if isinstance(holder, ast.Assign) and len(holder.targets) == 1:
        target = holder.targets[0]
        if isinstance(target, ast.Name):
            name = target.id
            binds = [
                s
                for s in stmts
                if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                if isinstance(t, ast.Name) and t.id == name
            ]
            return name if len(binds) == 1 else None
    return None


def _only_called(parents: dict, name: ast.Name) -> bool:
    holder = parents.get(id(name))
    return isinstance(holder, ast.Call) and holder.func is name


def _memory_buffer(ctx: PythonContext, parents: dict, name: str, stmts: list[ast.stmt]) -> bool:
    """`name = io.BytesIO()`, bound once in the helper."""
    for stmt in stmts:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Call)
            and ctx.qualname(stmt.value.func) == "io.BytesIO"
            and not stmt.value.args
        ):
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and target.id == name:
                return _bound(parents, stmt.value, stmts) == name
    return False


# ---- the repository's wrappers, built once per repository pass ----------------------------


@dataclass
class RepositoryWrappers:
    """Every wrapper of the repository, decoded once, with what the files call."""

    wrappers: dict[str, Wrapper]  # by qualname
    qual_of: dict[str, str]  # a wrapper's encoding (as a file's facts hold it) -> qualname
    index: ImportIndex
    calls: Collection[str]  # what the files call or import (their `calls` facts)
    words: re.Pattern[str] | None  # a `from` line naming a wrapper, or a module holding one

    def imported_by(
        self, module: str, lines: Iterable[str], text: Callable[[], str] | None = None
    ) -> bool:
        """Whether `from` lines of `module` (a file the prefilter skipped) import a wrapper,
        or a module or package holding one (`from pkg.tests import utils`, then
        `utils.f(...)`) whose wrapper the file's `text()` names (`may_call`), through the
        repository's re-exports."""
        for line in lines:
            for _, qual in self.index.imported(module, line):
                if self.may_reach(qual) and self.may_call(self.index.resolve(qual), text):
                    return True
        return False

    def reaches(self, qual: str) -> bool:
        """Whether `qual` (an imported name's qualname) is a wrapper or a module or package
        holding one, through the repository's re-exports."""
        return self.may_reach(qual) and self.may_call(self.index.resolve(qual))

    def prepare(self) -> None:
        """Compute the structures every question about these wrappers reads."""
        _ = self.callable_names, self._reachable_names, self._holders

    def may_reach(self, qual: str) -> bool:
        """False when `qual` cannot resolve to a wrapper or to a module holding one: a name
        resolves to another last part only through an index entry saying `as`, so its last
        part must be one of theirs or a name one is imported as. Asked before resolving:
        most imported names are none of them."""
        return qual.rpartition(".")[2] in self._reachable_names

    @functools.cached_property
    def callable_names(self) -> frozenset[str]:
        """The last names a call of a wrapper can spell: a wrapper's, or one it is imported as."""
        return frozenset(_aliases(self.index, {q.rpartition(".")[2] for q in self.wrappers}))

    @functools.cached_property
    def _reachable_names(self) -> frozenset[str]:
        names = {part for q in self.wrappers for part in q.split(".")}
        return frozenset(_aliases(self.index, names))

    def may_call(self, target: str, text: Callable[[], str] | None = None) -> bool:
        """Whether a file importing `target` (a resolved name) may call a wrapper through
        it: `target` is a wrapper, or a module holding one whose name, or a name it is
        imported as, the file's `text()` spells (a call through the module must spell it:
        `utils.to_torchscript(m)`). Without a text, any module holding one may."""
        if target in self.wrappers:
            return True
        if target not in self._holders:
            return False
        return text is None or self._names_in(target).search(text()) is not None

    def _names_in(self, holder: str) -> re.Pattern[str]:
        """The names of the wrappers under a module or package, with their aliases."""
        found = self._holder_names.get(holder)
        if found is None:
            under = holder + "."
            names = {w.name for q, w in self.wrappers.items() if q.startswith(under)}
            names |= {q.rpartition(".")[2] for q in self.wrappers if q.startswith(under)}
            words = sorted(_aliases(self.index, names))
            found = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b")
            self._holder_names[holder] = found
        return found

    @functools.cached_property
    def _holder_names(self) -> dict[str, re.Pattern[str]]:
        return {}

    def uses(self, wrapper: str) -> bool:
        """Whether a file calls or imports this wrapper (a qualname), through the re-exports
        (asked only by a file that defines wrappers)."""
        return wrapper in self._used

    @functools.cached_property
    def _used(self) -> frozenset[str]:
        # A name stands for a wrapper only if its last part is the wrapper's or one it is
        # imported as: only those of the index are resolved.
        names = self.callable_names
        spelled = [q for q in self.calls if q.rpartition(".")[2] in names]
        resolve = self.index.resolve
        return frozenset({*map(resolve, spelled), *map(resolve, self.index.values_named(names))})

    @functools.cached_property
    def _holders(self) -> frozenset[str]:
        """The modules and packages a wrapper lies in (each prefix of its qualname)."""
        return frozenset(
            q.rsplit(".", n)[0] for q in self.wrappers for n in range(1, q.count(".") + 1)
        )

    def mine(self, encoded: Iterable[str]) -> set[str]:
        """The qualnames of the wrappers a file defines (its `wrappers()` facts) as the
        repository knows them (the kept definition of each name)."""
        return {q for text in encoded if (q := self.qual_of.get(text)) is not None}


def repository_wrappers(repo: RepositoryFacts) -> RepositoryWrappers:
    """The repository's wrappers, its import index and what its files call: built on the
    first ask for these repository facts, the same for every file after (a file asking used
    to decode every wrapper again)."""
    if not repo:
        return _NO_WRAPPERS
    return repo.built("wrappers", lambda: _wrappers_of(repo))


def _wrappers_of(repo: RepositoryFacts) -> RepositoryWrappers:
    wrappers: dict[str, Wrapper] = {}
    for text in repo.wrappers():
        w = Wrapper.decode(text)
        if w is not None:
            wrappers[w.qual] = w
    index = repo.import_index()
    words = {w.name for w in wrappers.values()}
    words |= {q.rsplit(".", 2)[-2] for q in wrappers if q.count(".") >= 1}
    words |= _aliases(
        index, {w.name for w in wrappers.values()} | {q.rpartition(".")[2] for q in wrappers}
    )
    pattern = (
        re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b") if words else None
    )
    qual_of = {w.encode(): q for q, w in wrappers.items()}
    return RepositoryWrappers(wrappers, qual_of, index, repo.calls(), pattern)


def _aliases(index: ImportIndex, names: set[str]) -> set[str]:
    """`names` with every name a module may import one of them as (`from .io import f as g`,
    and `g` re-exported again): a word search's words, so more than the exact set is
    harmless, and it is found without resolving every name of the index. A name's last part
    changes only where the index maps that whole name, to the last part of what it maps to."""
    imported_as = index.imported_as
    found, todo = set(names), list(names)
    while todo:
        for alias in imported_as.get(todo.pop(), ()):
            if alias not in found:
                found.add(alias)
                todo.append(alias)
    return found


_NO_WRAPPERS = RepositoryWrappers({}, {}, ImportIndex((), ()), frozenset(), None)
