"""MIG142: Ultralytics export(format="torchscript"), YOLOv5 export.py --include torchscript."""

from __future__ import annotations

import ast
import re

from migrate.checks import _wrappers as wr
from migrate.checks.base import PythonContext

FORMAT = "torchscript"
# `export.py ... --include ... torchscript` written as one command string.
_ANY_CASE = re.compile(FORMAT, re.IGNORECASE)
COMMAND = re.compile(r"\bexport\.py\b.*--include[=\s](?:[\w,\s]*?)\btorchscript\b", re.S)
# Strings that document rather than run: argparse help, descriptions.
DOC_KEYWORDS = ("help", "description", "epilog", "usage")
# Calls that run a command (a string elsewhere, a print or a log line, is not a finding).
RUNNERS = frozenset(
    {
        *(f"subprocess.{f}" for f in ("run", "call", "check_call", "check_output", "Popen")),
        "os.system",
        "os.popen",
        "shlex.split",
    }
)
ROUTE = '`format="executorch"` (Ultralytics releases that list it) or `format="onnx"`'


def _spells_any_case(text: str) -> bool:
    """`_ANY_CASE.search(text)`: on an ASCII text (most), lowering it and a string search are
    several times faster than a case-blind regex; Unicode case folding (`ſ` for `s`) keeps
    the regex for the rest."""
    if text.isascii():
        return FORMAT in text.lower()
    return _ANY_CASE.search(text) is not None


class UltralyticsTorchscriptExport(wr.FrameworkMethodCheck):
    code = "MIG142"
    prefilter = (r"torchscript",)
    node_types = (ast.Call,)

    def hooked_types(self, text: str) -> tuple[type, ...]:
        # Every branch needs a "torchscript" string constant (any case for `format=`).
        return self.node_types if _spells_any_case(text) else ()

    def hook_spellings(self) -> tuple[str, ...]:
        return (f"(?i:{FORMAT})",)

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        # Every call of a parsed file comes here: the cheap shape tests go first, and whether
        # the call sits in a `help=`-style keyword (a walk up its parents) only when one holds.
        assert isinstance(node, ast.Call)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in wr.method_names(self.rule):
            fmt = wr.keyword(node, "format")
            if fmt is not None and _names_torchscript(fmt.value):
                if wr.in_keyword(ctx, DOC_KEYWORDS):
                    return
                fmt_text = ctx.source(fmt.value)
                if self.uses_framework(ctx) is not None:
                    self._report(ctx, node, f"`{ctx.source(func)}(format={fmt_text})`", ROUTE)
                return
        if isinstance(func, ast.Attribute) and func.attr == "run" and _is_export_module(ctx, func):
            include = wr.keyword(node, "include")
            if (
                include is not None
                and _names_torchscript(include.value)
                and not wr.in_keyword(ctx, DOC_KEYWORDS)
            ):
                self._report(
                    ctx, node, 'YOLOv5 `export.run(include=["torchscript"])`', '`include=["onnx"]`'
                )
            return
        if (
            any(_is_command(arg) for arg in node.args)
            and ctx.qualname(func) in RUNNERS
            and not wr.in_keyword(ctx, DOC_KEYWORDS)
        ):
            self._report(ctx, node, "`export.py --include torchscript`", "`--include onnx`")

    def _report(self, ctx: PythonContext, node: ast.Call, what: str, route: str) -> None:
        ctx.report(
            self.rule,
            node,
            f"{what} writes a TorchScript archive; export with {route} and move the code that "
            "loads the file to the new one in the same change",
            symbol="ultralytics.YOLO.export",
        )


def _names_torchscript(expr: ast.expr) -> bool:
    """`"torchscript"`, or a list/tuple/set literal holding it."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.lower() == FORMAT
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return any(_names_torchscript(e) for e in expr.elts)
    return False


def _is_export_module(ctx: PythonContext, func: ast.Attribute) -> bool:
    """`export.run` where `export` is YOLOv5's export module (`import export`,
    `from yolov5 import export`)."""
    qual = ctx.qualname(func.value)
    return (
        qual is not None
        and qual.split(".")[-1] == "export"
        and qual.split(".")[0]
        in (
            "export",
            "yolov5",
        )
    )


def _is_command(arg: ast.expr) -> bool:
    """A command string or argv list that runs export.py with torchscript included."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return COMMAND.search(arg.value) is not None
    if isinstance(arg, (ast.List, ast.Tuple)):
        words = [
            e.value for e in arg.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        return COMMAND.search(" ".join(words)) is not None
    return False
