"""One binding on two paths: `try: m = torch.jit.trace(model, x) except E: m = torch.jit.script(model)`.

Under `--intent drop` (issue 27, item 2) a `try`/`except` or `if`/`else` whose branches all
end binding one name to a TorchScript capture is one binding, not a rebinding: whichever
branch ran, the name holds a TorchScript module, and after the migration an
`ExportedProgram`. Every branch's capture becomes an export, and the uses after the
statement (a save, a mobile lowering in the branch itself) are rewritten once, as for a
single capture; the captures and those uses are one group, written all or none.

A `torch.jit.script` branch has no example inputs of its own: it takes the example of a
traced branch of the same module (a name or attribute, read again there: nothing is drawn
twice). Without one the group is held, saying so. The group's fix is built where the
other capture fixes are (migrate.checks._export_rewrite.alternatives_fix). Without an intent, or under
`keep-scriptable`, the fallback stays TorchScript and so does the group (the caller's
"rebound on another path").
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrate.checks._flow import alternative_bindings, assignments, bound_name, name_uses, pos
from migrate.checks.base import PythonContext

JIT_CAPTURES = frozenset({"torch.jit.trace", "torch.jit.trace_module", "torch.jit.script"})


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
