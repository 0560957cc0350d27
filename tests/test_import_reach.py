"""RepoFacts.reached: the import closure a scripting compiler can follow, cut short once it
has met the files a question is about (plan.rules.typing_stays_while_scripted asks it). It must
answer exactly the full closure's files among those asked, from every start, on the sample
repositories (whose packages import each other)."""

from __future__ import annotations

import random

import pytest

from migrate.facts import build_facts
from tests.scan_support import ROOT

REPOS = ["repos/graphlayers/before", "repos/imageops/before", "repos/sample/before", "scan"]


@pytest.mark.parametrize("repo", REPOS)
def test_reached_is_the_closure_among_the_files_asked(repo):
    facts = build_facts(ROOT / "fixtures" / repo)
    files = sorted(facts.repo.files)
    assert files
    pick = random.Random(repo)
    crossed = 0
    for start in files:
        closure = facts.imported_closure(start)
        crossed += len(closure) > 1
        for size in (0, 1, 3, len(files)):
            wanted = set(pick.sample(files, min(size, len(files))))
            assert facts.reached(start, wanted) == closure & wanted
        assert facts.reached(start, None) == closure
    assert crossed, f"no file of {repo} imports another: the test proves nothing there"
