"""Under `--intent drop`: what a capture becomes when export cannot take it.

The user has said that TorchScript goes. A `torch.jit.script(x)` or `torch.jit.trace(m, ...)`
that the tool cannot turn into an export (it cannot tell a function from a module, sees no
example inputs, cannot follow where the result goes) becomes what it captured, `x` or `m`:
calling it behaves as before, whatever it is. A capture still stays, reported, where the
rewrite would break or empty something:
- a use of the result that needs a TorchScript object (`.save`, `.code`, `.graph`,
  `torch.jit.save`, `isinstance(r, torch.jit.ScriptModule)`) would fail on the eager object;
- a test that compares the result with what it captured would compare an object with
  itself;
- a test that only checks that TorchScript compiles something (`torch.jit.script(m)` as a
  statement) has no export equivalent without example inputs: shown, not written.

An option whose only job is to script (`if jit: model = torch.jit.script(model)`, a
`--torchscript` flag) keeps its signature and now warns (DeprecationWarning) that it does
nothing: maintainers who dropped TorchScript did exactly that.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import bound_name, parent
from migrate.checks._edits import drop_statement, replace, replace_with_arg
from migrate.checks._selfcompare import self_comparison
from migrate.checks._testcode import (
    asserted,
    calls_both,
    enclosing_function,
    expects_error,
    in_test,
    test_function,
)
from migrate.checks.base import Edit, PythonContext
from migrate.findings import FixKind

# What only a TorchScript module or function has.
TORCHSCRIPT_ATTRIBUTES = frozenset(
    {
        "save",
        "code",
        "code_with_constants",
        "graph",
        "inlined_graph",
        "graph_for",
        "_c",
        "_save_for_lite_interpreter",
        "_save_to_buffer_for_lite_interpreter",
        "save_to_buffer",
        "_method_names",
        "original_name",
        "schema",
    }
)
# Calls that take a TorchScript object as their first argument.
TORCHSCRIPT_CONSUMERS = frozenset(
    {
        "torch.jit.save",
        "torch.jit.freeze",
        "torch.jit.optimize_for_inference",
        "torch.jit.export_opnames",
        "torch.utils.mobile_optimizer.optimize_for_mobile",
        "torch.utils.bundled_inputs.augment_model_with_bundled_inputs",
    }
)
TORCHSCRIPT_TYPES = frozenset(
    {
        "torch.jit.ScriptModule",
        "torch.jit.RecursiveScriptModule",
        "torch.jit.ScriptFunction",
        "torch.jit.TopLevelTracedModule",
        "torch.jit.TracedModule",
        "torch._C.ScriptModule",
        "torch._C.ScriptFunction",
    }
)
# TorchScript's executor and fuser settings (torch._C._jit_set_profiling_executor...).
EXECUTOR_SETTINGS = ("torch._C._jit_",)
# A flag whose name says it asks for TorchScript: `jit`, `use_jit`, `torchscript`, `script`...
_FLAG_WORDS = re.compile(r"(?:^|_)(?:jit|torchscript|script|scripted|scripting|ts)(?:$|_)", re.I)


@dataclass
class DropRoute:
    """The eager route's edits, or why the capture stays (then `problem` is set)."""

    edits: list[Edit] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    note: str = ""
    problem: str | None = None
    display: bool = False  # shown in the diff, never written (a test that only checks TorchScript)
    skip: bool = False  # the test that only checks TorchScript is skipped, saying why
    # `assert torch.jit.trace(m, x)` beside the test's other checks: only that line goes
    check_dropped: bool = False
    # in a test an earlier run skipped as only checking TorchScript: it never runs
    in_skipped_test: bool = False


def eager_route(ctx: PythonContext, call: ast.Call, captured: ast.expr, api: str) -> DropRoute:
    """`call` (a script or trace of `captured`) under drop: the edits that make it the eager
    object, or why it stays."""
    route = DropRoute()
    holder = parent(ctx, call)
    target = _target_text(ctx, call)
    blocker = torchscript_use(ctx, call, target)
    testing = in_test(ctx, call)
    if blocker is not None:
        route.problem = (
            f"{blocker} needs a TorchScript object, which the eager `{_short(ctx.source(captured))}` "
            "is not: export it there with example inputs (a person must choose them)"
        )
        if testing:
            _skip(ctx, call, route)
        return route
    if testing and asserted(ctx, call) and not expects_error(ctx, call):
        statement = parent(ctx, call)
        test = test_function(ctx, call)
        if isinstance(statement, ast.Assert) and statement.test is call and test is not None:
            if _other_checks(ctx, test, statement):
                route.edits = [drop_statement(ctx, statement)]
                route.note = (
                    "the line that asserted TorchScript could capture it goes; the test's "
                    "other checks stay"
                )
                route.check_dropped = True
                return route
    if testing and (expects_error(ctx, call) or asserted(ctx, call)):
        what = "expects it to fail" if expects_error(ctx, call) else "asserts it"
        route.problem = (
            f"the test {what}: it checks TorchScript itself, and the eager "
            f"`{_short(ctx.source(captured))}` would make it check nothing (or fail for "
            "another reason)"
        )
        _skip(ctx, call, route)
        return route
    if testing and _compared_with_original(ctx, call, captured):
        route.problem = (
            f"the test compares it with `{_short(ctx.source(captured))}` itself: as the eager "
            "object the comparison would check nothing; compare the exported program "
            "(`torch.export.export(m, args).module()`) with it there"
        )
        _skip(ctx, call, route)
        return route
    if isinstance(holder, ast.Expr):
        if testing:
            verb = "compile" if api == "script" else "trace"
            spelled, imports = ctx.spell("torch.export.export", ctx.table.scope_for(call))
            route.problem = (
                f"the test only checks that TorchScript can {verb} "
                f"`{_short(ctx.source(captured))}`: check export instead, with the inputs it "
                f"runs on (`{spelled}(m, args)`; the tool sees none)"
            )
            if not _skip(ctx, call, route):
                route.edits = [replace(ctx, call.func, spelled)]
                route.imports = list(imports)
                route.display = True
            return route
        route.edits = [drop_statement(ctx, holder)]
        route.note = "its result was not used: the statement goes"
        return route
    if (
        target is not None
        and target == ctx.source(captured).strip()
        and isinstance(holder, (ast.Assign, ast.AnnAssign))
    ):
        found = _flag_of(ctx, holder)
        if found is not None:
            block, flag = found
            text, imports = _deprecation(ctx, holder, flag)
            if isinstance(block, ast.For):  # `for key in self.jit_keys:` scripts each
                indent = ctx.index.line_text(block.lineno)[: block.col_offset]
                start, end = ctx.line_span(block)
                text = f"{indent}if {flag}:\n{indent}    {text}\n"
                route.edits = [Edit(start, end, text)]
            else:
                first, last = block.body[0], block.body[-1]
                indent = ctx.index.line_text(first.lineno)[: first.col_offset]
                start, end = ctx.line_span(first)[0], ctx.line_span(last)[1]
                route.edits = [Edit(start, end, f"{indent}{text}\n")]
            route.imports = imports
            route.note = (
                f"`{flag}` only asked for TorchScript: it keeps its place and now warns "
                "(DeprecationWarning) that the object stays eager"
            )
            return route
        route.edits = [drop_statement(ctx, holder)]
        route.note = f"`{target} = {target}` would do nothing: the statement goes"
        return route
    chosen = _chosen_by_flag(ctx, call, captured)
    if chosen is not None:  # `torch.jit.script(self) if jit else self`
        choice, flag = chosen
        statement = _statement(ctx, choice)
        text, imports = _deprecation(ctx, statement, flag)
        indent = ctx.index.line_text(statement.lineno)[: statement.col_offset]
        start = ctx.line_span(statement)[0]
        route.edits = [
            Edit(start, start, f"{indent}if {flag}:\n{indent}    {text}\n"),
            replace_with_arg(ctx, choice, captured),
        ]
        route.imports = imports
        route.note = (
            f"`{flag}` only asked for TorchScript: the choice goes, and it now warns "
            "(DeprecationWarning) that the object stays eager"
        )
        return route
    route.edits = [replace_with_arg(ctx, call, captured)]
    route.note = "calling it behaves as before, whatever it is"
    return route


def _other_checks(ctx: PythonContext, test: ast.AST, statement: ast.Assert) -> bool:
    """The test checks something besides `statement`: another assert, or an assertion
    call (`assert_close`, `self.assertEqual`, `np.testing.assert_allclose`)."""
    for node in walk_tree(test):
        if node is statement:
            continue
        if isinstance(node, ast.Assert) and not _inside(ctx, node, statement):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if "assert" in name.lower() and not _inside(ctx, node, statement):
                return True
    return False


def _inside(ctx: PythonContext, node: ast.AST, outer: ast.AST) -> bool:
    current = parent(ctx, node)
    while current is not None:
        if current is outer:
            return True
        current = parent(ctx, current)
    return False


def _chosen_by_flag(
    ctx: PythonContext, call: ast.Call, captured: ast.expr
) -> tuple[ast.IfExp, str] | None:
    """`torch.jit.script(x) if flag else x` (either way round) with `flag` an option."""
    choice = parent(ctx, call)
    if not isinstance(choice, ast.IfExp) or call is choice.test:
        return None
    other = choice.orelse if call is choice.body else choice.body
    if ctx.source(other).strip() != ctx.source(captured).strip():
        return None
    flag = _option_test(ctx, choice.test, choice)
    if flag is None or call is not choice.body:
        return None  # `x if flag else script(x)`: the flag turns TorchScript off; left
    statement = _statement(ctx, choice)
    return (choice, flag) if statement is not None else None


def _statement(ctx: PythonContext, node: ast.AST) -> ast.stmt:
    current = parent(ctx, node)
    while current is not None and not isinstance(current, ast.stmt):
        current = parent(ctx, current)
    return current  # type: ignore[return-value]


def _skip(ctx: PythonContext, call: ast.Call, route: DropRoute) -> bool:
    """A test whose purpose was TorchScript, and that has no export equivalent without
    example inputs, is skipped with the reason (a decorator on the test function): it is
    neither left failing once TorchScript goes nor made to pass by checking nothing."""
    test = test_function(ctx, call)
    if test is None:
        return False
    if any(_is_skip(ctx, d) for d in test.decorator_list):
        route.problem += "; the test is skipped already"
        route.in_skipped_test = True
        return False
    first = min([test.lineno, *(d.lineno for d in test.decorator_list)])
    indent = ctx.index.line_text(first)[: test.col_offset]
    if indent.strip():
        return False
    reason = "TorchScript is dropped; check torch.export instead"  # why: in the finding
    uses_pytest = "pytest" in ctx.table.module_scope.imports
    if uses_pytest:
        decorator, imports = f"@pytest.mark.skip(reason={_quoted(reason)})", []
    else:
        skip, imports = ctx.spell("unittest.skip", ctx.table.module_scope)
        decorator, imports = f"@{skip}({_quoted(reason)})", list(imports)
    offset = ctx.index.offset(first, 0)
    route.edits = [Edit(offset, offset, f"{indent}{decorator}\n")]
    route.imports = imports
    route.skip = True
    return True


def _is_skip(ctx: PythonContext, decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    qual = ctx.qualname(target) or ctx.source(target)
    return qual.endswith(("unittest.skip", "mark.skip", "skipIf", "mark.skipif")) and (
        "TorchScript is dropped" in ctx.source(decorator) or qual.endswith("skip")
    )


def _quoted(text: str) -> str:
    return f'"{text}"' if '"' not in text and "\\" not in text else repr(text)


def _target_text(ctx: PythonContext, call: ast.Call) -> str | None:
    """What the capture is assigned to (`model`, `self.model`), if one target."""
    holder = parent(ctx, call)
    if isinstance(holder, ast.Assign) and holder.value is call and len(holder.targets) == 1:
        node = holder.targets[0]
    elif isinstance(holder, ast.AnnAssign) and holder.value is call:
        node = holder.target
    else:
        return None
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        return ctx.source(node).strip()
    return None


def torchscript_use(ctx: PythonContext, call: ast.Call, target: str | None) -> str | None:
    """Where the capture's result is used as only a TorchScript object can be: in place
    (`torch.jit.script(m).save(p)`) or through what it is assigned to, anywhere in the file."""
    spelled = {target} if target else set()
    # A local name is read in its function; `self.x` or a module-level name, anywhere.
    local = target is not None and target.isidentifier() and enclosing_function(ctx, call)
    with_call = spelled | {ctx.source(call)}
    for node in walk_tree(local or ctx.tree):
        if isinstance(node, ast.Attribute) and node.attr in TORCHSCRIPT_ATTRIBUTES:
            if node.value is call or (spelled and ctx.source(node.value).strip() in spelled):
                if node.attr == "save" and not _called(ctx, node):
                    continue
                return f"`.{node.attr}` on line {node.lineno}"
        elif isinstance(node, ast.Call) and node.args:
            passed = _passed_totorchscript_use(ctx, node, with_call)
            if passed is not None and any(
                a is call or ctx.source(a).strip() in spelled for a in node.args
            ):
                return passed
            first = node.args[0]
            if first is call or (spelled and _spells(ctx, first, spelled)):
                qual = ctx.qualname(node.func)
                if qual in TORCHSCRIPT_CONSUMERS:
                    return f"`{qual.rsplit('.', 1)[-1]}` on line {node.lineno}"
                if isinstance(node.func, ast.Name) and node.func.id == "isinstance":
                    kinds = node.args[1:2]
                    names = [
                        ctx.qualname(k)
                        for kind in kinds
                        for k in (kind.elts if isinstance(kind, ast.Tuple) else [kind])
                    ]
                    if any(n in TORCHSCRIPT_TYPES for n in names):
                        return f"`isinstance` on line {node.lineno}"
    return None


def _spells(ctx: PythonContext, node: ast.expr, spelled: set[str]) -> bool:
    """Whether `node` is written as one of `spelled` (what a capture is assigned to: a name,
    an attribute or a subscript; no other expression is written so)."""
    if isinstance(node, ast.Name):
        return node.id in spelled
    return isinstance(node, (ast.Attribute, ast.Subscript)) and ctx.source(node).strip() in spelled


def _passed_totorchscript_use(ctx: PythonContext, node: ast.Call, spelled: set[str]) -> str | None:
    """`helper(scripted)` where the file's own `helper` saves its parameter (`p.save(f)`,
    `torch.jit.save(p, f)`): one call level, the commonest test helper shape."""
    callee = _callee(ctx, node.func)
    if callee is None:
        return None
    params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
    if params and params[0] in ("self", "cls") and isinstance(node.func, ast.Attribute):
        params = params[1:]
    for i, arg in enumerate(node.args):
        if i < len(params) and ctx.source(arg).strip() in spelled:
            inner = _use_in(ctx, callee, params[i])
            if inner is not None:
                return f"{inner} (in `{callee.name}`, which line {node.lineno} passes it to)"
    return None


def _callee(ctx: PythonContext, func: ast.expr) -> ast.FunctionDef | None:
    """The function of this file a call names: `helper(...)` or `self.helper(...)`."""
    if isinstance(func, ast.Name):
        name = func.id
    elif (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        name = func.attr
    else:
        return None
    return ctx.shared("drop_route.functions", lambda: _functions_by_name(ctx.tree)).get(name)


def _functions_by_name(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Each function name of the file, with the first `def` of it in `ast.walk` order: one
    walk per file, not one per call asked about."""
    found: dict[str, ast.FunctionDef] = {}
    for node in walk_tree(tree):
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, node)
    return found


def _use_in(ctx: PythonContext, function: ast.FunctionDef, name: str) -> str | None:
    """A TorchScript-only use of the parameter `name` inside `function`."""
    for node in walk_tree(function):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in TORCHSCRIPT_ATTRIBUTES
            and isinstance(node.value, ast.Name)
            and node.value.id == name
        ):
            return f"`.{node.attr}` on line {node.lineno}"
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == name
            and ctx.qualname(node.func) in TORCHSCRIPT_CONSUMERS
        ):
            return f"`{ctx.qualname(node.func).rsplit('.', 1)[-1]}` on line {node.lineno}"  # type: ignore[union-attr]
    return None


def _called(ctx: PythonContext, node: ast.Attribute) -> bool:
    holder = parent(ctx, node)
    return isinstance(holder, ast.Call) and holder.func is node


def _compared_with_original(ctx: PythonContext, call: ast.Call, captured: ast.expr) -> bool:
    """A test that would compare the eager object with itself: a comparison of a call of the
    result with a call of `captured`, or the result passed to one call beside `captured`
    (`assert_consistency(model=model, traced=traced)`)."""
    if not isinstance(captured, (ast.Name, ast.Attribute)):
        return False
    spelled = ctx.source(captured).strip()
    bound = bound_name(ctx, call)
    reads: list[ast.expr] = [call]
    if bound is not None:
        name = bound[1]
        function = enclosing_function(ctx, call)
        body = function if function is not None else ctx.tree
        reads += [
            n
            for n in walk_tree(body)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
    called = [h for r in reads if isinstance(h := parent(ctx, r), ast.Call) and h.func is r]
    if self_comparison(ctx, called, captured) is not None:
        return True
    if calls_both(ctx, called, captured) is not None:
        return True
    for read in reads:
        holder = parent(ctx, read)
        if isinstance(holder, ast.keyword):
            holder = parent(ctx, holder)
        if isinstance(holder, ast.Call) and holder.func is not read:
            others = [*holder.args, *(k.value for k in holder.keywords)]
            if any(o is not read and ctx.source(o).strip() == spelled for o in others):
                return True
    return False


def _flag_of(ctx: PythonContext, stmt: ast.stmt) -> tuple[ast.If, str] | None:
    """The `if` (and the option it asks) whose body only exists to script: `stmt` and what
    accompanies it there (log lines, a try/except around them, `pass`). The option is a
    parameter, an argparse attribute (`args.torchscript`), a setting whose name says
    TorchScript, or a comparison with a mode string naming it."""
    current: ast.AST | None = stmt
    while current is not None:
        holder = parent(ctx, current)
        if isinstance(holder, ast.If) and not holder.orelse and current in holder.body:
            if all(_incidental(ctx, s, stmt) for s in holder.body):
                flag = _option(ctx, holder)
                return (holder, flag) if flag is not None else None
            return None
        if isinstance(holder, ast.For) and not holder.orelse and current in holder.body:
            names = ctx.source(holder.iter).strip()
            if all(_incidental(ctx, s, stmt) for s in holder.body) and _FLAG_WORDS.search(
                names.rsplit(".", 1)[-1]
            ):
                return holder, names
            return None
        if not isinstance(holder, (ast.Try, ast.With, ast.ExceptHandler)):
            return None
        current = holder
    return None


def _incidental(ctx: PythonContext, node: ast.stmt, capture: ast.stmt) -> bool:
    """`node` is the capture statement, or only accompanies it (a log line, `pass`, a
    try/except or with-block made of such)."""
    if node is capture or isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if (ctx.qualname(func) or "").startswith(EXECUTOR_SETTINGS):
            return True  # the executor settings the script ran under
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = ctx.source(func.value) if isinstance(func, ast.Attribute) else ""
        return name == "print" or owner in ("logging", "logger", "log", "LOGGER", "_logger")
    if isinstance(node, ast.Try):
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
        return all(_incidental(ctx, s, capture) for b in blocks for s in b)
    if isinstance(node, ast.With):
        return all(_incidental(ctx, s, capture) for s in node.body)
    return False


def _option(ctx: PythonContext, owner: ast.If) -> str | None:
    return _option_test(ctx, owner.test, owner)


def _option_test(ctx: PythonContext, test: ast.expr, owner: ast.AST) -> str | None:
    """The option `test` asks, when it only asks for TorchScript (see _flag_of)."""
    if isinstance(test, ast.Name):
        name = test.id
        function = enclosing_function(ctx, owner)
        params = _parameters(function)
        if name in params or _FLAG_WORDS.search(name):
            return name
        return None
    if isinstance(test, ast.Attribute) and _FLAG_WORDS.search(test.attr):
        return ctx.source(test).strip()
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and isinstance(test.comparators[0].value, str)
        and re.search(r"jit|script|trace", test.comparators[0].value, re.I)
    ):
        return ctx.source(test).strip()
    return None


def _parameters(function: ast.AST | None) -> set[str]:
    args = getattr(function, "args", None)
    if not isinstance(args, ast.arguments):
        return set()
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _deprecation(ctx: PythonContext, stmt: ast.stmt, flag: str) -> tuple[str, list]:
    """`warnings.warn(...)` saying what `flag` does now, spelled for this file."""
    warn, imports = ctx.spell("warnings.warn", ctx.table.scope_for(stmt))
    option = f"{flag}=True" if flag.isidentifier() else flag
    message = f"{option} is ignored: TorchScript is deprecated"
    return f"{warn}({_quoted(message)}, DeprecationWarning, stacklevel=2)", list(imports)


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report_under_drop(
    rule,
    ctx: PythonContext,
    ref,
    call: ast.Call,
    captured: ast.expr,
    *,
    head: str,
    why: str,
    target: str | None = None,
) -> None:
    """Report a capture export cannot take, under drop: the eager route (unsafe), or, where
    it must stay, assisted with the reason (a display fix for a TorchScript-only test)."""
    api = "script" if ref.qualname.endswith("script") else "trace"
    route = eager_route(ctx, call, captured, api)
    extra = {"target": target} if target else {}
    if route.problem is None and route.check_dropped:
        message = (
            f"{head}; the repository drops TorchScript (intent drop) and export cannot take "
            f"it here ({why}): {route.note}"
        )
        fix = {"applicability": "unsafe", "route": "eager"}
    elif route.problem is None:
        message = (
            f"{head}; the repository drops TorchScript (intent drop) and export cannot take "
            f"it here ({why}): it becomes `{_short(ctx.source(captured))}` itself, the eager "
            f"object: {route.note}"
        )
        fix = {"applicability": "unsafe", "route": "eager"}
    elif route.skip:
        message = (
            f"{head}; {route.problem}. The repository drops TorchScript (intent drop): the "
            "test is skipped, saying so, until it checks export"
        )
        fix = {"applicability": "unsafe", "route": "skip-test"}
    elif route.display:
        message, fix = f"{head}; {route.problem}", {"applicability": "display"}
    else:
        message = f"{head}; {why}; under intent drop it stays: {route.problem}"
        fix = {"fix": FixKind.ASSISTED}
    if route.in_skipped_test:  # it never runs, so it holds nothing: the planner reads this
        extra["in_skipped_test"] = True
    ctx.report(
        rule,
        call,
        message,
        symbol=ref.qualname,
        edits=route.edits,
        imports=route.imports,
        **fix,
        **extra,
    )


def fallback(ctx: PythonContext, call: ast.Call, captured: ast.expr | None) -> dict:
    """Under drop, the eager route kept beside an export fix (`drop_fallback`: its message
    and fix): the planner takes it where it holds the export (no example inputs at a
    wrapper's call, a forward export cannot run...). Empty where the route is refused."""
    if ctx.intent != "drop" or captured is None:
        return {}
    from migrate.findings import Applicability, Fix, ImportSpec

    api = "script" if (ctx.qualname(call.func) or "").endswith("script") else "trace"
    route = eager_route(ctx, call, captured, api)
    if route.problem is not None or not route.edits:
        return {}
    message = (
        f"as the repository drops TorchScript, {route.note}"
        if route.check_dropped
        else f"it becomes `{_short(ctx.source(captured))}` itself, the eager object, as the "
        f"repository drops TorchScript: {route.note}"
    )
    fix = Fix(
        tuple(route.edits),
        tuple(ImportSpec.parse(i) for i in route.imports),
        Applicability.UNSAFE,
    )
    return {"drop_fallback": (message, fix)}


def report_marker_call(rule, ctx: PythonContext, ref) -> bool:
    """Under drop, `torch.jit.export(f)` / `unused(f)` / `ignore(f)` called as a function (a
    decorator factory's `return torch.jit.unused(func)`) only marks `f` for the scripting
    compiler, which nothing runs any more: it becomes `f` (safe). False where it is not such
    a call."""
    call = ref.call
    if (
        ctx.intent != "drop"
        or ref.role != "call"
        or call is None
        or len(call.args) != 1
        or call.keywords
        or isinstance(call.args[0], ast.Starred)
    ):
        return False
    short = ref.qualname.rsplit(".", 1)[-1]
    ctx.report(
        rule,
        call,
        f"`{short}(...)` only marks its argument for TorchScript (intent drop): it becomes "
        f"`{_short(ctx.source(call.args[0]))}`",
        symbol=ref.qualname,
        edits=[replace_with_arg(ctx, call, call.args[0])],
        applicability="safe",
        fix=FixKind.AUTO,
    )
    return True
