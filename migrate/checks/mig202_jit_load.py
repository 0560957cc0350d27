"""MIG202: torch.jit.load(f, map_location=d) -> torch.export.load(f).module().to(d)."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import block_of, bound_name, name_uses, parent, scope_statements
from migrate.checks._edits import delete_lines
from migrate.checks.base import Edit, PythonCheck, PythonContext, Reference
from migrate.checks.export.apis import OPTIMIZE_FOR_MOBILE, bind_args
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.captures import capture_fix
from migrate.checks.export.extra_files import loaded_as_bytes
from migrate.checks.export.inputs import recorded_load
from migrate.checks.export.per_call import capture_of_load
from migrate.checks.export.spelling import renamed_path
from migrate.findings import FixKind

# What a loaded TorchScript module offers that an exported module does not.
_ARCHIVE_ONLY = frozenset(
    {
        "save",
        "_save_for_lite_interpreter",
        "_save_to_buffer_for_lite_interpreter",
        "code",
        "graph",
        "inlined_graph",
        "_c",
        "train",
        "run_method",
    }
)
_ARCHIVE_CALLS = frozenset(
    {
        "torch.jit.save",
        "torch.jit.freeze",
        OPTIMIZE_FOR_MOBILE,
        "torch.jit.optimize_for_inference",
    }
)


self_code = "MIG202"


class JitLoadToExportLoad(PythonCheck):
    code = "MIG202"

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        bound = (
            bind_args(call, ("f", "map_location", "_extra_files", "_restore_shapes"))
            if call is not None and ref.role == "call"
            else None
        )
        if call is None or not bound or "f" not in bound:
            ctx.report(
                self.rule,
                call or ref.node,
                "`torch.jit.load` used indirectly; load a `.pt2` with `torch.export.load(f).module()`",
                symbol=ref.qualname,
                fix=FixKind.MANUAL,
            )
            return
        fix = self.round_trip(ctx, call) or self.load_fix(ctx, call, bound)
        head = "`torch.jit.load` needs the TorchScript runtime"
        if not fix.auto:
            ctx.report(
                self.rule, call, f"{head}; {fix.problem}", symbol=ref.qualname, fix=FixKind.ASSISTED
            )
            return
        recorded = recorded_load(ctx, call, fix, bound["f"])  # what the recorded run loaded
        ctx.report(
            self.rule,
            call,
            f"{head}; loads the `.pt2` with `torch.export.load(f).module()`{fix.suffix()}",
            symbol=ref.qualname,
            edits=fix.edits,
            imports=fix.imports,
            group=fix.group(),
            **recorded,
        )

    @staticmethod
    def round_trip(ctx: PythonContext, call: ast.Call) -> FixBuilder | None:
        """The load of a save/load round trip of a scripted module in one test: it moves
        with the capture's fix (one export, save and load per call structure)."""
        capture = capture_of_load(ctx, call)
        if capture is None:
            return None
        fix = capture_fix(ctx, capture)
        if fix.auto and any(code == self_code and node is call for code, node in fix.members):
            return fix
        return None

    def load_fix(
        self, ctx: PythonContext, call: ast.Call, bound: dict[str, ast.expr]
    ) -> FixBuilder:
        fix = FixBuilder()
        scope = ctx.table.scope_for(call)
        load = fix.need(ctx.spell("torch.export.load", scope))
        text = f"{load}({renamed_path(ctx, bound['f'], '.pt2', fix)}"
        if "_extra_files" in bound:
            text += f", extra_files={ctx.source(bound['_extra_files'])}"
            as_bytes = loaded_as_bytes(ctx, call, bound["_extra_files"])
            if as_bytes is not None:
                fix.edits.append(as_bytes)
        text += ").module()"
        device = bound.get("map_location")
        if device is not None and not (isinstance(device, ast.Constant) and device.value is None):
            if isinstance(device, ast.Constant) and isinstance(device.value, str):
                text += f".to({ctx.source(device)})"
            elif isinstance(device, (ast.Name, ast.Attribute)) or (
                isinstance(device, ast.Call) and ctx.qualname(device.func) == "torch.device"
            ):
                text += f".to({ctx.source(device)})"
            else:
                return fix.fail(
                    f"`map_location={short(ctx.source(device))}` is not a device: move the "
                    "loaded module with `.to(device)` yourself"
                )
        if "_restore_shapes" in bound:
            fix.note("`_restore_shapes` dropped (export keeps its shapes)")
        holder = parent(ctx, call)
        # `torch.jit.load(f).eval()`: an exported module refuses eval(); it keeps its mode.
        if isinstance(holder, ast.Attribute) and holder.attr == "eval":
            method = parent(ctx, holder)
            if isinstance(method, ast.Call) and method.func is holder and not method.args:
                fix.edits.append(Edit(*ctx.span(method), text))
                fix.note(_EVAL_NOTE)
                return fix
        fix.edits.append(Edit(*ctx.span(call), text))
        self.uses_fix(ctx, call, fix)
        return fix

    def uses_fix(self, ctx: PythonContext, call: ast.Call, fix: FixBuilder) -> None:
        scope = ctx.table.scope_for(call)
        bound = bound_name(ctx, call)
        holder = parent(ctx, call)
        if bound is not None:
            stmt, name = bound
            uses, problem = name_uses(ctx, stmt, name, scope)
            if problem is not None:
                return  # an nn.Module either way; nothing here depends on following it
            for use in uses:
                attr = parent(ctx, use)
                if isinstance(attr, ast.Attribute) and attr.attr in _ARCHIVE_ONLY:
                    fix.fail(f"the loaded module's `.{attr.attr}` is used (line {use.lineno})")
                    return
                if (
                    isinstance(attr, ast.Call)
                    and attr.args
                    and attr.args[0] is use
                    and ctx.qualname(attr.func) in _ARCHIVE_CALLS
                ):
                    fix.fail(
                        f"the loaded module is passed to `{ctx.source(attr.func)}` (line {use.lineno})"
                    )
                    return
            for use in uses:
                attr = parent(ctx, use)
                method = parent(ctx, attr) if isinstance(attr, ast.Attribute) else None
                later = parent(ctx, method) if method is not None else None
                if isinstance(later, ast.stmt) and _is_eval_of(ctx, later, name):
                    fix.edits.append(_drop_statement(ctx, later))
                    fix.note(_EVAL_NOTE)
            return
        if not (
            isinstance(holder, ast.Assign)
            and len(holder.targets) == 1
            and isinstance(holder.targets[0], ast.Attribute)
        ):
            return
        target = ctx.source(holder.targets[0])
        for later in scope_statements(scope):
            if later.lineno > holder.end_lineno and _is_eval_of(ctx, later, target):  # type: ignore[operator]
                fix.edits.append(_drop_statement(ctx, later))
                fix.note(_EVAL_NOTE)


_EVAL_NOTE = "`.eval()` dropped: an exported module keeps the mode it was exported in"


def _is_eval_of(ctx: PythonContext, stmt: ast.stmt, target: str) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and not stmt.value.args
        and not stmt.value.keywords
        and isinstance(stmt.value.func, ast.Attribute)
        and stmt.value.func.attr == "eval"
        and ctx.source(stmt.value.func.value) == target
    )


def _drop_statement(ctx: PythonContext, stmt: ast.stmt) -> Edit:
    block = block_of(ctx, stmt)
    start, end = ctx.line_span(stmt)
    alone = ctx.text[start:end].strip().split("#")[0].strip() == ctx.source(stmt).strip()
    if block is not None and len(block[1]) > 1 and alone:
        return delete_lines(ctx, stmt)
    return Edit(*ctx.span(stmt), "pass")
