"""The repository's import index reads a skipped module's remembered `from` lines only when a
name of that module is looked up, and answers as if it had read them all first."""

from __future__ import annotations

import ast
import random

from migrate.analysis.names import ImportIndex

MODULES = ["pkg", "pkg.io", "pkg.utils", "pkg.sub", "pkg.sub.deep", "app", "app.main"]
NAMES = ["f", "g", "h", "io", "utils", "sub", "deep", "model"]


def _random_repository(rng: random.Random) -> tuple[list[str], list[tuple[str, set[str]]]]:
    """Re-exports of some modules (parsed files) and remembered lines of others (skipped),
    with absolute, relative and `as` imports, and lines that are not `from` lines."""
    modules = MODULES[:]
    rng.shuffle(modules)
    parsed, skipped = modules[:3], modules[3:]
    reexports = [
        f"{module}.{rng.choice(NAMES)}={rng.choice(MODULES)}.{rng.choice(NAMES)}"
        for module in parsed
        for _ in range(rng.randint(0, 3))
    ]
    remembered = []
    for module in skipped:
        lines = set()
        for _ in range(rng.randint(0, 4)):
            source = rng.choice([rng.choice(MODULES), "." + rng.choice(NAMES), ".", ".."])
            names = rng.sample(NAMES, rng.randint(1, 3))
            spelled = [n if rng.random() < 0.6 else f"{n} as {rng.choice(NAMES)}" for n in names]
            lines.add(f"from {source} import {', '.join(spelled)}")
        lines.add("import torch")
        remembered.append((module, lines))
    return reexports, remembered


def test_lazy_reading_resolves_as_reading_everything_first():
    rng = random.Random(20261203)
    for _ in range(300):
        reexports, remembered = _random_repository(rng)
        eager = ImportIndex(reexports, remembered)
        everything = dict(eager.table)  # every remembered line read before any lookup
        lazy = ImportIndex(reexports, remembered)
        queries = [
            f"{rng.choice(MODULES)}.{rng.choice(NAMES)}" + rng.choice(["", ".x", ".f.g"])
            for _ in range(20)
        ]
        assert [lazy.resolve(q) for q in queries] == [eager.resolve(q) for q in queries]
        names = set(rng.sample(NAMES, 2))
        assert sorted(lazy.values_named(names)) == sorted(
            qual for qual in eager.table.values() if qual.rpartition(".")[2] in names
        )
        assert lazy.table == everything
        # The aliases it reports: each `as` entry of the table, the names kept left out.
        renamed: dict[str, set[str]] = {}
        for name, qual in eager.table.items():
            if qual.rpartition(".")[2] != name.rpartition(".")[2]:
                renamed.setdefault(qual.rpartition(".")[2], set()).add(name.rpartition(".")[2])
        fresh = ImportIndex(reexports, remembered)
        for last, aliases in renamed.items():
            assert aliases <= fresh.imported_as.get(last, set())


def test_a_lookup_reads_only_the_modules_on_its_way():
    remembered = [
        ("app.main", {"from pkg import compile_model as build"}),
        ("pkg", {"from pkg.io import to_torchscript as compile_model"}),
        *((f"lib.mod{i}", {f"from lib.mod{i + 1} import f{i}"}) for i in range(200)),
    ]
    index = ImportIndex([], remembered)
    assert index.resolve("app.main.build") == "pkg.io.to_torchscript"
    assert index.modules_read == 2  # app.main, then pkg; none of the 200 others
    assert index.resolve("lib.mod7.f7") == "lib.mod8.f7"
    assert index.modules_read == 4  # lib.mod7, and lib.mod8 it was followed into
    # What they are imported as is read from the lines saying `as` alone.
    assert index.imported_as["to_torchscript"] == {"compile_model"}
    assert index.imported_as["compile_model"] == {"build"}
    assert index.modules_read == 4


def _reading(node):
    return (
        None
        if node is None
        else (node.module, node.level, [(a.name, a.asname) for a in node.names])
    )


def test_from_lines_read_without_the_parser_read_as_the_parser_reads_them():
    """The plain and parenthesised forms are read by pattern; every line, odd ones included,
    gives what `ast.parse` gives (None where it refuses the line)."""
    from migrate.analysis import names

    def parser(line: str):
        try:
            node = ast.parse(line).body[0]
        except (SyntaxError, ValueError, IndexError):
            return None
        return node if isinstance(node, ast.ImportFrom) else None

    rng = random.Random(7)
    tokens = ["from", "import", "(", ")", ",", "as", "a", "b", "x.y", ".", "..", "if", "#"]

    def near_miss() -> str:
        """A well-formed `from` line, one token of it sometimes replaced by another."""
        items = [
            rng.choice(["a", "b", "c as d", "e as if", "f g"]) for _ in range(rng.randint(1, 3))
        ]
        spelled = ", ".join(items) + rng.choice(["", ",", " ,"])
        if rng.random() < 0.5:
            spelled = f"( {spelled} )"
        words = f"from {rng.choice(['a', 'x.y', '.', '..b', 'a..b'])} import {spelled}".split()
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] = rng.choice(tokens)
        return " ".join(words)

    lines = {near_miss() for _ in range(10000)}
    lines |= {" ".join(rng.choice(tokens) for _ in range(rng.randint(3, 10))) for _ in range(5000)}
    lines |= {
        "from a import (b, c,)",
        "from a import ( b , c as d , )",
        "from .. import ( b, )",
        "from a import (,)",
        "from a import (b,,)",
        "from a import (b as if)",
        "from a import (b)c",
    }
    plain = 0
    for line in sorted(lines):
        line = " ".join(line.split())
        assert _reading(names._from_line(line)) == _reading(parser(line)), line
        plain += bool(
            names._PARENTHESISED_FROM.fullmatch(line) or names._PLAIN_FROM.fullmatch(line)
        )
    assert plain > 100  # the generated lines reach the patterns, not only the parser
