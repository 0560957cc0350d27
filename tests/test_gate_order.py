"""Issue 27: `apply --test` bisects with the capture rewrites first.

Under `--intent drop` the planner lets `is_scripting()` fold because the script that compiles
its code is rewritten in the same run. Bisection keeps an innocent prefix applied; with the
units in path order, the fold (mylib/ comes before tests/) was tried without that rewrite,
broke the still-scripted test, and was reverted although the full migration passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scan_support import clean_env, write_tree

ROOT = Path(__file__).resolve().parent.parent

FILES = {
    "mylib/__init__.py": "",
    "mylib/ops.py": """\
        import torch


        def check(x):
            if x.dim() > 4:  # TorchScript cannot compile tuple() of a shape
                raise ValueError(f"expects at most 4 dims, got {tuple(x.shape)}")


        class Double(torch.nn.Module):
            def forward(self, x):
                if not torch.jit.is_scripting():
                    check(x)
                return x * 2
        """,
    "tests/test_ops.py": """\
        import torch

        from mylib.ops import Double


        def test_scripted_module():
            model = Double()
            scripted = torch.jit.script(model)
            torch.testing.assert_close(scripted(torch.ones(3)), torch.full((3,), 2.0))
        """,
    # A fix that really breaks its test: the export is specialised to the example's shape.
    "tests/test_trace.py": """\
        import pytest
        import torch

        from mylib.ops import Double


        @pytest.fixture
        def x():
            return torch.ones(2)


        def test_traced_on_another_shape(x):
            model = Double()
            traced = torch.jit.trace(model, x)
            other = torch.ones(5)
            torch.testing.assert_close(traced(other), model(other))
        """,
}


@pytest.mark.slow  # about eight runs of a small torch suite
def test_a_fold_enabled_by_a_rewritten_script_is_kept(tmp_path):
    root = tmp_path / "repo"
    write_tree(root, {k: textwrap.dedent(v) for k, v in FILES.items()})
    report = tmp_path / "report.json"
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", "--no-cache", "--allow-dirty"]
        + ["--intent", "drop", "--unsafe-fixes", "--test", "python -m pytest -q -x"]
        + ["--test-report", str(report), "."],
        cwd=root,
        env=clean_env(tmp_path, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode in (0, 1), run.stdout + run.stderr
    gated = json.loads(report.read_text())
    reverted = [f["rule"] for r in gated["reverted"] for f in r["fixes"]]
    assert reverted == ["MIG102"], run.stdout
    ops = (root / "mylib/ops.py").read_text()
    assert "is_scripting" not in ops and "        check(x)\n" in ops, ops
    assert "scripted = model\n" in (root / "tests/test_ops.py").read_text()
