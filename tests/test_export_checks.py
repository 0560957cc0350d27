"""Issue 27, the graph-layer sample's causes: tests that script a module and compare it with
the module itself, save/load round trips, per-test folders, guards around data reads.

- a scripted module called with several structures becomes one export check per call;
- a call passing an object export cannot take retires its comparison (never a self-check);
- `torch.jit.save(torch.jit.script(m), p)` + `torch.jit.load(p)` takes its example from the
  loaded program's calls, one export/save/load per call structure;
- `tmp_path / "m.pt"` in two test functions names two files;
- under `drop`, `if not is_scripting():` around a data read becomes `is_compiling()`.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions
from tests.analysis_support import Tree

LAYER = """\
import torch


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x, w=None, scale: float = 1.0):
        out = self.lin(x) * scale
        if w is not None:
            out = out * w
        return out

"""


def _apply(tmp_path: Path, source: str, intent: str | None = None) -> tuple[str, object]:
    path = tmp_path / "test_layer.py"
    path.write_text(source, encoding="utf-8")
    options = ScanOptions(use_git=False, cache=False, intent=intent)
    result = run_apply([str(path)], options, allow_dirty=True, unsafe_fixes=True)
    return path.read_text(encoding="utf-8"), result


def _comparisons(text: str) -> list[tuple[str, str]]:
    """(first, second) operand texts of each assert_close call."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("assert_close"):
            found.append((ast.unparse(node.args[0]), ast.unparse(node.args[1])))
    return found


def _run_tests(text: str, tmp_path: Path) -> None:
    namespace: dict = {}
    exec(compile(text, "test_layer.py", "exec"), namespace)
    for name, test in list(namespace.items()):
        if name.startswith("test_"):
            test(tmp_path) if "tmp_path" in test.__code__.co_varnames else test()


SEVERAL_CALLS = LAYER + textwrap.dedent(
    """\
    def test_scripted():
        x, w = torch.randn(2, 4), torch.rand(2, 1)
        m = Layer()
        jit = torch.jit.script(m)
        torch.testing.assert_close(jit(x), m(x))
        torch.testing.assert_close(jit(x, w), m(x, w))
        torch.testing.assert_close(jit(x, w, scale=2.0), m(x, w, scale=2.0))
    """
)


def test_each_call_of_a_compared_script_becomes_an_export_check(tmp_path):
    text, result = _apply(tmp_path, SEVERAL_CALLS)
    assert "torch.jit" not in text
    pairs = _comparisons(text)
    assert len(pairs) == 3
    expected = [
        ("torch.export.export(m, (x,)).module()(x)", "m(x)"),
        ("torch.export.export(m, (x, w)).module()(x, w)", "m(x, w)"),
        (
            "torch.export.export(m, (x, w), kwargs={'scale': 2.0}).module()(x, w, scale=2.0)",
            "m(x, w, scale=2.0)",
        ),
    ]
    assert pairs == expected
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert "each call becomes" in finding.message
    pytest.importorskip("torch")
    _run_tests(text, tmp_path)  # every export check runs and matches the eager module


def test_an_argument_export_cannot_take_retires_its_comparison_only(tmp_path):
    source = LAYER + textwrap.dedent(
        """\
        class Pair:
            def __init__(self, a):
                self.a = a


        def test_scripted():
            x, w = torch.randn(2, 4), torch.rand(2, 1)
            m = Layer()
            jit = torch.jit.script(m)
            pair = Pair(w)
            torch.testing.assert_close(jit(x), m(x))
            torch.testing.assert_close(jit(x, w), m(x, w))
            torch.testing.assert_close(jit(x, pair), m(x, pair))
        """
    )
    text, result = _apply(tmp_path, source)
    assert "torch.jit" not in text
    pairs = _comparisons(text)
    assert [second for _, second in pairs] == ["m(x)", "m(x, w)"]
    assert all(first != second and "torch.export.export" in first for first, second in pairs)
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert (
        "is retired" in finding.message and "`pair`, an object of class `Pair`" in finding.message
    )


ROUND_TRIP = LAYER + textwrap.dedent(
    """\
    def test_save_load(tmp_path):
        x, w = torch.randn(2, 4), torch.rand(2, 1)
        m = Layer()
        torch.jit.save(torch.jit.script(m), tmp_path / "m.pt")
        loaded = torch.jit.load(tmp_path / "m.pt")
        torch.testing.assert_close(loaded(x), m(x))
        torch.testing.assert_close(loaded(x, w), m(x, w))
        torch.testing.assert_close(loaded(x), m(x))
    """
)


def test_a_round_trip_saves_and_loads_one_program_per_call_structure(tmp_path):
    text, result = _apply(tmp_path, ROUND_TRIP)
    assert "torch.jit" not in text
    body = textwrap.dedent(text.split("def test_save_load(tmp_path):\n", 1)[1])
    assert body.splitlines()[2:7] == [
        'torch.export.save(torch.export.export(m, (x,)), tmp_path / "m.pt2")',
        'torch.export.save(torch.export.export(m, (x, w)), tmp_path / "m_1.pt2")',
        'loaded = torch.export.load(tmp_path / "m.pt2").module()',
        'loaded_1 = torch.export.load(tmp_path / "m_1.pt2").module()',
        "torch.testing.assert_close(loaded(x), m(x))",
    ]
    assert [first for first, _ in _comparisons(text)] == [
        "loaded(x)",
        "loaded_1(x, w)",
        "loaded(x)",
    ]
    rules = sorted(f.rule for f in result.scan.findings if f.autofix is not None)
    assert rules == ["MIG101", "MIG201", "MIG202"]
    pytest.importorskip("torch")
    (tmp_path / "run").mkdir()
    _run_tests(text, tmp_path / "run")


def test_a_round_trip_whose_inputs_come_after_the_save_is_reported(tmp_path):
    source = ROUND_TRIP.replace(
        '    loaded = torch.jit.load(tmp_path / "m.pt")\n',
        '    loaded = torch.jit.load(tmp_path / "m.pt")\n    x = torch.randn(3, 4)\n',
    )
    text, result = _apply(tmp_path, source)
    assert text == source
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert "uses inputs bound after the save" in finding.message


def test_tmp_path_files_of_two_test_functions_are_not_one_file(tmp_path):
    save_load = """
        import torch

        def test_a(tmp_path):
            torch.jit.save(torch.jit.script(m), tmp_path / "conv.pt")
            torch.jit.load(tmp_path / "conv.pt")

        def test_b(tmpdir, tmp_path_factory):
            torch.jit.load(tmpdir / "conv.pt")
            torch.jit.load(tmp_path_factory.mktemp("d") / "conv.pt")
    """
    tree = Tree(tmp_path, {"tests/test_a.py": save_load, "tests/test_b.py": save_load})
    facts = tree.facts
    for producer in facts.producers:
        (consumer,) = facts.consumers_of(producer)  # its own test's load, no other
        assert consumer.span.display == producer.span.display
        assert consumer.span.line == producer.span.line + 1


GUARDED = textwrap.dedent(
    """\
    import torch


    class Gather(torch.nn.Module):
        def forward(self, x, index):
            if not torch.jit.is_scripting():
                self._check(x, index)
            if not torch.jit.is_scripting() and x.dim() != 2:
                raise ValueError("x must be 2-d")
            return x.index_select(0, index)

        def _check(self, x, index):
            if int(index.max()) >= x.size(0):
                raise IndexError("index out of range")
    """
)


def test_under_drop_a_guard_around_a_data_read_asks_the_compilers(tmp_path):
    text, result = _apply(tmp_path, GUARDED, intent="drop")
    assert "torch.jit" not in text
    assert "        if not torch.compiler.is_compiling():\n            self._check" in text
    assert '        if x.dim() != 2:\n            raise ValueError("x must be 2-d")' in text
    messages = [f.message for f in result.scan.findings if f.rule == "MIG110"]
    assert any("reads tensor data (line 13)" in m for m in messages)
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(text, "m.py", "exec"), namespace)
    gather = namespace["Gather"]()
    x, index = torch.randn(4, 2), torch.tensor([0, 3])
    program = torch.export.export(gather, (x, index))  # the check stays out of the graph
    torch.testing.assert_close(program.module()(x, index), x[[0, 3]])
    with pytest.raises(IndexError):
        gather(x, torch.tensor([5]))  # and still runs in eager mode


def test_a_comparison_through_tuple_unpacking_is_not_made_eager(tmp_path):
    source = LAYER + textwrap.dedent(
        """\
        def test_scripted():
            x = torch.randn(2, 4)
            m = Layer()
            jit = torch.jit.script(m)
            got, expected = jit(x), m(x)
            torch.testing.assert_close(got[0], expected[0])
        """
    )
    text, result = _apply(tmp_path, source)
    assert "jit = m\n" not in text  # the eager route would compare `m` with itself
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert finding.get("route") != "eager"
    assert "got, expected = jit.module()(x), m(x)" in text


def test_a_scripted_class_imported_elsewhere_goes_without_an_intent(tmp_path):
    """`torch.jit.script(C)` returns `C` itself: the importers get the same class after."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.out import Out\n")
    source = textwrap.dedent(
        """\
        import torch


        class Out:
            def __init__(self, a: torch.Tensor):
                self.a = a


        Out = torch.jit.script(Out)
        """
    )
    (pkg / "out.py").write_text(source)
    options = ScanOptions(use_git=False, cache=False)
    result = run_apply([str(tmp_path)], options, allow_dirty=True, unsafe_fixes=False)
    after = (pkg / "out.py").read_text()
    assert after.rstrip() == source.split("\n\n\nOut =")[0].rstrip()
    assert [f.rule for f in result.applied] == ["MIG101"]


def test_tidy_joins_a_wrapped_value_the_rewrite_shortened():
    from migrate.fix.tidy import tidy

    original = "n = (\n    torch.jit.annotate(int, (a) + (b)) * 2\n)\ny = x + (\n    3\n)\n"
    fixed = "n = (\n    ((a) + (b)) * 2\n)\ny = x + (\n    3\n)\n"
    # the whole value, shortened, joins; parentheses around a part of one are left alone
    assert tidy(original, fixed, "m.py") == "n = ((a) + (b)) * 2\ny = x + (\n    3\n)\n"


def test_a_forward_returning_a_class_of_the_repository_is_not_exported(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layer.py").write_text(
        textwrap.dedent(
            """\
            from typing import Tuple

            import torch


            class Out:
                def __init__(self, a: torch.Tensor):
                    self.a = a


            class Pool(torch.nn.Module):
                def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, Out]:
                    return x, Out(x)
            """
        )
    )
    (tmp_path / "test_pool.py").write_text(
        textwrap.dedent(
            """\
            import torch

            from pkg.layer import Pool


            def test_pool():
                x = torch.randn(3)
                pool = Pool()
                jit = torch.jit.script(pool)
                got, expected = jit(x), pool(x)
                torch.testing.assert_close(got[0], expected[0])
            """
        )
    )
    options = ScanOptions(use_git=False, cache=False, intent="drop")
    result = run_apply([str(tmp_path)], options, allow_dirty=True, unsafe_fixes=True)
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    assert finding.autofix is None
    assert "`Pool.forward` returns `Out` (its annotation)" in finding.message
