"""A check can settle its repository-pass findings from variants it judged in phase 1
(PythonCheck.settle: MIG110 judges is_scripting/is_tracing for each set of names the rest of
the repository may block) instead of analysing the file again. A scan must report exactly
what the second analysis reports."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from migrate.pipeline.scan import PlannedScanner as Scanner
from migrate.scan.engine import ScanOptions

ROOT = Path(__file__).resolve().parent.parent


def scan(paths: list[Path], monkeypatch: pytest.MonkeyPatch, settle: bool) -> tuple[list, int]:
    calls: list[bool] = []
    original = Scanner._settled

    def spy(self, *args):
        done = original(self, *args) if settle else False
        calls.append(done)
        return done

    with monkeypatch.context() as patch:
        patch.setattr(Scanner, "_settled", spy)
        result = Scanner(ScanOptions(cache=False, jobs=1)).scan(paths)
    return [f.to_dict() for f in result.findings], sum(calls)


def test_settled_findings_equal_a_second_analysis_on_the_fixtures(monkeypatch):
    settled, count = scan([ROOT / "fixtures"], monkeypatch, settle=True)
    again, _ = scan([ROOT / "fixtures"], monkeypatch, settle=False)
    assert settled == again
    assert count > 0  # some file was settled: not vacuous


# One file asks both questions (one of them silenced by a comment: its variants must be too);
# the others script, trace, or export to ONNX (the message names that first), so every
# outcome of the repository pass occurs in some tree.
ASKING = """
import torch

def f(x):
    if torch.jit.is_scripting() or not torch.jit.is_tracing():
        return x
    return x + 1 if torch.jit.is_tracing() else x  # migrate: ignore[MIG110]
"""
OTHERS = {
    "scripts.py": "import torch\n\ns = torch.jit.script(torch.nn.Linear(2, 2))\n",
    "traces.py": "import torch\n\nt = torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(2))\n",
    "onnx_export.py": "import torch\n\ntorch.onnx.export(torch.nn.Linear(2, 2), torch.ones(2), 'm')\n",
}


def test_a_place_of_another_file_that_sorts_first_is_the_one_named(tmp_path, monkeypatch):
    """The asking file exports to ONNX itself (is_tracing blocked here); another file that
    sorts before it does too, and a third scripts: the message names the first place of all."""
    local = ASKING + "\ntorch.onnx.export(torch.nn.Linear(2, 2), torch.ones(2), 'n')\n"
    (tmp_path / "asking.py").write_text(textwrap.dedent(local))
    (tmp_path / "a_onnx.py").write_text(OTHERS["onnx_export.py"])
    (tmp_path / "scripts.py").write_text(OTHERS["scripts.py"])
    settled, count = scan([tmp_path], monkeypatch, settle=True)
    again, _ = scan([tmp_path], monkeypatch, settle=False)
    assert count == 1
    assert settled == again
    assert any("a_onnx.py" in f["message"] for f in settled if f["path"].endswith("asking.py"))


@pytest.mark.parametrize(
    "others",
    [
        ("scripts.py",),
        ("traces.py",),
        ("onnx_export.py",),
        ("scripts.py", "traces.py"),
        ("scripts.py", "onnx_export.py", "traces.py"),
    ],
)
def test_every_outcome_settles_as_a_second_analysis_reports(others, tmp_path, monkeypatch):
    (tmp_path / "asking.py").write_text(textwrap.dedent(ASKING))
    for name in others:
        (tmp_path / name).write_text(OTHERS[name])
    settled, count = scan([tmp_path], monkeypatch, settle=True)
    again, _ = scan([tmp_path], monkeypatch, settle=False)
    assert count == 1
    assert settled == again
    assert any("still answers" in f["message"] for f in settled if f["rule"] == "MIG110")
