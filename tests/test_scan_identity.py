"""Scan speed work must not change a single finding: the JSON output of fixed trees, whole
and one file at a time, with one process and with a pool, against a golden recorded before
the optimisations of issue 16. `MIGRATE_UPDATE=1 pytest tests/test_scan_identity.py`
rewrites the golden (only for a deliberate change of findings; review with git diff)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.scan_support import ROOT, clean_env, run_cli

GOLDEN = ROOT / "tests" / "golden" / "scan_identity.json"
UPDATE = os.environ.get("MIGRATE_UPDATE") == "1"

# (case name, folder under fixtures/ scanned as the repository, paths named, jobs)
WHOLE_TREE = [
    ("fixtures -j1", "", ["."], "1"),
    ("fixtures -j2", "", ["."], "2"),
]
REPOS = ["repos/sample/before", "repos/graphlayers/before", "repos/imageops/before", "scan"]
# One-file scans, as pre-commit runs them: the repository's root is the working folder.
ONE_FILE_REPOS = ["repos/sample/before", "repos/graphlayers/before", "repos/safety/a_service"]


def _cases() -> list[tuple[str, str, list[str], str]]:
    cases = list(WHOLE_TREE)
    cases += [(f"{repo} -j2", repo, ["."], "2") for repo in REPOS]
    for repo in ONE_FILE_REPOS:
        base = ROOT / "fixtures" / repo
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            cases.append((f"{repo} :: {rel}", repo, [rel], "1"))
    return cases


@pytest.fixture(scope="module")
def fixture_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("identity") / "fixtures"
    shutil.copytree(ROOT / "fixtures", dest, symlinks=True)
    return dest


def _scan_json(root: Path, paths: list[str], jobs: str) -> dict:
    # --compare-intents: the golden holds the count of fixes per intent too.
    argv = ["scan", *paths, "--no-cache", "--format", "json", "-j", jobs, "--compare-intents"]
    run = run_cli(argv, cwd=root)
    assert run.code in (0, 1), run.stderr
    data = run.json()
    data.pop("version", None)
    return data


def test_scan_output_matches_the_golden(fixture_copy: Path) -> None:
    outputs: dict[str, dict] = {}
    for name, folder, paths, jobs in _cases():
        outputs[name] = _scan_json(fixture_copy / folder if folder else fixture_copy, paths, jobs)
    if UPDATE:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert sorted(outputs) == sorted(golden), (
        "the set of cases changed: rerun with MIGRATE_UPDATE=1"
    )
    for name in golden:
        assert outputs[name] == golden[name], f"scan output changed for {name}"
    # The tree holds findings of every family: a golden of empty outputs would prove nothing.
    rules = set(golden["fixtures -j1"]["summary"]["by_rule"])
    assert {"MIG101", "MIG131", "MIG201", "MIG305", "MIG401"} <= rules


def test_warm_scans_match_the_cold_golden(fixture_copy: Path, tmp_path: Path) -> None:
    """The result cache: the run that fills it and the run that reuses the whole outcome of
    an unchanged tree (plan included) print what a cold scan prints."""
    root = fixture_copy / "repos" / "imageops" / "before"
    expected = json.loads(GOLDEN.read_text())["repos/imageops/before -j2"]
    # Fixes the planner holds back ("not rewritten: ...") must survive the cache as well.
    assert any("not rewritten" in f["message"] for f in expected["findings"])
    env = {**clean_env(root), "MIGRATE_CACHE_DIR": str(tmp_path / "cache")}
    for attempt in ("fills the cache", "reuses it"):
        argv = ["scan", ".", "--format", "json", "-j", "2", "--compare-intents"]
        run = run_cli(argv, cwd=root, env=env)
        assert run.code in (0, 1), run.stderr
        data = run.json()
        data.pop("version", None)
        assert data == expected, f"the warm scan that {attempt} differs from the cold one"
    assert any((tmp_path / "cache").rglob("*")), "the cache was never written"


def test_a_check_hooking_attributes_sees_every_attribute() -> None:
    """The walk skips name chains that cannot be references, but not when a check hooks
    Name or Attribute nodes: such a check hears of every one, inner links included."""
    import ast

    from migrate.analysis.pyscope import ScopeTable
    from migrate.checks.base import PythonContext
    from migrate.scan.checkset import CheckSet
    from migrate.scan.walker import Walker

    text = "import os\nx = os.path.sep.join\ny = local.a.b\n"
    tree = ast.parse(text)
    heard: list[str] = []

    class Recorder:
        def on_node(self, node, ctx):
            heard.append(ast.unparse(node))

        def hooked_types(self, text):
            return (ast.Attribute,)

        def hook_spellings(self):
            return None

    checks = CheckSet(["MIG101"])
    checks.node_hooks[ast.Attribute] = [Recorder()]
    ctx = PythonContext("m.py", text, tree, ScopeTable(tree, "m", False))
    Walker(ctx, checks).run()
    assert heard == ["os.path.sep.join", "os.path.sep", "os.path", "local.a.b", "local.a"]
