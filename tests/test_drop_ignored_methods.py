"""Issue 27: under `--intent drop`, an unsafe export of a module whose forward reaches an
`@torch.jit.ignore` method is written (the run's tests judge it), not held on a static guess;
without an intent, or with `keep-scriptable`, or without `--unsafe-fixes`, it stays held."""

from __future__ import annotations

import textwrap
from pathlib import Path

from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions
from tests.scan_support import write_tree

FILES = {
    "blur/filters.py": """\
        import torch


        class Blur(torch.nn.Module):
            def forward(self, x):
                self._check(x)
                return x * 0.5

            @torch.jit.ignore
            def _check(self, x):
                if x.dim() != 4:
                    raise ValueError(f"expects (B, C, H, W), got {tuple(x.shape)}")
        """,
    "tests/test_blur.py": """\
        import torch

        from blur.filters import Blur


        def test_jit_blur():
            op = Blur()
            img = torch.rand(1, 3, 4, 4)
            op_jit = torch.jit.script(op)
            torch.testing.assert_close(op_jit(img), op(img))
        """,
}
HELD = "filters.py:10), marked `@torch.jit.ignore`: export would run its Python"


def _apply(root: Path, intent: str | None, unsafe: bool):
    write_tree(root, {k: textwrap.dedent(v) for k, v in FILES.items()})
    options = ScanOptions(use_git=False, cache=False, intent=intent)
    result = run_apply([str(root)], options, allow_dirty=True, unsafe_fixes=unsafe)
    return {f.rule: f for f in result.scan.findings}, (root / "tests/test_blur.py").read_text()


def test_drop_with_unsafe_fixes_exports_it_and_drops_the_decorator(tmp_path):
    found, test = _apply(tmp_path, "drop", unsafe=True)
    assert "op_jit = torch.export.export(op, (img,))" in test, test
    assert "op_jit.module()(img)" in test
    assert "not rewritten" not in found["MIG101"].message, found["MIG101"].message
    assert "@torch.jit.ignore" not in (tmp_path / "blur/filters.py").read_text()
    # Otherwise the export stays held, saying why (without --unsafe-fixes it is not asked).
    for intent, unsafe in ((None, True), ("keep-scriptable", True), ("drop", False)):
        root = tmp_path / f"{intent}-{unsafe}"
        found, test = _apply(root, intent, unsafe=unsafe)
        assert "op_jit = torch.jit.script(op)" in test, (intent, unsafe, test)
        if unsafe:
            assert HELD in found["MIG101"].message, found["MIG101"].message
