"""Issue 27 (graphlayers): what `apply --intent drop --unsafe-fixes` writes for a capture in a
test file whose module lives in another file must still run without `--test`:

- a forward (in the library) that reads tensor data into Python (`int(batch.max())`) cannot
  be exported: the trace stays, held with that reason, even though the check only sees the
  test file; the same read under `if not torch.jit.is_scripting():` (which MIG110 turns into
  `torch.compiler.is_compiling()`) holds nothing, nor does a branch there (MIG131), but
  without an intent (the guard stays, False under export) it holds;
- a trace called later with other inputs than its example (another graph) is exported with
  every axis `Dim.AUTO`: export would otherwise fix the example's sizes and fail that call.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions
from tests.scan_support import write_tree

LIBRARY = """\
    import torch


    class Pool(torch.nn.Module):
        def forward(self, x, batch):
            num_graphs = int(batch.max()) + 1
            return torch.zeros(num_graphs, x.size(1)).index_add_(0, batch, x)


    class Checked(torch.nn.Module):
        def forward(self, x, index):
            if not torch.jit.is_scripting():
                self._check(x, index)
            return x.index_select(0, index) * 2.0

        def _check(self, x, index) -> None:
            if index.numel() > 0 and int(index.max()) >= x.size(0):
                raise IndexError(f"index {int(index.max())} out of range")
    """
TESTS = """\
    import torch

    from lib.layers import Checked, Pool


    def test_pool_trace():
        x, batch = torch.randn(4, 3), torch.tensor([0, 0, 1, 1])
        model = Pool()
        jit = torch.jit.trace(model, (x, batch))
        torch.testing.assert_close(jit(x, batch), model(x, batch))


    def test_checked_trace_then_other_inputs():
        x, index = torch.randn(4, 3), torch.tensor([0, 2, 3])
        model = Checked()
        jit = torch.jit.trace(model, (x, index))
        torch.testing.assert_close(jit(x, index), model(x, index))
        x2, index2 = torch.randn(6, 3), torch.tensor([5, 0])
        torch.testing.assert_close(jit(x2, index2), model(x2, index2))
    """


def _apply(root: Path, intent: str | None = "drop"):
    write_tree(root, {"lib/__init__.py": "", "lib/layers.py": LIBRARY, "tests/test_it.py": TESTS})
    options = ScanOptions(use_git=False, cache=False, intent=intent)
    result = run_apply([str(root)], options, allow_dirty=True, unsafe_fixes=True)
    return result.scan.findings, (root / "tests/test_it.py").read_text()


def test_a_forward_reading_tensor_data_in_another_file_keeps_its_trace(tmp_path):
    findings, test = _apply(tmp_path)
    assert "jit = torch.jit.trace(model, (x, batch))" in test, test
    held = next(f for f in findings if f.rule == "MIG102" and f.line == 9)
    assert "`Pool.forward` reads tensor data into Python at " in held.message, held.message
    assert "lib/layers.py:6 (`int(...)`)" in held.message
    # The guarded read (is_scripting -> is_compiling) holds nothing: that trace is exported.
    assert "torch.jit.trace(model, (x, index))" not in test, test
    assert "torch.compiler.is_compiling()" in (tmp_path / "lib/layers.py").read_text()
    # Without an intent the guard stays `is_scripting()`, False under export: the read holds.
    findings, test = _apply(tmp_path / "plain", intent=None)
    assert "jit = torch.jit.trace(model, (x, index))" in test, test
    held = next(f for f in findings if f.rule == "MIG102" and f.line == 16)
    assert "`Checked._check` reads tensor data into Python at " in held.message, held.message


def test_a_trace_called_with_other_inputs_is_exported_with_dynamic_axes(tmp_path):
    pytest.importorskip("torch")
    _findings, test = _apply(tmp_path)
    assert "dynamic_shapes=" in test, test
    sys.path.insert(0, str(tmp_path))
    try:
        namespace = runpy.run_path(str(tmp_path / "tests/test_it.py"))
        namespace["test_checked_trace_then_other_inputs"]()  # raised on the specialized export
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "lib" or m.startswith("lib.")]:
            del sys.modules[name]
