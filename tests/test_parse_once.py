"""The scan's parse cache (migrate.analysis.parsed): a scan's files are kept up to a byte
budget and found again by file or by text; apply's texts (`tree_of`) are remembered a few at a
time; a scan's own parses past the budget are not held at all (a few recent trees kept alive
and freed one by one made the cycle collector walk three times its young threshold)."""

from __future__ import annotations

import ast
import sys

import pytest

from migrate.analysis import parsed as parse_once

SOURCE = "import torch\n\n\ndef f{i}(x):\n    return torch.relu(x) + {i}\n"


@pytest.fixture(autouse=True)
def fresh_scan():
    parse_once.new_scan()
    yield
    parse_once.new_scan()


def test_a_kept_file_is_found_by_its_text_without_its_name(monkeypatch):
    text = SOURCE.format(i=0)
    kept = parse_once.parsed_file("pkg/a.py", text)
    # apply's tidy asks for the original text without the file's name
    assert parse_once.tree_of(text) is kept.tree
    # and a rewrite under the file's name finds the original by its text as well
    other = parse_once.parsed_file("pkg/b.py", SOURCE.format(i=1))
    assert parse_once.tree_of(text, "pkg/b.py") is kept.tree
    assert parse_once.tree_of(other.text, "pkg/b.py") is other.tree
    assert parse_once.parse_counts() == {"pkg/a.py": 1, "pkg/b.py": 1}


def test_past_the_budget_a_scan_holds_no_tree(monkeypatch):
    monkeypatch.setattr(parse_once, "KEEP_BYTES", 0)
    texts = [SOURCE.format(i=i) for i in range(40)]
    trees = [parse_once.parsed_file(f"m{i}.py", t).tree for i, t in enumerate(texts)]
    assert all(isinstance(t, ast.Module) for t in trees)
    assert not parse_once._recent and not parse_once._files and not parse_once._kept_texts
    # No reference but ours: dropping it frees the tree at once.
    probe = trees[-1]
    del trees
    assert sys.getrefcount(probe) == 2  # `probe`, and getrefcount's own argument
    # Asked again, a file past the budget is parsed again (what the budget trades).
    parse_once.parsed_file("m39.py", texts[39])
    assert parse_once.parse_counts()["m39.py"] == 2


def test_a_pool_worker_holds_the_trees_it_parses_up_to_its_budget(monkeypatch):
    """A worker keeps nothing for later stages, and holds (never frees) the trees of its
    first files up to its byte budget, hidden from the collector; past it, trees go."""
    frozen = []
    monkeypatch.setitem(parse_once._state, "keep", False)
    monkeypatch.setattr(parse_once, "_retired", [])
    monkeypatch.setattr(parse_once, "freeze", lambda: frozen.append(1))
    texts = [SOURCE.format(i=i) for i in range(5)]
    parse_once.retire_trees(3 * len(texts[0]))
    files = [parse_once.parsed_file(f"w{i}.py", t) for i, t in enumerate(texts)]
    assert parse_once._retired == files[:3] and len(frozen) == 3
    assert not parse_once._files and not parse_once._kept_texts
    probe = files[4].tree
    del files
    assert sys.getrefcount(probe) == 2  # past the budget: ours alone
    parse_once.retire_trees(0)


def test_apply_texts_are_remembered_a_few_at_a_time(monkeypatch):
    monkeypatch.setattr(parse_once, "KEEP_BYTES", 0)
    rewritten = [
        SOURCE.format(i=i).replace("relu", "sigmoid") for i in range(parse_once._RECENT + 5)
    ]
    first = parse_once.tree_of(rewritten[-1], "pkg/a.py")
    assert parse_once.tree_of(rewritten[-1]) is first  # the tidy, then the next round
    assert parse_once.parsed_file("pkg/a.py", rewritten[-1]).tree is first
    assert parse_once.parse_counts() == {"pkg/a.py": 1}
    for text in rewritten[:-1]:
        parse_once.tree_of(text)
    assert len(parse_once._recent) == parse_once._RECENT
    assert rewritten[-1] not in parse_once._recent  # the oldest went first
