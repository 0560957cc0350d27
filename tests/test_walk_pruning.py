"""The shared walk enters only the statements that spell something it can act on (a name that
can reach a catalogued symbol, what a node hook tests for), and a check's node hooks run only
on files whose text holds their words. Both must leave every finding as a full walk gives it:
compared here on every fixture file and on the spellings that come closest to the edge."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from migrate.analysis.pyscope import ScopeTable
from migrate.analysis.repository_facts import RepositoryFacts
from migrate.checks.base import PythonContext
from migrate.scan.checkset import CheckSet
from migrate.scan.engine import ScanOptions
from migrate.scan.file_analysis import analyze_python
from migrate.scan.walker import Walker

ROOT = Path(__file__).resolve().parent.parent
CHECKS = CheckSet(ScanOptions().codes())


def findings(
    text: str,
    full: bool,
    monkeypatch: pytest.MonkeyPatch,
    checks: CheckSet = CHECKS,
    repo_facts: RepositoryFacts | None = None,
    exports: dict[str, str] | None = None,
) -> list[str]:
    with monkeypatch.context() as patch:
        if full:  # every statement entered, every hook called on every file
            patch.setattr(Walker, "_hot_spellings", lambda self: None)
            patch.setattr(Walker, "_may_refer", lambda self: True)
            patch.setattr(CheckSet, "hooks_for", lambda self, text: self.node_hooks)
        result = analyze_python(
            "m.py", text, checks, "pkg.m", exports=exports, repo_facts=repo_facts
        )
    assert result.error is None, result.error
    return [repr(f) for f in result.findings]


def compare_on_fixtures(monkeypatch: pytest.MonkeyPatch, **kwargs) -> None:
    """Pruned and full walks agree on every fixture file the prefilter lets through."""
    compared = found = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if not CHECKS.wants_parse(text):
            continue
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        pruned = findings(text, False, monkeypatch, **kwargs)
        assert pruned == findings(text, True, monkeypatch, **kwargs), path
        compared += 1
        found += len(pruned)
    assert compared > 200 and found > 400, (compared, found)  # not vacuous


def test_pruned_walk_finds_what_a_full_walk_finds_on_every_fixture_file(monkeypatch):
    compare_on_fixtures(monkeypatch)


def test_under_repository_re_exports_the_pruned_walk_finds_the_same(monkeypatch):
    """With a re-export table (names of the repository's own packages that stand for torch
    APIs), a chain from one of those packages can become a torch name anywhere, so such names
    are hot; torch's own names and other packages' still need their segments written."""
    exports = {
        "pkg.helpers.compile_fn": "torch.jit.script",
        "pkg.helpers.jitmod": "torch.jit",
        "m.tracer": "torch.jit.trace",
    }
    compare_on_fixtures(monkeypatch, exports=exports)
    text = "from pkg import helpers as h\nimport os\n\ny = os.sep\nx = h.compile_fn(f)\n"
    assert any("MIG101" in f for f in findings(text, False, monkeypatch, exports=exports))


@pytest.mark.parametrize("codes", [("MIG131",), ("MIG110",), ("MIG110", "MIG131")])
def test_a_repository_pass_subset_prunes_to_its_own_symbols_and_finds_the_same(codes, monkeypatch):
    """The repository pass runs a few checks alone: a name is hot only when it can reach one
    of their symbols. Every class counts as captured elsewhere, so MIG131 analyses them all."""
    checks = CheckSet(codes)
    compared = found = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        classes = frozenset(re.findall(r"class\s+(\w+)", text))
        facts = RepositoryFacts.of_captured_classes(classes)
        pruned = findings(text, False, monkeypatch, checks, facts)
        assert pruned == findings(text, True, monkeypatch, checks, facts), path
        compared += 1
        found += len(pruned)
    assert compared > 300 and found > 20, (compared, found)


def test_only_enabled_checks_symbols_make_a_name_hot():
    assert not CheckSet(["MIG131"]).may_reach("torch")  # MIG131 catalogues no symbol
    assert CheckSet(["MIG110"]).may_reach("torch.jit")
    assert not CheckSet(["MIG110"]).may_reach("torch._C")


EDGE_CASES = {
    # An alias imported in a function, used on a line that never says torch or jit.
    "MIG101": """
        import torch

        def compile_model(model):
            from torch import jit as J
            x = 1
            return J.script(model)
        """,
    # The reference is only in a decorator; the body spells nothing catalogued.
    "MIG101 decorator": """
        import torch

        @torch.jit.script
        def add_one(x):
            return x + 1
        """,
    # torch.version.cuda through an alias: not a catalogued symbol, one of MIG308's own.
    "MIG308": """
        from torch.version import cuda as CV

        def check():
            if CV == "12.8":
                return True
            return False
        """,
    # A class defined inside a test method and captured by torch.export.
    "MIG131": """
        import torch

        class TestExport:
            def test_branch(self):
                class M(torch.nn.Module):
                    def forward(self, x):
                        if x.sum() > 0:
                            return x
                        return -x

                torch.export.export(M(), (torch.ones(2),))
        """,
    # is_scripting under another name, called on a line without `jit`.
    "MIG110": """
        from torch.jit import is_scripting as scripting

        def f(x):
            if scripting():
                return x
            return x + 1
        """,
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_pruned_walk_keeps_the_findings_at_the_edge(case, monkeypatch):
    text = textwrap.dedent(EDGE_CASES[case])
    pruned = findings(text, False, monkeypatch)
    assert pruned == findings(text, True, monkeypatch)
    rule = case.split()[0]
    assert any(f"rule='{rule}'" in f for f in pruned), pruned


def test_the_walk_skips_a_statement_that_spells_nothing_it_can_act_on():
    text = "import os\nimport torch\nx = os.path.join('a')\ny = torch.jit.script(f)\n"
    tree = ast.parse(text)
    ctx = PythonContext("m.py", text, tree, ScopeTable(tree, "m", False))
    walker = Walker(ctx, CHECKS)
    assert walker.hot is not None
    assert not walker._wanted(tree.body[2])
    assert walker._wanted(tree.body[3])


def test_a_module_whose_names_reach_no_symbol_resolves_none_and_a_hookless_subset_walks_nothing(
    monkeypatch,
):
    text = "import numpy as np\nclass M:\n    def f(self):\n        return np.zeros(3).sum()\n"
    tree = ast.parse(text)
    visited: list[ast.AST] = []
    original = Walker.visit
    monkeypatch.setattr(
        Walker, "visit", lambda self, node: visited.append(node) or original(self, node)
    )
    walker = Walker(PythonContext("m.py", text, tree, ScopeTable(tree, "m", False)), CHECKS)
    assert not walker._refs  # numpy reaches no catalogued symbol
    assert walker.lookup(tree.body[1].body[0].body[0].value.func) is None
    walker.run()
    assert visited  # MIG131's class hook still walks the class
    visited.clear()
    wrapper_rule_only = CheckSet(["MIG121"])  # a repository pass's subset: no hook, no symbol
    ctx = PythonContext("m.py", text, tree, ScopeTable(tree, "m", False))
    Walker(ctx, wrapper_rule_only).run()
    assert visited == []
    torch_text = "import torch\nx = torch.jit.script(f)\n"
    torch_tree = ast.parse(torch_text)
    torch_ctx = PythonContext("m.py", torch_text, torch_tree, ScopeTable(torch_tree, "m", False))
    assert Walker(torch_ctx, CHECKS)._refs


def test_a_module_name_makes_hot_only_the_statements_that_write_a_segment_down_to_a_symbol():
    text = (
        "import torch\nimport triton\n"
        "a = torch.ones(2)\n"  # 3: torch, but no path to a catalogued symbol
        "b = torch.\\\n    jit.script(f)\n"  # 4-5: the chain spread over two lines
        "@triton.jit\ndef k(): pass\n"  # 6-7: `jit` of another package: entered all the same
        "c = torch._C._jit_pass_inline(g)\n"  # 8: under the torch._C._jit_* pattern
    )
    wanted = wanted_statements(text)
    assert wanted == [False, False, False, True, True, True], wanted


def test_a_name_a_star_import_hands_on_is_spelled_as_an_import_is():
    # `torch` from `from .models import *`: only the lines writing a segment down to a symbol
    # are hot, as for `import torch` (every line saying `torch` was).
    text = (
        "from .models import *\n"
        "a = torch.ones(2)\n"  # 2: torch, no path to a catalogued symbol
        "b = torch.jit.script(f)\n"  # 3
        "def g():\n    return torch.zeros(3)\n"  # 4-5
    )
    assert wanted_statements(text) == [False, False, True, False]
    # What it finds is what a full walk finds: the capture, through the star.
    assert findings_of(text) == ["MIG101 3"]


def findings_of(text: str) -> list[str]:
    result = analyze_python("pkg/m.py", text, CHECKS, "pkg.m")
    assert result.error is None, result.error
    return [f"{f.rule} {f.line}" for f in result.findings]


def wanted_statements(text: str) -> list[bool]:
    """Whether the walk enters each top-level statement of `text`."""
    tree = ast.parse(text)
    walker = Walker(PythonContext("m.py", text, tree, ScopeTable(tree, "m", False)), CHECKS)
    return [walker._wanted(stmt) for stmt in tree.body]


def test_what_a_chain_from_a_bound_name_must_write():
    # Every torch.jit.X path holds `jit` (the torch.jit.* pattern); elsewhere the longest, as
    # a whole name, or inside one for a pattern's partial last segment (torch._C._jit_*).
    assert CHECKS.chain_words("torch") == (r"\bjit\b", "_jit_", r"\boptimize_for_mobile\b")
    assert CHECKS.chain_words("torch._C") == ("_jit_",)
    assert CHECKS.chain_words("torch.jit") is None  # torch.jit.*: any attribute is one
    assert CHECKS.chain_words("torch.jit.script") is None  # the name itself is a reference
    assert CHECKS.chain_words("torch.jit.script.foo") is None
    assert CHECKS.chain_words("torch.version", ("torch.version.cuda",)) == (r"\bcuda\b",)
    words = CheckSet(["MIG110"]).chain_words("torch")
    assert set(words) == {r"\bis_scripting\b", r"\bis_tracing\b"}


def test_a_segment_is_hot_only_as_a_whole_name():
    text = (
        "import torch\n"
        "exported_jit = make()\n"  # 2: jit inside another name
        "y = torch.jit.script(f)\n"  # 3
        "z = torch._C._jit_pass_inline(g)\n"  # 4: a partial segment, inside the name
        "class Exporter:\n    pass\n"  # 5-6: no capture word, but a class (MIG131)
        "subclass_export = 1\n"  # 7: neither `class` nor `export` as a whole word
    )
    wanted = wanted_statements(text)
    assert wanted == [False, False, True, True, True, False], wanted


@pytest.mark.parametrize("char", list("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), ids=ascii)
def test_a_character_str_splitlines_breaks_at_leaves_pruning_on_at_the_parsers_lines(
    char, monkeypatch
):
    # Python ends a line only at \r\n, \r or \n; str.splitlines also at these characters.
    # The line index counts as the parser does (migrate.checks.base.source_lines), so the hot
    # lines are the parser's and pruning stays on: the reference on line 5 is still found.
    text = f"import torch\nx = 1  # a{char}b\ny = 'c{char}d'\n\x0cw = 2\nz = torch.jit.script(f)\n"
    tree = ast.parse(text)
    ctx = PythonContext("m.py", text, tree, ScopeTable(tree, "m", False))
    assert Walker(ctx, CHECKS).hot == [5]
    pruned = findings(text, False, monkeypatch)
    assert pruned == findings(text, True, monkeypatch)
    assert any("rule='MIG101'" in f and "line=5" in f for f in pruned), pruned


def test_which_bindings_can_reach_a_catalogued_symbol():
    assert CHECKS.may_reach("torch")
    assert CHECKS.may_reach("torch.jit")
    assert CHECKS.may_reach("torch.jit.script")
    assert CHECKS.may_reach("torch._C._jit_pass_inline")  # under a pattern (torch._C._jit_*)
    assert CHECKS.may_reach("torch._C")
    assert not CHECKS.may_reach("torch.nn")
    assert not CHECKS.may_reach("os.path")
    assert not CHECKS.may_reach("torch.version")
    assert CHECKS.may_reach("torch.version", ("torch.version.cuda",))


def test_hooks_run_only_where_the_text_holds_their_words():
    plain = CHECKS.hooks_for("import torch\nx = torch.ones(2)\n")
    saving = CHECKS.hooks_for("import torch\nm.save('a.pt')\n")

    def codes(hooks):
        return {c.code for c in hooks.get(ast.Call, [])}

    assert "MIG201" not in codes(plain) and "MIG201" in codes(saving)
    # MIG131 records every class, captures only where a capture word is written.
    assert "MIG131" in {c.code for c in plain.get(ast.ClassDef, [])}
    assert "MIG131" not in codes(plain)
