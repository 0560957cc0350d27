"""apply in the first hour: what it leaves for review is shown where it is in the file on disk
(the original after a dry run, the written text after a write), and a folder no version
control protects gets one line saying so before it is rewritten."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.scan_support import clean_env, git, run_cli, write_tree

# A TracerWarning filter and a decorator go (MIG118, MIG104); the fixer's rounds leave a run of
# blank lines that tidy then collapses, so the last round's text, the tidied text and the
# original all put the save (assisted, left for review) on different lines.
SHIFTING = """\
import warnings

import torch

warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)


@torch.jit.ignore
def f(x):
    return x


def keep(model, path):
    torch.jit.save(model, path)
"""
LEFT = re.compile(r"^  (m\.py:\d+:\d+) MIG201 ", re.M)


def _scanned_at(root: Path, env: dict[str, str]) -> str:
    run = run_cli(["scan", "--no-cache", "--format", "json", "m.py"], root, env)
    [found] = [f for f in run.json()["findings"] if f["rule"] == "MIG201"]
    return f"m.py:{found['line']}:{found['column']}"


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = write_tree(tmp_path / "repo", files)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    return root


def test_dry_run_and_write_report_positions_of_the_file_on_disk(tmp_path):
    root = _repo(tmp_path, {"m.py": SHIFTING})
    env = clean_env(tmp_path)
    on_disk = _scanned_at(root, env)
    assert on_disk == "m.py:14:5"
    dry = run_cli(["apply", "--dry-run", "m.py"], root, env)
    assert LEFT.findall(dry.stdout) == [on_disk], dry.stdout
    assert (root / "m.py").read_text(encoding="utf-8") == SHIFTING
    written = run_cli(["apply", "m.py"], root, env)
    assert (root / "m.py").read_text(encoding="utf-8") != SHIFTING
    assert LEFT.findall(written.stdout) == [_scanned_at(root, env)], written.stdout
    assert _scanned_at(root, env) == "m.py:9:5"


def test_relocate_follows_lines_through_deletions_and_insertions():
    from migrate.findings import Finding
    from migrate.fix.source_text import relocate

    before = "a\nb\nc\nd\n"
    after = "a\nX\nY\nc\nd\n"  # b replaced by two lines
    at = [Finding("m.py", line, 1, line, 2, "MIG201", "s", "m") for line in (1, 2, 3, 4)]
    assert [f.line for f in relocate(at, before, after)] == [1, 2, 4, 5]
    assert [f.line for f in relocate(at, after, before)] == [1, 2, 2, 3]
    assert relocate(at, before, before) is at


# --------------------------------------------------------------------------- outside git

OUTSIDE = re.compile(r"no version control")
SAFE_ONLY = "import torch\n\n\ndef f(x):\n    return torch.jit.annotate(int, x) + 1\n"


@pytest.fixture
def plain_folder(tmp_path: Path) -> Path:
    """A folder outside any git work tree (git stops at tmp_path's parent)."""
    return write_tree(tmp_path / "plain", {"m.py": SAFE_ONLY})


def test_apply_outside_git_says_so_in_one_line_and_writes(plain_folder, tmp_path):
    run = run_cli(["apply", "."], plain_folder, clean_env(tmp_path))
    assert run.code == 0, run.stdout + run.stderr
    lines = [line for line in run.stderr.splitlines() if OUTSIDE.search(line)]
    assert len(lines) == 1, run.stderr
    assert "--dry-run" in lines[0] and "not in a git work tree" in lines[0], lines
    assert "torch.jit" not in (plain_folder / "m.py").read_text(encoding="utf-8")


def test_no_note_in_a_repository_nor_on_a_dry_run(plain_folder, tmp_path):
    env = clean_env(tmp_path)
    dry = run_cli(["apply", "--dry-run", "."], plain_folder, env)
    assert not OUTSIDE.search(dry.stdout + dry.stderr)
    repo = _repo(tmp_path, {"m.py": SAFE_ONLY})
    run = run_cli(["apply", "."], repo, env)
    assert run.code == 0, run.stdout + run.stderr
    assert not OUTSIDE.search(run.stdout + run.stderr)


def test_out_copy_gets_no_note(plain_folder, tmp_path):
    """--out writes a copy and leaves the tree as it was: nothing is at risk."""
    out = tmp_path / "migrated"
    run = run_cli(["apply", ".", "--out", str(out)], plain_folder, clean_env(tmp_path))
    assert run.code == 0, run.stdout + run.stderr
    assert not OUTSIDE.search(run.stdout + run.stderr)
    assert (plain_folder / "m.py").read_text(encoding="utf-8") == SAFE_ONLY
    shutil.rmtree(out)
