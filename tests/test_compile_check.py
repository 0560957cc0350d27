"""Issue 27 (items 1 and 5): what a test scripts, read from its parametrize lists, aliases and
the package's re-exports; under `--intent drop` a test comparing a scripted function with the
function itself becomes a `torch.compile(fullgraph=True, backend="aot_eager")` check.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scan_support import clean_env, run_cli

ROOT = Path(__file__).resolve().parent.parent

# The package's __init__ re-exports what ops.py defines; it never says `jit`, so the scan's
# prefilter skips it and only its remembered `from` lines tell where the names come from.
INIT = "from pkg.ops import Net, hls_to_rgb, rgb_to_hls\n"
OPS = textwrap.dedent(
    """\
    import torch


    def rgb_to_hls(img):
        return img.flip(0) * 0.5


    def hls_to_rgb(img):
        return img.flip(0) * 2.0


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 3
    """
)
BEFORE = textwrap.dedent(
    """\
    import pytest
    import torch

    from pkg import Net, hls_to_rgb, rgb_to_hls

    OPS = [rgb_to_hls, hls_to_rgb]


    @pytest.mark.parametrize("op", [rgb_to_hls, hls_to_rgb])
    def test_listed(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.jit.script(op)
        torch.testing.assert_close(op_jit(x), op(x))


    @pytest.mark.parametrize("op, n", [(rgb_to_hls, 1), pytest.param(hls_to_rgb, 2, id="h")])
    def test_rows(op, n):
        x = torch.rand(3, n, n)
        op_jit = torch.jit.script(op)
        torch.testing.assert_close(op_jit(x), op(x))


    @pytest.mark.parametrize("op", OPS)
    def test_named_list(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.jit.script(op)
        torch.testing.assert_close(op_jit(x), op(x))


    def test_alias():
        x = torch.rand(3, 4, 4)
        op = rgb_to_hls
        op_jit = torch.jit.script(op)
        torch.testing.assert_close(op_jit(x), op(x))


    def test_reexported():
        x = torch.rand(3, 4, 4)
        op_jit = torch.jit.script(hls_to_rgb)
        torch.testing.assert_close(op_jit(x), hls_to_rgb(x))


    @pytest.mark.parametrize("op", [rgb_to_hls, Net()])
    def test_mixed(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.jit.script(op)
        torch.testing.assert_close(op_jit(x), op(x))


    @pytest.mark.parametrize("op", [rgb_to_hls], indirect=True)
    def test_indirect(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.jit.script(op)
        torch.testing.assert_close(op_jit(x), op(x))
    """
)
# Golden after of `apply --intent drop --unsafe-fixes`: every capture compared with what it
# scripted becomes a compile check, the mixed list and the indirect parameter too (the tool
# cannot tell what they are, and torch.compile takes a function and a module alike).
AFTER_DROP = textwrap.dedent(
    """\
    import pytest
    import torch

    from pkg import Net, hls_to_rgb, rgb_to_hls

    OPS = [rgb_to_hls, hls_to_rgb]


    @pytest.mark.parametrize("op", [rgb_to_hls, hls_to_rgb])
    def test_listed(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.compile(op, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), op(x))


    @pytest.mark.parametrize("op, n", [(rgb_to_hls, 1), pytest.param(hls_to_rgb, 2, id="h")])
    def test_rows(op, n):
        x = torch.rand(3, n, n)
        op_jit = torch.compile(op, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), op(x))


    @pytest.mark.parametrize("op", OPS)
    def test_named_list(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.compile(op, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), op(x))


    def test_alias():
        x = torch.rand(3, 4, 4)
        op = rgb_to_hls
        op_jit = torch.compile(op, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), op(x))


    def test_reexported():
        x = torch.rand(3, 4, 4)
        op_jit = torch.compile(hls_to_rgb, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), hls_to_rgb(x))


    @pytest.mark.parametrize("op", [rgb_to_hls, Net()])
    def test_mixed(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.compile(op, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), op(x))


    @pytest.mark.parametrize("op", [rgb_to_hls], indirect=True)
    def test_indirect(op):
        x = torch.rand(3, 4, 4)
        op_jit = torch.compile(op, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(op_jit(x), op(x))
    """
)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text(INIT)
    (root / "pkg" / "ops.py").write_text(OPS)
    (root / "tests" / "test_ops.py").write_text(BEFORE)
    return root


def _mig101(run) -> dict[int, tuple[str, str]]:
    return {
        f["line"]: (f["fix"], f.get("applicability") or "", f["message"])
        for f in run.json()["findings"]
        if f["rule"] == "MIG101"
    }


def test_parametrize_lists_aliases_and_reexports_resolve_to_functions(tmp_path):
    root = _tree(tmp_path)
    run = run_cli(["scan", "-f", "json", "--no-cache", "."], cwd=root)
    assert run.code == 1, run.stderr
    found = _mig101(run)
    lines = [i + 1 for i, t in enumerate(BEFORE.splitlines()) if "torch.jit.script(" in t]
    resolved, left = lines[:5], lines[5:]
    for line in resolved:  # a function compared with itself: shown, never written (no intent)
        assert "checks against" in found[line][2], (line, found[line])
        assert "cannot tell" not in found[line][2]
    for line in left:
        assert found[line][0] == "assisted" and "cannot tell a function" in found[line][2]


def test_drop_turns_self_comparisons_into_compile_checks(tmp_path):
    root = _tree(tmp_path)
    run = run_cli(
        ["apply", "--allow-dirty", "--no-cache", "--intent", "drop", "--unsafe-fixes", "."],
        cwd=root,
    )
    assert run.code in (0, 1), run.stdout + run.stderr
    assert (root / "tests" / "test_ops.py").read_text() == AFTER_DROP
    # Without `drop` and `--unsafe-fixes` together the test stays as it is (plain apply as
    # safe as before; keep-scriptable keeps its scriptability test).
    for extra in ([], ["--unsafe-fixes"], ["--intent", "keep-scriptable", "--unsafe-fixes"]):
        (root / "tests" / "test_ops.py").write_text(BEFORE)
        run = run_cli(["apply", "--allow-dirty", "--no-cache", *extra, "."], cwd=root)
        assert run.code in (0, 1), run.stdout + run.stderr
        assert (root / "tests" / "test_ops.py").read_text() == BEFORE, extra


GRAPH_BREAK = textwrap.dedent(
    """\
    import torch


    def fused(x):
        return torch.tanh(x) * x


    def breaks(x):
        print("a graph break")
        return x * 2


    def data_dependent(x):
        if x.sum() > 0:
            return x + 1
        return x - 1


    def test_fused():
        x = torch.rand(4)
        op_jit = torch.jit.script(fused)
        torch.testing.assert_close(op_jit(x), fused(x))


    def test_breaks():
        x = torch.rand(4)
        op_jit = torch.jit.script(breaks)
        torch.testing.assert_close(op_jit(x), breaks(x))


    def test_data_dependent():
        x = torch.rand(4)
        op_jit = torch.jit.script(data_dependent)
        torch.testing.assert_close(op_jit(x), data_dependent(x))
    """
)


@pytest.mark.slow  # starts dynamo (about 10 s)
def test_the_compile_check_still_fails_on_a_graph_break_without_a_cxx_compiler(tmp_path):
    """What the migrated test proves: a function dynamo captures whole passes; one with a
    graph break (a print, a branch on tensor data) fails, as `torch.jit.script` failed on
    Python it could not compile. No C++ compiler is found (CXX points nowhere)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "test_ops.py").write_text(GRAPH_BREAK)
    run = run_cli(
        ["apply", "--allow-dirty", "--no-cache", "--intent", "drop", "--unsafe-fixes", "."],
        cwd=root,
    )
    assert run.code in (0, 1), run.stdout + run.stderr
    text = (root / "test_ops.py").read_text()
    assert text.count('backend="aot_eager"') == 3 and "torch.jit" not in text, text
    env = clean_env(tmp_path, CXX="/nonexistent/c++", CC="/nonexistent/cc")
    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ops.py"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "1 passed" in suite.stdout and "2 failed" in suite.stdout, suite.stdout[-3000:]
    assert "FAILED test_ops.py::test_breaks" in suite.stdout
    assert "FAILED test_ops.py::test_data_dependent" in suite.stdout
