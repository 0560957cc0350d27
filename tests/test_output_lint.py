"""Rewritten code gains no lint or format errors (issue 11, item 8).

For every Python rule fixture pair and every Python file of fixtures/repos/*/after, ruff
(`check --select F401,I001,E501` and `format --check`, isolated from any configuration) must
report nothing on the rewritten file that it did not report on the original. ruff runs once
per line length over a temporary folder holding all files, not once per file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from migrate.fix.tidy import DEFAULT_LINE_LENGTH, _line_length_setting
from tests.fixture_cases import RULE_FIXTURES, all_cases

REPOS = RULE_FIXTURES.parent / "repos"
RUFF = [sys.executable, "-m", "ruff"]  # the pinned test dependency, as tests/test_lint.py


def _pairs() -> list[tuple[str, Path, Path, int]]:
    """(name, before, after, line length) of every rewritten Python file."""
    pairs = []
    for case in all_cases():
        after = case.sibling("after")
        if case.before.name.endswith(".py") and after.exists():
            # Fixture text has no project: the tool wraps at its default length.
            pairs.append((f"{case.code}_{case.name}", case.before, after, DEFAULT_LINE_LENGTH))
    for repo in sorted(p for p in REPOS.iterdir() if (p / "after").is_dir()):
        for after in sorted((repo / "after").rglob("*.py")):
            rel = after.relative_to(repo / "after")
            before = repo / "before" / rel
            if before.exists():
                length = _repo_line_length(before, repo / "before")
                name = f"{repo.name}_{'_'.join(rel.with_suffix('').parts)}"
                pairs.append((name, before, after, length))
    return pairs


def _repo_line_length(file: Path, root: Path) -> int:
    """The sample repository's own setting (the folders above it are this project's)."""
    for folder in [file.parent, *file.parent.parents]:
        found = _line_length_setting(folder)
        if found or folder == root:
            return found or DEFAULT_LINE_LENGTH
    return DEFAULT_LINE_LENGTH


def _ruff(folder: Path, length: int) -> tuple[Counter, set[str]]:
    """Per (file, code) counts of the selected lint codes, and the files format would change."""
    check = subprocess.run(
        [*RUFF, "check", "--isolated", "--select", "F401,I001,E501", "--line-length", str(length)]
        + ["--output-format", "json", "--exit-zero", "--no-cache", "."],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr
    counts = Counter((Path(d["filename"]).name, d["code"]) for d in json.loads(check.stdout))
    fmt = subprocess.run(
        [*RUFF, "format", "--check", "--isolated", "--no-cache", "--line-length", str(length)]
        + ["--output-format", "json", "."],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fmt.returncode in (0, 1), fmt.stderr
    unformatted = {Path(d["filename"]).name for d in json.loads(fmt.stdout or "[]")}
    return counts, unformatted


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, list[str]]:
    """name -> what the rewrite added (empty when clean)."""
    pairs = _pairs()
    by_length: dict[int, list[tuple[str, Path, Path]]] = {}
    for name, before, after, length in pairs:
        by_length.setdefault(length, []).append((name, before, after))
    problems: dict[str, list[str]] = {name: [] for name, *_ in pairs}
    for length, group in by_length.items():
        folder = tmp_path_factory.mktemp(f"lint{length}")
        for name, before, after in group:
            shutil.copyfile(before, folder / f"{name}__before.py")
            shutil.copyfile(after, folder / f"{name}__after.py")
        counts, unformatted = _ruff(folder, length)
        for name, *_ in group:
            was, now = f"{name}__before.py", f"{name}__after.py"
            for code in ("F401", "I001", "E501"):
                gained = counts[(now, code)] - counts[(was, code)]
                if gained > 0:
                    problems[name].append(f"{code} +{gained}")
            if now in unformatted and was not in unformatted:
                problems[name].append("ruff format would reformat")
    return problems


def test_pairs_found_and_ruff_reports(tmp_path):
    names = [p[0] for p in _pairs()]
    assert len(names) > 30 and any(n.startswith("sample_") for n in names)
    # The harness sees what ruff reports (a check that cannot fail is no check).
    (tmp_path / "bad.py").write_text("import os\nimport sys\nx  =  1\n")
    counts, unformatted = _ruff(tmp_path, 88)
    assert counts[("bad.py", "F401")] == 2 and unformatted == {"bad.py"}


@pytest.mark.parametrize("name", [p[0] for p in _pairs()])
def test_rewrite_adds_no_lint_or_format_errors(report, name):
    assert not report[name], f"{name}: {', '.join(report[name])}"
