"""Issue 27: an early-return guard (`if cond: return a`, then the rest of the body) becomes
`torch.cond` with the rest as the false branch; executed on inputs taking each branch."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions

GUARDS = textwrap.dedent(
    """\
    import torch


    class Clamp(torch.nn.Module):
        def forward(self, x):
            if bool(x.max() > 1.0):
                return x / x.max()
            return x


    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x)
            if h.sum() > 0:
                return h * 2, h
            h = h - 1
            scale = h.abs().mean()
            return h / scale, h


    def capture(x):
        return torch.export.export(Clamp(), (x,)), torch.export.export(Gate(), (x,))
    """
)

REFUSED = textwrap.dedent(
    """\
    import torch


    class Noisy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            print("negative")
            return x


    class Shapes(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x, x


    def capture(x):
        return torch.export.export(Noisy(), (x,)), torch.export.export(Shapes(), (x,))
    """
)


def _apply(tmp_path: Path, source: str) -> tuple[str, object]:
    path = tmp_path / "guards.py"
    path.write_text(source, encoding="utf-8")
    options = ScanOptions(use_git=False, cache=False, select=["MIG131"])
    result = run_apply([str(path)], options, allow_dirty=True, unsafe_fixes=True)
    return path.read_text(encoding="utf-8"), result


def _load(source: str, name: str) -> dict:
    module = types.ModuleType(name)
    module.__file__ = f"{name}.py"
    sys.modules[name] = module  # torch.export (dynamo) looks functions' modules up by name
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.__dict__


def test_early_return_guards_become_cond_with_the_rest_as_the_false_branch(tmp_path):
    text, result = _apply(tmp_path, GUARDS)
    assert "early return in one branch only" not in "".join(f.message for f in result.scan.findings)
    assert text.count("torch.cond(") == 2, text
    assert "if bool(x.max() > 1.0)" not in text and "if h.sum() > 0" not in text
    assert "        def _false_branch_2(h):\n            h = h - 1\n" in text, text


def test_refused_guards_say_why(tmp_path):
    text, result = _apply(tmp_path, REFUSED)
    assert text == REFUSED
    messages = sorted(f.message for f in result.scan.findings if f.rule == "MIG131")
    assert any("side effect: `print(" in m for m in messages), messages
    assert any("differing output structure" in m for m in messages), messages


@pytest.mark.verify
def test_rewritten_guards_match_the_original_on_both_sides_and_export(tmp_path):
    torch = pytest.importorskip("torch")
    text, _ = _apply(tmp_path, GUARDS)
    before = _load(GUARDS, "_early_return_before")
    after = _load(text, "_early_return_after")
    samples = {
        "Clamp": [torch.tensor([4.0, 2.0]), torch.tensor([0.5, 0.25])],
        "Gate": [torch.full((2, 4), 5.0), torch.full((2, 4), -5.0)],
    }
    for name, inputs in samples.items():
        torch.manual_seed(0)
        old = before[name]().eval()
        new = after[name]().eval()
        new.load_state_dict(old.state_dict())
        if name == "Gate":  # one input per side of the branch
            with torch.no_grad():
                old.fc.weight.copy_(torch.eye(4))
                old.fc.bias.zero_()
                new.load_state_dict(old.state_dict())
        sides = {bool(old.fc(x).sum() > 0) if name == "Gate" else bool(x.max() > 1) for x in inputs}
        assert sides == {True, False}, "the samples take each branch"
        exported = torch.export.export(new, (inputs[0],))
        assert "cond" in str(exported.graph)
        with torch.no_grad():
            for x in inputs:
                torch.testing.assert_close(new(x), old(x))
                torch.testing.assert_close(exported.module()(x), old(x))
