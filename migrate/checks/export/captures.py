"""`capture_fix`: the group fix of one `torch.jit.trace` / `trace_module` / `script(module)`
call and every use of its result, and the route it takes.

- the eager module, when every use only calls the result (safe: it behaves as the
  TorchScript module did);
- the `ExportedProgram`, its uses rewritten (calls through `.module()`, saves, lowering);
- under `--intent drop`, the program's `.module()`, when the uses call it or hand it on;
- one export per call structure (migrate.checks.export.per_call), for a test comparing the
  scripted module with the module, or a save loaded back in place.
"""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import bound_name, global_reads, parent
from migrate.checks._drop_route import TORCHSCRIPT_ATTRIBUTES
from migrate.checks._edits import replace_with_arg
from migrate.checks._selfcompare import self_comparison
from migrate.checks.base import Edit, PythonContext
from migrate.checks.export.alternatives import alternatives_fix, alternatives_of
from migrate.checks.export.apis import CAPTURE_RULES, SCRIPT_RULE, captured_module
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.exports import script_export, trace_export, trace_module_export
from migrate.checks.export.inputs import recorded_dynamic_shapes
from migrate.checks.export.per_call import export_each_call, round_trip, round_trip_fix
from migrate.checks.export.specialization import differing_call, export_limit, shapes_followed
from migrate.checks.export.uses import program_use, result_uses

# What the capture's name holds after the rewrite, as the capture rules say it.
HOLDS_PROGRAM = "the name keeps the ExportedProgram, calls go through `.module()`"


HOLDS_MODULE = (
    "the name holds the exported program's `.module()`, which its uses call or hand on as "
    "they did the TorchScript module"
)


def capture_fix(ctx: PythonContext, call: ast.Call) -> FixBuilder:
    """The group fix for a torch.jit.trace / trace_module / script(module) call (cached)."""
    cache = ctx.__dict__.setdefault("_capture_fixes", {})
    if id(call) not in cache:
        cache[id(call)] = _capture_fix(ctx, call)
    return cache[id(call)]


def _capture_fix(ctx: PythonContext, call: ast.Call) -> FixBuilder:
    found = alternatives_of(ctx, call)
    if found is not None:  # `try: m = trace(...)` / `except: m = script(...)`: one binding
        if call is not found.captures[0]:
            return capture_fix(ctx, found.captures[0])  # the group's fix, built once
        return alternatives_fix(ctx, found)
    fix = FixBuilder()
    qual = ctx.qualname(call.func)
    scope = ctx.table.scope_for(call)
    uses, where = result_uses(ctx, call, scope)
    global_uses = _global_uses(ctx, call) if where is not None else None
    if where is not None and global_uses is None:
        return fix.fail(where)
    if global_uses is not None:
        uses = global_uses
    fix.member(CAPTURE_RULES.get(qual or "", SCRIPT_RULE), call)
    module = captured_module(ctx, call, qual)
    calls = [parent(ctx, u) for u in uses]
    called = [
        c for c, u in zip(calls, uses, strict=True) if isinstance(c, ast.Call) and c.func is u
    ]
    # A module-level name is only called when its reads here are calls; other modules'
    # uses are the planner's to check (captures_move_with_every_use).
    only_called = len(called) == len(uses) and (bool(uses) or _module_binding(ctx, call))
    vacuous = None
    if only_called and module is not None:
        line = self_comparison(ctx, called, module)
        if line is None:
            return _eager(ctx, call, qual, module, fix)
        vacuous = (
            f"the comparison on line {line} checks it against `{short(ctx.source(module))}`: "
            f"as the eager module it would compare `{short(ctx.source(module))}` with itself"
        )
    if where is not None:
        return fix.fail(where)
    if qual == "torch.jit.trace":
        export = trace_export(ctx, call, scope, fix)
    elif qual == "torch.jit.trace_module":
        export = trace_module_export(ctx, call, scope, fix)
    elif qual == "torch.jit.script":
        found = round_trip(ctx, call) if module is not None else None
        if found is not None:  # saved and loaded back: the loaded program's calls give the example
            return round_trip_fix(ctx, call, module, found, fix)
        export = script_export(ctx, call, scope, uses, fix)
    else:
        return fix.fail(f"`{qual}` is not a capture")
    if export is None:
        return _also(fix, vacuous)
    export = recorded_dynamic_shapes(ctx, call, scope, fix, export)
    if not fix.auto:
        return fix
    reason = differing_call(ctx, call, qual, called)
    consequence = "export would not run these calls as they are"
    if reason is None:
        reason = export_limit(ctx, module, scope)
        consequence = "export specializes on the example's data there, or fails"
    if reason is not None and vacuous is not None and qual == "torch.jit.script":
        each = export_each_call(ctx, call, module, called, FixBuilder(members=list(fix.members)))
        if each.auto:  # a test comparing with the module checks each call by export
            each.each_call = True
            return each
    if reason is not None:
        return _also(fix.fail(f"{reason}; {consequence}"), vacuous)
    if qual == "torch.jit.trace" and "dynamic_shapes=" not in export:
        export = shapes_followed(ctx, call, scope, fix, export, called)
    absorbed = False
    before = (list(fix.edits), list(fix.imports), list(fix.notes), list(fix.members))
    for use in uses:
        replaced = program_use(ctx, use, call, export, scope, fix)
        absorbed |= replaced and use is call
        if not fix.auto:
            if ctx.intent == "drop" and _module_route(ctx, call, uses):
                # The repository drops TorchScript: the name holds the exported program's
                # module, which every use here calls or hands on as the traced module was.
                fix.edits, fix.imports, fix.notes, fix.members = before
                fix.problem = None
                if qual == "torch.jit.trace" and "dynamic_shapes=" not in export:
                    export = shapes_followed(ctx, call, scope, fix, export, called, every=True)
                fix.edits.append(Edit(*ctx.span(call), f"{export}.module()"))
                fix.module_route = True
                return fix
            return fix
    if not absorbed:
        fix.edits.append(Edit(*ctx.span(call), export))
    if vacuous is not None:
        fix.note("the test now compares the exported program with the module")
    return fix


def _eager(
    ctx: PythonContext, call: ast.Call, qual: str | None, module: ast.expr, fix: FixBuilder
) -> FixBuilder:
    """Every use only calls the captured object: the object itself, called as it is, behaves
    as the TorchScript one did, whatever its forward does (branches on tensors, ignored
    methods, Python side effects run as in eager mode). A safe fix."""
    fix.eager = True
    fix.imports.clear()
    if qual == "torch.jit.script":
        fix.notes = ["branches, ignored methods and Python side effects run as before"]
    else:
        fix.notes = ["its Python runs on every call (the trace had frozen one path)"]
    fix.edits = [replace_with_arg(ctx, call, module)]
    fix.applicability = "safe"
    return fix


def _also(fix: FixBuilder, vacuous: str | None) -> FixBuilder:
    if vacuous is not None and fix.problem is not None:
        fix.problem = f"{fix.problem}; {vacuous}"
    return fix


def _module_binding(ctx: PythonContext, call: ast.Call) -> bool:
    bound = bound_name(ctx, call)
    return bound is not None and ctx.table.scope_for(bound[0]) is ctx.table.module_scope


def _global_uses(ctx: PythonContext, call: ast.Call) -> list[ast.expr] | None:
    """The reads of the module-level name a capture is bound to, in functions and methods of
    the file too (a per-scope analysis stops at them); None when it is not such a name."""
    bound = bound_name(ctx, call)
    if bound is None:
        return None
    reads = global_reads(ctx, bound[0], bound[1])
    return list(reads) if reads is not None else None


def _module_route(ctx: PythonContext, capture: ast.Call, uses: list[ast.expr]) -> bool:
    """Every use of the capture's result calls it, hands it to a function of the repository
    (or returns or asserts it), or asks an nn.Module method: a module does for each."""
    for use in uses:
        holder = parent(ctx, use)
        if isinstance(holder, ast.keyword):
            holder = parent(ctx, holder)
        if isinstance(holder, ast.Call):
            if holder.func is use:
                continue
            qual = ctx.qualname(holder.func) or ""
            if qual.startswith(("torch", "executorch")):
                return False
            continue
        if isinstance(holder, (ast.Return, ast.Assert)):
            continue
        if isinstance(holder, ast.Attribute) and holder.attr not in TORCHSCRIPT_ATTRIBUTES:
            continue
        return False
    return bool(uses) and use_is_local(ctx, capture)


def use_is_local(ctx: PythonContext, capture: ast.Call) -> bool:
    """The capture is bound to a local name (its uses are all in sight) or used in place."""
    holder = parent(ctx, capture)
    return (
        not isinstance(holder, (ast.Assign, ast.AnnAssign)) or bound_name(ctx, capture) is not None
    )
