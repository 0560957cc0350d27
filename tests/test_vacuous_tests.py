"""Issue 27: a fix never makes a test vacuous.

`op_jit = torch.jit.script(op)` then `assert_close(op_jit(x), op(x))` checks scripting; the
eager route (`op_jit = op`) would leave a comparison true for any `op`. Such a capture becomes
an export check where the example inputs are known, else it is shown, never written.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.findings import Applicability
from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions


def _apply(tmp_path: Path, source: str, unsafe: bool = True) -> tuple[str, object]:
    path = tmp_path / "test_m.py"
    path.write_text(source, encoding="utf-8")
    options = ScanOptions(use_git=False, cache=False)
    result = run_apply([str(path)], options, allow_dirty=True, unsafe_fixes=unsafe)
    return path.read_text(encoding="utf-8"), result


FUNCTION_COMPARED = textwrap.dedent(
    """\
    import torch
    from torch.testing import assert_close


    def soft_clip(x):
        return torch.clamp(x, -1.0, 1.0) * 0.5


    def test_scripted_matches():
        x = torch.linspace(-3, 3, 7)
        op_jit = torch.jit.script(soft_clip)
        assert_close(op_jit(x), soft_clip(x))
    """
)


def test_a_scripted_function_compared_with_itself_is_shown_not_written(tmp_path):
    text, result = _apply(tmp_path, FUNCTION_COMPARED)
    assert text == FUNCTION_COMPARED
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert finding.applicability is Applicability.DISPLAY
    assert "compare `soft_clip` with itself" in finding.message
    assert "torch.compile(soft_clip)" in finding.message


TRACE_COMPARED = textwrap.dedent(
    """\
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 2


    def test_traced_matches():
        model = Net()
        x = torch.randn(2, 3)
        traced = torch.jit.trace(model, x)
        torch.testing.assert_close(traced(x), model(x))
    """
)


def test_a_traced_module_compared_with_its_original_becomes_an_export_check(tmp_path):
    text, _ = _apply(tmp_path, TRACE_COMPARED)
    assert "traced = torch.export.export(model, (x,))" in text, text
    assert "torch.testing.assert_close(traced.module()(x), model(x))" in text, text


SCRIPT_COMPARED_LATER_INPUTS = textwrap.dedent(
    """\
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 2


    def test_scripted_matches(self):
        model = Net()
        scripted = torch.jit.script(model)
        x = torch.randn(2, 3)
        out = scripted(x)
        expected = model(x)
        self.assertEqual(out, expected)
    """
)


def test_a_comparison_through_names_is_seen_and_the_capture_left_for_review(tmp_path):
    text, result = _apply(tmp_path, SCRIPT_COMPARED_LATER_INPUTS)
    assert text == SCRIPT_COMPARED_LATER_INPUTS
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert "compare `model` with itself" in finding.message, finding.message


def test_a_capture_only_called_and_not_compared_still_becomes_eager(tmp_path):
    source = SCRIPT_COMPARED_LATER_INPUTS.replace("model(x)", "x * 2")
    text, _ = _apply(tmp_path, source, unsafe=False)
    assert "scripted = model\n" in text, text


# --------------------------------------------------------------------------- property

CAPTURES = {
    "script": "torch.jit.script({b})",
    "trace": "torch.jit.trace({b}, x)",
    "trace_module": 'torch.jit.trace_module({b}, {{"forward": x}})',
}
COMPARATORS = [
    "assert_close({left}, {right})",
    "torch.testing.assert_close({left}, {right})",
    "self.assertEqual({left}, {right})",
    "assert torch.allclose({left}, {right})",
    "assert ({left} == {right}).all()",
]
TARGETS = ["model", "op"]  # a module instance, a function


def _snippet(capture, target, comparator, through_names, swap, filler):
    lines = [
        "import torch",
        "from torch.testing import assert_close",
        "",
        "",
        "def op(x):",
        "    return x * 3",
        "",
        "",
        "class Net(torch.nn.Module):",
        "    def forward(self, x):",
        "        return x * 2",
        "",
        "",
        "def test_it(self):",
        "    model = Net()",
        "    x = torch.randn(2, 3)",
        f"    a = {CAPTURES[capture].format(b=target)}",
    ]
    lines += [f"    {line}" for line in filler]
    left, right = "a(x)", f"{target}(x)"
    if through_names:
        lines += [f"    got = {left}", f"    want = {right}"]
        left, right = "got", "want"
    if swap:
        left, right = right, left
    lines.append("    " + comparator.format(left=left, right=right))
    return "\n".join(lines) + "\n"


def _self_comparisons(text: str) -> list[str]:
    """Comparisons whose two sides are calls of one object with the same arguments (plain
    aliases `a = b` and `got = a(x)` followed)."""
    tree = ast.parse(text)
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "test_it")
    values: dict[str, ast.expr] = {}
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            values[stmt.targets[0].id] = stmt.value

    def resolve(node: ast.expr, depth: int = 0) -> str:
        if isinstance(node, ast.Name) and node.id in values and depth < 5:
            return resolve(values[node.id], depth + 1)
        if isinstance(node, ast.Call) and not node.keywords:
            inner = resolve(node.func, depth + 1)
            return f"{inner}({', '.join(ast.unparse(a) for a in node.args)})"
        return ast.unparse(node)

    found = []
    for node in ast.walk(func):
        sides = None
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and len(node.args) == 2:
            sides = node.args
        if sides and len({resolve(s) for s in sides}) == 1:
            found.append(ast.unparse(node))
    return found


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    capture=st.sampled_from(sorted(CAPTURES)),
    target=st.sampled_from(TARGETS),
    comparator=st.sampled_from(COMPARATORS),
    through_names=st.booleans(),
    swap=st.booleans(),
    filler=st.lists(
        st.sampled_from(["y = x + 1", "print(x.shape)", "z = torch.ones(1)"]), max_size=2
    ),
)
def test_no_fix_compares_an_object_with_itself(
    tmp_path, capture, target, comparator, through_names, swap, filler
):
    source = _snippet(capture, target, comparator, through_names, swap, filler)
    assert not _self_comparisons(source), source  # the oracle sees the capture as different
    text, _ = _apply(tmp_path, source)
    assert not _self_comparisons(text), f"{source}\n---- became ----\n{text}"
