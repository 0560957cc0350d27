"""End to end on fixtures/repos/recorded: each TorchScript use there is held today by a reason
only a run can answer. After `migrate record -- python -m pytest -q` and `migrate apply
--unsafe-fixes --test ...` they are rewritten, the tests still pass, and the capture called
with two batch sizes works for a third (dynamic_shapes from the recorded calls)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "fixtures" / "repos" / "recorded"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
REASONS = (
    "cannot tell a function",
    "no example inputs in scope",
    "do not exist yet where the module is scripted",
    "one input or a tuple of inputs",
    "chosen at run time",
)

pytest.importorskip("torch")


def _run(folder: Path, *args: str, tool: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) if tool else str(folder)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "migrate", *args] if tool else list(args)
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)


def _scan(folder: Path) -> list[dict]:
    run = _run(folder, "scan", ".", "--format", "json", "--no-cache")
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)["findings"]


def _share(findings: list[dict]) -> float:
    return sum(f["fix"] == "auto" for f in findings) / len(findings)


@pytest.mark.slow  # a recorded torch run of the sample's suite, then applies: ~54 s CPU
def test_recorded_run_fixes_what_static_analysis_cannot(tmp_path):
    repo = tmp_path / "recorded"
    shutil.copytree(SAMPLE, repo)
    before = _scan(repo)
    messages = " ".join(f["message"] for f in before)
    assert all(reason in messages for reason in REASONS), messages
    assert _share(before) == 0.0

    record = _run(repo, "record", "--", *PYTEST.split())
    assert record.returncode == 0, record.stdout + record.stderr
    after = _scan(repo)
    assert len(after) == len(before)
    assert _share(after) == 11 / 12
    messages = " ".join(f["message"] for f in after)
    assert not [reason for reason in REASONS[:-1] if reason in messages], messages
    held = [f for f in after if f["fix"] != "auto"]
    # The run-time path stays TorchScript (nothing can rename what it reads), but names the
    # recorded save that wrote the file it loaded.
    assert [f["line"] for f in held] == [61]
    assert "written by the save at tests/test_runtime.py:40" in held[0]["message"]

    apply = _run(repo, "apply", ".", "--unsafe-fixes", "--test", PYTEST)
    assert apply.returncode == 1, apply.stdout + apply.stderr  # one finding left for review
    assert "Fixed 11 findings in 1 file." in apply.stdout, apply.stdout
    source = (repo / "recpkg" / "runtime.py").read_text()
    assert source.count("torch.jit.") == 1  # load_from's
    # Only called: the module the run saw becomes the eager module (no export, no inputs).
    assert "    scripted = model\n    return scripted(x)\n" in source
    # Also saved: exported, with the inputs the run saw, and saved as a program.
    assert "    scripted = torch.export.export(model, (x,))\n" in source
    assert "    traced = torch.export.export(model, (sample(),))\n" in source
    assert source.count("torch.export.save(") == 4
    assert "dynamic_shapes=({0: torch.export.Dim.AUTO},)" in source

    tests = _run(repo, *PYTEST.split(), tool=False)
    assert tests.returncode == 0, tests.stdout
    third = _run(
        repo,
        sys.executable,
        "-c",
        "import sys, torch; from recpkg import runtime; batches = [torch.ones(5, 16), "
        "torch.ones(3, 16)]; print([o.shape[0] for o in runtime.serve(batches, sys.argv[1])])",
        str(tmp_path / "serve.pt2"),
        tool=False,
    )
    assert (third.returncode, third.stdout.strip()) == (0, "[5, 3]"), third.stderr
