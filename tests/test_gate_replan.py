"""Issue 27: once `apply --test` reverts a unit, what the planner allowed because that unit
migrates in the run is held with it, for that reason, without a trial of its own.

The sample spans five modules of a library and brings a tiny stand-in `torch` (that of
tests/test_apply_test.py, with loaders) so that each check run is a fraction of a second.
Under `--intent drop`:

- `mylib/ops.py` scripts `run` (MIG101); the check needs it compiled, so the tests revert
  it. `mylib/mode.py`'s `is_scripting()` fold (MIG110) was planned because every script goes:
  applied without that rewrite it breaks the same check.
- `mylib/export.py` traces and saves to `MODEL_PATH` (MIG102 + MIG201, one group); the check
  reads the archive back as TorchScript, so the tests revert it. `mylib/serve.py`'s
  `torch.jit.load(MODEL_PATH)` (MIG202) was rewritten to `torch.export.load` because its
  writer migrates: applied without it, it cannot read the TorchScript archive.
- `mylib/util.py`'s `torch.jit.annotate` (MIG111) is independent and kept.

Before the re-plan the gate tried and bisected both dependents (16 suite runs, 4 reverts).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.scan_support import clean_env
from tests.test_apply_test import FAKE_TORCH, write_tree

ROOT = Path(__file__).resolve().parent.parent


def _loader(archive: str, returns: str) -> str:
    """A stand-in `load` that reads only its own format (as the real ones do)."""
    return f"""


        def load(path):
            with open(path) as f:
                assert f.read() == "{archive}", "not a {archive} archive"
            return {returns}
        """


FILES = {
    **FAKE_TORCH,
    "torch/jit.py": FAKE_TORCH["torch/jit.py"] + _loader("torchscript", '"loaded"'),
    "torch/export.py": FAKE_TORCH["torch/export.py"]
    + _loader("pt2", "_Program()")
    + """

        class _Program:
            def module(self):
                return "loaded"
        """,
    "mylib/__init__.py": "",
    "mylib/mode.py": """\
        import torch


        def describe() -> str:
            if torch.jit.is_scripting():
                return "scripted"
            return "eager"
        """,
    "mylib/ops.py": """\
        import torch

        from mylib.mode import describe


        @torch.jit.script
        def run(x: int) -> str:
            return describe()
        """,
    "mylib/paths.py": 'MODEL_PATH = "model.pt"\n',
    "mylib/export.py": """\
        import torch

        from mylib.paths import MODEL_PATH


        def export(model, example):
            traced = torch.jit.trace(model, example)
            torch.jit.save(traced, MODEL_PATH)
        """,
    "mylib/serve.py": """\
        import torch

        from mylib.paths import MODEL_PATH


        def serve():
            return torch.jit.load(MODEL_PATH)
        """,
    "mylib/util.py": """\
        from typing import List

        import torch


        def collect(n: int) -> List[int]:
            out = torch.jit.annotate(List[int], [])
            for i in range(n):
                out.append(i)
            return out
        """,
    # The project's check (its exit code judges): a pytest run would cost a second a run.
    "check.py": """\
        import os
        import sys
        import tempfile

        from mylib.export import export
        from mylib.ops import run
        from mylib.paths import MODEL_PATH
        from mylib.serve import serve
        from mylib.util import collect

        os.chdir(tempfile.mkdtemp())
        export(object(), None)
        with open(MODEL_PATH) as f:
            archive = f.read()
        ok = run(1) == "scripted" and archive == "torchscript" and serve() == "loaded"
        sys.exit(0 if ok and collect(3) == [0, 1, 2] else 3)
        """,
}


def fixes(entry: dict) -> list[str]:
    return [f"{f['path']}:{f['rule']}" for f in entry["fixes"]]


def test_dependents_of_a_reverted_unit_are_held_without_a_trial(tmp_path):
    root = tmp_path / "repo"
    write_tree(root, FILES)
    report_path = tmp_path / "report.json"
    env = clean_env(tmp_path, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONSTARTUP", None)
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", "mylib", "--no-cache", "--allow-dirty"]
        + ["--intent", "drop", "--unsafe-fixes", "--test", f"{sys.executable} check.py"]
        + ["--test-report", str(report_path)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # findings left for review
    report = json.loads(report_path.read_text())
    # Only the two units the check really rejects are reverted; each holds its dependent.
    reverted = {fixes(r)[0]: r for r in report["reverted"]}
    assert sorted(reverted) == ["mylib/export.py:MIG102", "mylib/ops.py:MIG101"], run.stdout
    assert fixes(reverted["mylib/export.py:MIG102"]) == [
        "mylib/export.py:MIG102",
        "mylib/export.py:MIG201",
    ]
    held = {k: [fixes(h) for h in r["held_with"]] for k, r in reverted.items()}
    assert held == {
        "mylib/ops.py:MIG101": [["mylib/mode.py:MIG110"]],
        "mylib/export.py:MIG102": [["mylib/serve.py:MIG202"]],
    }
    plan = {fixes(h)[0]: h["plan"] for r in reverted.values() for h in r["held_with"]}
    assert "`torch.jit.script` at mylib/ops.py:6 stays" in plan["mylib/mode.py:MIG110"]
    assert "written by mylib/export.py:8, which stays" in plan["mylib/serve.py:MIG202"]
    assert [fixes(k) for k in report["kept"]] == [["mylib/util.py:MIG111"]]

    # After each revert the next run has neither the reverted unit nor its dependent:
    # baseline, full trial, 2 bisection steps and a re-run for MIG101, a confirming run of the
    # 3 units left, 1 step and a re-run for the export group, the run that keeps MIG111 (the
    # old gate went on to bisect MIG110 and MIG202 too: 16 runs).
    runs = report["runs"]
    assert [r["fixes_applied"] for r in runs if r["phase"] == "confirming"] == [3, 1], runs
    assert len(runs) == 9 and runs[-1]["broken"] == [], runs

    # The one real reason, per group, in the text report and on each held finding.
    out = run.stdout
    assert (
        "held with it, not tried (because MIG101 at mylib/ops.py:6 stays: the tests failed "
        "with it ((exit code)))" in out
    ), out
    assert "mylib/serve.py:7:12 MIG202 [auto (unsafe), not applied] `torch.jit.load` " in out
    assert "held because MIG102 at mylib/export.py:7 stays: the tests failed with it" in out
    # Only the kept fix was written; the dependents are untouched.
    assert "torch.jit.annotate" not in (root / "mylib/util.py").read_text()
    assert "torch.jit.is_scripting()" in (root / "mylib/mode.py").read_text()
    assert "torch.jit.load(MODEL_PATH)" in (root / "mylib/serve.py").read_text()
