"""Rewrites shared by the capture (MIG101-MIG103) and serialization (MIG201-MIG205) rules.

One scheme, applied everywhere: a name bound to a capture keeps the `ExportedProgram`.
Calls on it become `name.module()(...)`, saves pass it to `torch.export.save`, mobile
lowering passes it to `to_edge_transform_and_lower`. A capture and every use of its result
in the scope form one fix (a "group"): the capture rule and each use-site rule attach the
same edits, so the fixer applies them together or not at all. A use the scheme does not
cover (returned, stored on an attribute, passed to another function) makes the whole
group assisted: the tool cannot know whether that code wants the program or a module.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field

from migrate.checks import _alt_captures as _alt
from migrate.checks import _static_inputs as static_inputs
from migrate.checks._compile_guard import data_read
from migrate.checks._drop_route import TORCHSCRIPT_ATTRIBUTES
from migrate.checks._edits import replace_with_arg
from migrate.checks._export_checks import (
    export_each_call,
    round_trip,
    round_trip_fix,
)
from migrate.checks._flow import (
    alternative_bindings,
    assignments,
    available_at,
    bound_name,
    global_reads,
    is_free,
    is_pure,
    name_uses,
    parent,
    pos,
    statement_of,
    value_origin,
)
from migrate.checks._selfcompare import self_comparison
from migrate.checks.base import Edit, GroupFix, PythonContext
from migrate.scan.pyscope import Scope

JIT_CAPTURES = _alt.JIT_CAPTURES
JIT_PASSES = frozenset({"torch.jit.freeze", "torch.jit.optimize_for_inference"})
CAPTURE_RULES = {
    "torch.jit.script": "MIG101",
    "torch.jit.trace": "MIG102",
    "torch.jit.trace_module": "MIG103",
}
EP_MAKERS = frozenset({"torch.export.export", "torch.export.load"})
OPTIMIZE_FOR_MOBILE = "torch.utils.mobile_optimizer.optimize_for_mobile"
LITE_LOADS = frozenset(
    {"torch.jit._load_for_lite_interpreter", "torch.jit.mobile._load_for_lite_interpreter"}
)

TRACE_PARAMS = (
    "func",
    "example_inputs",
    "optimize",
    "check_trace",
    "check_inputs",
    "check_tolerance",
    "strict",
    "_force_outplace",
    "_module_class",
    "_compilation_unit",
    "example_kwarg_inputs",
    "_store_inputs",
)
TRACE_MODULE_PARAMS = (
    "mod",
    "inputs",
    "optimize",
    "check_trace",
    "check_inputs",
    "check_tolerance",
    "strict",
    "_force_outplace",
    "_module_class",
    "_compilation_unit",
    "example_inputs_is_kwarg",
    "_store_inputs",
)
# Options that only steer the TorchScript tracer: export has no counterpart (its own
# `strict` means something else), so they are dropped and the finding says so.
TRACE_ONLY = (
    "optimize",
    "check_trace",
    "check_inputs",
    "check_tolerance",
    "strict",
    "_force_outplace",
    "_module_class",
    "_compilation_unit",
    "_store_inputs",
)

TENSOR_FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "randn rand randint zeros ones empty full tensor as_tensor arange linspace eye "
        "randn_like rand_like zeros_like ones_like full_like empty_like from_numpy stack cat"
    ).split()
)
TENSOR_METHODS = frozenset(
    "to cuda cpu float half double bfloat16 long int bool unsqueeze squeeze view reshape "
    "contiguous clone detach requires_grad_ permute transpose expand repeat flatten".split()
)

_PATH_SUFFIX = re.compile(r"\.(?P<ext>pth?|ptl)(?P<end>'''|\"\"\"|'|\")(?P<close>\s*\)?)$")


# What the capture's name holds after the rewrite, as the capture rules say it.
HOLDS_PROGRAM = "the name keeps the ExportedProgram, calls go through `.module()`"
HOLDS_MODULE = (
    "the name holds the exported program's `.module()`, which its uses call or hand on as "
    "they did the TorchScript module"
)


@dataclass
class Fix:
    """Edits plus imports, or the reason a person is needed (then no edits are applied)."""

    edits: list[Edit] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    # The findings that carry these edits (rule, reported node): written all or none.
    members: list[tuple[str, ast.AST]] = field(default_factory=list)
    # export's (args, kwargs) source texts, and what the fix promises when it is known to be
    # more than the rule's default (None: the rule's).
    example: tuple[str, str | None] | None = None
    applicability: str | None = None
    eager: bool = False  # the capture became the module itself (its result is only called)
    each_call: bool = False  # each call became an export check (migrate/checks/_export_checks)
    round_trip: bool = False  # saved and loaded back in place: one program per call structure
    module_route: bool = False  # the name holds the program's `.module()` (uses call or pass it)

    @property
    def auto(self) -> bool:
        return self.problem is None

    def member(self, code: str, node: ast.AST) -> None:
        if all(n is not node or c != code for c, n in self.members):
            self.members.append((code, node))

    def group(self) -> GroupFix | None:
        return GroupFix(list(self.members)) if self.members else None

    def need(self, spelled: tuple[str, tuple[str, ...]]) -> str:
        text, imports = spelled
        for spec in imports:
            if spec not in self.imports:
                self.imports.append(spec)
        return text

    def fail(self, problem: str) -> Fix:
        if self.problem is None:
            self.problem = problem
        return self

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def suffix(self) -> str:
        return "".join(f"; {n}" for n in self.notes)


# --------------------------------------------------------------------------- spelling


def spell_from(ctx: PythonContext, module: str, name: str, scope: Scope) -> tuple[str, tuple]:
    """`name` with `from module import name` when that name is free, else `module.name`."""
    qual = f"{module}.{name}"
    if ctx.table.binding(name, scope) == qual:
        return name, ()
    if is_free(ctx, name, scope) and is_free(ctx, name, ctx.table.module_scope):
        return name, (f"from {module} import {name}",)
    return qual, (f"import {module}",)


def lowered(ctx: PythonContext, fix: Fix, program: str, scope: Scope, delegate: bool = True) -> str:
    """ExecuTorch lowering of an exported program, XNNPACK-delegated (or, for the fallback
    branch of a mobile lowering, not delegated: ExecuTorch's portable kernels)."""
    lower = fix.need(spell_from(ctx, "executorch.exir", "to_edge_transform_and_lower", scope))
    if not delegate:
        return f"{lower}({program}).to_executorch()"
    xnnpack = fix.need(
        spell_from(
            ctx,
            "executorch.backends.xnnpack.partition.xnnpack_partitioner",
            "XnnpackPartitioner",
            scope,
        )
    )
    return f"{lower}({program}, partitioner=[{xnnpack}()]).to_executorch()"


def write_bytes(ctx: PythonContext, fix: Fix, path: str, data: str, scope: Scope) -> str:
    if ctx.table.binding("Path", scope) == "pathlib.Path":
        path_cls = "Path"
    else:
        path_cls = fix.need(ctx.spell("pathlib.Path", scope))
    return f"{path_cls}({path}).write_bytes({data})"


def renamed_path(ctx: PythonContext, expr: ast.expr, new_ext: str, fix: Fix) -> str:
    """The source of a path whose literal ending is `.pt`/`.pth`/`.ptl`, given the new one."""
    text = ctx.source(expr)
    literal_end = isinstance(expr, (ast.Constant, ast.JoinedStr)) or (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, (ast.Div, ast.Add))
        and isinstance(expr.right, (ast.Constant, ast.JoinedStr))
    )
    if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "os.path.join" and expr.args:
        literal_end = isinstance(expr.args[-1], (ast.Constant, ast.JoinedStr)) and not (
            expr.keywords
        )
    match = _PATH_SUFFIX.search(text) if literal_end else None
    if match is None or (match.group("close") and not isinstance(expr, ast.Call)):
        fix.note(
            f"`{_short(text)}` is not a literal path: if it names a file, use a `{new_ext}` name"
        )
        return text
    return text[: match.start()] + new_ext + match.group("end") + match.group("close")


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- arguments


def bind_args(call: ast.Call, params: tuple[str, ...]) -> dict[str, ast.expr] | None:
    """Map a call's arguments to parameter names; None for *args/**kwargs or unknown names."""
    bound: dict[str, ast.expr] = {}
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or index >= len(params):
            return None
        bound[params[index]] = arg
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in params or kw.arg in bound:
            return None
        bound[kw.arg] = kw.value
    return bound


def is_tensor_expr(ctx: PythonContext, expr: ast.expr, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, ast.Call):
        if ctx.qualname(expr.func) in TENSOR_FACTORIES:
            return True
        func = expr.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in TENSOR_METHODS
            and is_tensor_expr(ctx, func.value, depth + 1)
        )
    if isinstance(expr, ast.Name):
        origin = value_origin(ctx, expr)
        return origin is not None and is_tensor_expr(ctx, origin, depth + 1)
    return False


def _tensor_factory_call(ctx: PythonContext):
    return lambda call: ctx.qualname(call.func) in TENSOR_FACTORIES


def tuple_display(ctx: PythonContext, items: list[ast.expr]) -> str:
    texts = [ctx.source(e) for e in items]
    return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"


def example_args(ctx: PythonContext, expr: ast.expr, scope: Scope) -> str | None:
    """torch.jit.trace's example inputs as export's `args` tuple, or None when unknowable.

    Mirrors what trace does (`make_tuple`): a tensor or dict is one input, a tuple is the
    inputs, a list is turned into a tuple.
    """
    if isinstance(expr, ast.Tuple) or _builtin_call(ctx, expr, "tuple", scope):
        return ctx.source(expr)
    if isinstance(expr, ast.List):
        return tuple_display(ctx, expr.elts)
    if isinstance(expr, ast.Dict) or is_tensor_expr(ctx, expr):
        return f"({ctx.source(expr)},)"
    if isinstance(expr, ast.Name):
        origin = value_origin(ctx, expr)
        if isinstance(origin, ast.Tuple) or _builtin_call(ctx, origin, "tuple", scope):
            return expr.id
        if isinstance(origin, ast.List):
            if is_free(ctx, "tuple", scope):
                return f"tuple({expr.id})"
            return None
        if isinstance(origin, ast.Dict):
            return f"({expr.id},)"
    # Unknown shape: normalize at run time, right for a tensor, a tuple and a list alike.
    if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)) and is_pure(expr):
        if all(is_free(ctx, n, scope) for n in ("tuple", "list", "isinstance")):
            src = ctx.source(expr)
            return f"tuple({src}) if isinstance({src}, (tuple, list)) else ({src},)"
    return None


def _builtin_call(ctx: PythonContext, expr: ast.expr | None, name: str, scope: Scope) -> bool:
    """`expr` is a call of the builtin `name` (not shadowed here)."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == name
        and is_free(ctx, name, scope)
    )


def not_a_module(ctx: PythonContext, expr: ast.expr, scope: Scope) -> str | None:
    """Why `expr` is known not to be an nn.Module instance (export needs one)."""
    if isinstance(expr, ast.Lambda):
        return "a lambda"
    if isinstance(expr, ast.Name):
        definition = ctx.table.definition(expr.id, scope)
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"the function `{expr.id}`"
        if isinstance(definition, ast.ClassDef):
            return f"the class `{expr.id}` (not an instance)"
    if isinstance(expr, ast.Attribute) and expr.attr == "forward":
        return "a bound method"
    return None


# --------------------------------------------------------------------------- captures


def capture_fix(ctx: PythonContext, call: ast.Call) -> Fix:
    """The group fix for a torch.jit.trace / trace_module / script(module) call (cached)."""
    cache = ctx.__dict__.setdefault("_capture_fixes", {})
    if id(call) not in cache:
        cache[id(call)] = _capture_fix(ctx, call)
    return cache[id(call)]


def _capture_fix(ctx: PythonContext, call: ast.Call) -> Fix:
    found = _alt.alternatives_of(ctx, call)
    if found is not None:  # `try: m = trace(...)` / `except: m = script(...)`: one binding
        return alternatives_fix(ctx, call, found)
    fix = Fix()
    qual = ctx.qualname(call.func)
    scope = ctx.table.scope_for(call)
    uses, where = result_uses(ctx, call, scope)
    global_uses = _global_uses(ctx, call) if where is not None else None
    if where is not None and global_uses is None:
        return fix.fail(where)
    if global_uses is not None:
        uses = global_uses
    fix.member(CAPTURE_RULES.get(qual or "", "MIG101"), call)
    module = _captured_module(ctx, call, qual)
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
            f"the comparison on line {line} checks it against `{_short(ctx.source(module))}`: "
            f"as the eager module it would compare `{_short(ctx.source(module))}` with itself"
        )
    if where is not None:
        return fix.fail(where)
    if qual == "torch.jit.trace":
        export = _trace_export(ctx, call, scope, fix)
    elif qual == "torch.jit.trace_module":
        export = _trace_module_export(ctx, call, scope, fix)
    elif qual == "torch.jit.script":
        found = round_trip(ctx, call) if module is not None else None
        if found is not None:  # issue 27: the loaded program's calls give the example
            return round_trip_fix(ctx, call, module, found, fix, renamed_path)
        export = _script_export(ctx, call, scope, uses, fix)
    else:
        return fix.fail(f"`{qual}` is not a capture")
    if export is None:
        return _also(fix, vacuous)
    export = _recorded_dynamic_shapes(ctx, call, scope, fix, export)  # issue 28
    if not fix.auto:
        return fix
    reason = _differing_call(ctx, call, qual, called)
    consequence = "export would not run these calls as they are"
    if reason is None:
        reason = _export_limit(ctx, module, scope)
        consequence = "export specializes on the example's data there, or fails"
    if reason is not None and vacuous is not None and qual == "torch.jit.script":
        each = export_each_call(ctx, call, module, called, Fix(members=list(fix.members)))
        if each.auto:  # issue 27: a test comparing with the module checks each call by export
            each.each_call = True
            return each
    if reason is not None:
        return _also(fix.fail(f"{reason}; {consequence}"), vacuous)
    if qual == "torch.jit.trace" and "dynamic_shapes=" not in export:
        export = _shapes_followed(ctx, call, scope, fix, export, called)
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
                    export = _shapes_followed(ctx, call, scope, fix, export, called, every=True)
                fix.edits.append(Edit(*ctx.span(call), f"{export}.module()"))
                fix.module_route = True
                return fix
            return fix
    if not absorbed:
        fix.edits.append(Edit(*ctx.span(call), export))
    if vacuous is not None:
        fix.note("the test now compares the exported program with the module")
    return fix


def _eager(ctx: PythonContext, call: ast.Call, qual: str | None, module: ast.expr, fix: Fix) -> Fix:
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


def _also(fix: Fix, vacuous: str | None) -> Fix:
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


def result_uses(
    ctx: PythonContext, value: ast.expr, scope: Scope
) -> tuple[list[ast.expr], str | None]:
    """The expressions that read a value: the reads of the name it is bound to, the value
    itself when used in place, nothing when discarded."""
    holder = parent(ctx, value)
    if isinstance(holder, ast.Expr):
        return [], None
    bound = bound_name(ctx, value)
    if bound is not None:
        stmt, name = bound
        uses, problem = name_uses(ctx, stmt, name, scope)
        return list(uses), problem
    if isinstance(holder, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return [], "its result is stored in an attribute or unpacked; the tool cannot follow it"
    return [value], None


def _export_call(ctx, fix, scope, module: ast.expr, args: str, kwargs: str | None) -> str:
    export = fix.need(ctx.spell("torch.export.export", scope))
    fix.example = (args, kwargs)
    text = f"{export}({ctx.source(module)}, {args}"
    if kwargs:
        text += f", kwargs={kwargs}"
    return text + ")"


def _trace_common(ctx, call, scope, fix, params) -> dict[str, ast.expr] | None:
    bound = bind_args(call, params)
    if bound is None:
        fix.fail("arguments passed with * or ** or unknown keywords; rewrite by hand")
        return None
    module = bound.get(params[0])
    if module is None:
        fix.fail("no module to export")
        return None
    why = not_a_module(ctx, module, scope)
    if why is not None:
        fix.fail(f"it traces {why}: torch.export.export needs an nn.Module (wrap it in one)")
        return None
    dropped = [name for name in TRACE_ONLY if name in bound]
    if dropped:
        fix.note(f"dropped trace-only option{'s' * (len(dropped) > 1)} {', '.join(dropped)}")
    return bound


def _inputs(ctx, fix, scope, inputs: ast.expr | None) -> str | None:
    if inputs is None or (isinstance(inputs, ast.Constant) and inputs.value is None):
        return "()"
    args = example_args(ctx, inputs, scope)
    if args is None:  # issue 28: the structure a recorded run saw decides
        args = _recorded_inputs_form(ctx, fix, inputs)
    if args is None:
        fix.fail(
            f"cannot tell whether `{_short(ctx.source(inputs))}` is one input or a tuple of "
            "inputs; pass `(x,)` or a tuple"
        )
    return args


def _trace_export(ctx, call, scope, fix) -> str | None:
    bound = _trace_common(ctx, call, scope, fix, TRACE_PARAMS)
    if bound is None:
        return None
    kwargs = bound.get("example_kwarg_inputs")
    inputs = bound.get("example_inputs")
    if inputs is None and kwargs is None:
        fix.fail("no example inputs")
        return None
    args = _inputs(ctx, fix, scope, inputs)
    if args is None:
        return None
    if kwargs is not None:
        fix.note("example_kwarg_inputs became kwargs")
    kw_text = ctx.source(kwargs) if kwargs is not None else None
    return _export_call(ctx, fix, scope, bound["func"], args, kw_text)


def _trace_module_export(ctx, call, scope, fix) -> str | None:
    bound = _trace_common(ctx, call, scope, fix, TRACE_MODULE_PARAMS)
    if bound is None:
        return None
    inputs = bound.get("inputs")
    if not (
        isinstance(inputs, ast.Dict)
        and len(inputs.keys) == 1
        and isinstance(inputs.keys[0], ast.Constant)
        and inputs.keys[0].value == "forward"
    ):
        fix.fail(
            "it traces methods other than `forward` (or a dict built elsewhere): export one "
            "program per method and give ExecuTorch a dict of them (see MIG105)"
        )
        return None
    value = inputs.values[0]
    as_kwargs = bound.get("example_inputs_is_kwarg")
    if as_kwargs is not None:
        if not isinstance(as_kwargs, ast.Constant):
            fix.fail("`example_inputs_is_kwarg` is not a literal")
            return None
        if as_kwargs.value:
            fix.note("keyword example inputs became kwargs")
            return _export_call(ctx, fix, scope, bound["mod"], "()", ctx.source(value))
    args = _inputs(ctx, fix, scope, value)
    if args is None:
        return None
    return _export_call(ctx, fix, scope, bound["mod"], args, None)


def _script_export(ctx, call, scope, uses, fix) -> str | None:
    if not call.args or isinstance(call.args[0], ast.Starred):
        fix.fail("nothing to export")
        return None
    module = call.args[0]
    stmt = statement_of(ctx, call)
    first_call = next(
        (
            parent(ctx, u)
            for u in uses
            if isinstance(parent(ctx, u), ast.Call) and parent(ctx, u).func is u  # type: ignore[union-attr]
        ),
        None,
    )
    if first_call is None or stmt is None:
        recorded = _recorded_example(ctx, call, scope, fix)  # issue 28
        if isinstance(recorded, tuple):
            return _export_call(ctx, fix, scope, module, *recorded)
        static = _static_example(ctx, call, module, scope, fix)  # issue 27
        if static is not None and not static.startswith(" "):
            return static
        fix.fail(
            "no example inputs in scope (the scripted module is not called here): export it "
            f"with `torch.export.export(module, example_args)`{recorded or static or ''}"
        )
        return None
    assert isinstance(first_call, ast.Call)
    factory = _tensor_factory_call(ctx)
    values = [*first_call.args, *(k.value for k in first_call.keywords)]
    if (
        any(isinstance(a, ast.Starred) for a in first_call.args)
        or any(k.arg is None for k in first_call.keywords)
        or not all(is_pure(v, factory) and available_at(ctx, v, scope, stmt) for v in values)
    ):
        recorded = _recorded_example(ctx, call, scope, fix)  # issue 28
        if isinstance(recorded, tuple):
            return _export_call(ctx, fix, scope, module, *recorded)
        static = _static_example(ctx, call, module, scope, fix)  # issue 27
        if static is not None and not static.startswith(" "):
            return static
        fix.fail(
            f"the call on line {first_call.lineno} uses inputs that do not exist yet where the "
            f"module is scripted: export it with `torch.export.export(module, example_args)`"
            f"{recorded or static or ''}"
        )
        return None
    args = tuple_display(ctx, list(first_call.args))
    kwargs = None
    if first_call.keywords:
        kwargs = "{" + ", ".join(f'"{k.arg}": {ctx.source(k.value)}' for k in first_call.keywords)
        kwargs += "}"
    fix.note(f"example inputs taken from the call on line {first_call.lineno}")
    return _export_call(ctx, fix, scope, module, args, kwargs)


# --------------------------------------------------------------------------- evidence
# issue 28: what `migrate record` saw at run time (migrate/record/hooks.py). Each helper
# answers None / the text unchanged when there is no evidence for the site.


def _hooks():
    """migrate.record.hooks while a scan reads evidence (imported by then), else None."""
    if "migrate.record.evidence" not in sys.modules:
        return None
    from migrate.record import hooks

    return hooks if hooks.active() is not None else None


def _recorded_inputs_form(ctx: PythonContext, fix: Fix, inputs: ast.expr) -> str | None:
    hooks = _hooks()
    if hooks is None:
        return None
    call = parent(ctx, inputs)
    while call is not None and not isinstance(call, ast.Call):
        call = parent(ctx, call)
    if call is None:
        return None
    args, note = hooks.inputs_form(ctx, inputs, call)
    if note:
        fix.note(note)
    return args


def _recorded_example(ctx: PythonContext, call: ast.Call, scope: Scope, fix: Fix):
    """(args, kwargs) texts generated from the recorded calls, or the suffix saying why not."""
    hooks = _hooks()
    if hooks is None:
        return ""
    example, note = hooks.example_inputs(ctx, call, lambda q: fix.need(ctx.spell(q, scope)))
    if example is None:
        return f" ({note})" if note else ""
    fix.note(note)
    return example


def _static_example(ctx, call, module: ast.expr, scope: Scope, fix: Fix) -> str | None:
    """The export call with example inputs the module's class fixes (migrate/checks/
    _static_inputs.py), or " (why not)" as a message suffix, or None (nothing to say)."""
    if _hooks() is not None:
        return None  # a run with evidence: what it recorded decides, not a guess
    found = static_inputs.for_capture(ctx, module)
    if found is None:
        return None
    if isinstance(found, str):
        return f" (the class gives no example: {found})"
    from migrate.record.hooks import generated_inputs

    spell = lambda q: fix.need(ctx.spell(q, scope))  # noqa: E731
    args, dynamic = generated_inputs(spell, [found.shape], [[0]])
    fix.note(found.note())
    export = _export_call(ctx, fix, scope, module, args, None)
    return f"{export[:-1]}, dynamic_shapes={dynamic})"


def recorded_load(ctx: PythonContext, call: ast.Call, fix: Fix, path: ast.expr) -> dict:
    """A load's finding data from the recorded run: the files it read and the recorded saves
    that wrote them (the planner links a run-time path to those producers)."""
    hooks = _hooks()
    found = hooks.load_writers(ctx, call) if hooks is not None else None
    if found is None:
        return {}
    loaded, writers = found
    if not isinstance(path, ast.Constant):  # a literal path is linked without the run
        wrote = f"written by the save at {', '.join(writers)}" if writers else "no save recorded"
        shown = ", ".join(f"`{p}`" for p in loaded[:2]) + (" ..." if len(loaded) > 2 else "")
        fix.note(f"evidence: the recorded run loaded {shown} ({wrote})")
    return {"recorded_loaded": loaded, "recorded_writers": writers}


_LITE_SAVES = ("_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter")


def _only_lite_saved(ctx: PythonContext, func: ast.AST, name: str) -> str | None:
    """None when `name`, a parameter of `func`, is read there only as the module of lite
    saves (so an exported program passed in does as well); else why not."""
    args = getattr(func, "args", None)
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)] if args else []
    if name not in params:
        return f"`{name}` is not a parameter of the function holding the save"
    for node in ast.walk(func):
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        holder = parent(ctx, node)
        method = parent(ctx, holder) if isinstance(holder, ast.Attribute) else None
        if not (
            isinstance(node.ctx, ast.Load)
            and isinstance(holder, ast.Attribute)
            and holder.attr in _LITE_SAVES
            and isinstance(method, ast.Call)
            and method.func is holder
        ):
            return f"`{name}` is also used on line {node.lineno}, where a program may not do"
    return None


def _function_of(ctx: PythonContext, node: ast.AST | None) -> ast.AST | None:
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parent(ctx, node)
    return node


def recorded_program_save(ctx: PythonContext, call: ast.Call, fix: Fix) -> dict:
    """MIG204 on `p._save_for_lite_interpreter(path)` where `p` is a parameter: the run saw
    it save only results of captures (exported programs once migrated), so the save lowers
    `p` as a program; the finding data names those captures for the planner (issue 28)."""
    value = call.func.value  # type: ignore[attr-defined]
    hooks = _hooks()
    if hooks is None or not isinstance(value, ast.Name):
        return {}
    captures, note = hooks.saved_programs(ctx, call)
    if captures is None:
        if note:
            fix.problem = f"{fix.problem}; {note}"
        return {}
    problem = _only_lite_saved(ctx, _function_of(ctx, call), value.id)  # type: ignore[arg-type]
    if problem is not None:
        fix.problem = f"{fix.problem}; {note}, but {problem}"
        return {}
    fix.problem = None
    scope = ctx.table.scope_for(call)
    _lite_save(ctx, call, lowered(ctx, fix, value.id, scope), scope, fix)
    fix.note(f"{note} (an exported program once migrated)")
    return {"recorded_programs": captures}


def _lowered_in_callee(ctx: PythonContext, use: ast.expr, holder: ast.Call, capture, fix) -> bool:
    """A capture's result passed to a function of this file that the run saw lower it with a
    lite save, and that reads that parameter only there: the program does as well."""
    hooks = _hooks()
    if hooks is None or capture is None or not isinstance(holder.func, ast.Name):
        return False
    if use not in holder.args or any(isinstance(a, ast.Starred) for a in holder.args):
        return False
    callee = ctx.table.definition(holder.func.id, ctx.table.scope_for(holder))
    params = getattr(getattr(callee, "args", None), "args", None)
    if params is None or holder.args.index(use) >= len(params):
        return False
    param = params[holder.args.index(use)].arg
    recorded = {id(s) for s in hooks.lowered_by(ctx, capture)}
    saves = [  # the callee's lite saves whose lines are those the run saw save this result
        node
        for node in ast.walk(callee)  # type: ignore[arg-type]
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_save_for_lite_interpreter"
        and id(hooks.site(ctx, node, hooks.LITE_SAVES).site) in recorded
    ]
    if not saves or _only_lite_saved(ctx, callee, param) is not None:
        return False
    where = ", ".join(f"line {node.lineno}" for node in saves)
    fix.note(f"evidence: `{holder.func.id}` lowers it as a program (the lite save at {where})")
    return True


def _recorded_dynamic_shapes(
    ctx: PythonContext, call: ast.Call, scope: Scope, fix: Fix, export: str
) -> str:
    hooks = _hooks()
    if hooks is None:
        return export
    spec, note, problem = hooks.dynamic_shapes(ctx, call, lambda q: fix.need(ctx.spell(q, scope)))
    if problem:
        fix.fail(problem)
        return export
    if note:
        fix.note(note)
    if spec is None or not export.endswith(")"):
        return export
    return f"{export[:-1]}, dynamic_shapes={spec})"


# --------------------------------------------------------------------------- call sites

_SHAPED_FACTORIES = frozenset(
    f"torch.{n}" for n in "randn rand zeros ones empty full randint".split()
)


def _captured_module(ctx: PythonContext, call: ast.Call, qual: str | None) -> ast.expr | None:
    params = TRACE_MODULE_PARAMS if qual == "torch.jit.trace_module" else TRACE_PARAMS
    if qual == "torch.jit.script":
        return call.args[0] if call.args else None
    bound = bind_args(call, params)
    return bound.get(params[0]) if bound else None


def _example(ctx: PythonContext, call: ast.Call, qual: str | None) -> _Signature | None:
    """The positional and keyword arguments the capture saw, where the source shows them."""
    if qual == "torch.jit.trace":
        bound = bind_args(call, TRACE_PARAMS) or {}
        inputs, kwargs = bound.get("example_inputs"), bound.get("example_kwarg_inputs")
    elif qual == "torch.jit.trace_module":
        bound = bind_args(call, TRACE_MODULE_PARAMS) or {}
        forward = bound.get("inputs")
        inputs = forward.values[0] if isinstance(forward, ast.Dict) and forward.values else None
        kwargs = None
    else:
        return None  # script: the first call is the example
    keywords: frozenset[str] = frozenset()
    if isinstance(kwargs, ast.Dict):
        if not all(isinstance(k, ast.Constant) for k in kwargs.keys):
            return None
        keywords = frozenset(k.value for k in kwargs.keys)  # type: ignore[union-attr]
    elif kwargs is not None:
        return None
    if inputs is None:
        return _Signature([], keywords)
    if isinstance(inputs, ast.Name):
        unseen = _Signature([], keywords, spread=inputs.id)
    else:
        unseen = None
    origin = value_origin(ctx, inputs) if isinstance(inputs, ast.Name) else inputs
    if isinstance(origin, (ast.Tuple, ast.List)):
        return _Signature(list(origin.elts), keywords, spread=getattr(inputs, "id", None))
    if is_tensor_expr(ctx, inputs):
        return _Signature([inputs], keywords)
    return unseen


@dataclass
class _Signature:
    args: list[ast.expr]
    keywords: frozenset[str]
    values: dict[str, ast.expr] = field(default_factory=dict)
    spread: str | None = None  # the name holding the example tuple: `m(*inputs)` matches it

    @classmethod
    def of(cls, call: ast.Call) -> _Signature | None:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        values = {k.arg: k.value for k in call.keywords if k.arg}
        return cls(list(call.args), frozenset(values), values)


def _differing_call(
    ctx: PythonContext, capture: ast.Call, qual: str | None, calls: list[ast.Call]
) -> str | None:
    """Why a later call of the captured name would not match the exported signature."""
    example = _example(ctx, capture, qual)
    if qual == "torch.jit.script" and calls:
        example, calls = _Signature.of(calls[0]), calls[1:]
    if example is None:
        return None
    for other in calls:
        star = other.args[0] if len(other.args) == 1 else None
        if (
            isinstance(star, ast.Starred)
            and isinstance(star.value, ast.Name)
            and star.value.id == example.spread
            and not other.keywords
            and not example.keywords
        ):
            continue  # `traced(*inputs)` with the very tuple it was traced with
        if example.spread is not None and not example.args:
            return None  # a tuple the source does not show: nothing to compare
        seen = _Signature.of(other)
        if seen is None:
            return f"the call on line {other.lineno} passes * or ** arguments"
        if len(seen.args) != len(example.args):
            return (
                f"the call on line {other.lineno} passes {len(seen.args)} positional "
                f"argument(s), the example {len(example.args)}"
            )
        if seen.keywords != example.keywords:
            names = ", ".join(sorted(seen.keywords ^ example.keywords))
            return f"the call on line {other.lineno} differs in keywords ({names})"
        for mine, theirs in zip(seen.args, example.args, strict=True):
            a, b = _shape(ctx, mine), _shape(ctx, theirs)
            if a is not None and b is not None and a != b:
                return (
                    f"the call on line {other.lineno} passes shape {a}, the example {b} "
                    "(export specializes to the example's shapes)"
                )
    return None


def _shapes_followed(
    ctx, capture: ast.Call, scope: Scope, fix: Fix, export: str, calls, every: bool = False
) -> str:
    """A trace records `x.size(0)` as an operation: its module runs on inputs of other shapes
    (another graph, another batch). export fixes the example's sizes, so where a later call
    passes other tensors than the example (or, `every`, where the calls cannot be seen: the
    module is handed on), every axis of each positional input becomes `Dim.AUTO` (dynamic
    where the program allows, the rest kept as traced)."""
    example = _example(ctx, capture, "torch.jit.trace")
    if example is None or not example.args or example.keywords:
        return export
    shown = [ctx.source(a) for a in example.args]
    other = next(
        (
            c
            for c in calls
            if c.args and [ctx.source(a) for a in c.args] != shown and not c.keywords
        ),
        None,
    )
    if other is not None and any(isinstance(a, ast.Starred) for a in other.args):
        return export
    if other is None and not every:
        return export
    auto = fix.need(ctx.spell("torch.export.Dim", scope))
    inputs = f"({shown[0]},)" if len(shown) == 1 else f"({', '.join(shown)})"
    if fix.example is not None and fix.example[0].isidentifier():
        inputs = fix.example[0]  # the name export is given: its tensors are not made again
    spec = f"tuple(dict.fromkeys(range(t.dim()), {auto}.AUTO) for t in {inputs})"
    where = (
        f"the call on line {other.lineno} passes other inputs than the example"
        if other is not None
        else "its calls are out of sight"
    )
    fix.note(f"{where}: every axis is `Dim.AUTO`, as the trace followed their shapes")
    return f"{export[:-1]}, dynamic_shapes={spec})"


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


def _shape(ctx: PythonContext, expr: ast.expr) -> tuple[int, ...] | None:
    """The literal shape of a tensor made by `torch.randn(2, 3)` and the like."""
    origin = value_origin(ctx, expr) if isinstance(expr, ast.Name) else expr
    if not isinstance(origin, ast.Call) or ctx.qualname(origin.func) not in _SHAPED_FACTORIES:
        return None
    sizes = origin.args
    if ctx.qualname(origin.func) == "torch.randint":
        sizes = [a for a in origin.args if isinstance(a, ast.Tuple)][:1]
    elif ctx.qualname(origin.func) == "torch.full":
        sizes = origin.args[:1]
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = sizes[0].elts
    if not sizes or not all(isinstance(s, ast.Constant) and type(s.value) is int for s in sizes):
        return None
    return tuple(s.value for s in sizes)  # type: ignore[union-attr]


def _export_limit(ctx: PythonContext, module: ast.expr | None, scope: Scope) -> str | None:
    """A read of tensor data into Python in the captured class's forward (same file; the
    planner follows other files: facts.blockers), which export cannot trace."""
    forward = _forward_of(ctx, module, scope)
    if forward is None:
        return None
    for node in ast.walk(forward):
        read = data_read(node)
        if read is not None:
            return f"`{read}` in `forward` (line {node.lineno}) reads tensor data into Python"
    return None


def _forward_of(ctx: PythonContext, module: ast.expr | None, scope: Scope, depth: int = 0):
    if module is None or depth > 4:
        return None
    if isinstance(module, ast.Name):
        origin = value_origin(ctx, module)
        if origin is not None:
            return _forward_of(ctx, origin, scope, depth + 1)
        return None
    if isinstance(module, ast.Call):
        func = module.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            return _forward_of(ctx, func.value, scope, depth + 1)  # `Net().eval()`
        if isinstance(func, ast.Name):
            cls = ctx.table.definition(func.id, scope)
            if isinstance(cls, ast.ClassDef):
                for stmt in cls.body:
                    if isinstance(stmt, ast.FunctionDef) and stmt.name == "forward":
                        return stmt
    return None


# --------------------------------------------------------------------------- uses


def _text_of(ctx: PythonContext, node: ast.expr, capture: ast.expr | None, new: str) -> str:
    return new if node is capture else ctx.source(node)


def program_use(
    ctx: PythonContext,
    use: ast.expr,
    capture: ast.expr | None,
    capture_text: str,
    scope: Scope,
    fix: Fix,
) -> bool:
    """Edits keeping one read of an ExportedProgram working; True when the edit replaced
    the span of `capture` (an in-place use), so the capture edit must not be added."""
    holder = parent(ctx, use)
    value = _text_of(ctx, use, capture, capture_text)
    if isinstance(holder, ast.Call) and holder.func is use:
        fix.edits.append(Edit(ctx.end(use), ctx.end(use), ".module()"))
        return False
    if _mobile_fallback(ctx, use) is not None:
        return False  # `mobile = traced` beside `mobile = optimize_for_mobile(traced)`: mobile_fix
    if isinstance(holder, ast.Assert) and holder.test is use:
        return False  # `assert trace(m, x)` checks that it captures: so does the export
    if isinstance(holder, ast.Call) and holder.args and holder.args[0] is use:
        qual = ctx.qualname(holder.func)
        if qual == "torch.jit.save":
            fix.member("MIG201", holder)
            return _jit_save_edits(ctx, holder, scope, fix)
        if qual in ("torch.export.save", "executorch.exir.to_edge_transform_and_lower"):
            return False
        if qual == OPTIMIZE_FOR_MOBILE:
            mobile_fix(ctx, holder, value, scope, fix)
            return True
    if isinstance(holder, ast.Attribute):
        method = parent(ctx, holder)
        if isinstance(method, ast.Call) and method.func is holder:
            if holder.attr == "save":
                fix.member("MIG201", method)
                return _method_save(ctx, method, value, scope, fix)
            if holder.attr in (
                "_save_for_lite_interpreter",
                "_save_to_buffer_for_lite_interpreter",
            ):
                program = lowered(ctx, fix, value, scope)
                _lite_save(ctx, method, program, scope, fix)
                return True
    if isinstance(holder, ast.Call) and _lowered_in_callee(ctx, use, holder, capture, fix):
        return False  # issue 28: the callee takes the program
    return bool(fix.fail(_unsupported(ctx, use, holder)).auto)


def _unsupported(ctx: PythonContext, use: ast.expr, holder: ast.AST | None) -> str:
    line = getattr(use, "lineno", 0)
    while isinstance(holder, (ast.Tuple, ast.List)):
        holder = parent(ctx, holder)
    if isinstance(holder, ast.Call) and holder.func is use:
        what = "called"
    elif isinstance(holder, ast.Return):
        what = "returned"
    elif isinstance(holder, ast.Attribute):
        what = f"used through `.{holder.attr}`"
    elif isinstance(holder, ast.Call):
        what = f"passed to `{_short(ctx.source(holder.func))}`"
    elif isinstance(holder, (ast.Assign, ast.AnnAssign)):
        what = "assigned to another name"
    else:
        what = "used in a way the tool does not follow"
    return (
        f"the result is {what} (line {line}); after the migration it is an ExportedProgram: "
        "decide there between the program and `.module()`"
    )


def _jit_save_edits(ctx: PythonContext, call: ast.Call, scope: Scope, fix: Fix) -> bool:
    bound = bind_args(call, ("m", "f", "_extra_files"))
    if bound is None or "f" not in bound:
        fix.fail(
            f"`torch.jit.save` (line {call.lineno}) takes arguments the tool cannot map: rewrite that save by hand"
        )
        return False
    fix.edits.append(Edit(*ctx.span(call.func), fix.need(ctx.spell("torch.export.save", scope))))
    path = bound["f"]
    new_path = renamed_path(ctx, path, ".pt2", fix)
    if new_path != ctx.source(path):
        fix.edits.append(Edit(*ctx.span(path), new_path))
    for kw in call.keywords:
        if kw.arg == "_extra_files":
            start = ctx.start(kw)
            fix.edits.append(Edit(start, start + len("_extra_files"), "extra_files"))
    return False


def _method_save(ctx: PythonContext, call: ast.Call, value: str, scope: Scope, fix: Fix) -> bool:
    bound = bind_args(call, ("f", "_extra_files"))
    if bound is None or "f" not in bound:
        fix.fail(
            f"`.save()` (line {call.lineno}) takes arguments the tool cannot map: rewrite that save by hand"
        )
        return True
    save = fix.need(ctx.spell("torch.export.save", scope))
    text = f"{save}({value}, {renamed_path(ctx, bound['f'], '.pt2', fix)}"
    if "_extra_files" in bound:
        text += f", extra_files={ctx.source(bound['_extra_files'])}"
    fix.edits.append(Edit(*ctx.span(call), text + ")"))
    return True


def _lite_save(ctx: PythonContext, call: ast.Call, program: str, scope: Scope, fix: Fix) -> None:
    """`x._save_for_lite_interpreter(path)` -> write the ExecuTorch buffer to a .pte."""
    assert isinstance(call.func, ast.Attribute)
    if call.func.attr == "_save_for_lite_interpreter":
        fix.member("MIG204", call)
    if call.func.attr == "_save_to_buffer_for_lite_interpreter":
        if call.args or call.keywords:
            fix.fail(_lite_options(call, 0))
            return
        fix.edits.append(Edit(*ctx.span(call), f"{program}.buffer"))
        return
    bound = bind_args(call, ("f", "_extra_files"))
    extra = (bound or {}).get("_extra_files")
    if bound is None or "f" not in bound or any(kw.arg is None for kw in call.keywords):
        fix.fail(_lite_options(call, 1))
        return
    path = renamed_path(ctx, bound["f"], ".pte", fix)
    text = write_bytes(ctx, fix, path, f"{program}.buffer", scope)
    if extra is not None:
        text = _with_side_car(ctx, call, fix, scope, path, extra, text)
        if text is None:
            return
    fix.edits.append(Edit(*ctx.span(call), text))


def _with_side_car(
    ctx: PythonContext, call: ast.Call, fix: Fix, scope: Scope, path: str, extra, write: str
) -> str | None:
    """A lite save's `_extra_files` (metadata the archive carried) written beside the `.pte`,
    one file each: `model.pte.config.txt` for the entry `config.txt`. Only where the save is
    a statement of its own and its path is a plain name, constant or `str(name)`."""
    holder = parent(ctx, call)
    plain = isinstance(call.args[0] if call.args else None, (ast.Name, ast.Constant)) or (
        isinstance(arg := (call.args[0] if call.args else None), ast.Call)
        and isinstance(arg.func, ast.Name)
        and arg.func.id == "str"
        and len(arg.args) == 1
        and isinstance(arg.args[0], (ast.Name, ast.Attribute))
    )
    if not isinstance(holder, ast.Expr) or not plain:
        fix.fail(_lite_options(call, 1))
        return None
    names = [n for n in ("extra_name", "extra_data") if is_free(ctx, n, scope)]
    if len(names) != 2:
        fix.fail(_lite_options(call, 1))
        return None
    path_cls = write.split("(", 1)[0]
    indent = ctx.index.line_text(holder.lineno)[: holder.col_offset]
    literal = len(path) > 1 and path[0] in "\"'" and path[-1] == path[0]
    beside = (
        f"{path[:-1]}.{path[-1]} + extra_name" if literal else f'str({path}) + "." + extra_name'
    )
    fix.note(f"`_extra_files` written beside the `.pte` (`{{path}}.{{name}}`, line {call.lineno})")
    return (
        f"{write}\n{indent}for extra_name, extra_data in {ctx.source(extra)}.items():\n"
        f"{indent}    {path_cls}({beside}).write_bytes(\n"
        f"{indent}        extra_data if isinstance(extra_data, bytes) else extra_data.encode()\n"
        f"{indent}    )"
    )


def _lite_options(call: ast.Call, positional: int) -> str:
    """Why a lite-interpreter save cannot become a .pte write, naming the call's line and
    what blocks it (the finding may sit on the capture, lines away)."""
    assert isinstance(call.func, ast.Attribute)
    blocking = [f"`{kw.arg}=`" if kw.arg else "`**`" for kw in call.keywords]
    blocking += ["`*`" for a in call.args if isinstance(a, ast.Starred)]
    extra = sum(not isinstance(a, ast.Starred) for a in call.args) - positional
    if extra > 0:
        more = " more" if positional else ""
        blocking.append(f"{extra}{more} positional argument{'s' * (extra != 1)}")
    elif not call.args and positional:
        blocking.append("no path")
    return (
        f"`{call.func.attr}` (line {call.lineno}) passes {', '.join(blocking)}, which an "
        "ExecuTorch `.pte` write has no place for: rewrite that save by hand"
    )


def mobile_fix(ctx: PythonContext, call: ast.Call, program: str, scope: Scope, fix: Fix) -> None:
    """`optimize_for_mobile(ep)` and the lite-interpreter saves of its result."""
    fix.member("MIG203", call)
    bound = bind_args(
        call, ("script_module", "optimization_blocklist", "preserved_methods", "backend")
    )
    if bound is None:
        fix.fail(
            f"`optimize_for_mobile` (line {call.lineno}) takes arguments the tool cannot map: rewrite that call by hand"
        )
        return
    backend = bound.get("backend")
    if backend is not None and not (
        isinstance(backend, ast.Constant) and str(backend.value).lower() == "cpu"
    ):
        fix.fail("a non-CPU mobile backend: pick the matching ExecuTorch partitioner by hand")
        return
    if bound.get("preserved_methods") is not None:
        fix.fail("preserved methods need one exported program each (see MIG105)")
        return
    if "optimization_blocklist" in bound:
        fix.note("optimization_blocklist dropped (XNNPACK lowering decides)")
    lowering = lowered(ctx, fix, program, scope)
    holder = parent(ctx, call)
    if isinstance(holder, ast.Attribute):
        method = parent(ctx, holder)
        if (
            isinstance(method, ast.Call)
            and method.func is holder
            and holder.attr
            in ("_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter")
        ):
            _lite_save(ctx, method, lowering, scope, fix)
            return
    if isinstance(holder, ast.Expr):
        fix.edits.append(Edit(*ctx.span(call), lowering))
        return
    bound_to = bound_name(ctx, call)
    if bound_to is None:
        fix.fail(_unsupported(ctx, call, holder).replace("ExportedProgram", "ExecuTorch program"))
        return
    stmt, name = bound_to
    fallbacks = alternative_bindings(ctx, stmt, name) or []
    for other in fallbacks:
        if _mobile_fallback(ctx, other.value) is not call:
            fix.fail(
                f"`{name}` is bound on another path (line {other.lineno}) to something other "
                f"than the module `optimize_for_mobile` lowers"
            )
            return
    uses, problem = name_uses(ctx, stmt, name, scope, fallbacks)
    if problem is not None:
        fix.fail(problem)
        return
    fix.edits.append(Edit(*ctx.span(call), lowering))
    for other in fallbacks:
        plain = lowered(ctx, fix, ctx.source(other.value), scope, delegate=False)
        fix.edits.append(Edit(*ctx.span(other.value), plain))
        fix.note(
            f"the fallback on line {other.lineno} lowers without XNNPACK (portable kernels), "
            "so both paths write an ExecuTorch program"
        )
    for use in uses:
        holder = parent(ctx, use)
        method = parent(ctx, holder) if isinstance(holder, ast.Attribute) else None
        if (
            isinstance(holder, ast.Attribute)
            and isinstance(method, ast.Call)
            and method.func is holder
            and holder.attr
            in ("_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter")
        ):
            _lite_save(ctx, method, name, scope, fix)
        else:
            fix.fail(
                _unsupported(ctx, use, holder).replace(
                    "an ExportedProgram: decide there between the program and `.module()`",
                    "an ExecuTorch program manager: only its `.buffer` is kept",
                )
            )
            return


def _mobile_fallback(ctx: PythonContext, value: ast.expr) -> ast.Call | None:
    """The `optimize_for_mobile(x)` call that `name = x` stands in for on another path:
    `try: name = optimize_for_mobile(x)` / `except ...: name = x` (or `if`/`else`)."""
    holder = parent(ctx, value)
    if not (isinstance(value, ast.Name) and isinstance(holder, ast.Assign)):
        return None
    bound = bound_name(ctx, value)
    if bound is None:
        return None
    for other in alternative_bindings(ctx, bound[0], bound[1]) or []:
        call = other.value
        if (
            isinstance(call, ast.Call)
            and ctx.qualname(call.func) == OPTIMIZE_FOR_MOBILE
            and call.args
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == value.id
        ):
            return call
    return None


def _lowering_with_fallback(ctx: PythonContext, node: ast.Name) -> ast.Call | None:
    """The `optimize_for_mobile(x)` call whose value `node` reads, when another path binds
    the name to `x` itself instead (one binding: both become ExecuTorch programs)."""
    scope = ctx.table.scope_for(node)
    for stmt in reversed([s for s in assignments(scope, node.id) if pos(s) < pos(node)]):
        fallbacks = alternative_bindings(ctx, stmt, node.id)
        if not fallbacks:
            continue
        for binding in (stmt, *fallbacks):
            if isinstance(binding.value, ast.Call) and ctx.qualname(binding.value.func) == (
                OPTIMIZE_FOR_MOBILE
            ):
                lowering = binding
                break
        else:
            return None
        others = [b for b in (stmt, *fallbacks) if b is not lowering]
        uses, problem = name_uses(ctx, lowering, node.id, scope, others)  # type: ignore[arg-type]
        if problem is None and any(u is node for u in uses):
            return lowering.value  # type: ignore[return-value]
        return None
    return None


# --------------------------------------------------------------------------- alternatives
# issue 27: a capture bound on each path of a try/if (migrate.checks._alt_captures).


def alternatives_fix(ctx: PythonContext, call: ast.Call, found: _alt.Alternatives) -> Fix:
    """The group fix of every branch's capture, computed once (on the first capture)."""
    first = found.captures[0]
    if call is not first:
        return capture_fix(ctx, first)
    fix = Fix()
    scope = ctx.table.scope_for(call)
    for capture in found.captures:
        fix.member(CAPTURE_RULES.get(ctx.qualname(capture.func) or "", "MIG101"), capture)
    uses, problem = name_uses(ctx, found.bindings[0], found.name, scope, found.bindings[1:])
    if problem is not None:
        return fix.fail(problem)
    exports = _alternative_exports(ctx, found, scope, fix)
    if exports is None:
        return fix
    calls = [h for u in uses if isinstance(h := parent(ctx, u), ast.Call) and h.func is u]
    for capture in found.captures:
        qual = ctx.qualname(capture.func)
        module = _captured_module(ctx, capture, qual)
        reason = _differing_call(ctx, capture, qual, calls) if qual != "torch.jit.script" else None
        reason = reason or _export_limit(ctx, module, scope)
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


def _alternative_exports(ctx: PythonContext, found: _alt.Alternatives, scope, fix: Fix):
    """(capture, export text) for each branch, or None (the fix says why)."""
    out: list[tuple[ast.Call, str]] = []
    traced: list[tuple[ast.Call, ast.expr]] = []  # (trace, its example inputs)
    for capture in found.captures:
        qual = ctx.qualname(capture.func)
        if qual == "torch.jit.script":
            continue
        maker = _trace_export if qual == "torch.jit.trace" else _trace_module_export
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


def _script_with_sibling_example(ctx, script: ast.Call, traced, scope, fix: Fix) -> str | None:
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
        traced_module = _captured_module(ctx, trace, "torch.jit.trace")
        if (
            traced_module is not None
            and ctx.source(traced_module) == ctx.source(module)
            and is_pure(inputs)
            and stmt is not None
            and available_at(ctx, inputs, scope, stmt)
        ):
            args = example_args(ctx, inputs, scope)
            if args is not None:
                return _export_call(ctx, fix, scope, module, args, None)
    fix.fail(
        f"the fallback on line {script.lineno} scripts `{_short(ctx.source(module))}`, and "
        "no traced branch of that module has example inputs in scope there: export it with "
        "`torch.export.export(module, example_args)`"
    )
    return None


# --------------------------------------------------------------------------- use sites


@dataclass
class Source:
    """Where a saved / lowered value comes from."""

    kind: str  # capture | program | jit_load | unknown
    node: ast.expr | None = None


def source_of(ctx: PythonContext, expr: ast.expr) -> Source:
    """Follow plain aliases (`b = a`) and TorchScript passes (`torch.jit.freeze(a)`) back to
    the call that made the value."""
    origin: ast.expr | None = expr
    for _ in range(8):
        origin = value_origin(ctx, expr)
        if origin is None and isinstance(expr, ast.Name):
            origin = _lowering_with_fallback(ctx, expr) or _alt.capture_of(ctx, expr)
        if isinstance(origin, ast.Name):
            expr = origin
            continue
        if (
            isinstance(origin, ast.Call)
            and ctx.qualname(origin.func) in JIT_PASSES
            and origin.args
            and not isinstance(origin.args[0], ast.Starred)
        ):
            expr = origin.args[0]
            continue
        break
    if isinstance(origin, ast.Call):
        qual = ctx.qualname(origin.func)
        if qual in JIT_CAPTURES:
            return Source("capture", origin)
        if qual in EP_MAKERS:
            return Source("program", origin)
        if qual == "torch.jit.load":
            return Source("jit_load", origin)
        if qual == OPTIMIZE_FOR_MOBILE:
            return Source("mobile", origin)
    return Source("unknown", origin)


def capture_line(call: ast.expr | None) -> str:
    return f" (line {call.lineno})" if call is not None else ""
