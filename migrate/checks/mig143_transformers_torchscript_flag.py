"""MIG143: torchscript=True on a transformers from_pretrained / *Config call (or set on a
config in a transformers file) -> return_dict=False."""

from __future__ import annotations

import ast

from migrate.checks import _wrappers as wr
from migrate.checks.base import Edit, PythonCheck, PythonContext
from migrate.findings import FixKind


class TransformersTorchscriptFlag(PythonCheck):
    code = "MIG143"
    prefilter = (r"torchscript",)
    node_types = (ast.Call, ast.Assign)
    hook_words = ("torchscript",)  # the `torchscript=` keyword, the `.torchscript` attribute

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if isinstance(node, ast.Assign):
            self.on_assign(node, ctx)
            return
        assert isinstance(node, ast.Call)
        flag = wr.keyword(node, "torchscript")
        if flag is None or wr.is_literal(flag.value, False):
            return
        qual = ctx.qualname(node.func)
        if qual is None or qual.split(".")[0] not in self.rule.extra["frameworks"]:
            return
        last = qual.rsplit(".", 1)[-1]
        if last != "from_pretrained" and not last.endswith("Config"):
            return
        head = "`torchscript=True` prepares the model for `torch.jit.trace`"
        if not wr.is_literal(flag.value, True):
            ctx.report(
                self.rule,
                flag,
                f"{head}; drop the flag and capture the model with "
                "`torch.export.export(model, (input_ids,))` (`return_dict=False` keeps tuple "
                "outputs)",
                symbol=f"{qual}.torchscript",
                fix=FixKind.ASSISTED,
            )
            return
        if wr.keyword(node, "return_dict") is not None:
            edit = wr.drop_argument(ctx, node, flag)
            done = "dropped (return_dict is given)"
        else:
            edit = Edit(*ctx.span(flag), "return_dict=False")
            done = "became `return_dict=False` (outputs stay tuples)"
        ctx.report(
            self.rule,
            flag,
            f"{head}; {done}: capture the model with `torch.export.export(model, "
            "(input_ids,))`; input and output embeddings are tied again, not cloned",
            symbol=f"{qual}.torchscript",
            fix=FixKind.AUTO,
            edits=[edit],
        )

    def on_assign(self, node: ast.Assign, ctx: PythonContext) -> None:
        """`config.torchscript = True` (`model.config`, `bert_config`...) in a file that
        imports transformers; another object's `torchscript` attribute is not a config's."""
        target = node.targets[0]
        if not (
            len(node.targets) == 1
            and isinstance(target, ast.Attribute)
            and target.attr == "torchscript"
            and "config" in _last_name(target.value).lower()
            and wr.is_literal(node.value, True)
            and wr.framework_import(ctx, self.rule) is not None
        ):
            return
        owner = ctx.source(target.value)
        ctx.report(
            self.rule,
            node,
            f"`{owner}.torchscript = True` prepares the model for `torch.jit.trace`; became "
            f"`{owner}.return_dict = False` (outputs stay tuples): capture the model with "
            "`torch.export.export(model, (input_ids,))`; input and output embeddings are tied "
            "again, not cloned",
            symbol="transformers.PretrainedConfig.torchscript",
            fix=FixKind.AUTO,
            edits=[Edit(*ctx.span(node), f"{owner}.return_dict = False")],
        )


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else ""
