"""Import fix-up after rewrites: needed imports added once, dead TorchScript imports dropped,
other names and comments kept, and the result always parses."""

import ast

import pytest

from migrate.fixer import fix_imports


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
