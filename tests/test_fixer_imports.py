"""Import fix-up after rewrites: needed imports added once, dead TorchScript imports dropped,
other names and comments kept, and the result always parses."""

import ast
import subprocess
import sys

import pytest

from migrate.fix.imports import fix_imports


@pytest.mark.parametrize(
    ("before", "specs", "after"),
    [
        pytest.param(
            "import torch\nfrom torch.jit import script, trace  # keep\n\nx = trace\n",
            [],
            "import torch\nfrom torch.jit import trace  # keep\n\nx = trace\n",
            id="drop-one-alias-keep-comment",
        ),
        pytest.param(
            "import torch\nimport torch.jit as J\n\ny = torch.export\n",
            [],
            "import torch\n\ny = torch.export\n",
            id="drop-aliased-module",
        ),
        pytest.param(
            "import torch.jit\n\ny = torch.export.export(m, (x,))\n",
            [],
            "import torch\n\ny = torch.export.export(m, (x,))\n",
            id="import-torch-jit-still-binds-torch",
        ),
        pytest.param(
            "try:\n    from torch.jit import ignore\nexcept ImportError:\n    pass\n",
            [],
            "try:\n    pass\nexcept ImportError:\n    pass\n",
            id="try-body-keeps-a-statement",
        ),
        pytest.param(
            '"""Doc."""\nimport os\n\nprint(os)\n',
            ["from executorch.exir import to_edge_transform_and_lower", "import pathlib"],
            '"""Doc."""\nimport os\nimport pathlib\n\n'
            "from executorch.exir import to_edge_transform_and_lower\n\nprint(os)\n",
            id="added-in-isort-sections",
        ),
        pytest.param(
            "import torch\n\nprint(torch)\n",
            ["import torch"],
            "import torch\n\nprint(torch)\n",
            id="already-bound-not-added",
        ),
        pytest.param(
            "import os\r\nfrom torch.jit import script\r\n\r\nprint(os)\r\n",
            ["import pathlib"],
            "import os\r\nimport pathlib\r\n\r\nprint(os)\r\n",
            id="crlf",
        ),
    ],
)
def test_fix_imports(before, specs, after):
    assert fix_imports(before, specs) == after
    ast.parse(after)


def test_commented_multiline_import_falls_back_to_libcst():
    before = "from torch.jit import (\n    script,  # compiler\n    trace,\n)\n\nx = trace\n"
    out = fix_imports(before, [])
    tree = ast.parse(out)
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert imported == ["trace"]


def test_semicolon_statement_keeps_the_other_statement():
    out = fix_imports("from torch.jit import script; x = 1\nprint(x)\n", [])
    assert "x = 1" in out and "script" not in out
    ast.parse(out)


def test_merged_names_are_in_ruffs_order(tmp_path):
    """Names added to `from M import ...` land where ruff's isort (I001) wants them."""
    names = ["overload", "Optional", "TYPE_CHECKING", "cast", "Any", "_x", "_Y", "a10", "a2"]
    names += ["A1", "a_b", "X", "Tensor", "nn", "F"]
    merged = fix_imports("from m import zz\n\nzz()\n", [f"from m import {n}" for n in names])
    path = tmp_path / "merged.py"
    path.write_text(merged)
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I001", "--no-cache"]
    ruff += ["--line-length", "320"]  # the order, not the wrapping
    result = subprocess.run([*ruff, str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, merged + result.stdout
    assert merged.count("from m import") == 1
