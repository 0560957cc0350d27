"""End to end on fixtures/repos/recorded: each TorchScript use there is held today by a reason
only a run can answer (issue 28's six). After `migrate record -- python -m pytest -q` and
`migrate apply --unsafe-fixes --test ...` they are all rewritten, the tests still pass, and
the capture called with two batch sizes works for a third (dynamic_shapes from the recorded
calls)."""

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
    "is an exported program",
)
# The lowering to ExecuTorch the mobile test runs once migrated takes long: the test gate
# runs the others, the mobile test runs once after the apply.
MOBILE = "test_export_mobile"

pytest.importorskip("torch")


def _run(folder: Path, *args: str, tool: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) if tool else str(folder)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "migrate", *args] if tool else list(args)
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)


def _scan(folder: Path, *args: str) -> list[dict]:
    run = _run(folder, "scan", ".", "--format", "json", "--no-cache", *args)
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
    # Without the sample's `exclude = ["tests"]`: its tests call runtime.py's functions, the
    # repository's own wrappers (MIG121), 7 calls held with them.
    whole = _scan(repo, "--isolated")
    assert len(whole) == 21 and _share(whole) == 0.0

    record = _run(repo, "record", "--", *PYTEST.split())
    assert record.returncode == 0, record.stdout + record.stderr
    after = _scan(repo)
    assert len(after) == len(before) == 14
    assert _share(after) == 1.0, [f["message"] for f in after if f["fix"] != "auto"]
    messages = " ".join(f["message"] for f in after)
    assert not [reason for reason in REASONS if reason in messages], messages
    by_line = {f["line"]: f["message"] for f in after}
    # The run-time path is linked to the save that wrote what it read (migrated with it).
    assert "(written by the save at recpkg/runtime.py:20)" in by_line[61]
    # A lite save of a parameter: the run saw it save the trace's result, a program once
    # exported; the trace, passed there, stays a program.
    assert "saved here the result of the capture at recpkg/runtime.py:70" in by_line[66]
    assert "`save_mobile` lowers it as a program (the lite save at line 66)" in by_line[70]
    # The saved program also serves the load's calls (batch 2): dynamic.
    assert (
        "seen 3 calls here and through the load at recpkg/runtime.py:61, batch 2..6"
        in (by_line[19])
    )

    # Each wrapper's body is rewritten with the evidence: its calls are fixed with it, no edit.
    whole = _scan(repo, "--isolated")
    assert len(whole) == 21 and _share(whole) == 1.0, [
        f["message"] for f in whole if f["fix"] != "auto"
    ]
    calls = [f for f in whole if f["rule"] == "MIG121"]
    assert len(calls) == 7 and all("it is fixed with the wrapper" in f["message"] for f in calls)
    dry = _run(repo, "apply", ".", "--isolated", "--unsafe-fixes", "--dry-run")
    assert "Would fix 21 findings in 1 file." in dry.stdout, dry.stdout

    gate = f"{PYTEST} -k 'not {MOBILE}'"
    apply = _run(repo, "apply", ".", "--unsafe-fixes", "--test", gate)
    assert apply.returncode == 0, apply.stdout + apply.stderr
    assert "Fixed 14 findings in 1 file." in apply.stdout, apply.stdout
    assert "reverted" not in apply.stdout
    assert _scan(repo, "--isolated") == []  # no wrapper left, so no call of one
    source = (repo / "recpkg" / "runtime.py").read_text()
    assert "torch.jit." not in source and "_save_for_lite_interpreter" not in source
    # Only called: the module the run saw becomes the eager module (no export, no inputs).
    assert "    scripted = model\n    return scripted(x)\n" in source
    # Also saved: exported, with the inputs the run saw, and saved as a program.
    assert "    traced = torch.export.export(model, (sample(),))\n" in source
    assert source.count("torch.export.save(") == 4
    assert "dynamic_shapes=({0: torch.export.Dim.AUTO},)" in source
    assert "    return torch.export.load(path).module()\n" in source  # load_from
    assert "to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])" in source

    mobile = _run(repo, *PYTEST.split(), "-k", MOBILE, tool=False)
    assert mobile.returncode == 0, mobile.stdout
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
