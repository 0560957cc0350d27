"""MIG110: torch.jit.is_scripting() / is_tracing() -> False once nothing scripts / traces."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from migrate.analysis.astwalk import walk_lines
from migrate.analysis.repository_facts import (
    ONNX_EXPORTS,
    SCRIPTS,
    TRACES,
    FileFacts,
    RepositoryFacts,
)
from migrate.analysis.textsearch import WholeWords
from migrate.checks._compile_guard import IS_COMPILING, guarded_data_read
from migrate.checks._fold import fold
from migrate.checks.base import Edit, PythonCheck, PythonContext, Reference
from migrate.findings import Finding, FixKind

# What keeps each question meaningful after the migration: the repository facts' places where
# code is still scripted, traced, or exported to ONNX by the TorchScript-based exporter.
BLOCKERS = {"is_scripting": (SCRIPTS,), "is_tracing": (TRACES, ONNX_EXPORTS)}
# With a migration intent the fix planner decides, for the whole tree, whether what scripts
# or traces stays (migrate.plan.fixplan); only the ONNX exporter, which no rule rewrites, is
# judged here.
PLANNED_BLOCKERS = {"is_scripting": (), "is_tracing": (ONNX_EXPORTS,)}
_GONE = {
    "is_scripting": "nothing in the repository scripts code",
    "is_tracing": "nothing traces or exports with the TorchScript-based ONNX exporter",
}


class IsScriptingToFalse(PythonCheck):
    code = "MIG110"
    prefilter = (r"onnx",)  # files that export to ONNX often never say `jit`

    def rerun(
        self,
        repo: RepositoryFacts,
        facts: FileFacts | None,
        remembered: set[str],
        module: Callable[[], str] = str,
        text: Callable[[], str] | None = None,
    ) -> bool:
        if not facts:
            return False
        # Phase 1 already judged with the file's own blockers; only others' can change it.
        for name in facts.torchscript_asks():
            keys = self.blockers.get(name, ())
            if not any(facts.places(k) for k in keys) and any(repo.places(k) for k in keys):
                return True
        return False

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        self._judge(ref, ctx)
        if ctx.repo_facts:
            return
        # Phase 1 judges with this file's blockers only; the repository pass would analyse
        # the file again once others block a name it asks. Its findings are judged here for
        # each such outcome instead (`settle` picks one): no second parse.
        for blocked in _OUTCOMES:
            found, findings = ctx.repo_facts, ctx.findings
            ctx.repo_facts, ctx.findings = _PLACEHOLDERS[blocked], []
            try:
                self._judge(ref, ctx)
            finally:
                judged, ctx.findings, ctx.repo_facts = ctx.findings, findings, found
            ctx.variants.setdefault(self.code, {}).setdefault(blocked, []).extend(judged)

    def settle(
        self, variants: Mapping[frozenset[str], list[Finding]], repo: RepositoryFacts
    ) -> list[Finding] | None:
        """This file's findings with the repository's blockers, from its phase-1 variants:
        what analysing it again would report."""
        blockers = self.blockers
        blocked = frozenset(n for n, keys in blockers.items() if any(repo.places(k) for k in keys))
        if blocked not in variants:
            return None
        settled = []
        for f in variants[blocked]:
            if _PENDING in f.message:
                name = f.symbol.rsplit(".", 1)[-1]
                found = _blocker(name, {k: repo.places(k) for k in blockers[name]}, blockers)
                f = replace(f, message=_still_answers(name, found))  # type: ignore[arg-type]
            settled.append(f)
        return settled

    def _judge(self, ref: Reference, ctx: PythonContext) -> None:
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
        ctx.facts.ask_torchscript(name)
        blocker = self.blocker(name, ctx)
        if blocker is not None:
            ctx.report(
                self.rule,
                ref.call,
                _still_answers(name, blocker),
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
            )
            return
        gone = _GONE[name]
        if self.options.get("intent") == "drop":
            gone = "the repository drops TorchScript (intent drop)"
            line = guarded_data_read(ctx, ref.call) if name == "is_scripting" else None
            if line is not None:
                spelled, imports = ctx.spell(IS_COMPILING, ref.scope)
                ctx.report(
                    self.rule,
                    ref.call,
                    f"`{name}()` guards Python that reads tensor data (line {line}), which "
                    f"export and torch.compile cannot trace either: `{IS_COMPILING}()` keeps "
                    "it out of their graphs as it was kept out of TorchScript (intent drop)",
                    symbol=ref.qualname,
                    edits=[Edit(*ctx.span(ref.call.func), spelled)],
                    imports=imports,
                    planned=True,
                )
                return
        ctx.report(
            self.rule,
            ref.call,
            f"`{name}()` is always False once {gone}: replaced by False and the "
            "condition simplified",
            symbol=ref.qualname,
            edits=[
                fold(ctx, ref.call, lambda node: False if self.becomes_false(node, ctx) else None)
            ],
            planned=bool(self.options.get("intent")),
        )

    def blocker(self, name: str, ctx: PythonContext) -> str | None:
        here = ctx.memo("MIG110.facts", lambda: _file_facts(ctx))
        blockers = self.blockers
        first = ctx.repo_facts.first_places()
        both = {
            key: [
                p for p in (first.get(key), min(here.get(key, ()), default=None)) if p is not None
            ]
            for key in blockers[name]
        }
        return _blocker(name, both, blockers)

    @property
    def blockers(self) -> Mapping[str, tuple[str, ...]]:
        """What keeps each question answering, as this check judges it (see PLANNED_BLOCKERS)."""
        return PLANNED_BLOCKERS if self.options.get("intent") else BLOCKERS

    def becomes_false(self, node: ast.AST, ctx: PythonContext) -> bool:
        """Whether `node` (of the file's tree) is an is_scripting()/is_tracing() call that
        becomes False. Asked only of the nodes a fold looks at, not of every call."""
        if not isinstance(node, ast.Call) or node.args or node.keywords:
            return False
        qual = ctx.qualname(node.func) or ""
        return qual in self.rule.symbols and self.blocker(qual.rsplit(".", 1)[-1], ctx) is None

    def on_end(self, ctx: PythonContext) -> None:
        for kind, places in ctx.memo("MIG110.facts", lambda: _file_facts(ctx)).items():
            ctx.facts.tell_places(kind, places)


def _blocker(
    name: str, facts: Mapping[str, Iterable[str]], blockers: Mapping = BLOCKERS
) -> str | None:
    """What keeps `name` answering, from the places that script, trace or export to ONNX."""
    found = {key: sorted(facts.get(key, ())) for key in blockers[name]}
    if found.get(SCRIPTS):
        return f"the repository still scripts code ({found[SCRIPTS][0]})"
    if found.get(ONNX_EXPORTS):
        return (
            f"the TorchScript-based ONNX exporter traces this code ({found[ONNX_EXPORTS][0]}: "
            "`torch.onnx.export` without `dynamo=True`)"
        )
    if found.get(TRACES):
        return f"the repository still traces code ({found[TRACES][0]})"
    return None


def _still_answers(name: str, blocker: str) -> str:
    return f"`{name}()` still answers: {blocker}; it becomes False once that is migrated"


# Phase-1 variants: each set of names the rest of the repository may block, judged with a
# placeholder place (sorted first, so every blocked message names it; `settle` rewrites it).
_OUTCOMES = (
    frozenset({"is_scripting"}),
    frozenset({"is_tracing"}),
    frozenset({"is_scripting", "is_tracing"}),
)
_PENDING = "\x00"


def _placeholders(blocked: frozenset[str]) -> RepositoryFacts:
    # Under every key of a name: the message names the first key found (ONNX before TRACES).
    return RepositoryFacts.of_places(
        {key: (_PENDING,) for name in blocked for key in BLOCKERS[name]}
    )


_PLACEHOLDERS = {blocked: _placeholders(blocked) for blocked in _OUTCOMES}


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
    # Only a call or decorator spelled with one of the names can count: the walk skips the
    # statements on lines where none is written.
    lines = _LAST_WORDS.lines(text)
    if lines == []:
        return facts
    decorators: set[int] = set()  # the walk reaches a def before its decorators
    for node in walk_lines(ctx.tree, lines):
        targets: list[tuple[ast.expr, ast.AST]] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            decorators.update(id(d) for d in node.decorator_list)
            targets.extend((d, d) for d in node.decorator_list if not isinstance(d, ast.Call))
            targets.extend((b, b) for b in getattr(node, "bases", ()))
        elif isinstance(node, ast.Call) and id(node) not in decorators:
            targets.append((node.func, node))
        for target, owner in targets:
            last = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if last not in _LAST_NAMES:
                continue
            qual = ctx.qualname(target)
            if owner is target:  # a decorator or a base class
                key = SCRIPTS if qual in _KEPT_DECORATORS else None
            elif qual in _SCRIPTING:
                key = SCRIPTS
            elif qual in _TRACING:
                key = TRACES
            elif qual == "torch.onnx.export" and not _dynamo(owner):
                key = ONNX_EXPORTS
            else:
                key = None
            if key is None:
                continue
            facts.setdefault(key, set()).add(f"{ctx.path}:{target.lineno}")
    return facts


def _dynamo(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and any(
        k.arg == "dynamo" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in node.keywords
    )


# Decorators and bases that keep scripting. `@torch.jit.script` and
# `@torch.jit.script_if_tracing` are not among them: MIG101 and MIG107 always remove them in
# the same apply.
_KEPT_DECORATORS = frozenset({"torch.jit.script_method", "torch.jit.ScriptModule"})
_LAST_NAMES = frozenset(q.rsplit(".", 1)[1] for q in (*_SCRIPTING, *_TRACING, "torch.onnx.export"))
_LAST_WORDS = WholeWords(_LAST_NAMES)
