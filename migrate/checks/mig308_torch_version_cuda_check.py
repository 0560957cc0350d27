"""MIG308: code that compares `torch.version.cuda` (or a `+cu128` torch.__version__) with 12.8."""

from __future__ import annotations

import ast
import re

from migrate.checks import _cuda
from migrate.checks.base import PythonCheck, PythonContext

CUDA_128 = re.compile(r"^12\.8(?:\.\d+)?$")
TAG_128 = re.compile(r"cu128(?!\d)")
VERSION_CALLS = frozenset(
    {
        "packaging.version.parse",
        "packaging.version.Version",
        "distutils.version.LooseVersion",
        "distutils.version.StrictVersion",
        "pkg_resources.parse_version",
    }
)
EQUALITY = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
MEMBERSHIP = (ast.In, ast.NotIn)


class TorchVersionCudaCheck(PythonCheck):
    code = "MIG308"
    prefilter = (r"12\.8", r"cu128")
    node_types = (ast.Compare, ast.Call)

    @property
    def target(self) -> str:
        return _cuda.target_of(self.options)

    def _unwrap(self, ctx: PythonContext, node: ast.expr) -> ast.expr:
        """`version.parse(x)` -> x, so version parsing compares like the plain string."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            qual = ctx.qualname(node.func)
            if qual in VERSION_CALLS or (qual or "").endswith((".parse", ".Version")):
                return node.args[0]
        return node

    def _subject(self, ctx: PythonContext, node: ast.expr) -> str | None:
        node = self._unwrap(ctx, node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            qual = ctx.qualname(node)
            if qual in ("torch.version.cuda", "torch.__version__", "torch.version.__version__"):
                return "cuda" if qual == "torch.version.cuda" else "version"
        return None

    def _matches(self, kind: str, node: ast.expr, ctx: PythonContext, whole: bool) -> bool:
        node = self._unwrap(ctx, node)
        values = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                text = value.value
                if kind == "cuda" and (CUDA_128.match(text) if whole else text.startswith("12.8")):
                    return True
                if kind == "version" and TAG_128.search(text):
                    return True
        return False

    def _report(self, ctx: PythonContext, node: ast.AST, kind: str) -> None:
        source = ctx.source(node)
        if len(source) > 60 or "\n" in source:
            source = source.splitlines()[0][:57] + "..."
        if kind == "cuda":
            now = f'torch.version.cuda is "{self.target}"'
        else:
            now = f"torch.__version__ ends in `+{_cuda.TAGS[self.target]}`"
        ctx.report(
            self.rule,
            node,
            f"`{source}` assumes CUDA 12.8 wheels (with CUDA {self.target} wheels {now}): decide "
            "whether the branch applies to CUDA 13 and update the test by hand (or compare major "
            f"versions); {_cuda.NOTE}",
            symbol=f"torch.{'version.cuda' if kind == 'cuda' else '__version__'}",
        )

    hook_symbols = ("torch.version.cuda", "torch.__version__", "torch.version.__version__")

    def hook_spellings(self) -> tuple[str, ...]:
        return ()  # a comparison or startswith on one of hook_symbols

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
                for subject, other in ((left, right), (right, left)):
                    kind = self._subject(ctx, subject)
                    if kind is None:
                        continue
                    if isinstance(op, EQUALITY) and self._matches(kind, other, ctx, True):
                        self._report(ctx, node, kind)
                        return
                    if (
                        isinstance(op, MEMBERSHIP)
                        and subject is left
                        and self._matches(kind, other, ctx, True)
                    ):
                        self._report(ctx, node, kind)
                        return
                # "cu128" in torch.__version__
                if isinstance(op, MEMBERSHIP) and self._subject(ctx, right) == "version":
                    if self._matches("version", left, ctx, False):
                        self._report(ctx, node, "version")
                        return
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in ("startswith", "endswith") or len(node.args) != 1:
                return
            kind = self._subject(ctx, node.func.value)
            if kind and self._matches(kind, node.args[0], ctx, False):
                self._report(ctx, node, kind)
