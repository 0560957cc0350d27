"""MIG308: code that tests `torch.version.cuda` (or a `+cu128` torch.__version__) as a string
in a way whose answer changes from the CUDA 12.8 wheels to the CUDA 13 ones."""

from __future__ import annotations

import ast
import operator

from migrate.analysis.astwalk import walk_tree
from migrate.checks import _cuda
from migrate.checks.base import PythonCheck, PythonContext

VERSION_CALLS = frozenset(
    {
        "packaging.version.parse",
        "packaging.version.Version",
        "distutils.version.LooseVersion",
        "distutils.version.StrictVersion",
        "pkg_resources.parse_version",
    }
)
SUBJECTS = {
    "torch.version.cuda": "cuda",
    "torch.__version__": "version",
    "torch.version.__version__": "version",
}
# What each subject reads on the 12.8 wheels (the torch release does not matter here).
OLD = {"cuda": "12.8", "version": "2.13.0+cu128"}
COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is None and b is None,
    ast.IsNot: lambda a, b: not (a is None and b is None),
}
# String methods a version test goes through (`.split(".")[0]`, `.replace(".", "")`...).
STR_METHODS = frozenset(
    "split rsplit replace strip lstrip rstrip lower startswith endswith partition".split()
)


class Unknown(Exception):
    """The expression holds something the evaluator does not follow."""


class TorchVersionCudaCheck(PythonCheck):
    code = "MIG308"
    prefilter = (r"12\.8", r"cu128", r"version\.cuda", r"version import cuda")
    node_types = (ast.Compare, ast.Call)

    @property
    def target(self) -> str:
        return _cuda.target_of(self.options)

    def _kind(self, ctx: PythonContext, node: ast.expr) -> str | None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            return SUBJECTS.get(ctx.qualname(node) or "")
        return None

    def _eval(self, ctx: PythonContext, node: ast.expr, values: dict[str, str]) -> object:
        """The value of a version test with the subjects set to `values` (strings only)."""
        kind = self._kind(ctx, node)
        if kind is not None:
            return values[kind]
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, type(None))):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self._eval(ctx, e, values) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.JoinedStr):
            return "".join(
                str(self._eval(ctx, p.value if isinstance(p, ast.FormattedValue) else p, values))
                for p in node.values
            )
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            for value in node.values:  # `(torch.version.cuda or "")`
                result = self._eval(ctx, value, values)
                if result:
                    return result
            return result
        if isinstance(node, ast.Subscript):
            base = self._eval(ctx, node.value, values)
            index = node.slice
            if isinstance(index, ast.Slice):
                parts = [self._eval(ctx, p, values) if p else None for p in
                         (index.lower, index.upper, index.step)]  # fmt: skip
                key: object = slice(*parts)
            else:
                key = self._eval(ctx, index, values)
            try:
                return base[key]  # type: ignore[index]
            except (TypeError, IndexError, KeyError, ValueError):
                raise Unknown from None
        if isinstance(node, ast.Call) and not node.keywords:
            args = [self._eval(ctx, a, values) for a in node.args]
            qual = ctx.qualname(node.func) or ""
            named_str = isinstance(node.func, ast.Name) and node.func.id == "str"
            if len(args) == 1 and (
                named_str
                or qual in ("str", "builtins.str")
                or qual in VERSION_CALLS
                or qual.endswith((".parse", ".Version"))
            ):
                # Both wheels' versions have a two-digit major: version order is string order.
                return str(args[0])
            if isinstance(node.func, ast.Attribute) and node.func.attr in STR_METHODS:
                base = self._eval(ctx, node.func.value, values)
                if isinstance(base, str) and all(isinstance(a, (str, int, tuple)) for a in args):
                    try:
                        return getattr(base, node.func.attr)(*args)
                    except (TypeError, ValueError):
                        raise Unknown from None
        if isinstance(node, ast.Compare):
            left = self._eval(ctx, node.left, values)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self._eval(ctx, right_node, values)
                try:
                    if not COMPARE[type(op)](left, right):
                        return False
                except TypeError:
                    raise Unknown from None
                left = right
            return True
        raise Unknown

    def _flips(self, ctx: PythonContext, node: ast.expr) -> str | None:
        """The subject kind when the test is true on the 12.8 wheels and not on the target's."""
        names = [n for n in walk_tree(node) if isinstance(n, (ast.Name, ast.Attribute))]
        # A subject is spelled with a name its module's table knows for it (a line saying
        # `"cuda"` or `x.is_cuda` holds none): only then is each name resolved.
        words = ctx.shared("mig308.subject_spellings", lambda: _subject_spellings(ctx))
        if not any((n.id if type(n) is ast.Name else n.attr) in words for n in names):
            return None
        kinds = {k for n in names if (k := self._kind(ctx, n))}  # type: ignore[arg-type]
        if len(kinds) != 1:
            return None
        new = {"cuda": self.target, "version": f"2.13.0+{_cuda.TAGS[self.target]}"}
        try:
            old_answer = self._eval(ctx, node, OLD)
            new_answer = self._eval(ctx, node, new)
        except Unknown:
            return None
        if not isinstance(old_answer, bool) or old_answer is not True or new_answer is True:
            return None
        return kinds.pop()

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

    hook_symbols = tuple(SUBJECTS)

    def hook_spellings(self) -> tuple[str, ...]:
        return ()  # a comparison or string method on one of hook_symbols

    def on_node(self, node: ast.AST, ctx: PythonContext) -> None:
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute) or node.func.attr not in (
                "startswith",
                "endswith",
            ):
                return
        elif not isinstance(node, ast.Compare):
            return
        kind = self._flips(ctx, node)  # type: ignore[arg-type]
        if kind is not None:
            self._report(ctx, node, kind)


def _subject_spellings(ctx: PythonContext) -> set[str]:
    """The names a subject can be written with in this module (ScopeTable.spellings)."""
    return ctx.table.spellings(frozenset(SUBJECTS))
