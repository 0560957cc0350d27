"""MIG205: _load_for_lite_interpreter(path) -> executorch.runtime."""

from __future__ import annotations

from migrate.checks.base import PythonCheck, PythonContext, Reference


class LoadForLiteInterpreter(PythonCheck):
    code = "MIG205"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ctx.report(
            self.rule,
            ref.call or ref.node,
            "`_load_for_lite_interpreter` needs the deprecated lite interpreter; load a `.pte` "
            'with `Runtime.get().load_program(path).load_method("forward")`',
            symbol=ref.qualname,
        )
