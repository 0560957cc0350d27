"""MIG401 under `--intent drop`: C++ servers move from `torch::jit::load` to AOTInductor's
`torch::inductor::AOTIModelPackageLoader` (golden pairs in fixtures/rules/MIG401/drop/, checked
as `main.cpp`); a file with a use that fits no known shape stays as it is, each finding saying
the edit to make. `MIGRATE_UPDATE=1` rewrites the expected files. That a rewritten server
builds and gives the archive's numbers: tests/verify/test_aoti_server.py (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.fix.tidy import fix_source
from migrate.plan.units import WITH_UNSAFE, fixable
from migrate.scan.file_analysis import check_source
from tests.fixture_cases import RULE_FIXTURES, UPDATE, format_findings, read, write

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((RULE_FIXTURES / "MIG401" / "drop").glob("*.before.main.cpp"))
DROP = {"intent": "drop", "cuda": "13.0"}


def _analyze(text: str):
    return check_source(text, ["MIG401"], "main.cpp", DROP)


@pytest.mark.parametrize("before", CASES, ids=lambda p: p.name.split(".")[0])
def test_drop_rewrites_known_shapes_and_leaves_the_rest_with_a_recipe(before: Path):
    name = before.name.split(".before.")[0]
    source = read(before)
    findings = _analyze(source)
    got = format_findings(findings)
    expected = before.with_name(f"{name}.findings.txt")
    if UPDATE:
        write(expected, got)
    assert got == read(expected)
    fixed = fix_source("main.cpp", source, _analyze, "\n", allowed=WITH_UNSAFE)
    assert fixed.error is None, fixed.error
    after = before.with_name(f"{name}.after.main.cpp")
    if UPDATE:
        if fixed.fixed != source:
            write(after, fixed.fixed)
        elif after.exists():
            after.unlink()
    if after.exists():
        assert fixed.fixed == read(after)
        assert "torch::jit" not in fixed.fixed and "torch/script.h" not in fixed.fixed
        assert not [f for f in _analyze(fixed.fixed) if fixable(f, WITH_UNSAFE)]
    else:
        assert fixed.fixed == source
        assert all(f.fix.value == "manual" and "by hand: " in f.message for f in findings)


def test_without_an_intent_nothing_is_rewritten():
    source = read(RULE_FIXTURES / "MIG401" / "drop" / "tutorial.before.main.cpp")
    findings = check_source(source, ["MIG401"], "main.cpp")
    assert findings and all(f.autofix is None for f in findings)


def test_a_file_is_rewritten_whole_or_not_at_all():
    # One use suppressed: the group misses a member, so none of the file is written.
    source = read(RULE_FIXTURES / "MIG401" / "drop" / "literals.before.main.cpp").replace(
        "#include <torch/script.h>", "#include <torch/script.h>  // migrate: ignore[MIG401]"
    )
    fixed = fix_source("main.cpp", source, _analyze, "\n", allowed=WITH_UNSAFE)
    assert fixed.fixed == source
    # Unsafe: a default apply (no --unsafe-fixes) writes none of it either.
    fixed = fix_source("main.cpp", read(CASES[0]), _analyze, "\n")
    assert fixed.fixed == read(CASES[0])


def test_the_sample_servers_build_stays_for_the_package_loader():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "scan", "--intent", "drop", "--format", "json",
         "--no-cache", "."],
        cwd=ROOT / "fixtures" / "repos" / "aoti_server",
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)["findings"]
    loads = [f for f in found if f["rule"] == "MIG401"]
    assert loads and all(f["fix"] == "auto" and f["applicability"] == "unsafe" for f in loads)
    assert any("`model.aoti.pt2` (`migrate convert model.pt --aoti` writes it)" in f["message"]
               for f in loads)  # fmt: skip
    cmake = [f for f in found if f["rule"] == "MIG404"]
    assert len(cmake) == 2
    assert all("the link stays as it is" in f["message"] for f in cmake)


@pytest.mark.slow
@pytest.mark.parametrize(
    "after",
    sorted((RULE_FIXTURES / "MIG401" / "drop").glob("*.after.main.cpp")),
    ids=lambda p: p.name.split(".")[0],
)
def test_every_rewritten_server_compiles_against_the_wheels_libtorch(after: Path):
    import shutil

    torch = pytest.importorskip("torch")
    compiler = os.environ.get("CXX", "g++")
    if shutil.which(compiler) is None:
        pytest.skip(f"no C++ compiler ({compiler})")
    include = Path(torch.__file__).parent / "include"
    proc = subprocess.run(
        [compiler, "-std=c++17", "-fsyntax-only", f"-I{include}",
         f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}", "-x", "c++", str(after)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
