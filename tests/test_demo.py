"""`migrate demo` as a new user runs it: a subprocess, on a temporary copy of a sample."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.cli.demo import find_example_shape, find_verify_target, sample_dir

ROOT = Path(__file__).resolve().parent.parent
PLAN_REPO = ROOT / "fixtures" / "repos" / "plan"


def demo(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "migrate", "demo", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_demo_runs_every_step_on_a_copy(tmp_path):
    before = {p: p.read_bytes() for p in PLAN_REPO.rglob("*") if p.is_file()}
    work = tmp_path / "work"
    proc = demo("--sample", str(PLAN_REPO), "--dir", str(work), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    steps = [
        "$ migrate scan sample",
        "$ migrate report sample --format html -o sample-plan.html",
        "$ migrate apply --dry-run --unsafe-fixes sample",
        "$ migrate apply --unsafe-fixes sample",
    ]
    positions = [out.index(s) for s in steps]
    assert positions == sorted(positions)
    assert "Found 9 findings in 5 files" in out
    # The dry run shows the diff, then apply writes it.
    assert "-        if torch.jit.is_scripting():" in out
    assert "-            return self.fc(x)" in out  # the branch is_scripting() guarded is dead
    assert re.search(r"^Fixed \d+ findings in \d+ files\.$", out, re.M)
    assert "(skipping `migrate verify`: no model factory" in out
    migrated = (work / "sample" / "pkg" / "model.py").read_text()
    assert "is_scripting" not in migrated and "return self.fc(x).relu()" in migrated
    assert (work / "sample-plan.html").read_text().startswith("<!DOCTYPE html>")
    # The original is untouched.
    assert {p: p.read_bytes() for p in PLAN_REPO.rglob("*") if p.is_file()} == before


def test_demo_refuses_a_used_folder(tmp_path):
    (tmp_path / "sample").mkdir()
    proc = demo("--sample", str(PLAN_REPO), "--dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert "exists; pick an empty folder" in proc.stdout


def test_find_verify_target(tmp_path):
    assert find_verify_target(PLAN_REPO) is None
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "net.py").write_text(
        "def helper():\n    pass\n\n\ndef build_model():\n    pass\n"
    )
    assert find_verify_target(tmp_path) == "pkg.net:build_model"


@pytest.mark.slow  # the demo's verify step exports and lowers the sample: ~25 s CPU
def test_demo_on_the_bundled_sample(tmp_path):
    """The README's first command: the bundled sample, with verify when torch is installed."""
    if sample_dir() is None:
        if os.environ.get("CI"):
            pytest.fail("the bundled sample (fixtures/repos/sample/before) is missing")
        pytest.skip("fixtures/repos/sample/before is not there yet")
    proc = demo("--dir", str(tmp_path / "work"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    for step in (
        "$ migrate scan sample",
        "$ migrate apply --dry-run --unsafe-fixes sample",
        "$ migrate apply",
    ):
        assert step in out
    assert "\n+" in out and "\n-" in out  # a diff was shown
    # The CUDA 12.8 assumptions in requirements.txt, the Dockerfile and the CI workflow (a
    # hidden folder the copy must keep) are found, then rewritten.
    for where in (
        "sample/requirements.txt",
        "sample/Dockerfile",
        "sample/.github/workflows/ci.yml",
    ):
        assert f"\n{where}\n" in out, where  # scan's file heading
        assert f"+++ b/{where}\n" in out, where  # the dry run's diff
    assert "+--extra-index-url https://download.pytorch.org/whl/cu130" in out
    assert "+        torch-variant: [cpu, cu130]" in out
    assert "CUDA 13 needs NVIDIA driver 580+" in out
    migrated = tmp_path / "work" / "sample"
    assert "torch==2.9.1+cu130" in (migrated / "requirements.txt").read_text()
    assert "FROM nvidia/cuda:13.0.0-" in (migrated / "Dockerfile").read_text()
    if importlib.util.find_spec("torch") and importlib.util.find_spec("executorch"):
        assert "$ migrate verify sample.model:build_model --input-shape 2x6" in out
        assert "verdict: PASS" in out
    else:
        assert "(skipping `migrate verify`: torch and executorch not installed" in out


def test_find_example_shape(tmp_path):
    (tmp_path / "a.py").write_text("EXAMPLE_SHAPE = (2, 6)\n")
    assert find_example_shape(tmp_path) == "2x6"
    (tmp_path / "a.py").write_text("EXAMPLE_SHAPE = (2, n)\n")
    assert find_example_shape(tmp_path) is None
