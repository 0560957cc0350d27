"""MIG140: LightningModule.to_torchscript(...) -> torch.export.export(model, (example,))."""

from __future__ import annotations

import ast
import re

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import parent
from migrate.checks import _wrappers as wr
from migrate.checks.base import Edit, PythonContext
from migrate.checks.export.builder import FixBuilder, short
from migrate.checks.export.inputs import example_args
from migrate.checks.export.spelling import renamed_path
from migrate.checks.export.uses import result_uses, unsupported_use
from migrate.findings import FixKind

PARAMS = ("file_path", "method", "example_inputs")
SYMBOL = "lightning.pytorch.LightningModule.to_torchscript"


class LightningToTorchscript(wr.FrameworkMethodCheck):
    code = "MIG140"
    prefilter = (r"to_torchscript",)
    node_types = (ast.Call,)

    def hooked_types(self, text: str) -> tuple[type, ...]:
        return self.node_types if any(m in text for m in wr.method_names(self.rule)) else ()

    def hook_spellings(self) -> tuple[str, ...]:
        return tuple(re.escape(m) for m in wr.method_names(self.rule))

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        assert isinstance(node, ast.Call)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in wr.method_names(self.rule):
            return
        if self.uses_framework(ctx) is None:
            return  # another class's method of that name
        model = ctx.source(func.value)
        args = wr.bind(node, PARAMS)
        method = args.get("method")
        traced = isinstance(method, ast.Constant) and method.value == "trace"
        does = "traces" if traced else "scripts"
        spelled = f"{model}.{func.attr}({'...' if node.args or node.keywords else ''})"
        head = f"`{short(spelled)}` {does} the module into TorchScript through Lightning"
        example, note = _example(ctx, node, args, model)
        parts = [f"{head}; capture it with `torch.export.export({model}, {example})`{note}"]
        path = args.get("file_path")
        if path is not None and not wr.is_literal(path, None):
            parts.append(
                f"save that with `torch.export.save(ep, ...)` to a `.pt2` in place of "
                f"`{short(ctx.source(path))}`, and move what loads that file with it"
            )
        parts.append(f"for ONNX, `{model}.to_onnx(path, example, dynamo=True)`")
        scripted = method is None or isinstance(method, ast.Constant) and method.value == "script"
        rewrite, done = None, ""
        if path is not None and not wr.is_literal(path, None):
            rewrite = _save_rewrite(ctx, node, args, traced)
            given = args.get("example_inputs")
            dynamic = (
                ""
                if traced and given is not None and not wr.is_literal(given, None)
                else " (the batch axis of `example_input_array` dynamic)"
            )
            done = (
                f"exported with `torch.export.export({model}.eval(), ...)`{dynamic} and saved "
                "with `torch.export.save` (a `.pt` name becomes `.pt2`); what loads that file moves with it"
            )
        elif traced:
            rewrite = _rewrite(ctx, node, args)
            done = f"captured with `torch.export.export({model}.eval(), ...)`, calls go through `.module()`"
        elif scripted:
            rewrite = _eager(ctx, node, args)
            done = (
                f"its result is only called, so it becomes the module itself, `{model}.eval()`: "
                "eager calls run the forward the script compiled"
            )
        if rewrite is not None:
            edits, imports, problem = rewrite
            if problem is None:
                specializes = (
                    ""
                    if scripted and path is None
                    else (" and export specializes shapes to the example")
                )
                ctx.report(
                    self.rule,
                    node,
                    f"{head}; {done}: the model stays in eval mode afterwards (Lightning "
                    f"restored its mode){specializes}",
                    symbol=SYMBOL,
                    fix=FixKind.AUTO,
                    edits=edits,
                    imports=imports,
                )
                return
            parts.append(f"not rewritten: {problem}")
        ctx.report(self.rule, node, "; ".join(parts), symbol=SYMBOL, fix=FixKind.ASSISTED)


def _example(
    ctx: PythonContext, call: ast.Call, args: dict[str, ast.expr], model: str
) -> tuple[str, str]:
    """export's args for the message, and what the reader must supply."""
    given = args.get("example_inputs")
    if given is not None and not wr.is_literal(given, None):
        inputs = example_args(ctx, given, ctx.table.scope_for(call))
        if inputs is not None and len(inputs) <= 40:
            return inputs, ""
        text = short(ctx.source(given))
        return (text if isinstance(given, ast.Tuple) else f"({text},)"), ""
    method = args.get("method")
    if _defines_example_array(ctx) or (
        isinstance(method, ast.Constant) and method.value == "trace"
    ):
        # Lightning traces with `example_input_array` when no inputs are given.
        return f"({model}.example_input_array,)", ""
    return "(example,)", (
        f" with a sample batch as `example` (`{model}.example_input_array` where its class sets it)"
    )


def _defines_example_array(ctx: PythonContext) -> bool:
    """Some class of this file sets `example_input_array` (in a method or its body)."""

    def find() -> bool:
        for node in walk_tree(ctx.tree):
            if isinstance(node, ast.Attribute) and node.attr == "example_input_array":
                if isinstance(node.ctx, ast.Store):
                    return True
            if isinstance(node, (ast.FunctionDef, ast.Name)):
                name = node.name if isinstance(node, ast.FunctionDef) else node.id
                stored = isinstance(node, ast.FunctionDef) or isinstance(node.ctx, ast.Store)
                if name == "example_input_array" and stored:
                    return True
        return False

    return ctx.memo("example_input_array", find)


Rewrite = tuple[list[Edit], tuple[str, ...], str | None]


def _rewrite(ctx: PythonContext, call: ast.Call, args: dict[str, ast.expr]) -> Rewrite:
    """`ts = m.to_torchscript(method="trace", example_inputs=x)` whose result is only called
    -> `ts = torch.export.export(m.eval(), (x,))`, each call `ts.module()(...)`."""
    given = args.get("example_inputs")
    if given is None or wr.is_literal(given, None):
        return [], (), "it traces with `example_input_array`; pass it to export explicitly"
    uses, problem = _only_called(ctx, call, args)
    if problem is not None:
        return [], (), problem
    scope = ctx.table.scope_for(call)
    inputs = example_args(ctx, given, scope)
    if inputs is None:
        return [], (), f"cannot tell whether `{short(ctx.source(given))}` is one input or several"
    export, imports = ctx.spell("torch.export.export", scope)
    model = ctx.source(call.func.value)  # type: ignore[attr-defined]
    edits = [Edit(*ctx.span(call), f"{export}({model}.eval(), {inputs})")]
    edits += [Edit(ctx.end(use), ctx.end(use), ".module()") for use in uses]
    return edits, imports, None


def _eager(ctx: PythonContext, call: ast.Call, args: dict[str, ast.expr]) -> Rewrite:
    """`ts = m.to_torchscript()` (scripted) whose result is only called -> `ts = m.eval()`:
    the script compiled `m` in eval mode, and its calls run that same forward."""
    _, problem = _only_called(ctx, call, args)
    if problem is not None:
        return [], (), problem
    model = ctx.source(call.func.value)  # type: ignore[attr-defined]
    return [Edit(*ctx.span(call), f"{model}.eval()")], (), None


def _save_rewrite(
    ctx: PythonContext, call: ast.Call, args: dict[str, ast.expr], traced: bool
) -> Rewrite:
    """`m.to_torchscript(file_path=p, method="trace")` as a statement -> `torch.export.save(
    torch.export.export(m.eval(), (m.example_input_array,)), p)`; a `.pt` literal becomes
    `.pt2` (the loaders of that file move with it: the planner links them)."""
    if _passes_options(call, args):
        return [], (), "it passes trace options through `**kwargs`; drop them and export"
    if not isinstance(parent(ctx, call), ast.Expr):
        return [], (), "its result is used too; export it, save the program and use that"
    scope = ctx.table.scope_for(call)
    model = ctx.source(call.func.value)  # type: ignore[attr-defined]
    given = args.get("example_inputs")
    extra: tuple[str, ...] = ()
    if traced and given is not None and not wr.is_literal(given, None):
        inputs = example_args(ctx, given, scope)
        if inputs is None:
            return (
                [],
                (),
                f"cannot tell whether `{short(ctx.source(given))}` is one input or several",
            )
    elif traced or _defines_example_array(ctx):
        # Lightning itself traces with `example_input_array` when no inputs are given. The
        # file's readers call it with batches of their own: the batch axis stays dynamic
        # (`Dim.AUTO`; a tuple or dict there fails at export, loudly).
        dim = ctx.spell("torch.export.Dim", scope)
        inputs = f"({model}.example_input_array,), dynamic_shapes=({{0: {dim[0]}.AUTO}},)"
        extra = dim[1]
    else:
        return [], (), "export needs example inputs: set `example_input_array` or pass a batch"
    export, imports = ctx.spell("torch.export.export", scope)
    save, more = ctx.spell("torch.export.save", scope)
    target = renamed_path(ctx, args["file_path"], ".pt2", FixBuilder())
    text = f"{save}({export}({model}.eval(), {inputs}), {target})"
    return [Edit(*ctx.span(call), text)], tuple(dict.fromkeys((*imports, *more, *extra))), None


def _passes_options(call: ast.Call, args: dict[str, ast.expr]) -> bool:
    unpacked = any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    )
    return unpacked or bool(set(args) - set(PARAMS))


def _only_called(
    ctx: PythonContext, call: ast.Call, args: dict[str, ast.expr]
) -> tuple[list[ast.expr], str | None]:
    """The calls of a result bound in a function and only called there, or why not."""
    if _passes_options(call, args):
        return [], "it passes trace options through `**kwargs`; drop them and export"
    scope = ctx.table.scope_for(call)
    if scope.kind != "function":
        # Another module may import a module-level result; the planner only follows MIG10x.
        return [], "its result is bound outside a function, where other modules can import it"
    uses, problem = result_uses(ctx, call, scope)
    if problem is not None:
        return [], problem
    if not uses or uses == [call]:
        return [], "its result is used in place, not bound to a name the tool can follow"
    for use in uses:
        holder = parent(ctx, use)
        if not (isinstance(holder, ast.Call) and holder.func is use):
            return [], unsupported_use(ctx, use, holder)
    return uses, None
