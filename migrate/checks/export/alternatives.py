"""One binding on two paths: `try: m = torch.jit.trace(model, x) except E: m = torch.jit.script(model)`.

Under `--intent drop` a `try`/`except` or `if`/`else` whose branches all end binding one
name to a TorchScript capture is one binding, not a rebinding: whichever branch ran, the
name holds a TorchScript module, and after the migration an `ExportedProgram`. Every
branch's capture becomes an export, and the uses after the statement (a save, a mobile
lowering in the branch itself) are rewritten once, as for a single capture; the captures
and those uses are one group, written all or none.

A `torch.jit.script` branch has no example inputs of its own: it takes the example of a
traced branch of the same module (a name or attribute, read again there: nothing is drawn
twice). Without one the group is held, saying so. Without an intent, or under
`keep-scriptable`, the fallback stays TorchScript and so does the group (the caller's
"rebound on another path").
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrate.analysis.dataflow import (
    alternative_bindings,
    assignments,
    available_at,
    bound_name,
    is_pure,
    name_uses,
    parent,
    pos,
    statement_of,
)
from migrate.checks.base import Edit, PythonContext
from migrate.checks.export.apis import (
    CAPTURE_RULES,
    JIT_CAPTURES,
    SCRIPT_RULE,
    TRACE_PARAMS,
    bind_args,
    captured_module,
)
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.exports import not_a_module, trace_export, trace_module_export
from migrate.checks.export.inputs import example_args
from migrate.checks.export.specialization import differing_call, export_limit
from migrate.checks.export.spelling import export_call
from migrate.checks.export.uses import program_use


@dataclass
class Alternatives:
    """The bindings of `name` on the branches, and their capture calls in source order."""

    name: str
    bindings: list[ast.Assign]
    captures: list[ast.Call]


def alternatives_of(ctx: PythonContext, call: ast.Call) -> Alternatives | None:
    """The branches binding the same name as `call`, when all of them are captures (only
    under intent drop); None otherwise."""
    if ctx.intent != "drop" or ctx.qualname(call.func) not in JIT_CAPTURES:
        return None
    bound = bound_name(ctx, call)
    if bound is None or not isinstance(bound[0], ast.Assign):
        return None
    stmt, name = bound
    others = alternative_bindings(ctx, stmt, name)
    if not others:
        return None
    captures = [call]
    for other in others:
        value = other.value
        if not (isinstance(value, ast.Call) and ctx.qualname(value.func) in JIT_CAPTURES):
            return None
        captures.append(value)
    bindings = sorted([stmt, *others], key=pos)
    return Alternatives(name, bindings, sorted(captures, key=pos))  # type: ignore[arg-type]


def capture_of(ctx: PythonContext, node: ast.Name) -> ast.Call | None:
    """The first capture of the group whose one binding `node` reads, if it reads one."""
    if ctx.intent != "drop":
        return None
    scope = ctx.table.scope_for(node)
    for stmt in reversed([s for s in assignments(scope, node.id) if pos(s) < pos(node)]):
        if not isinstance(stmt.value, ast.Call):
            continue
        found = alternatives_of(ctx, stmt.value)
        if found is None:
            return None
        first = found.bindings[0]
        rest = found.bindings[1:]
        uses, problem = name_uses(ctx, first, node.id, scope, rest)
        if problem is None and any(u is node for u in uses):
            return found.captures[0]
        return None
    return None


def alternatives_fix(ctx: PythonContext, found: Alternatives) -> FixBuilder:
    """The group fix of every branch's capture (built on the first capture: the others'
    capture_fix returns that one)."""
    call = found.captures[0]
    fix = FixBuilder()
    scope = ctx.table.scope_for(call)
    for capture in found.captures:
        fix.member(CAPTURE_RULES.get(ctx.qualname(capture.func) or "", SCRIPT_RULE), capture)
    uses, problem = name_uses(ctx, found.bindings[0], found.name, scope, found.bindings[1:])
    if problem is not None:
        return fix.fail(problem)
    exports = _alternative_exports(ctx, found, scope, fix)
    if exports is None:
        return fix
    calls = [h for u in uses if isinstance(h := parent(ctx, u), ast.Call) and h.func is u]
    for capture in found.captures:
        qual = ctx.qualname(capture.func)
        module = captured_module(ctx, capture, qual)
        reason = differing_call(ctx, capture, qual, calls) if qual != "torch.jit.script" else None
        reason = reason or export_limit(ctx, module, scope)
        if reason is not None:
            return fix.fail(f"{reason}; export would not run these calls as they are")
    for use in uses:
        program_use(ctx, use, None, "", scope, fix)
        if not fix.auto:
            return fix
    for capture, text in exports:
        fix.edits.append(Edit(*ctx.span(capture), text))
    lines = ", ".join(str(c.lineno) for c in found.captures)
    fix.note(f"the captures on lines {lines} bind `{found.name}` on each path: all exported")
    return fix


def _alternative_exports(ctx: PythonContext, found: Alternatives, scope, fix: FixBuilder):
    """(capture, export text) for each branch, or None (the fix says why)."""
    out: list[tuple[ast.Call, str]] = []
    traced: list[tuple[ast.Call, ast.expr]] = []  # (trace, its example inputs)
    for capture in found.captures:
        qual = ctx.qualname(capture.func)
        if qual == "torch.jit.script":
            continue
        maker = trace_export if qual == "torch.jit.trace" else trace_module_export
        text = maker(ctx, capture, scope, fix)
        if text is None:
            return None
        out.append((capture, text))
        inputs = (bind_args(capture, TRACE_PARAMS) or {}).get("example_inputs")
        if qual == "torch.jit.trace" and inputs is not None:
            traced.append((capture, inputs))
    for capture in found.captures:
        if ctx.qualname(capture.func) != "torch.jit.script":
            continue
        text = _script_with_sibling_example(ctx, capture, traced, scope, fix)
        if text is None:
            return None
        out.append((capture, text))
    return out


def _script_with_sibling_example(
    ctx, script: ast.Call, traced, scope, fix: FixBuilder
) -> str | None:
    """`torch.export.export(m, args)` for a script fallback, with a traced branch's example."""
    if len(script.args) != 1 or script.keywords or isinstance(script.args[0], ast.Starred):
        fix.fail(f"the `torch.jit.script` on line {script.lineno} takes arguments export does not")
        return None
    module = script.args[0]
    why = not_a_module(ctx, module, scope)
    if why is not None:
        fix.fail(f"the fallback on line {script.lineno} scripts {why}, which export cannot take")
        return None
    stmt = statement_of(ctx, script)
    for trace, inputs in traced:
        traced_module = captured_module(ctx, trace, "torch.jit.trace")
        if (
            traced_module is not None
            and ctx.source(traced_module) == ctx.source(module)
            and is_pure(inputs)
            and stmt is not None
            and available_at(ctx, inputs, scope, stmt)
        ):
            args = example_args(ctx, inputs, scope)
            if args is not None:
                return export_call(ctx, fix, scope, module, args, None)
    fix.fail(
        f"the fallback on line {script.lineno} scripts `{short(ctx.source(module))}`, and "
        "no traced branch of that module has example inputs in scope there: export it with "
        "`torch.export.export(module, example_args)`"
    )
    return None
