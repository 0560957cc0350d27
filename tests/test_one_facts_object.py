"""The planner reads one facts object: RepoFacts, with the scan's repository pass in it.

What the files told each other during the scan (the merged RepositoryFacts the checks asked
in the repository pass) reaches the planner inside RepoFacts, as the same object; a question
the pass already answered (the repository's wrappers) is not answered again by searching the
files. The names of a file, and where its relative imports lead, are resolved by
migrate.analysis.pyscope for the checks, the import index and the facts alike. Compared by
identity and counted, never timed (the facts built on a thread while the pass's pool runs:
tests/test_background_facts.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import migrate.facts.wrappers as facts_wrappers
from migrate.analysis.names import ImportIndex
from migrate.analysis.pyscope import ScopeTable
from migrate.checks.repository_wrappers import repository_wrappers
from migrate.facts import build_facts
from migrate.pipeline.scan import PlannedScanner
from migrate.registry import code_with
from migrate.scan.engine import ScanOptions
from tests.scan_support import ROOT, write_tree

SAMPLE = ROOT / "fixtures" / "repos" / "wrappers"  # wrappers that write and read archives


def _scanned(**options) -> PlannedScanner:
    scanner = PlannedScanner(ScanOptions(cache=False, **options))
    scanner.scan([SAMPLE])
    return scanner


def _counting_wrapper_searches(monkeypatch) -> list[str]:
    """The files the facts search for wrappers themselves (facts.wrappers.find_wrappers)."""
    searched: list[str] = []
    original = facts_wrappers.find_wrappers

    def counted(ctx):
        searched.append(ctx.path)
        return original(ctx)

    monkeypatch.setattr(facts_wrappers, "find_wrappers", counted)
    return searched


def test_the_planner_facts_carry_the_scans_repository_facts(monkeypatch):
    searched = _counting_wrapper_searches(monkeypatch)
    scanner = _scanned(jobs=1)
    facts = scanner.facts(force=True)
    assert facts is not None
    assert facts.repository_facts is scanner.repo_facts
    # The wrappers whose calls join the artifact flow are the pass's one decode, MIG121's.
    assert facts.wrappers is repository_wrappers(scanner.repo_facts).wrappers
    assert any(w.producer for w in facts.wrappers.values())
    assert any(w.consumer for w in facts.wrappers.values())
    assert any(s.api.startswith(facts_wrappers.WRAPPER_API) for s in facts.sites)
    assert searched == []  # no file searched for wrappers a second time


def test_without_the_wrapper_rule_the_facts_search_the_files_and_link_the_same_sites(
    monkeypatch,
):
    told = _scanned(jobs=1).facts(force=True)
    searched = _counting_wrapper_searches(monkeypatch)
    scanner = _scanned(jobs=1, ignore=[code_with("wrapper-call")])
    alone = scanner.facts(force=True)
    assert alone is not None and told is not None
    assert alone.repository_facts is scanner.repo_facts
    assert searched  # the pass told no wrappers: the facts found them in the files
    assert sorted(alone.wrappers) == sorted(told.wrappers)
    assert alone.sites == told.sites


def test_a_relative_import_leads_to_one_module_for_the_checks_the_index_and_the_facts(
    tmp_path: Path,
):
    write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/c.py": "d = 1\n",
            "pkg/a/__init__.py": "from ..c import d\n",
            "pkg/a/b.py": "from ..c import d\n",
        },
    )
    facts = build_facts(tmp_path)
    for display, module, package in (
        ("pkg/a/b.py", "pkg.a.b", False),
        ("pkg/a/__init__.py", "pkg.a", True),
    ):
        text = (tmp_path / display).read_text()
        tree = ast.parse(text)
        table = ScopeTable(tree, module, package)
        name = tree.body[0].names[0]  # type: ignore[attr-defined]
        assert table.lookup(name.name, table.module_scope) == ("import", "pkg.c.d")
        readings = ImportIndex.imported(module, text.strip())
        assert ("d", "pkg.c.d") in readings  # the reading of this file's kind among them
        assert "pkg/c.py" in facts.imported_closure(display)
