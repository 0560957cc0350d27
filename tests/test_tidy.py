"""Layout repair after rewrites (migrate/fix/tidy.py): only what the run changed is touched."""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.fix.imports import fix_imports
from migrate.fix.tidy import configured_line_length, tidy


@pytest.mark.parametrize(
    ("original", "fixed", "expected"),
    [
        pytest.param(
            "import warnings\n\nimport torch\n\n"
            'warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)\n\n\n'
            "def f(x):\n    return torch.relu(x)\n",
            "import warnings\n\nimport torch\n\n\n\n\ndef f(x):\n    return torch.relu(x)\n",
            "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n",
            id="warnings-left-unused-and-blank-run",
        ),
        pytest.param(
            "import os\nfrom typing import List\n\nimport torch\n\n"
            "x: List[int] = torch.jit.annotate(List[int], [])\n",
            "import os\nfrom typing import List\n\nimport torch\n\nx = []\n",
            "import os\n\nx = []\n",
            id="only-imports-the-original-used",
        ),
        pytest.param(
            'from typing import List\n\n__all__ = ["List"]\nx = torch_jit(List)\n',
            'from typing import List\n\n__all__ = ["List"]\nx = 1\n',
            'from typing import List\n\n__all__ = ["List"]\nx = 1\n',
            id="re-exported-name-stays",
        ),
        pytest.param(
            "def f(x):\n    a = 1\n    g(x)\n\n    return a\n",
            "def f(x):\n    a = 1\n\n\n    return a\n",
            "def f(x):\n    a = 1\n\n    return a\n",
            id="one-blank-line-inside-functions",
        ),
        pytest.param(
            "class M:\n    __constants__ = ['a']\n\n    a = 1\n",
            "class M:\n\n    a = 1\n",
            "class M:\n    a = 1\n",
            id="no-blank-line-opening-a-class",
        ),
        pytest.param(
            "x = g(1 if c else 2)\n",
            "x = (1 if c else 2)\n",
            "x = 1 if c else 2\n",
            id="redundant-parentheses",
        ),
        pytest.param(
            "def f(x):\n    y = x\n    if y.sum() > 0:\n        y = y + 1\n    return y\n",
            "def f(x):\n    y = x\n    def _t(y):\n        return y + 1\n"
            "    def _f(y):\n        return y\n    y = cond(y.sum() > 0, _t, _f, (y,))\n"
            "    return y\n",
            "def f(x):\n    y = x\n\n    def _t(y):\n        return y + 1\n\n"
            "    def _f(y):\n        return y\n\n    y = cond(y.sum() > 0, _t, _f, (y,))\n"
            "    return y\n",
            id="nested-functions-spaced",
        ),
    ],
)
def test_tidy(original, fixed, expected):
    assert tidy(original, fixed, "m.py") == expected
    assert tidy(expected, expected, "m.py") == expected


@pytest.mark.parametrize(
    ("original", "fixed", "expected"),
    [
        pytest.param(
            "from typing import Optional\n\nimport torch\n\ntry:\n"
            "    from torch.jit import _overload_method as overload\nexcept ImportError:\n"
            "    from typing import overload\n\n\nclass M:\n    pass\n",
            "from typing import Optional\n\nimport torch\n\nfrom typing import overload\n\n\n"
            "class M:\n    pass\n",
            "from typing import Optional, overload\n\nimport torch\n\n\nclass M:\n    pass\n",
            id="shim-import-joins-its-module",
        ),
        pytest.param(
            "import torch\n\nif TYPE_CHECKING:\n    from typing import overload\n"
            "else:\n    from torch.jit import _overload as overload\n\nx = 1\n",
            "import torch\n\nfrom typing import overload\n\nx = 1\n",
            "from typing import overload\n\nimport torch\n\nx = 1\n",
            id="shim-import-moves-to-its-section",
        ),
        pytest.param(
            "import os\n\nimport torch\n\nx = 1\n",
            "import os\nimport sys\n\nimport torch\n\nx = 1\n",
            "import os\nimport sys\n\nimport torch\n\nx = 1\n",
            id="an-import-in-its-place-stays",
        ),
    ],
)
def test_imports_the_rewrite_wrote_go_where_isort_puts_them(original, fixed, expected):
    assert tidy(original, fixed, "m.py") == expected
    assert tidy(expected, expected, "m.py") == expected


def test_a_merged_import_past_the_limit_is_wrapped_as_isort_does():
    names = "TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union"
    original = f"from typing import {names}\n\nfrom torch.jit import _overload\n\nx = _overload\n"
    rewritten = original.replace("x = _overload", "x = overload")
    fixed = fix_imports(rewritten, ["from typing import overload"])
    expected = "from typing import (\n" + "".join(f"    {n},\n" for n in names.split(", "))
    assert tidy(original, fixed, "m.py") == expected + "    overload,\n)\n\nx = overload\n"


def test_init_files_keep_their_imports():
    original = "from torch.jit import script\nfrom .a import b\n\nc = script(b)\n"
    fixed = "from torch.jit import script\nfrom .a import b\n\nc = 1\n"
    assert tidy(original, fixed, "pkg/__init__.py") == fixed


LONG = "    traced = torch.export.export(model, tuple(x) if isinstance(x, (tuple, list)) else (x,))"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            LONG,
            "    traced = torch.export.export(\n"
            "        model, tuple(x) if isinstance(x, (tuple, list)) else (x,)\n    )",
            id="contents-on-one-line",
        ),
        pytest.param(
            "        return torch.cond(torch.logical_and(z.max() > 0, y.min() < 0), _true_branch_2, "
            "_false_branch_2, (z,))",
            "        return torch.cond(\n"
            "            torch.logical_and(z.max() > 0, y.min() < 0),\n"
            "            _true_branch_2,\n            _false_branch_2,\n            (z,),\n        )",
            id="one-item-a-line",
        ),
        pytest.param(
            "    data = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])"
            ".to_executorch().buffer",
            "    data = (\n"
            "        to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])\n"
            "        .to_executorch()\n        .buffer\n    )",
            id="call-chain",
        ),
    ],
)
def test_long_lines_the_tool_wrote_are_wrapped(line, expected):
    original = "def f(model, x):\n    pass\n"
    fixed = f"def f(model, x):\n{line}\n"
    out = tidy(original, fixed, "m.py")
    assert out == f"def f(model, x):\n{expected}\n"
    assert max(len(x) for x in out.splitlines()) <= 88


def test_lines_long_in_the_original_are_left_alone():
    original = (
        'x = f("nvidia/cuda:12.8.1-devel-ubuntu22.04", add_python="3.12", other_setting=1234)\n'
    )
    fixed = original.replace("12.8.1", "13.0.0")
    assert len(original) > 80
    assert tidy(original, fixed, "m.py") == fixed
    assert tidy(original, original, "m.py") == original


@pytest.mark.parametrize(
    ("name", "content", "length"),
    [
        ("pyproject.toml", "[tool.ruff]\nline-length = 120\n", 120),
        ("pyproject.toml", "[tool.black]\nline-length = 79\n", 79),
        ("setup.cfg", "[flake8]\nmax-line-length = 100\n", 100),
        ("ruff.toml", "line-length = 99\n", 99),
        ("pyproject.toml", "[project]\nname = 'x'\n", 88),
    ],
)
def test_line_length_comes_from_the_project(tmp_path, name, content, length):
    project = tmp_path / f"p{length}_{name.replace('.', '_')}"
    (project / "pkg").mkdir(parents=True)
    (project / name).write_text(content)
    (project / "pkg" / "m.py").write_text("x = 1\n")
    found = configured_line_length(project / "pkg" / "m.py")
    # A project without a setting inherits whatever encloses tmp_path; 88 when nothing does.
    assert found == length or (length == 88 and found)


def test_wrapping_uses_the_project_length(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    fixed = f"def f(model, x):\n{LONG}\n"
    assert tidy("def f(model, x):\n    pass\n", fixed, str(path)) == fixed  # 92 < 120


@pytest.mark.parametrize(
    ("before", "specs", "after"),
    [
        pytest.param(
            "import torch\n\n\nclass M:\n    pass\n",
            ["import typing"],
            "import typing\n\nimport torch\n\n\nclass M:\n    pass\n",
            id="stdlib-group-above-third-party",
        ),
        pytest.param(
            "import os\nimport sys\n\nimport torch\nfrom torch import nn\n\nx = 1\n",
            ["import pathlib", "from executorch.exir import to_edge"],
            "import os\nimport pathlib\nimport sys\n\n"
            "import torch\nfrom executorch.exir import to_edge\nfrom torch import nn\n\nx = 1\n",
            id="sorted-into-existing-groups",
        ),
        pytest.param(
            '"""Doc."""\n\nfrom __future__ import annotations\n\nimport torch\n\nx = 1\n',
            ["import typing"],
            '"""Doc."""\n\nfrom __future__ import annotations\n\nimport typing\n\n'
            "import torch\n\nx = 1\n",
            id="after-future-imports",
        ),
        pytest.param(
            "x = 1\n",
            ["import typing"],
            "import typing\n\nx = 1\n",
            id="no-import-block",
        ),
        pytest.param(
            "from typing import Optional\n\nimport torch\n\nx = 1\n",
            ["from typing import overload", "from typing import TYPE_CHECKING"],
            "from typing import TYPE_CHECKING, Optional, overload\n\nimport torch\n\nx = 1\n",
            id="names-join-the-statement-of-their-module",
        ),
        pytest.param(
            "from typing import Optional\n\nx = 1\n",
            ["from typing import overload as ov"],
            "from typing import Optional\nfrom typing import overload as ov\n\nx = 1\n",
            id="an-alias-keeps-its-own-line",
        ),
        pytest.param(
            "from typing import Optional  # why\n\nx = 1\n",
            ["from typing import overload"],
            "from typing import Optional, overload  # why\n\nx = 1\n",
            id="a-comment-stays-on-the-merged-statement",
        ),
        pytest.param(
            "from torch.jit import script, trace\n\nx = trace\n",
            ["from torch.jit import fork"],
            "from torch.jit import trace\nfrom torch.jit import fork\n\nx = trace\n",
            id="not-merged-into-a-statement-losing-a-name",
        ),
    ],
)
def test_new_imports_go_where_isort_puts_them(before, specs, after):
    assert fix_imports(before, specs) == after
    ast.parse(after)


def test_a_call_written_one_argument_a_line_keeps_that_layout():
    original = "def f(model, x, y):\n    t = trace(\n        model,\n        (x, y),\n    )\n"
    fixed = "def f(model, x, y):\n    t = torch.export.export(model, (x, y))\n"
    assert tidy(original, fixed, "m.py") == (
        "def f(model, x, y):\n    t = torch.export.export(\n        model,\n        (x, y),\n    )\n"
    )


def test_an_argument_spanning_lines_explodes_the_new_call_around_it():
    original = "def f(m, x, y):\n    t = trace(\n        m,\n        (\n            x,\n        ),\n    )\n"
    fixed = "def f(m, x, y):\n    t = torch.export.export(m, (\n            x,\n        ))\n"
    assert tidy(original, fixed, "m.py") == (
        "def f(m, x, y):\n    t = torch.export.export(\n        m,\n        (\n            x,\n"
        "        ),\n    )\n"
    )


def test_names_in_string_annotations_count_but_docstrings_do_not():
    original = (
        '"""Uses torch and List."""\nfrom typing import List\n\nimport torch\n\n'
        'def f(x: "List[int]"):\n    return torch.jit.script(x)\n'
    )
    fixed = original.replace("torch.jit.script(x)", "x")
    assert tidy(original, fixed, "m.py") == (
        '"""Uses torch and List."""\nfrom typing import List\n\n\n'
        'def f(x: "List[int]"):\n    return x\n'
    )


_EXAMPLE = "torch.randn(8, 16, generator=torch.Generator().manual_seed({seed}))"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.integers(min_value=0, max_value=16),
    count=st.integers(min_value=1, max_value=3),
    as_dict=st.booleans(),
    limit=st.integers(min_value=30, max_value=140),
)
def test_wrapping_keeps_every_tuple_a_tuple(depth, count, as_dict, limit):
    """A generated args tuple, wrapped at any indentation and line length, keeps its length:
    `(x,)` wrapped one item a line keeps its comma (without it, `(x)` is not a tuple)."""
    from migrate.fix.tidy import _wrap_long_lines

    items = [_EXAMPLE.format(seed=i) for i in range(count)]
    if as_dict:  # a dict input, as recorded evidence gives one
        items = ["{" + f'"x{i}": {item}' + "}" for i, item in enumerate(items)]
    args = "(" + ", ".join(items) + ("," if count == 1 else "") + ")"
    statement = f"model = torch.export.export(Net().eval(), {args}, strict=False)"
    block = [" " * 4 * level + "if ready:" for level in range(depth)]
    text = "\n".join([*block, " " * 4 * depth + statement]) + "\n"
    for wrapped in (_wrap_long_lines(text, set(), limit), tidy("x = 1\n", text, "m.py")):
        call = next(
            n
            for n in ast.walk(ast.parse(wrapped))
            if isinstance(n, ast.Call) and ast.unparse(n.func) == "torch.export.export"
        )
        assert isinstance(call.args[1], ast.Tuple), wrapped
        assert len(call.args[1].elts) == count, wrapped
