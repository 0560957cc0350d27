"""Rewrite an if/else, an assignment pair or a ternary on tensor values to
`torch.cond(pred, true_fn, false_fn, operands)` (MIG131); `Refused` says why a form cannot be.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrate.analysis.astwalk import children, walk_tree
from migrate.checks._taint import MAYBE, TENSOR, VALUE, Analysis, Func, all_args, is_self_attr
from migrate.checks.base import Edit, PythonContext

# Results that never alias an input (torch.cond branches must not return inputs or views).
_FRESH = frozenset(
    {
        "abs",
        "add",
        "all",
        "amax",
        "amin",
        "any",
        "argmax",
        "argmin",
        "bmm",
        "cat",
        "ceil",
        "clamp",
        "clamp_max",
        "clamp_min",
        "clone",
        "cond",
        "conv1d",
        "conv2d",
        "cos",
        "cumsum",
        "div",
        "erf",
        "exp",
        "expm1",
        "flip",
        "floor",
        "full_like",
        "gelu",
        "layer_norm",
        "linear",
        "log",
        "log1p",
        "log_softmax",
        "logsumexp",
        "matmul",
        "maximum",
        "mean",
        "minimum",
        "mm",
        "mul",
        "neg",
        "norm",
        "ones_like",
        "pow",
        "prod",
        "reciprocal",
        "relu",
        "repeat",
        "roll",
        "round",
        "rsqrt",
        "sigmoid",
        "sign",
        "silu",
        "sin",
        "softmax",
        "sqrt",
        "square",
        "stack",
        "std",
        "sub",
        "sum",
        "tanh",
        "var",
        "where",
        "zeros_like",
    }
)


_STATE_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "update",
        "add",
        "remove",
        "discard",
        "clear",
        "setdefault",
        "register_buffer",
        "register_parameter",
    }
)


_EFFECT_CALLS = frozenset({"print", "setattr", "delattr", "exec", "eval", "input", "open"})


class Refused(Exception):
    """A form torch.cond cannot take automatically; the message is the reason."""


class BranchCounter:
    """Numbers for the generated `_true_branch_N`/`_false_branch_N` (unique in the file)."""

    def __init__(self, text: str) -> None:
        used = [int(n) for n in re.findall(r"\b_(?:true|false)_branch_(\d+)\b", text)]
        self.next = max(used, default=0) + 1

    def take(self) -> int:
        n = self.next
        self.next += 1
        return n


@dataclass
class _Branch:
    """One side of the condition: its statements (or ternary arm) and what it yields."""

    stmts: list[ast.stmt]
    expr: ast.expr | None = None  # ternary arm
    header_line: int = 0
    elif_chain: ast.If | None = None
    reindent: str = ""  # the rest of a body after an early return moves one level in


class CondRewriter:
    def __init__(
        self, ctx: PythonContext, analysis: Analysis, fn: Func, counter: BranchCounter
    ) -> None:
        self.ctx = ctx
        self.analysis = analysis
        self.fn = fn
        self.counter = counter
        self.imports: tuple[str, ...] = ()

    # ---- entry ------------------------------------------------------------------------
    def rewrite(self, node: ast.AST) -> tuple[list[Edit], tuple[str, ...]]:
        if isinstance(node, ast.While):
            raise Refused(
                "loop: a `while` on tensor values needs `torch._higher_order_ops.while_loop` or a bounded loop"
            )
        if isinstance(node, ast.IfExp):
            return self.ternary(node)
        assert isinstance(node, ast.If)
        if self.line_prefix(node).strip():
            raise Refused(
                "elif chain: rewritten together with the enclosing `if` (run apply again)"
            )
        pred = self.predicate(node.test)
        body = _Branch(node.body, header_line=node.test.end_lineno or node.lineno)
        if not node.orelse:
            orelse = None
        elif (
            len(node.orelse) == 1
            and isinstance(node.orelse[0], ast.If)
            and self.is_elif(node.orelse[0])
        ):
            orelse = _Branch(node.orelse, elif_chain=node.orelse[0])
        else:
            orelse = _Branch(node.orelse, header_line=self.else_line(node))
        for branch in (body, orelse):
            if branch is not None:
                self.check_effects(branch.stmts)
        body_returns = _returns(node.body)
        else_returns = _returns(node.orelse) if node.orelse else False
        rest = self.rest_of_body(node) if body_returns and not node.orelse else None
        if rest is not None:
            # `if c: return a` then the rest of the body: the rest is the false branch.
            self.check_effects(rest)
            joined = ast.If(test=node.test, body=node.body, orelse=rest)
            ast.copy_location(joined, node)
            joined.end_lineno, joined.end_col_offset = rest[-1].end_lineno, rest[-1].end_col_offset
            unit = self.inner_indent(node, None)[len(self.line_prefix(node)) :] or "    "
            orelse = _Branch(rest, header_line=node.end_lineno or node.lineno, reindent=unit)
            return self.return_form(joined, pred, body, orelse)
        if body_returns or else_returns or _has_return(node.body) or _has_return(node.orelse):
            if not (body_returns and else_returns):
                raise Refused("early return in one branch only")
            return self.return_form(node, pred, body, orelse)  # type: ignore[arg-type]
        return self.assign_form(node, pred, body, orelse)

    def is_elif(self, inner: ast.If) -> bool:
        return self.line_prefix(inner).strip() == "" and self.ctx.index.line_text(inner.lineno)[
            inner.col_offset :
        ].startswith("elif")

    def line_prefix(self, node: ast.AST) -> str:
        text = self.ctx.index.line_text(node.lineno)  # type: ignore[attr-defined]
        return text[: self.ctx._char_col(node.lineno, node.col_offset)]  # type: ignore[attr-defined]

    def else_line(self, node: ast.If) -> int:
        for line in range(node.body[-1].end_lineno or node.lineno, node.orelse[0].lineno + 1):
            stripped = self.ctx.index.line_text(line).lstrip()
            if re.match(r"else\s*:", stripped):
                return line
        return node.orelse[0].lineno

    # ---- predicate --------------------------------------------------------------------
    def predicate(self, test: ast.expr) -> str:
        if isinstance(test, ast.BoolOp):
            func = "logical_and" if isinstance(test.op, ast.And) else "logical_or"
            parts = [self.predicate(v) for v in test.values]
            text = parts[0]
            for part in parts[1:]:
                text = f"{self.torch(func)}({text}, {part})"
            return text
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return f"{self.torch('logical_not')}({self.predicate(test.operand)})"
        kind = self.analysis.kind(test, self.fn)
        if kind == MAYBE:
            raise Refused(
                f"cannot tell whether `{short(self.ctx.source(test), 40)}` is a tensor or a Python value"
            )
        if kind is None:
            raise Refused(
                f"condition mixes Python values (`{short(self.ctx.source(test), 40)}`) with tensor values; split the `if`"
            )
        for node in walk_tree(test):
            if isinstance(node, ast.Name) and self.fn.env.get(node.id) == VALUE:
                raise Refused(
                    f"condition reads `{node.id}`, a Python number taken out of a tensor; compute it as a tensor"
                )
        return self.render(test)

    def render(self, node: ast.expr) -> str:
        """Source of an expression with `.item()` and `bool()` unwrapped."""
        if isinstance(node, ast.Call) and not node.keywords:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "item" and not node.args:
                return _paren(func.value, self.render(func.value))
            if (
                isinstance(func, ast.Name)
                and len(node.args) == 1
                and func.id in ("bool", "float", "int")
            ):
                if self.analysis.kind(node.args[0], self.fn) == TENSOR:
                    inner = self.render(node.args[0])
                    return (
                        inner if func.id == "bool" else f"{_paren(node.args[0], inner)}.{func.id}()"
                    )
        start, end = self.ctx.span(node)
        pieces, last = [], start
        for child in sorted(
            (c for c in children(node) if isinstance(c, ast.expr) and hasattr(c, "lineno")),
            key=lambda c: self.ctx.start(c),
        ):
            if not _needs_render(child):
                continue
            c_start, c_end = self.ctx.span(child)
            pieces.append(self.ctx.text[last:c_start])
            pieces.append(self.render(child))
            last = c_end
        pieces.append(self.ctx.text[last:end])
        return "".join(pieces)

    def torch(self, name: str) -> str:
        spelled, imports = self.ctx.spell(f"torch.{name}", self.ctx.table.scopes.get(self.fn.node))
        self.imports += imports
        return spelled

    # ---- checks -----------------------------------------------------------------------
    def check_effects(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            for node in walk_tree(stmt):
                self.check_node(node)

    def check_node(self, node: ast.AST) -> None:
        src = lambda n: short(self.ctx.source(n), 40)  # noqa: E731
        if isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name) and self.fn.env.get(node.target.id) == TENSOR:
                raise Refused(f"side effect: in-place update `{src(node)}`")
            raise Refused(f"side effect: Python state change `{src(node)}`")
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in walk_tree(target):
                    if isinstance(t, ast.Subscript):
                        raise Refused(f"side effect: in-place update `{src(node)}`")
                    if isinstance(t, ast.Attribute):
                        raise Refused(f"side effect: Python state change `{src(node)}`")
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            raise Refused("loop inside a branch")
        elif isinstance(node, (ast.Break, ast.Continue)):
            raise Refused("`break`/`continue` inside a branch")
        elif isinstance(node, (ast.Raise, ast.Assert)):
            raise Refused("side effect: a branch raises")
        elif isinstance(node, (ast.Delete, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom)):
            raise Refused(f"side effect: Python state change `{src(node)}`")
        elif isinstance(
            node, (ast.Try, ast.With, ast.AsyncWith, ast.Yield, ast.YieldFrom, ast.Await)
        ):
            raise Refused(f"`{type(node).__name__.lower()}` inside a branch")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            raise Refused("a branch defines a function or class")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                name = func.attr
                if name.endswith("_") and not name.startswith("_"):
                    raise Refused(f"side effect: in-place update `{src(node)}`")
                if name in _STATE_METHODS:
                    raise Refused(f"side effect: Python state change `{src(node)}`")
            qual = self.ctx.qualname(func) or ""
            if (isinstance(func, ast.Name) and func.id in _EFFECT_CALLS) or qual.startswith(
                ("warnings.", "logging.")
            ):
                raise Refused(f"side effect: `{src(node)}`")

    # ---- forms ------------------------------------------------------------------------
    def return_form(
        self, node: ast.If, pred: str, body: _Branch, orelse: _Branch
    ) -> tuple[list[Edit], tuple[str, ...]]:
        leaves = [_leaf_returns(node.body), _leaf_returns(node.orelse)]
        arity = None
        for side in leaves:
            for ret in side:
                if ret.value is None:
                    raise Refused("a branch returns nothing")
                n = len(ret.value.elts) if isinstance(ret.value, ast.Tuple) else 0
                if arity is None:
                    arity = n
                elif n != arity:
                    raise Refused(
                        "differing output structure (the branches return different tuples)"
                    )
                for elt in ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]:
                    if isinstance(elt, (ast.Tuple, ast.List, ast.Dict)):
                        raise Refused("nested output structure")
                    if self.analysis.kind(elt, self.fn) != TENSOR:
                        raise Refused(
                            f"a branch returns a non-tensor value `{short(self.ctx.source(elt), 30)}`"
                        )
        operands = self.operands([node.body, node.orelse])
        clones = {}
        for branch_stmts, side in zip((node.body, node.orelse), leaves, strict=False):
            for ret in side:
                for elt in ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]:  # type: ignore[union-attr]
                    if not self.fresh(elt, branch_stmts):
                        clones[id(elt)] = elt
        true_fn, false_fn = self.names()
        indent = self.line_prefix(node)
        text = self.branch_def(true_fn, operands, body, clones, indent)
        text += self.branch_def(false_fn, operands, orelse, clones, indent)
        text += f"{indent}return {self.cond_call(pred, true_fn, false_fn, operands)}\n"
        start, end = self.ctx.line_span(node)
        return [Edit(start, end, text)], tuple(dict.fromkeys(self.imports))

    def assign_form(
        self, node: ast.If, pred: str, body: _Branch, orelse: _Branch | None
    ) -> tuple[list[Edit], tuple[str, ...]]:
        sides = [node.body, node.orelse]
        maybe = [_assigned(s, definite=False) for s in sides]
        sure = [_assigned(s, definite=True) for s in sides]
        used_after = self.used_after(node)
        outputs = sorted(
            (n for n in maybe[0] | maybe[1] if n in used_after),
            key=lambda n: _first_store(node, n),
        )
        if not outputs:
            raise Refused("the branches assign nothing used after the `if`")
        keep: list[set[str]] = [set(), set()]
        for name in outputs:
            if self.analysis.kind(ast.Name(name), self.fn) != TENSOR:
                raise Refused(f"side effect: Python state change (`{name}` is not a tensor)")
            for i in (0, 1):
                if name in sure[i]:
                    continue
                if name in maybe[i] or not self.defined_before(node, name):
                    raise Refused(f"`{name}` is assigned in one branch only")
                keep[i].add(name)
            for value in _assigned_values(node, name):
                if isinstance(value, (ast.Tuple, ast.List, ast.Dict, ast.Set)):
                    raise Refused(f"differing output structure (`{name}` holds a container)")
                if self.analysis.kind(value, self.fn) != TENSOR:
                    raise Refused(f"`{name}` gets a non-tensor value in a branch")
        operands = self.operands(sides, extra=keep[0] | keep[1])
        true_fn, false_fn = self.names()
        indent = self.line_prefix(node)
        text = ""
        for i, (fn_name, branch) in enumerate(((true_fn, body), (false_fn, orelse))):
            returned = []
            for name in outputs:
                fresh = name not in keep[i] and self.fresh(ast.Name(name), sides[i])
                returned.append(name if fresh else f"{name}.clone()")
            inner = self.inner_indent(node, branch)
            ret = f"{inner}return {', '.join(returned)}\n"
            if branch is None:
                text += f"{indent}def {fn_name}({', '.join(operands)}):\n{ret}"
            else:
                text += self.branch_def(fn_name, operands, branch, {}, indent, ret)
        target = ", ".join(outputs)
        text += f"{indent}{target} = {self.cond_call(pred, true_fn, false_fn, operands)}\n"
        start, end = self.ctx.line_span(node)
        return [Edit(start, end, text)], tuple(dict.fromkeys(self.imports))

    def ternary(self, node: ast.IfExp) -> tuple[list[Edit], tuple[str, ...]]:
        stmt = _statement_of(self.fn.node, node)
        form = None
        if isinstance(stmt, ast.Return) and stmt.value is node:
            form = "return"
        elif (
            isinstance(stmt, ast.Assign)
            and stmt.value is node
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            form = "assign"
        if stmt is None or form is None or self.line_prefix(stmt).strip():
            raise Refused("ternary inside a larger expression; give it its own statement")
        pred = self.predicate(node.test)
        for arm in (node.body, node.orelse):
            for sub in walk_tree(arm):
                self.check_node(sub)
            if isinstance(arm, (ast.Tuple, ast.List)) or self.analysis.kind(arm, self.fn) != TENSOR:
                raise Refused(
                    f"a branch yields a non-tensor value `{short(self.ctx.source(arm), 30)}`"
                )
        operands = self.operands([[ast.Expr(node.body)], [ast.Expr(node.orelse)]])
        true_fn, false_fn = self.names()
        indent = self.line_prefix(stmt)
        text = ""
        for fn_name, arm in ((true_fn, node.body), (false_fn, node.orelse)):
            value = self.render_plain(arm)
            if not self.fresh(arm, []):
                value = f"{_paren(arm, value)}.clone()"
            text += f"{indent}def {fn_name}({', '.join(operands)}):\n{indent}    return {value}\n"
        call = self.cond_call(pred, true_fn, false_fn, operands)
        if form == "return":
            text += f"{indent}return {call}\n"
        else:
            text += f"{indent}{self.ctx.source(stmt.targets[0])} = {call}\n"  # type: ignore[union-attr]
        start, end = self.ctx.line_span(stmt)
        return [Edit(start, end, text)], tuple(dict.fromkeys(self.imports))

    # ---- pieces -----------------------------------------------------------------------
    def names(self) -> tuple[str, str]:
        n = self.counter.take()
        return f"_true_branch_{n}", f"_false_branch_{n}"

    def cond_call(self, pred: str, true_fn: str, false_fn: str, operands: list[str]) -> str:
        ops = "(" + ", ".join(operands) + ("," if len(operands) == 1 else "") + ")"
        return f"{self.torch('cond')}({pred}, {true_fn}, {false_fn}, {ops})"

    def render_plain(self, node: ast.AST) -> str:
        return self.ctx.source(node)

    def inner_indent(self, node: ast.If, branch: _Branch | None) -> str:
        first = node.body[0]
        if first.lineno != node.lineno:
            return self.line_prefix(first)
        return self.line_prefix(node) + "    "

    def branch_def(
        self,
        name: str,
        operands: list[str],
        branch: _Branch,
        clones: Mapping[int, ast.expr],
        indent: str,
        tail: str = "",
    ) -> str:
        head = f"{indent}def {name}({', '.join(operands)}):\n"
        stmts = branch.stmts
        if branch.elif_chain is not None:
            inner = branch.elif_chain
            start, end = self.ctx.line_span(inner)
            region = self.with_clones(start, end, clones)
            lines = region.splitlines(keepends=True)
            unit = self.inner_indent(inner, None)[len(indent) :] or "    "
            first = lines[0]
            lines[0] = first[: len(indent)] + first[len(indent) :].replace("elif", "if", 1)
            body = "".join(unit + line if line.strip() else line for line in lines)
            return head + body + tail
        if stmts[0].lineno <= branch.header_line:
            # `if c: return a` on one line: the statements move to their own line.
            start, end = self.ctx.start(stmts[0]), self.ctx.end(stmts[-1])
            return (
                head + f"{indent}    " + self.with_clones(start, end, clones).strip() + "\n" + tail
            )
        start = self.ctx.index.offset(branch.header_line + 1, 0)  # comments above included
        end = self.ctx.line_span(stmts[-1])[1]
        region = self.with_clones(start, end, clones)
        if not region.endswith("\n"):
            region += "\n"
        if branch.reindent:
            region = "".join(
                branch.reindent + line if line.strip() else line
                for line in region.splitlines(keepends=True)
            )
        return head + region + tail

    def rest_of_body(self, node: ast.If) -> list[ast.stmt] | None:
        """The statements after `node` in the function body, when `node` is one of its
        top-level statements and every path through them returns."""
        body = self.fn.node.body  # type: ignore[attr-defined]
        for i, stmt in enumerate(body):
            if stmt is node:
                rest = body[i + 1 :]
                return rest if _returns(rest) else None
        return None

    def with_clones(self, start: int, end: int, clones: Mapping[int, ast.expr]) -> str:
        spans = sorted(
            (self.ctx.span(e), e) for e in clones.values() if start <= self.ctx.start(e) < end
        )
        out, last = [], start
        for (s, e), expr in spans:
            out.append(self.ctx.text[last:s])
            out.append(_paren(expr, self.ctx.text[s:e]) + ".clone()")
            last = e
        out.append(self.ctx.text[last:end])
        return "".join(out)

    def operands(self, sides: list[list[ast.stmt]], extra: Iterable[str] = ()) -> list[str]:
        names: list[str] = []
        for stmts in sides:
            for name in _free_loads(stmts):
                if name not in names:
                    names.append(name)
        for name in sorted(extra):
            if name not in names:
                names.append(name)
        out = []
        for name in names:
            kind = self.fn.env.get(name)
            if kind == VALUE:
                raise Refused(f"a branch reads `{name}`, a Python number taken out of a tensor")
            if kind == TENSOR:
                out.append(name)
        return out

    def fresh(self, expr: ast.expr, stmts: list[ast.stmt], depth: int = 0) -> bool:
        """True when the value is certainly a new tensor (cond outputs must not alias inputs)."""
        if depth > 8:
            return False
        if isinstance(expr, (ast.BinOp, ast.Compare)):
            return True
        if isinstance(expr, ast.UnaryOp):
            return not isinstance(expr.op, ast.UAdd)
        if isinstance(expr, ast.IfExp):
            return self.fresh(expr.body, stmts, depth + 1) and self.fresh(
                expr.orelse, stmts, depth + 1
            )
        if isinstance(expr, ast.Call):
            func = expr.func
            if is_self_attr(func):
                return False
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            return name in _FRESH
        if isinstance(expr, ast.Name):
            value = None
            for stmt in stmts:  # the last top-level assignment decides
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == expr.id for t in stmt.targets
                ):
                    value = stmt.value
                elif expr.id in _assigned([stmt], definite=False):
                    value = None
            return value is not None and self.fresh(value, stmts, depth + 1)
        return False

    def used_after(self, node: ast.If) -> set[str]:
        end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
        used = set()
        for sub in walk_tree(self.fn.node):
            if (
                isinstance(sub, ast.Name)
                and isinstance(sub.ctx, ast.Load)
                and (sub.lineno, sub.col_offset) > end
            ):
                used.add(sub.id)
        # Inside a loop, the next iteration reads what the branches assigned.
        for parent in _ancestors(self.fn.node, node):
            if isinstance(parent, (ast.For, ast.While, ast.AsyncFor)):
                used |= {n.id for n in walk_tree(parent) if isinstance(n, ast.Name)}
        return used

    def defined_before(self, node: ast.If, name: str) -> bool:
        if name in {a.arg for a in all_args(self.fn.node.args)}:
            return True
        for sub in walk_tree(self.fn.node):
            if (
                isinstance(sub, ast.Name)
                and isinstance(sub.ctx, ast.Store)
                and sub.id == name
                and sub.lineno < node.lineno
            ):
                return True
        return False


def _paren(node: ast.expr, text: str) -> str:
    simple = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
    if isinstance(node, simple) or (text.startswith("(") and text.endswith(")")):
        return text
    return f"({text})"


def _needs_render(node: ast.AST) -> bool:
    for sub in walk_tree(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Attribute) and func.attr == "item":
                return True
            if isinstance(func, ast.Name) and func.id in ("bool", "float", "int"):
                return True
    return False


def _returns(stmts: list[ast.stmt]) -> bool:
    """Every path through the statements ends in a return."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return not _has_return(stmts[:-1])
    if isinstance(last, ast.If) and last.orelse:
        return _returns(last.body) and _returns(last.orelse) and not _has_return(stmts[:-1])
    return False


def _has_return(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in walk_tree(s))


def _leaf_returns(stmts: list[ast.stmt]) -> list[ast.Return]:
    return [n for s in stmts for n in walk_tree(s) if isinstance(n, ast.Return)]


def _assigned(stmts: list[ast.stmt], definite: bool) -> set[str]:
    out: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            a, b = _assigned(stmt.body, definite), _assigned(stmt.orelse, definite)
            out |= (a & b) if definite else (a | b)
            continue
        for node in walk_tree(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
    return out


def _assigned_values(node: ast.If, name: str) -> list[ast.expr]:
    values = []
    for sub in walk_tree(node):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(sub.value)
    return values


def _first_store(node: ast.If, name: str) -> tuple[int, int]:
    for sub in walk_tree(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id == name:
            return sub.lineno, sub.col_offset
    return (0, 0)


def _free_loads(stmts: list[ast.stmt]) -> list[str]:
    """Names read before being assigned, in order of first read."""
    stored: set[str] = set()
    comp_targets = {
        n.id
        for s in stmts
        for c in walk_tree(s)
        if isinstance(c, ast.comprehension)
        for n in walk_tree(c.target)
        if isinstance(n, ast.Name)
    }
    out: list[str] = []

    def loads(node: ast.AST) -> None:
        for sub in sorted(
            (n for n in walk_tree(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
            key=lambda n: (n.lineno, n.col_offset),
        ):
            if sub.id not in stored and sub.id not in comp_targets and sub.id not in out:
                out.append(sub.id)

    def visit(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                loads(stmt.test)
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                if stmt.value is not None:
                    loads(stmt.value)
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    loads(t)
                    stored.update(
                        n.id
                        for n in walk_tree(t)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                    )
            else:
                loads(stmt)

    visit(stmts)
    return out


def _ancestors(root: ast.AST, target: ast.AST) -> list[ast.AST]:
    path: list[ast.AST] = []

    def walk(node: ast.AST) -> bool:
        if node is target:
            return True
        for child in children(node):
            path.append(node)
            if walk(child):
                return True
            path.pop()
        return False

    walk(root)
    return path


def _statement_of(root: ast.AST, target: ast.AST) -> ast.stmt | None:
    stmt = None
    for node in [*_ancestors(root, target), target]:
        if isinstance(node, ast.stmt):
            stmt = node
    return stmt


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
