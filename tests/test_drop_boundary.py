"""`--intent drop` at a repository's public boundary (fixtures/repos/boundary): captures the
tool cannot classify take the eager route, options that only asked for TorchScript warn, a
capture that must stay holds only its own file, tests that only checked TorchScript are
skipped (not left failing, not made vacuous), and the zoo's numbers are the same after.
`MIGRATE_UPDATE=1 pytest tests/test_drop_boundary.py` rewrites after/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scan_support import ROOT, jit_lines, run_cli

SAMPLE = ROOT / "fixtures" / "repos" / "boundary"
UPDATE = os.environ.get("MIGRATE_UPDATE") == "1"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "zoo"
    shutil.copytree(SAMPLE / "before", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _findings(root: Path) -> list[dict]:
    run = run_cli(["scan", ".", "--intent", "drop", "--no-cache", "--format", "json"], cwd=root)
    assert run.code in (0, 1), run.stderr
    return run.json()["findings"]


def test_only_the_dump_tool_stays_and_it_holds_nothing_outside_its_file(tmp_path):
    found = _findings(_copy(tmp_path))
    left = [f for f in found if f["fix"] != "auto"]
    assert {f["path"] for f in left} == {"tools/dump.py", "tests/test_models.py"}, left
    # The test helper's load of a run-time path stays; everything else outside tools/ moves.
    assert [f["rule"] for f in left if f["path"] == "tests/test_models.py"] == ["MIG202"]
    (held,) = [f for f in left if f["rule"] == "MIG110"]
    assert held["path"] == "tools/dump.py" and "tools/dump.py:9 stays" in held["message"]
    elsewhere = [f for f in found if f["path"] != "tools/dump.py"]
    assert not [f for f in elsewhere if "tools/dump.py" in f["message"]]
    (script,) = [f for f in left if f["rule"] == "MIG101"]
    assert "`.save` on line 10" in script["message"]


def test_the_public_options_keep_their_signature_and_warn(tmp_path):
    found = {(f["path"], f["line"]): f for f in _findings(_copy(tmp_path))}
    for where, flag in (
        (("boundary/models.py", 36), "`jit` only asked for TorchScript"),
        (("benchmark.py", 19), "`args.torchscript` only asked for TorchScript"),
    ):
        assert found[where]["applicability"] == "unsafe" and flag in found[where]["message"]
    helper = found[("boundary/models.py", 42)]
    assert "it becomes `thing` itself, the eager object" in helper["message"]


def test_apply_matches_the_golden_tree(tmp_path):
    root = _copy(tmp_path)
    run = run_cli(
        ["apply", ".", "--intent", "drop", "--unsafe-fixes", "--allow-dirty", "--no-cache"],
        cwd=root,
    )
    assert run.code in (0, 1), run.stderr
    got = _tree(root)
    if UPDATE:
        shutil.rmtree(SAMPLE / "after", ignore_errors=True)
        for name, text in got.items():
            (SAMPLE / "after" / name).parent.mkdir(parents=True, exist_ok=True)
            (SAMPLE / "after" / name).write_text(text, encoding="utf-8")
    assert got == _tree(SAMPLE / "after")
    # What stays is the dump tool's archive writer and the skipped tests' TorchScript.
    left = {line.split(":", 1)[0] for line in jit_lines(root)}
    assert left == {"tools/dump.py", "tests/test_models.py"}, jit_lines(root)
    again = run_cli(
        ["apply", ".", "--intent", "drop", "--unsafe-fixes", "--allow-dirty", "--no-cache"],
        cwd=root,
    )
    assert _tree(root) == got, again.stdout  # a second run changes nothing


def _python(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # the zoo's program and tests run before and after in torch processes
def test_the_migrated_zoo_gives_the_same_numbers_and_its_tests_pass(tmp_path):
    torch = pytest.importorskip("torch")
    before, after = SAMPLE / "before", SAMPLE / "after"
    outputs = {}
    for label, root in (("before", before), ("after", after)):
        run = _python(root, "-W", "ignore", "run.py")
        assert run.returncode == 0, run.stderr
        outputs[label] = json.loads(run.stdout)
    assert outputs["after"].keys() == outputs["before"].keys()
    for key, value in outputs["before"].items():
        if isinstance(value, list):
            torch.testing.assert_close(torch.tensor(outputs["after"][key]), torch.tensor(value))
        else:
            assert outputs["after"][key] == value
    for label, root in (("before", before), ("after", after)):
        tests = _python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "tests")
        assert tests.returncode == 0, f"{label}: {tests.stdout}"
        summary = tests.stdout.strip().splitlines()[-1]
        # Before, five tests pass; after, the two that only checked TorchScript are skipped
        # (with the reason) and the three others check torch.export and still pass.
        expected = "5 passed" if label == "before" else "3 passed, 2 skipped"
        assert summary.startswith(expected), tests.stdout
        if label == "after":
            assert tests.stdout.count("TorchScript is dropped; check torch.export instead") == 2
    warns = _python(
        after,
        "-W",
        "error::DeprecationWarning",
        "-c",
        "from boundary import create_model; create_model(jit=True)",
    )
    assert (
        warns.returncode != 0 and "jit=True is ignored: TorchScript is deprecated" in warns.stderr
    )
    assert _python(after, "-c", "from boundary import create_model; create_model()").returncode == 0
    bench = _python(after, "-W", "ignore", "benchmark.py", "--torchscript")
    assert bench.returncode == 0 and json.loads(bench.stdout)["out"], bench.stderr
