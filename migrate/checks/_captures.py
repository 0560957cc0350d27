"""Which classes capture calls (`torch.jit.script(Net())`, `torch.export.export(model, x)`)
reach, as facts one file records and the files defining those classes match (MIG131).

A class a file defines and captures is matched in that file only. A class it imports and
captures is recorded under the name its import resolves to (`pkg.models.Net`), and matches a
class of that name only in a module the name can lead to: `pkg.models` itself, a module under
`pkg` for `from pkg import Net` (re-exported by the package), or the same module seen from
another folder (`models.Net` from a script beside `scripts/models.py`). A name the scan
cannot resolve (a star import, a factory's argument) is recorded bare and matches every class
of that name, which keeps what it cannot tell: that is how every capture matched before, and
why unrelated test files' `ToyModel` classes were analysed as captured.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Collection, Iterable

from migrate.analysis.dataflow import assignments
from migrate.analysis.repository_facts import RepositoryFacts
from migrate.checks.base import PythonContext

CAPTURE_CALLS = frozenset(
    {
        "torch.jit.script",
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.export.export",
        "torch.export.export_for_training",
        "torch.onnx.export",
        "torch._dynamo.export",
    }
)

CAPTURE_ATTRS = frozenset(q.rsplit(".", 1)[1] for q in CAPTURE_CALLS)

# Methods that return the module itself: `torch.jit.trace(Model().eval(), x)`.
_MODULE_METHODS = frozenset(
    {"eval", "train", "to", "cpu", "cuda", "float", "half", "double", "bfloat16", "requires_grad_"}
)

# The keywords a capture call names its module with when it is not the first argument.
_TARGET_KEYWORDS = ("mod", "model", "obj", "f", "func")

_DEFS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def capture_target(call: ast.Call) -> ast.expr | None:
    """The module (or function) a capture call captures: its first argument, else the last
    of the keywords that name it."""
    if call.args:
        return call.args[0]
    target = None
    for kw in call.keywords:
        if kw.arg in _TARGET_KEYWORDS:
            target = kw.value
    return target


def class_refs(
    ctx: PythonContext, expr: ast.expr, at: ast.AST, depth: int = 0
) -> list[ast.Name | ast.Attribute]:
    """The callees an expression passed to a capture call may instantiate its value with:
    `Net` of `Net().eval()`, or of `model` after `model = Net()` in an enclosing scope."""
    if depth > 4:
        return []
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _MODULE_METHODS:
            return class_refs(ctx, func.value, at, depth + 1)
        if isinstance(func, (ast.Name, ast.Attribute)):
            return [func]
        return []
    if isinstance(expr, ast.Name):
        scope = ctx.table.scope_for(at)
        found: list[ast.Name | ast.Attribute] = []
        while scope is not None:
            for stmt in assignments(scope, expr.id):
                if scope.node is not ctx.tree or stmt.lineno < at.lineno:  # type: ignore[attr-defined]
                    found += class_refs(ctx, stmt.value, stmt, depth + 1)
            if found or expr.id in scope.locals:
                break
            scope = scope.parent
        return found
    return []


def ref_name(ref: ast.Name | ast.Attribute) -> str:
    return ref.id if isinstance(ref, ast.Name) else ref.attr


def shared_fact(ctx: PythonContext, ref: ast.Name | ast.Attribute) -> str | None:
    """What other files learn of a captured callee: its qualified name, its bare name when it
    cannot be resolved, None when this file defines it (no other file's class is it)."""
    name = ref_name(ref)
    if isinstance(ref, ast.Name):
        if isinstance(ctx.table.definition(name, ctx.table.scope_for(ref)), _DEFS):
            return None
    qual = ctx.qualname(ref)
    if not qual or "." not in qual:
        return name
    return _beside_script(ctx, qual)


def _beside_script(ctx: PythonContext, qual: str) -> str:
    """`models.Net` imported by a script outside any package, from the `models.py` beside it
    (the first entry of its sys.path), is named as the scan names that file: `scripts.models`.
    Left as written, it would also meet every other folder's `models`."""
    folder = ctx.table.script_dir
    if not folder:
        return qual
    head = os.path.join(os.path.dirname(ctx.path), qual.split(".")[0])
    if os.path.isfile(head + ".py") or os.path.isfile(os.path.join(head, "__init__.py")):
        return f"{folder}.{qual}"
    return qual


def modules_meet(imported: str, module: str) -> bool:
    """Whether a class imported as `imported.Name` can be the `Name` defined in `module`:
    the same module, one inside the other (a package re-exporting its submodule's class, a
    class nested in a class), or the same module named from different folders."""
    if not imported or not module or imported == module:
        return True
    longer, shorter = (imported, module) if len(imported) > len(module) else (module, imported)
    return longer.startswith(shorter + ".") or longer.endswith("." + shorter)


class CapturedIndex:
    """A repository's captured-class facts by class name: {name: modules it was imported
    from ("" for a bare name, which matches any module)}."""

    def __init__(self, facts: Iterable[str]) -> None:
        self.by_name: dict[str, set[str]] = {}
        for fact in facts:
            module, _, name = fact.rpartition(".")
            self.by_name.setdefault(name, set()).add(module)

    def captures(self, name: str, module: Callable[[], str], besides: Collection[str] = ()) -> bool:
        """Whether a class `name` defined in `module` (asked only when needed) is captured,
        by a fact other than those in `besides`."""
        imported = self.by_name.get(name)
        if not imported:
            return False
        if besides:
            imported = {m for m in imported if (f"{m}.{name}" if m else name) not in besides}
        if "" in imported:
            return True
        return bool(imported) and any(modules_meet(m, module()) for m in imported)


def captured_index(facts: RepositoryFacts) -> CapturedIndex:
    """The index of a repository's merged facts, built once per set of facts."""
    return facts.built("captured classes", lambda: CapturedIndex(facts.captured_classes()))
