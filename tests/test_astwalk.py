"""migrate.analysis.astwalk: the line-limited walk must reach every node written on a chosen line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from migrate.analysis.astwalk import children, lines_matching, walk_lines, walk_tree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_SINGLETONS = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)


def test_lines_matching_counts_lines_once_each():
    text = "a jit\nb\njit jit\n\njit"
    assert lines_matching(text, re.compile(r"\bjit\b")) == [1, 3, 5]
    assert lines_matching("x = 1\n", re.compile("jit")) == []
    # The parser takes a lone carriage return for a line break: no line numbers then.
    assert lines_matching("a\rjit\n", re.compile("jit")) is None


def test_lines_matching_agrees_with_a_line_by_line_search():
    word = re.compile(r"\b(?:jit|script|trace|export|load)\b")
    compared = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "\r" in text:
            continue
        naive = [i + 1 for i, line in enumerate(text.split("\n")) if word.search(line)]
        assert lines_matching(text, word) == naive, path
        compared += bool(naive)
    assert compared > 100


def test_children_are_iter_child_nodes_without_singletons():
    tree = ast.parse(
        "x = a + b if not c else d[e:f]\n@dec\nclass K(B, m=1): y: int = 2\n"
        "z = {**base, 'k': v, **more}\ndef f(p, *, a, b=1, c): return {}\n"  # None in lists
    )
    for node in ast.walk(tree):
        expected = [c for c in ast.iter_child_nodes(node) if not isinstance(c, _SINGLETONS)]
        assert children(node) == expected


def test_walk_tree_is_ast_walk_without_singletons_on_every_fixture_file():
    walked = 0
    for path, _, tree in _parsed_fixtures():
        expected = [n for n in ast.walk(tree) if not isinstance(n, _SINGLETONS)]
        assert list(walk_tree(tree)) == expected, path
        walked += len(expected)
    assert walked > 30_000  # not vacuous


def _parsed_fixtures():
    """(path, text, tree) of every fixture Python file that parses."""
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            yield path, text, ast.parse(text)
        except (SyntaxError, ValueError):
            continue


def _own_lines(node: ast.AST) -> range | None:
    if not hasattr(node, "lineno"):
        return None
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return range(start, node.end_lineno + 1)


def test_walk_lines_reaches_every_node_on_the_chosen_lines_in_walk_order():
    checked = 0
    word = re.compile(r"\b(?:jit|script|trace|save|load)\b")
    for path, text, tree in _parsed_fixtures():
        lines = lines_matching(text, word)
        if not lines:
            continue
        everything = [n for n in ast.walk(tree) if not isinstance(n, _SINGLETONS)]
        assert list(walk_lines(tree, None)) == everything
        walked = list(walk_lines(tree, lines))
        # Same relative order as ast.walk.
        position = {id(n): i for i, n in enumerate(everything)}
        order = [position[id(n)] for n in walked]
        assert order == sorted(order), path
        # Every node whose lines include a chosen line is reached.
        reached = {id(n) for n in walked}
        chosen = set(lines)
        for node in everything:
            span = _own_lines(node)
            if span is not None and chosen.intersection(span):
                assert id(node) in reached, (path, ast.dump(node)[:80])
        assert len(walked) < len(everything) or len(lines) > 1
        checked += 1
    assert checked > 50


def test_walk_lines_skips_what_lies_elsewhere_but_enters_decorators_and_fstrings():
    text = (
        "import torch\n"  # 1
        "@torch.jit.script\n"  # 2
        "def f(x):\n"  # 3
        "    return x\n"  # 4
        "def g():\n"  # 5
        "    return 1\n"  # 6
        "s = f'{torch.jit.trace(m)}'\n"  # 7
    )
    tree = ast.parse(text)
    walked = list(walk_lines(tree, [2, 7]))
    defs = [n.name for n in walked if isinstance(n, ast.FunctionDef)]
    assert defs == ["f"]  # g's lines hold no chosen line
    attrs = sorted(n.attr for n in walked if isinstance(n, ast.Attribute))
    assert attrs == ["jit", "jit", "script", "trace"]
    assert not any(isinstance(n, ast.Return) for n in walked)


def test_mig110_file_facts_are_the_same_with_the_line_limited_walk(monkeypatch):
    import migrate.checks.mig110_is_scripting as mig110
    from migrate.analysis.pyscope import ScopeTable
    from migrate.checks.base import PythonContext

    compared = with_facts = 0
    for path, text, tree in _parsed_fixtures():
        ctx = PythonContext(str(path), text, tree, ScopeTable(tree, "m", False))
        limited = mig110._file_facts(ctx)
        with monkeypatch.context() as m:
            m.setattr(mig110._LAST_WORDS, "lines", lambda text: None)  # None: walk every node
            assert mig110._file_facts(ctx) == limited, path
        compared += 1
        with_facts += bool(limited)
    assert compared > 100 and with_facts > 20


def test_flow_parent_links_one_statement_at_a_time_and_agrees_with_a_full_map():
    """dataflow.parent records links only for the module-level statement holding the node it
    is asked about; asked about every node, in an order that jumps around, it answers what a
    map of the whole tree says (decorators, `a; b` lines and position-less nodes included)."""
    import random

    from migrate.analysis import dataflow
    from migrate.analysis.pyscope import ScopeTable
    from migrate.checks.base import PythonContext

    checked = 0
    for path, text, tree in _parsed_fixtures():
        full = {id(c): n for n in ast.walk(tree) for c in children(n)}
        nodes = [n for n in ast.walk(tree) if not isinstance(n, _SINGLETONS)]
        random.Random(path.name).shuffle(nodes)
        ctx = PythonContext(str(path), text, tree, ScopeTable(tree, "m", False))
        for node in nodes:
            assert dataflow.parent(ctx, node) is full.get(id(node)), (path, ast.dump(node)[:60])
        assert dataflow.parent(ctx, ast.Name("outside", ast.Load(), lineno=1)) is None
        checked += 1
    assert checked > 100
