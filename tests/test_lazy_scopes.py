"""ScopeTable collects a module- or class-level function's body only when a lookup needs it
(a node inside it, its scope). Every answer must be the one a table built in one full walk
gives: compared here node by node, in a shuffled order, on every fixture file."""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path

from migrate.analysis.pyscope import Scope, ScopeTable

ROOT = Path(__file__).resolve().parent.parent


def describe(scope: Scope) -> tuple:
    chain = []
    current: Scope | None = scope
    while current is not None:
        chain.append(
            (
                id(current.node),
                current.kind,
                dict(current.imports),
                {k: id(v) for k, v in current.aliases.items()},
                set(current.locals),
                {k: id(v) for k, v in current.defs.items()},
                set(current.globals_),
            )
        )
        current = current.parent
    return tuple(map(repr, chain))


def test_lazy_bodies_answer_as_a_full_walk_does_on_every_fixture_file():
    compared = deferred = 0
    rng = random.Random(7)
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        full = ScopeTable(tree, "pkg.m", False)
        lazy = ScopeTable(tree, "pkg.m", False, text=text)
        deferred += len(lazy._pending)
        assert lazy.repo_imports == full.repo_imports, path
        assert lazy.module_exports() == full.module_exports(), path
        imports = [describe(s) for s in lazy.import_scopes() if s.imports]
        assert imports == [describe(s) for s in full.scopes.values() if s.imports], path
        nodes = list(ast.walk(tree))
        rng.shuffle(nodes)
        # Nodes with a position first: one without (Module, comprehension) collects them all.
        nodes.sort(key=lambda n: not hasattr(n, "lineno"))
        for node in nodes:
            assert describe(lazy.scope_for(node)) == describe(full.scope_for(node)), (path, node)
            if node in full.scopes:
                assert describe(lazy.scopes.get(node)) == describe(full.scopes[node]), path
        # Scopes nested in a deferred body join later: the same scopes, in another order (none
        # holds an import, so the import-holding ones keep theirs, compared above).
        assert {id(k) for k in lazy.scopes} == {id(k) for k in full.scopes}, path
        compared += len(nodes)
    assert compared > 30_000 and deferred > 500, (compared, deferred)  # not vacuous


SOURCE = textwrap.dedent(
    """
    import torch

    def first(x):
        y = x + 1
        return y

    class Model:
        @torch.jit.export
        def method(self, z):
            w = [v for v in z]
            return w

    def loads_late():
        from torch import jit
        return jit
    """
)


def test_a_body_is_collected_when_a_lookup_reaches_into_it():
    tree = ast.parse(SOURCE)
    table = ScopeTable(tree, "m", False, text=SOURCE)
    first, model, late = tree.body[1], tree.body[2], tree.body[3]
    method = model.body[0]
    # A body holding an import is collected at once: its imports are the module's business.
    assert set(table._pending) == {id(first), id(method)}
    assert table.scopes[late].imports == {"jit": "torch.jit"}
    assert table.scope_for(method.decorator_list[0]).kind == "class"  # the header: eager
    assert id(method) in table._pending
    y_store = first.body[0].targets[0]
    assert table.scope_for(y_store).locals == {"x", "y"}
    assert set(table._pending) == {id(method)}  # only the body the lookup reached
    assert table.scopes.get(method).locals == {"self", "z", "w", "v"}
    assert not table._pending


def test_without_the_text_every_body_is_collected_up_front():
    tree = ast.parse(SOURCE)
    assert not ScopeTable(tree, "m", False)._pending


def test_a_class_inside_a_deferred_body_is_collected_with_it():
    """Its methods are not deferred on their own: they would join the position index out of
    order and nest inside their function's span (a lookup found the wrong body)."""
    source = textwrap.dedent(
        """
        def factory(n):
            class Inner:
                def forward(self, x):
                    return x * n

            return Inner

        def after(y):
            z = y
            return z
        """
    )
    tree = ast.parse(source)
    full = ScopeTable(tree, "m", False)
    placed = [n for n in ast.walk(tree) if hasattr(n, "lineno")]  # others collect every body
    for order in (placed, placed[::-1]):
        lazy = ScopeTable(tree, "m", False, text=source)
        for node in order:
            assert describe(lazy.scope_for(node)) == describe(full.scope_for(node)), node


def test_a_carriage_return_line_break_keeps_every_body_up_front():
    """The parser counts a lone "\\r" as a line break: the lines of `import` would be off."""
    source = SOURCE.replace("\n", "\r")
    tree = ast.parse(source)
    table = ScopeTable(tree, "m", False, text=source)
    assert not table._pending
    assert table.scopes[tree.body[3]].imports == {"jit": "torch.jit"}
