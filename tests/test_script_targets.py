"""MIG101 across files: a scripted name imported from a module of the repository."""

from __future__ import annotations

from tests.scan_support import run_cli

OPS = """\
import torch


def rgb_to_hls(img):
    return img.flip(0)


class Blur(torch.nn.Module):
    def forward(self, x):
        return x * 0.5
"""

# A module the prefilter parses (it says `jit`) and one it skips both define functions.
PARSED_OPS = OPS + "\n\ndef uses_jit():\n    return torch.jit.is_scripting()\n"

TEST = """\
import torch

from ops import rgb_to_hls
from parsed_ops import rgb_to_hls as rgb_to_hls_parsed
from unknown_pkg import thing


def test_ops():
    img = torch.rand(3, 4, 4)
    op_jit = torch.jit.script(rgb_to_hls)
    parsed_jit = torch.jit.script(rgb_to_hls_parsed)
    other = torch.jit.script(thing)
    return op_jit(img), parsed_jit(img), other
"""


def test_function_imported_from_the_repository_is_used_directly(tmp_path):
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "parsed_ops.py").write_text(PARSED_OPS)
    (tmp_path / "test_ops.py").write_text(TEST)
    run = run_cli(["scan", "-f", "json", "--select", "MIG101", "."], cwd=tmp_path)
    assert run.code == 1, run.stderr
    found = [(f["line"], f["fix"]) for f in run.json()["findings"]]
    assert found == [(10, "auto"), (11, "auto"), (12, "assisted")]

    run = run_cli(["apply", "--select", "MIG101", "--allow-dirty", "."], cwd=tmp_path)
    assert run.code in (0, 1), run.stderr
    fixed = (tmp_path / "test_ops.py").read_text()
    assert "    op_jit = rgb_to_hls\n" in fixed
    assert "    parsed_jit = rgb_to_hls_parsed\n" in fixed
    assert "    other = torch.jit.script(thing)\n" in fixed  # cannot be told: left to a person
    assert "torch.export" not in fixed
