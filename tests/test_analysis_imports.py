"""import_statements reads a file's imports from its text: the same statements ast finds."""

import ast
import textwrap

import pytest

from migrate.analysis.imports import import_statements

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
    ],
)
def test_edges(text, modules):
    found = [
        n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
        for n in import_statements(text)
    ]
    assert found == modules
