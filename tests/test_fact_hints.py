"""The scan's hints to the fix planner's fact search (no maker call, no archive site in a
file): the search then skips the file unparsed, so a hint that says "none" wrongly would
hide a capture or a site. Facts built with the hints must equal facts built without."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import pytest

from migrate.analysis.pyscope import ScopeTable
from migrate.facts import SourceFile, build_facts, load_tree
from migrate.facts.artifacts import may_hold_site
from migrate.facts.values import may_capture

ROOT = Path(__file__).resolve().parent.parent
REPOS = sorted(
    p for p in (ROOT / "fixtures" / "repos").glob("*/*") if p.is_dir() and any(p.rglob("*.py"))
)


def hinted(sources: list[SourceFile]) -> list[SourceFile]:
    out = []
    for src in sources:
        tree = ast.parse(src.text)
        is_package = src.display.endswith("__init__.py")
        table = ScopeTable(tree, src.module, is_package)
        out.append(
            dataclasses.replace(
                src,
                no_makers=not may_capture(src.text, tree, table),
                no_sites=not may_hold_site(src.text, tree, table),
            )
        )
    return out


def facts_of(sources: list[SourceFile]) -> tuple:
    facts = build_facts(sources)
    classes = sorted((k, v.class_name, v.forward) for k, v in facts._classes.items())
    return facts.captures, facts.sites, classes, facts._traces


@pytest.mark.parametrize("repo", REPOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_hinted_facts_equal_plain_facts_on_the_sample_repositories(repo):
    sources = load_tree(repo)
    with_hints = hinted(sources)
    assert facts_of(with_hints) == facts_of(sources)


def test_the_hints_skip_files_and_the_facts_still_match_on_all_fixtures():
    sources = load_tree(ROOT / "fixtures")
    with_hints = hinted(sources)
    plain = facts_of(sources)
    assert plain[0] and plain[1], "the fixtures hold captures and sites"
    assert facts_of(with_hints) == plain
    # Not vacuous: most files are skipped, and some with maker words in their text.
    skipped = [s for s in with_hints if s.no_makers and s.no_sites]
    assert len(skipped) > len(sources) // 2
    assert any(s.no_makers and "jit" in s.text and "script" in s.text for s in with_hints)


CASES = {
    # (source, may_capture, may_hold_site)
    "attribute call": ("import torch\nm = torch.jit.script(net)\n", True, False),
    "import alias on another line": (
        "from torch.jit import trace as t\n\n\ndef f(net, x):\n    return t(net, x)\n",
        True,
        False,
    ),
    "module alias": (
        "import torch\nS = torch.jit.script  # jit\n\n\nnet = S(model)\n",
        True,
        False,
    ),
    "import inside a function": (
        "def f(net):\n    from torch.jit import script as compile_fn  # jit\n"
        "    return compile_fn(net)\n",
        True,
        False,
    ),
    "call inside an f-string": ("import torch\nprint(f'{torch.jit.script(m)}')\n", True, False),
    "only asks is_scripting": (
        "import torch\n# trace script\nif torch.jit.is_scripting():\n    pass\n",
        False,
        False,
    ),
    "a local def named script": (
        "import torch  # jit\n\ndef script(m):\n    return m\n\nscript(net)\n",
        False,
        False,
    ),
    "torch.save is not an archive": (
        "import torch  # jit script\ntorch.save(state, 'w.pt')\n",
        False,
        False,
    ),
    "save on a local may be one": ("# jit\ndef f(m):\n    m.save('m.pt')\n", False, True),
    "save on self.attr may be one": (
        "# jit\nclass A:\n    def f(self):\n        self.net.save('m.pt')\n",
        False,
        True,
    ),
    "load alias": (
        "from torch.jit import load as L\n\n\nnet = L('m.pt')\n",
        True,
        True,
    ),
    "lite writer": ("# jit\nm._save_for_lite_interpreter('m.ptl')\n", False, True),
    "decorated def": (
        "import torch\n\n@torch.jit.script\ndef f(x):\n    return x\n",
        False,
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hint_cases(name):
    source, capture, site = CASES[name]
    text = textwrap.dedent(source)
    tree = ast.parse(text)
    table = ScopeTable(tree, "m", False)
    assert may_capture(text, tree, table) is capture
    assert may_hold_site(text, tree, table) is site
