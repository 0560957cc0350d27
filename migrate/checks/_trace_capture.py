"""The check of the trace rules (MIG102 `torch.jit.trace`, MIG103 `torch.jit.trace_module`):
each rule sets its code, the API's name, what is wrong with it and its parameters."""

from __future__ import annotations

import ast

from migrate.checks._drop_route import fallback, report_under_drop
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.checks.export.apis import bind_args
from migrate.checks.export.captures import HOLDS_MODULE, HOLDS_PROGRAM, capture_fix
from migrate.findings import FixKind


class TraceCapture(PythonCheck):
    """A trace call becomes `torch.export.export` with its uses (capture_fix), the eager
    module when its result is only called, or says what blocks it."""

    verb: str  # the API, as the messages name it
    why: str  # what is wrong with it
    params: tuple[str, ...]  # how its call binds: the traced object comes first

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.role != "call" or ref.call is None:
            ctx.report(
                self.rule,
                ref.node,
                f"`{self.verb}` used indirectly; capture with `torch.export.export(module, args)`",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        fix = capture_fix(ctx, ref.call)
        first = ref.call.args[0] if ref.call.args else None
        traced = (
            first
            if first is not None and not isinstance(first, ast.Starred)
            else (bind_args(ref.call, self.params) or {}).get(self.params[0])
        )
        if not fix.auto and ctx.intent == "drop" and traced is not None:
            report_under_drop(
                self.rule,
                ctx,
                ref,
                ref.call,
                traced,
                head=f"`{self.verb}` {self.why}",
                why=str(fix.problem),
            )
            return
        if not fix.auto:
            ctx.report(
                self.rule,
                ref.call,
                f"`{self.verb}` {self.why}; capture with `torch.export.export`, but {fix.problem}",
                symbol=ref.qualname,
                fix=FixKind.ASSISTED,
            )
            return
        if fix.eager:
            ctx.report(
                self.rule,
                ref.call,
                f"`{self.verb}` {self.why}; the result is only called, so it becomes the eager "
                f"module: {fix.notes[0]}",
                symbol=ref.qualname,
                edits=fix.edits,
                applicability="safe",
                route="eager",
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            f"`{self.verb}` {self.why}; captured with `torch.export.export` "
            f"({HOLDS_MODULE if fix.module_route else HOLDS_PROGRAM}){fix.suffix()}",
            symbol=ref.qualname,
            edits=fix.edits,
            imports=fix.imports,
            group=fix.group(),
            applicability=fix.applicability,
            **fallback(ctx, ref.call, traced),
        )
