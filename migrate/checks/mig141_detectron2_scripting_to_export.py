"""MIG141: detectron2 scripting_with_instances / a traced TracingAdapter -> torch.export."""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import bound_name, parent
from migrate.checks.base import PythonCheck, PythonContext, Reference
from migrate.findings import FixKind

EXPORT = "`torch.export.export(adapter, adapter.flattened_inputs)`"


class Detectron2ScriptingToExport(PythonCheck):
    code = "MIG141"
    prefilter = (r"scripting_with_instances", r"TracingAdapter")

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        name = ref.qualname.rsplit(".", 1)[1]
        if name == "TracingAdapter":
            trace = _traced_by(ctx, ref) if ref.call is not None else None
            if trace is not None:
                ctx.report(
                    self.rule,
                    ref.call,  # type: ignore[arg-type]
                    f"this `TracingAdapter` is traced with `torch.jit.trace` (line "
                    f"{trace.lineno}); keep the adapter and capture it with {EXPORT} "
                    "(MIG102 rewrites the trace where it can)",
                    symbol=ref.qualname,
                )
            return
        if ref.role != "call" or ref.call is None:
            ctx.report(
                self.rule,
                ref.node,
                "`scripting_with_instances` used indirectly; wrap the model in detectron2's "
                f"`TracingAdapter(model, inputs)` and capture it with {EXPORT}",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        ctx.report(
            self.rule,
            ref.call,
            "`scripting_with_instances` scripts the model into TorchScript; wrap it in "
            f"`TracingAdapter(model, inputs)` with sample inputs (a list of dicts with an "
            f'`"image"` tensor) and capture that with {EXPORT}; the `fields` dict goes away',
            symbol=ref.qualname,
        )


def _traced_by(ctx: PythonContext, ref: Reference) -> ast.Call | None:
    """The `torch.jit.trace` call of the same scope that traces this adapter, if any."""
    call = ref.call
    assert call is not None
    holder = parent(ctx, call)
    if isinstance(holder, ast.Call) and holder.args and holder.args[0] is call:
        return holder if ctx.qualname(holder.func) == "torch.jit.trace" else None
    bound = bound_name(ctx, call)
    if bound is None:
        return None
    name = bound[1]
    scope = ctx.table.scope_for(call)
    for node in walk_tree(scope.node):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == name
            and ctx.table.scope_for(node) is scope
            and ctx.qualname(node.func) == "torch.jit.trace"
        ):
            return node
    return None
