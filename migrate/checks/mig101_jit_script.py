"""MIG101: torch.jit.script on functions, classes (removed) and module instances (export)."""

from __future__ import annotations

import ast
import dataclasses
import sys
from collections.abc import Callable, Iterable

from migrate.analysis.dataflow import parent, reaching_value, scope_names
from migrate.analysis.pyscope import Scope
from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.checks import _static_inputs as static_inputs
from migrate.checks._drop_route import fallback, report_under_drop, torchscript_use
from migrate.checks._edits import drop_statement, remove_decorator, replace, replace_with_arg
from migrate.checks._parametrize import parametrized_values
from migrate.checks._selfcompare import self_comparison
from migrate.checks._testcode import in_test
from migrate.checks.base import Edit, PythonCheck, PythonContext, Reference
from migrate.checks.export.captures import HOLDS_MODULE, HOLDS_PROGRAM, capture_fix
from migrate.checks.export.uses import result_uses
from migrate.findings import FixKind

# Method calls only a module instance answers: `model.eval()` says `model` is a module.
_MODULE_METHODS = frozenset(
    {
        "eval",
        "train",
        "parameters",
        "named_parameters",
        "buffers",
        "state_dict",
        "load_state_dict",
        "modules",
        "named_modules",
        "children",
        "register_buffer",
        "requires_grad_",
        "zero_grad",
    }
)

# Uses that need a TorchScript archive: a plain function has none to give.
_ARCHIVE_METHODS = ("save", "_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter")
_ARCHIVE_CALLS = ("torch.jit.save", "torch.utils.mobile_optimizer.optimize_for_mobile")


# What a test that compared a scripted function with its original compares under `drop`:
# dynamo's whole-function capture (a graph break fails), run by AOTAutograd without
# Inductor, so no C++ compiler is needed (checked on a CPU-only machine without one).
_COMPILE_CHECK = 'fullgraph=True, backend="aot_eager"'

# The alternative a plain-Python fix of a scripted function names.
_COMPILE_HINT = ' (or `torch.compile` it: `[tool.migrate] scripted-functions = "compile"`)'


class JitScriptToExport(PythonCheck):
    code = "MIG101"
    # Repository pass: names a file scripts but imports from another module of the
    # repository are functions or classes when that module defines them at top level. Files
    # the prefilter skipped tell their top-level def and class names through `remember`.
    remember = r"(?:async[ \t]+def|def|class)[ \t]+(\w+)"

    def rerun(
        self,
        repo: RepositoryFacts,
        facts: FileFacts | None,
        remembered: set[str],
        module: Callable[[], str] = str,
        text: Callable[[], str] | None = None,
    ) -> bool:
        asked = facts.scripted_imports() if facts else ()
        if static_inputs.arrived(repo, facts):  # issue 27: a scripted class's example inputs
            return True
        return any(_defined_in_repo(repo, qual) is not None for qual in asked)

    def on_end(self, ctx: PythonContext) -> None:
        module = ctx.table.module
        if not module:
            return
        static_inputs.publish(ctx)
        ctx.facts.tell_top_level_defs(
            f"{module}.{stmt.name}"
            for stmt in ctx.tree.body
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        )

    @property
    def compiles(self) -> bool:
        """`[tool.migrate] scripted-functions = "compile"`: functions get `torch.compile`."""
        return self.options.get("scripted_functions") == "compile"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        before = len(ctx.findings)
        self._on_reference(ref, ctx)
        note = ctx.__dict__.pop("_mig101_evidence_note", None)  # issue 28: see target_kind
        if note:
            ctx.findings[before:] = [
                dataclasses.replace(f, message=f"{f.message}; {note}")
                for f in ctx.findings[before:]
            ]

    def _on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.role in ("decorator", "decorator_call"):
            decorator = ref.call if ref.role == "decorator_call" else ref.node
            kind = "class" if isinstance(ref.owner, ast.ClassDef) else "function"
            if kind == "function" and self.compiles and ref.role == "decorator":
                spelled, imports = ctx.spell("torch.compile", ref.scope)
                ctx.report(
                    self.rule,
                    decorator,
                    "`@torch.jit.script` on a function: `@torch.compile` keeps it compiled "
                    '(scripted-functions = "compile": compiled on the first call, again for '
                    "new shapes)",
                    symbol=ref.qualname,
                    edits=[replace(ctx, decorator, spelled)],
                    imports=imports,
                    applicability="unsafe",
                    target=kind,
                )
                return
            ctx.report(
                self.rule,
                decorator,
                f"`@torch.jit.script` on a {kind}: export traces plain Python, remove the "
                f"decorator{_COMPILE_HINT if kind == 'function' else ''}",
                symbol=ref.qualname,
                edits=[remove_decorator(ctx, decorator)],
                applicability="safe",
                target=kind,
            )
            return
        call = ref.call
        if call is None or not call.args:
            ctx.report(
                self.rule,
                call or ref.node,
                "`torch.jit.script` used indirectly",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
                target="unknown",
            )
            return
        arg = call.args[0]
        kind = self.target_kind(arg, ref, ctx)
        if kind in ("function", "class"):
            if self.report_torchscript_only(ctx, call, ref, arg, kind):
                return
            archive = self.archive_use(ctx, call, ref)
            if archive is not None:
                ctx.report(
                    self.rule,
                    call,
                    f"`torch.jit.script` on a {kind} whose result is saved (line {archive}): "
                    "export needs an nn.Module; wrap it in one and export that",
                    symbol=ref.qualname,
                    fix=FixKind.ASSISTED,
                    target=kind,
                )
                return
            if kind == "function" and self.compiles:
                spelled, imports = ctx.spell("torch.compile", ref.scope)
                ctx.report(
                    self.rule,
                    call,
                    "`torch.jit.script` on a function: `torch.compile` keeps it compiled "
                    '(scripted-functions = "compile": compiled on the first call, again for '
                    "new shapes)",
                    symbol=ref.qualname,
                    edits=[replace(ctx, call.func, spelled)],
                    imports=imports,
                    applicability="unsafe",
                    target=kind,
                )
                return
            if self.report_self_comparison(ctx, call, ref, arg, kind):
                return
            holder = parent(ctx, call)
            if (
                isinstance(holder, ast.Assign)
                and isinstance(arg, ast.Name)
                and [ctx.source(t) for t in holder.targets] == [arg.id]
            ):
                ctx.report(
                    self.rule,
                    call,
                    f"`{arg.id} = torch.jit.script({arg.id})` on a {kind}: export traces plain "
                    f"Python, remove the statement{_COMPILE_HINT if kind == 'function' else ''}",
                    symbol=ref.qualname,
                    edits=[drop_statement(ctx, holder)],
                    applicability="safe",
                    target=kind,
                )
                return
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on a {kind}: export traces plain Python, use it directly"
                f"{_COMPILE_HINT if kind == 'function' else ''}",
                symbol=ref.qualname,
                edits=[replace_with_arg(ctx, call, arg)],
                applicability="safe",
                target=kind,
            )
            return
        if kind == "unknown" and ctx.intent == "drop":
            # A test comparing it with what it scripted keeps testing a compiler:
            # torch.compile takes a function and a module alike.
            if self.report_self_comparison(ctx, call, ref, arg, kind):
                return
            report_under_drop(
                self.rule,
                ctx,
                ref,
                call,
                arg,
                head=f"`torch.jit.script` on `{_short(ctx.source(arg))}`",
                why="the tool cannot tell a function from a module instance",
                target="unknown",
            )
            return
        if kind == "unknown":
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on `{_short(ctx.source(arg))}`: cannot tell a function "
                "(use it directly) from a module instance (export it); decide and rewrite by hand",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
                target="unknown",
            )
            return
        self.report_module(ref, ctx, call, arg)

    def report_torchscript_only(
        self, ctx: PythonContext, call: ast.Call, ref: Reference, arg: ast.expr, kind: str
    ) -> bool:
        """A scripted function or class whose result a use needs as TorchScript (`.graph`,
        `.code`), or a test statement that only scripts it (a scriptability check): using it
        directly would break that use or leave a test checking nothing. Under drop a test
        that only checked TorchScript is skipped, saying so; else a person decides."""
        holder = parent(ctx, call)
        use = torchscript_use(ctx, call, None)
        if use is None and not (isinstance(holder, ast.Expr) and in_test(ctx, call)):
            return False
        why = (
            f"{use} needs the TorchScript object"
            if use is not None
            else "the test only checks that it scripts"
        )
        if ctx.intent == "drop":
            report_under_drop(
                self.rule,
                ctx,
                ref,
                call,
                arg,
                head=f"`torch.jit.script` on a {kind}",
                why=why,
                target=kind,
            )
            return True
        ctx.report(
            self.rule,
            call,
            f"`torch.jit.script` on a {kind}: {why}; used directly it would not be "
            "(decide: check torch.compile or export instead)",
            symbol=ref.qualname,
            fix=FixKind.ASSISTED,
            target=kind,
        )
        return True

    def target_kind(self, arg: ast.expr, ref: Reference, ctx: PythonContext) -> str:
        """function | class | module | unknown: what the scripted object is, from what the
        file (and the repository pass) can know; never a guess."""
        kind = _Targets(ctx, self.rule.extra.get("function_packages", ())).kind(arg)
        if (  # issue 28: what a recorded run saw decides
            kind == "unknown" and ref.call is not None and "migrate.record.evidence" in sys.modules
        ):
            from migrate.record.hooks import script_kind

            recorded, note = script_kind(ctx, ref.call)
            kind = recorded or kind
            ctx.__dict__["_mig101_evidence_note"] = note
        return kind

    def report_self_comparison(
        self, ctx: PythonContext, call: ast.Call, ref: Reference, arg: ast.expr, kind: str
    ) -> bool:
        """A test comparing the scripted function with the function itself: used directly,
        it would compare the function with itself. Shown (a display fix), never written."""
        uses, _ = result_uses(ctx, call, ref.scope or ctx.table.module_scope)
        called = [h for u in uses if isinstance(h := parent(ctx, u), ast.Call) and h.func is u]
        line = self_comparison(ctx, called, arg)
        if line is None:
            return False
        compile_text, imports = ctx.spell("torch.compile", ref.scope or ctx.table.module_scope)
        name = _short(ctx.source(arg))
        if (
            self.options.get("intent") == "drop"
            and kind in ("function", "unknown")
            and _one_argument(call)
        ):
            # The repository drops TorchScript: the test keeps testing a compiler, dynamo.
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on {'a function' if kind == 'function' else f'`{name}`'} "
                f"that the comparison on line {line} checks against `{name}` itself: now "
                f"compared with `{compile_text}({name}, {_COMPILE_CHECK})`, so the test still "
                "fails if dynamo cannot capture it whole in one graph (fullgraph) or the captured graph, run "
                "through AOTAutograd, gives other numbers (no C++ compiler needed)",
                symbol=ref.qualname,
                edits=[
                    Edit(*ctx.span(call), f"{compile_text}({ctx.source(arg)}, {_COMPILE_CHECK})")
                ],
                imports=imports,
                applicability="unsafe",
                target=kind,
                route="compile-check",
            )
            return True
        ctx.report(
            self.rule,
            call,
            f"`torch.jit.script` on a {kind} that the comparison on line {line} checks against "
            f"`{name}` itself: used directly, it would compare `{name}` with itself; compare "
            f"with `torch.compile({name})` (shown, not written) or with expected values",
            symbol=ref.qualname,
            edits=[Edit(*ctx.span(call.func), compile_text)],
            imports=imports,
            applicability="display",
            target=kind,
        )
        return True

    @staticmethod
    def archive_use(ctx: PythonContext, call: ast.Call, ref: Reference) -> int | None:
        """Line of a use of the scripted function that needs an archive, if any."""
        scope = ref.scope or ctx.table.module_scope
        uses, _ = result_uses(ctx, call, scope)
        for use in uses:
            holder = parent(ctx, use)
            if isinstance(holder, ast.Attribute) and holder.attr in _ARCHIVE_METHODS:
                return use.lineno
            if (
                isinstance(holder, ast.Call)
                and holder.args
                and holder.args[0] is use
                and ctx.qualname(holder.func) in _ARCHIVE_CALLS
            ):
                return use.lineno
        return None

    def report_module(
        self, ref: Reference, ctx: PythonContext, call: ast.Call, arg: ast.expr
    ) -> None:
        fix = capture_fix(ctx, call)
        if not fix.auto and ctx.intent == "drop":
            report_under_drop(
                self.rule,
                ctx,
                ref,
                call,
                arg,
                head="`torch.jit.script` on a module instance",
                why=str(fix.problem),
                target="module",
            )
            return
        if not fix.auto:
            ctx.report(
                self.rule,
                call,
                f"`torch.jit.script` on a module instance: {fix.problem}",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
                target="module",
            )
            return
        if fix.eager:
            ctx.report(
                self.rule,
                call,
                "`torch.jit.script` on a module instance whose result is only called: it becomes "
                f"the eager module: {fix.notes[0]}",
                symbol=ref.qualname,
                edits=fix.edits,
                applicability="safe",
                target="module",
                route="eager",
            )
            return
        if fix.round_trip:
            what = (
                "`torch.jit.script` on a module instance saved and loaded back here: exported "
                "with the inputs the loaded program is called with, saved with "
                "`torch.export.save`, loaded with `torch.export.load(f).module()`"
            )
        elif fix.each_call:
            what = (
                "`torch.jit.script` on a module instance that the test compares with the module "
                "itself, called with several structures: each call becomes "
                "`torch.export.export(module, args).module()(args)`"
            )
        else:
            what = (
                "`torch.jit.script` on a module instance: captured with `torch.export.export` "
                f"({HOLDS_MODULE if fix.module_route else HOLDS_PROGRAM})"
            )
        ctx.report(
            self.rule,
            call,
            what + fix.suffix(),
            symbol=ref.qualname,
            edits=fix.edits,
            imports=fix.imports,
            # the per-call checks stand alone: no capture, save and load to move together
            group=None if fix.each_call else fix.group(),
            applicability=fix.applicability,
            target="module",
            **({} if fix.each_call else fallback(ctx, call, arg)),
        )


class _Targets:
    """Classifies the object passed to `torch.jit.script`."""

    def __init__(self, ctx: PythonContext, function_packages: Iterable[str]) -> None:
        self.ctx = ctx
        self.function_packages = frozenset(function_packages)

    def kind(self, expr: ast.expr, depth: int = 0) -> str:
        ctx = self.ctx
        if depth > 4:
            return "unknown"
        if isinstance(expr, ast.Lambda):
            return "function"
        if isinstance(expr, ast.Call):
            if ctx.qualname(expr.func) == "functools.partial":
                return "function"
            return "module"  # an instance built in place: `Net()`, `build().eval()`
        scope = ctx.table.scope_for(expr)
        if isinstance(expr, ast.Name):
            definition = ctx.table.definition(expr.id, scope)
            if isinstance(definition, ast.ClassDef):
                return "class"
            if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return "function"
            qual = ctx.table.binding(expr.id, scope)
            if qual:
                return self.imported(qual)
            value = reaching_value(ctx, expr)
            if value is not None:
                return self.kind(value, depth + 1)
            return self.from_uses(expr.id, scope, depth)
        if isinstance(expr, ast.Attribute):
            qual = ctx.qualname(expr)
            if qual:
                return self.imported(qual)
            if self.kind(expr.value, depth + 1) == "module":
                return "module"  # a submodule: `model.backbone`
        return "unknown"

    def imported(self, qual: str) -> str:
        """A name bound by an import (or a module-level alias of one)."""
        module, _, name = qual.rpartition(".")
        defined = _defined_in_repo(self.ctx.repo_facts, qual)
        if defined is not None:
            return defined
        if qual.split(".")[0] in self.function_packages and name:
            return "class" if name[0].isupper() else "function"
        if module:
            self.ctx.facts.ask_scripted_import(qual)
        return "unknown"

    def from_uses(self, name: str, scope: Scope, depth: int = 0) -> str:
        """A parameter or a name bound in a way the flow analysis cannot follow."""
        ctx = self.ctx
        values = parametrized_values(ctx, scope.node, name)
        if values is not None:  # `@pytest.mark.parametrize("op", [f, g])`: what every run gets
            kinds = {self.kind(v, depth + 1) for v in values}
            if len(kinds) == 1 and "unknown" not in kinds:
                return kinds.pop()
        for arg in _parameters(scope.node):
            if arg.arg == name and arg.annotation is not None:
                annotation = ctx.qualname(arg.annotation) or ""
                if (
                    annotation.startswith("torch.nn.")
                    and annotation.rsplit(".", 1)[-1][:1].isupper()
                ):
                    return "module"
                if "Callable" in ctx.source(arg.annotation):
                    return "function"
        for node in scope_names(ctx, scope):
            holder = parent(ctx, node)
            if (
                node.id == name
                and isinstance(holder, ast.Attribute)
                and holder.attr in _MODULE_METHODS
            ):
                return "module"
        return "unknown"


def _parameters(node: ast.AST) -> list[ast.arg]:
    args = getattr(node, "args", None)
    if not isinstance(args, ast.arguments):
        return []
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


def _defined_in_repo(repo: RepositoryFacts, qual: str) -> str | None:
    """function or class when a module of the repository defines `qual` at top level, or
    re-exports it from one (`from imageops.color import rgb_to_hls` in the package's
    `__init__`, read by MIG121's re-export table)."""
    found = _defined_at(repo, qual)
    if found is None:
        resolved = repo.import_index().resolve(qual)
        if resolved != qual:
            found = _defined_at(repo, resolved)
    return found


def _defined_at(repo: RepositoryFacts, qual: str) -> str | None:
    module, _, name = qual.rpartition(".")
    if not name:
        return None
    if qual in repo.top_level_defs() or name in repo.remembered(module):
        return "class" if name[0].isupper() else "function"
    return None


def _one_argument(call: ast.Call) -> bool:
    return len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred)


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
