"""benchmarks/kept_share.py (`fix_share.py --kept`): what the tests keep is measured right.

A small sample of two traces and a check (no torch: it reads the source) that fails once
pkg/b.py loses its trace: the gate of `apply --test` reverts exactly that unit, and the
measurement's kept count is what was written less what the gate reverted, as apply printed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import kept_share  # noqa: E402

TRACE = (
    "import torch\n\n\ndef run(m, x):\n    traced = torch.jit.trace(m, x)\n    return traced(x)\n"
)
CHECK = (
    "import pathlib\nimport sys\n\n"
    'sys.exit(0 if "torch.jit" in pathlib.Path("pkg/b.py").read_text() else 1)\n'
)


def _sample(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_check_command_is_found_in_the_sample(tmp_path):
    configured = _sample(
        tmp_path / "a",
        {"pyproject.toml": '[tool.migrate]\ntest = "make check"\n', "tests/test_x.py": ""},
    )
    assert kept_share.check_command("a", configured) == ("make check", "[tool.migrate] test")
    tests = _sample(tmp_path / "b", {"tests/test_x.py": "", "run.py": ""})
    assert kept_share.check_command("b", tests) == (kept_share.PYTEST, "tests/")
    program = _sample(tmp_path / "c", {"run.py": ""})
    assert kept_share.check_command("c", program) == ("python run.py", "run.py")
    assert kept_share.check_command("sample", tmp_path)[0] == "python -m sample.export_model ."
    command, why = kept_share.check_command("plan", _sample(tmp_path / "d", {"x.py": ""}))
    assert command is None and "no tests/ folder, run.py" in why


def test_same_numbers_within_the_tolerance():
    before = {"scores": [[1.0, 2.0]], "n": 3}
    assert kept_share.same_numbers({"scores": [[1.0 + 1e-7, 2.0]], "n": 3}, before)
    assert not kept_share.same_numbers({"scores": [[1.1, 2.0]], "n": 3}, before)
    assert not kept_share.same_numbers({"scores": [[1.0, 2.0]], "n": 4}, before)
    assert not kept_share.same_numbers({"scores": [[1.0]], "n": 3}, before)


@pytest.mark.slow  # five CLI runs, a gate of five check runs: ~6 s CPU, 45 s wall when loaded
def test_kept_is_written_less_what_the_gate_reverted(tmp_path):
    sample = _sample(
        tmp_path / "sample",
        {"pkg/__init__.py": "", "pkg/a.py": TRACE, "pkg/b.py": TRACE, "check.py": CHECK},
    )
    copy = tmp_path / "work" / "drop"
    out = kept_share.measure_intent(ROOT, sample, copy, "drop", "python check.py")
    assert not out.error, out.error
    # Both traces would be written; the gate reverts pkg/b.py's, which the check needs.
    assert (out.written, out.reverted_fixes, out.kept) == (2, 1, 1), out
    assert out.consistent and out.ok
    assert [where for where, _ in out.reverted] == ["pkg/b.py:5 MIG102"]
    assert out.reverted[0][1] == ["(exit code): exit code 1"]
    # The copy holds what apply said it kept: a.py migrated, b.py as it was.
    assert "torch.jit" not in (copy / "pkg" / "a.py").read_text(encoding="utf-8")
    assert (copy / "pkg" / "b.py").read_text(encoding="utf-8") == TRACE
    assert out.held == {"MIG102 reverted by the gate: (exit code): exit code 1": 1}
    assert out.unreported == []  # b.py's trace is left, and a re-scan reports it


def test_a_recorded_sample_is_run_under_the_recorder_first(tmp_path):
    # The check fails under the recorder: the measurement stops there with that reason (no
    # apply runs), and the copy's source is left as the sample was.
    sample = _sample(tmp_path / "sample", {"pkg/a.py": TRACE, "check.py": "raise SystemExit(3)\n"})
    copy = tmp_path / "work" / "drop"
    out = kept_share.measure_intent(ROOT, sample, copy, "drop", "python check.py", record=True)
    assert out.error.startswith("migrate record failed"), out
    assert (out.written, out.kept) == (0, 0)
    assert (copy / "pkg" / "a.py").read_text(encoding="utf-8") == TRACE


def test_a_torch_jit_line_no_finding_reports_is_counted(tmp_path):
    tree = _sample(
        tmp_path / "tree",
        {
            "pkg/a.py": TRACE,
            "pkg/b.py": "import torch\n\n# torch.jit in a comment\nNAME = torch.jit.__name__\n",
            # A vendored install the scan never reads (lightning_app's stub): not counted.
            "site-packages/lib/c.py": "import torch\n\nNAME = torch.jit.__name__\n",
        },
    )
    assert kept_share.unreported_jit_lines(ROOT, tree, "drop") == ["pkg/b.py:4"]
