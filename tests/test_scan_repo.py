"""The realistic mixed repository (fixtures/scan/mixed_repo): every TorchScript reference is
reported once with the right rule and symbol, and nothing else, through a real
`migrate scan --format json` run, both as a git work tree and as a plain folder."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.scan_support import (
    SCAN_FIXTURES,
    clean_env,
    copy_fixture,
    git,
    invoke,
    key,
    keys,
    run_cli,
    write_tree,
)

EXPECTED = json.loads((SCAN_FIXTURES / "mixed_repo" / "expected.json").read_text())
TRACKED = sorted(key(f) for f in EXPECTED["findings"])
IGNORED = sorted(key(f) for f in EXPECTED["gitignored"])

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def assert_same(got: list[tuple], expected: list[tuple]) -> None:
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing: {missing}\nextra: {extra}"
    assert len(got) == len(set(got)), "a reference was reported more than once"


@pytest.fixture
def git_repo(tmp_path):
    repo = copy_fixture("mixed_repo", tmp_path / "repo")
    git(repo, "init", "-q")
    # Everything not ignored is staged, the venv, sandbox venv and build output included
    # (committed by mistake, as happens); scripts/ stays untracked but not ignored.
    git(repo, "add", ".")
    git(repo, "rm", "-r", "-q", "--cached", "scripts")
    return repo


@needs_git
def test_git_work_tree_exact_findings(git_repo):
    run = run_cli(["scan", ".", "--format", "json"], cwd=git_repo)
    assert run.code == 1, run.stderr
    doc = run.json()
    assert doc["errors"] == [] and run.stderr == ""
    assert_same(keys(doc["findings"]), TRACKED)
    paths = {f["path"] for f in doc["findings"]}
    assert "scripts/export_model.py" in paths  # untracked, not ignored: still scanned
    assert not any(p.startswith(("generated/", ".venv/", "sandbox/", "build/")) for p in paths)
    assert doc["summary"]["findings"] == len(TRACKED)


@needs_git
def test_repeated_scan_gives_the_same_document(git_repo):
    # The second run can answer from the result cache; the re-export pass must still hold.
    first = run_cli(["scan", ".", "--format", "json"], cwd=git_repo)
    second = run_cli(["scan", ".", "--format", "json"], cwd=git_repo)
    assert first.code == second.code == 1
    assert first.json() == second.json()


def test_plain_folder_scans_ignored_folders_but_not_venvs_or_build(tmp_path):
    repo = copy_fixture("mixed_repo", tmp_path / "repo")
    run = run_cli(["scan", ".", "--format", "json", "--no-cache"], cwd=repo)
    assert run.code == 1, run.stderr
    doc = run.json()
    assert doc["errors"] == []
    # Without git there is no .gitignore handling: generated/ is scanned.
    assert_same(keys(doc["findings"]), sorted(TRACKED + IGNORED))


def test_paths_are_reported_as_given_from_another_folder(tmp_path):
    copy_fixture("mixed_repo", tmp_path / "repo")
    run = run_cli(["scan", "repo", "--format", "json", "--no-cache"], cwd=tmp_path)
    prefixed = [("repo/" + p, *rest) for p, *rest in TRACKED + IGNORED]
    assert_same(keys(run.json()["findings"]), sorted(prefixed))


def test_in_process_run_matches_subprocess(tmp_path):
    repo = copy_fixture("mixed_repo", tmp_path / "repo")
    args = ["scan", ".", "--format", "json", "--no-cache"]
    real = run_cli(args, cwd=repo, env=clean_env(tmp_path))
    inproc = invoke(args, cwd=repo, tmp_path=tmp_path)
    assert inproc.code == real.code == 1
    assert inproc.json() == real.json()


def test_expected_file_is_consistent():
    """Guard the fixture itself: unique entries, every rule is a real code."""
    from migrate.registry import all_rules

    rows = TRACKED + IGNORED
    assert len(rows) == len(set(rows))
    assert {r[3] for r in rows} <= set(all_rules())
    assert all(r[4].startswith("torch.") for r in rows)


def test_one_file_scans_agree_with_the_whole_repo_scan(tmp_path, monkeypatch):
    """The pre-commit case: each file named alone is reported exactly as in the whole-repo
    scan, re-exports included (the shim it imports from is read, never reported)."""
    from migrate.pipeline.scan import PlannedScanner as Scanner
    from migrate.scan.engine import ScanOptions

    repo = copy_fixture("mixed_repo", tmp_path / "repo")
    monkeypatch.chdir(repo)
    sources = sorted(
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*.py")
        if p.relative_to(repo).parts[0] in ("mixed", "scripts", "tests")
    )
    assert len(sources) >= 20
    for source in sources:
        result = Scanner(ScanOptions(cache=False, jobs=1, use_git=False)).scan([source])
        assert result.errors == []
        expected = [row for row in TRACKED if row[0] == source]
        assert keys(result.findings) == expected, source


def test_an_ignored_folder_named_on_the_command_line_is_scanned(tmp_path):
    """git ignores `vendor/`, so a scan of the repository skips it; naming it scans it."""
    repo = write_tree(
        tmp_path / "repo",
        {
            ".gitignore": "vendor/\n",
            "app.py": "x = 1\n",
            "vendor/lib.py": "import torch\n\nm = torch.jit.load('m.pt')\n",
        },
    )
    git(repo, "init", "-q")
    whole = json.loads(run_cli(["scan", ".", "-f", "json"], cwd=repo).stdout)
    assert whole["findings"] == []
    named = run_cli(["scan", "vendor", "-f", "json"], cwd=repo)
    assert named.code == 1
    assert [(f["path"], f["rule"]) for f in json.loads(named.stdout)["findings"]] == [
        ("vendor/lib.py", "MIG202")
    ]
