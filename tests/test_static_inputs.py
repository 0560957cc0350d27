"""Issue 27: example inputs a scripted module's own source fixes (migrate/checks/
_static_inputs.py). `torch.jit.script(Gate().eval())` saved and never called where it is
scripted gets `torch.randn(2, 4)` when `forward` first gives its input to `self.fc =
nn.Linear(4, 4)`, the batch axis dynamic; anything the source does not fix is refused with its
reason, and the script stays."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions
from tests.scan_support import write_tree

GATE = """\
    import torch
    from torch import nn


    class Gate(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.fc(x)
            return torch.relu(h)
    """
EXPORT = """\
    import torch

    from pkg.models import Gate


    def export_gate(path):
        scripted = torch.jit.script(Gate().eval())
        scripted.save(path)
    """
# A method forward never reaches, so that the scan reads models.py (it says `torch.jit`).
UNUSED = """\

        @torch.jit.unused
        def debug(self) -> None:
            print(self.fc)
    """
INFERRED = (
    "    scripted = torch.export.export(\n"
    "        Gate().eval(),\n"
    "        (torch.randn(2, 4, generator=torch.Generator().manual_seed(0)),),\n"
    "        dynamic_shapes=({0: torch.export.Dim.AUTO},),\n"
    "    )\n"
    "    torch.export.save(scripted, path)\n"
)


def _apply(root: Path, files: dict[str, str]):
    write_tree(root, {k: textwrap.dedent(v) for k, v in files.items()})
    options = ScanOptions(use_git=False, cache=False)
    return run_apply([str(root)], options, allow_dirty=True, unsafe_fixes=True)


def _capture(result):
    (finding,) = [f for f in result.scan.findings if f.rule == "MIG101"]
    return finding


def test_a_class_of_another_module_gives_its_linear_input(tmp_path):
    result = _apply(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/models.py": GATE + UNUSED, "pkg/export.py": EXPORT},
    )
    assert INFERRED in (tmp_path / "pkg/export.py").read_text()
    message = _capture(result).message
    assert "example input `torch.randn(2, 4)` inferred from `self.fc = nn.Linear(4, 3)`" in message
    assert "models.py:8" in message and "`Dim.AUTO`" in message


def test_a_class_of_the_same_file_gives_its_linear_input(tmp_path):
    body = textwrap.dedent(GATE) + "\n\n" + textwrap.dedent(EXPORT).split("\n\n\n", 1)[1]
    _apply(tmp_path, {"gate.py": body})
    assert INFERRED in (tmp_path / "gate.py").read_text()


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "        h = self.fc(x)\n",
            "        h = self.fc(x.view(-1, 4))\n",
            "first uses its input in `x.view(-1, 4)`",
        ),
        (
            "        h = self.fc(x)\n",
            "        x = x.reshape(2, 4)\n        h = self.fc(x)\n",
            "first uses its input in `x.reshape(2, 4)`",
        ),
        (
            "        h = self.fc(x)\n",
            "        h = self.fc(self.act(x))\n",
            "`self.act = nn.ReLU()`, whose input size",
        ),
        (
            "        h = self.fc(x)\n",
            "        if x.sum() > 0:\n            x = -x\n        h = self.fc(x)\n",
            "inside `if` (line 12)",
        ),
        ("nn.Linear(4, 3)", "nn.Linear(n, 3)", "does not give its input size as a number"),
        ("nn.Linear(4, 3)", "nn.Linear(4, 3, dtype=torch.float64)", "passes `dtype=`"),
        ("nn.Linear(4, 3)", "nn.Conv2d(4, 3, 3)", "fixes the channels, not the height and width"),
        ("nn.Linear(4, 3)", "nn.Embedding(4, 3)", "fixes the vocabulary, not the sequence length"),
        (
            "def forward(self, x: torch.Tensor)",
            "def forward(self, x, y)",
            "does not take exactly one input",
        ),
        ("class Gate(nn.Module):", "class Gate(Base):", "has a base class besides `nn.Module`"),
        (
            "        return torch.relu(h)\n",
            "        return torch.relu(h)\n\n    def reset(self):\n        self.fc = None\n",
            "`self.fc` is not built once",
        ),
        ("Gate().eval()", "Gate().double()", "`.double(...)` on the module may change the dtype"),
    ],
)
def test_what_the_source_does_not_fix_is_refused_with_its_reason(tmp_path, old, new, reason):
    source = textwrap.dedent(GATE).replace(
        "        self.fc = nn.Linear(4, 3)\n",
        "        self.fc = nn.Linear(4, 3)\n        self.act = nn.ReLU()\n",
    )
    source = source.replace(
        "    def __init__(self) -> None:", "    def __init__(self, n=4) -> None:"
    )
    export = textwrap.dedent(EXPORT).split("\n\n\n", 1)[1]
    text = source + "\n\n" + export + "\n\nclass Base(nn.Module):\n    pass\n"
    assert old in text, old
    result = _apply(tmp_path, {"gate.py": text.replace(old, new, 1)})
    assert "torch.jit.script(Gate()." in (tmp_path / "gate.py").read_text()
    message = _capture(result).message
    assert "no example inputs in scope" in message and reason in message, message
