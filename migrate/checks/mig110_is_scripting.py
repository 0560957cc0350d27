"""MIG110: torch.jit.is_scripting() / is_tracing() -> False once nothing scripts / traces."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from migrate.checks._flow import parent
from migrate.checks._fold import fold
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

# Repository facts: where code is still scripted, traced, or exported to ONNX by the
# TorchScript-based exporter; and which files ask is_scripting/is_tracing.
SCRIPTS, TRACES, ONNX, ASKS = "MIG110.scripts", "MIG110.traces", "MIG110.onnx", "MIG110.asks"
# What keeps each question meaningful after the migration.
BLOCKERS = {"is_scripting": (SCRIPTS,), "is_tracing": (TRACES, ONNX)}
_GONE = {
    "is_scripting": "nothing in the repository scripts code",
    "is_tracing": "nothing traces or exports with the TorchScript-based ONNX exporter",
}


class IsScriptingToFalse(PythonCheck):
    code = "MIG110"
    prefilter = (r"onnx",)  # files that export to ONNX often never say `jit`

    def rerun(
        self,
        repo: Mapping[str, frozenset[str]],
        facts: Mapping[str, set[str]] | None,
        remembered: set[str],
    ) -> bool:
        asks = facts.get(ASKS, set()) if facts else set()
        return any(repo.get(key) for name in asks for key in BLOCKERS.get(name, ()))

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        name = ref.qualname.rsplit(".", 1)[-1]
        if ref.role != "call" or ref.call is None or ref.call.args or ref.call.keywords:
            ctx.report(
                self.rule,
                ref.call or ref.node,
                f"`{name}` referenced without a call; it is always False after the migration",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.facts.setdefault(ASKS, set()).add(name)
        blocker = self.blocker(name, ctx)
        if blocker is not None:
            ctx.report(
                self.rule,
                ref.call,
                f"`{name}()` still answers: {blocker}; it becomes False once that is migrated",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
            )
            return
        known = ctx.memo("MIG110.known", lambda: self.known_calls(ctx))
        ctx.report(
            self.rule,
            ref.call,
            f"`{name}()` is always False once {_GONE[name]}: replaced by False and the "
            "condition simplified",
            symbol=ref.qualname,
            edits=[fold(ctx, ref.call, lambda node: False if id(node) in known else None)],
        )

    def blocker(self, name: str, ctx: PythonContext) -> str | None:
        here = ctx.memo("MIG110.facts", lambda: _file_facts(ctx))
        found = {
            key: sorted(set(ctx.repo_facts.get(key, ())) | here.get(key, set()))
            for key in BLOCKERS[name]
        }
        if found.get(SCRIPTS):
            return f"the repository still scripts code ({found[SCRIPTS][0]})"
        if found.get(ONNX):
            return (
                f"the TorchScript-based ONNX exporter traces this code ({found[ONNX][0]}: "
                "`torch.onnx.export` without `dynamo=True`)"
            )
        if found.get(TRACES):
            return f"the repository still traces code ({found[TRACES][0]})"
        return None

    def known_calls(self, ctx: PythonContext) -> set[int]:
        """ids of every is_scripting()/is_tracing() call of the file that becomes False."""
        out = set()
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Call) and not node.args and not node.keywords:
                qual = ctx.qualname(node.func) or ""
                name = qual.rsplit(".", 1)[-1]
                if qual in self.rule.symbols and self.blocker(name, ctx) is None:
                    out.add(id(node))
        return out

    def on_end(self, ctx: PythonContext) -> None:
        for key, places in ctx.memo("MIG110.facts", lambda: _file_facts(ctx)).items():
            ctx.facts.setdefault(key, set()).update(places)


# `@torch.jit.script` and `@torch.jit.script_if_tracing` decorators are not listed: MIG101
# and MIG107 always remove them in the same apply.
_SCRIPTING = frozenset(
    {
        "torch.jit.script",
        "torch.jit.script_method",
        "torch.jit.ScriptModule",
        "torch.jit.CompilationUnit",
    }
)
_TRACING = frozenset({"torch.jit.trace", "torch.jit.trace_module"})


def _file_facts(ctx: PythonContext) -> dict[str, set[str]]:
    """Where this file scripts, traces or uses the TorchScript-based ONNX exporter."""
    facts: dict[str, set[str]] = {}
    text = ctx.text
    if "script" not in text and "trace" not in text and "onnx" not in text:
        return facts
    for node in ast.walk(ctx.tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Call) and not _is_decorator(ctx, node):
            targets.append(node.func)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            targets.extend(d for d in node.decorator_list if _qual(ctx, d) in _KEPT_DECORATORS)
            targets.extend(getattr(node, "bases", ()))
        for target in targets:
            qual = ctx.qualname(target)
            if qual in _SCRIPTING:
                key = SCRIPTS
            elif qual in _TRACING:
                key = TRACES
            elif qual == "torch.onnx.export" and not _dynamo(node):
                key = ONNX
            else:
                continue
            facts.setdefault(key, set()).add(f"{ctx.path}:{target.lineno}")
    return facts


def _dynamo(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and any(
        k.arg == "dynamo" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in node.keywords
    )


_KEPT_DECORATORS = frozenset({"torch.jit.script_method"})


def _qual(ctx: PythonContext, decorator: ast.expr) -> str | None:
    return ctx.qualname(decorator.func if isinstance(decorator, ast.Call) else decorator)


def _is_decorator(ctx: PythonContext, call: ast.Call) -> bool:
    """`@torch.jit.script(...)` with arguments: removed like the bare decorator."""
    holder = parent(ctx, call)
    return isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
        d is call for d in holder.decorator_list
    )
