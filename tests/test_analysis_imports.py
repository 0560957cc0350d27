"""import_statements reads a file's imports from its text: the same statements ast finds."""

import ast
import re
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrate.facts import imports
from migrate.facts.imports import import_statements
from migrate.scan import workers


@pytest.fixture(params=["one match per import", "one search per token"], autouse=True)
def way(request, monkeypatch):
    """Every test runs both ways: the possessive pattern (3.11+) and the token loop (3.10)."""
    if request.param == "one search per token":
        monkeypatch.setattr(imports, "_TO_NEXT_IMPORT", None)
    elif imports._TO_NEXT_IMPORT is None:
        pytest.skip("possessive quantifiers need Python 3.11")
    return request.param


SOURCE = textwrap.dedent(
    '''\
    import os
    """Docstring with an example:

        import not_this
        from not_this_either import x
    """
    from . import sibling  # trailing comment with import word
    from ..parent.mod import (
        a,  # one
        b as c,
    )
    import pkg.sub as alias, other
    from pkg \\
        import continued
    x = 1; import after_semicolon
    if x: from inline import y
    s = "; import in_a_string"
    t = 'from fake import z'
    # import in_a_comment
    def f():
        import inside_function
        class K:
            from deep import thing
    u = f"{x}" + r'\\'' + rb"\\"" + "; import not_here"
    import last
    '''
)


def _dump(nodes):
    return [ast.dump(n) for n in nodes]


def test_same_statements_as_ast_walk():
    expected = [
        n for n in ast.walk(ast.parse(SOURCE)) if isinstance(n, (ast.Import, ast.ImportFrom))
    ]
    assert sorted(_dump(import_statements(SOURCE))) == sorted(_dump(expected))
    names = {a.name for n in import_statements(SOURCE) for a in n.names}
    assert {"not_this", "fake", "in_a_string", "in_a_comment"}.isdisjoint(names)
    assert {"after_semicolon", "y", "inside_function", "thing", "last", "continued"} <= names


@pytest.mark.parametrize(
    "text, modules",
    [
        ("", []),
        ("x = 1\n", []),
        ("import a", ["a"]),  # first line, no newline at the end
        ("'''unterminated\nimport a\n", []),
        ("from .x import (\n  y,\n  z)\nimport w\n", ["x", "w"]),
        ("x = 'it\\'s'\nimport a\ny = \"don't\nimport b\n", ["a", "b"]),  # lone quotes
        ("s = '''a\nimport no''' ; import yes\n", ["yes"]),
        ("#\nimport a  # import b\n:import c\n", ["a", "c"]),
    ],
)
def test_edges(text, modules):
    found = [
        n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
        for n in import_statements(text)
    ]
    assert found == modules


def test_both_ways_read_the_same_statements_from_every_fixture():
    from pathlib import Path

    compared = 0
    for path in sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        fast = _dump(import_statements(text))
        slow = _dump(imports._by_token("\n" + text)) if imports._ANY_IMPORT.search(text) else []
        assert fast == slow, path
        compared += bool(fast)
    assert compared > 250


@given(
    st.text(alphabet="ab ()\\#;\n\r\t", max_size=60),
    st.integers(min_value=0, max_value=60),
)
def test_a_plain_line_ends_where_the_character_loop_ends_it(text, start):
    """_statement_end skips the character loop on a line without ( ) \\ # ; and must end
    every statement where that loop does."""
    start = min(start, len(text))
    assert imports._statement_end(text, start) == imports._logical_end(text, start)


@given(
    st.lists(
        st.sampled_from(["import", "from", "a", ".", " ", "\t", "\n", "\r", "x_1", "é"]),
        max_size=25,
    )
)
def test_import_words_are_the_words_of_every_line_the_pattern_matches_at_a_line_start(pieces):
    """import_words tries only the lines holding "import"; the reference is the pattern
    tried after every newline (with one before the text)."""
    text = "".join(pieces)
    every_line = re.findall(r"\n" + workers.IMPORT_LINE.pattern, "\n" + text)
    assert workers.import_words(text) == {
        w for line in every_line for w in re.findall(r"\w+", line)
    }
