"""The repository's import index: module.name -> the qualified name it stands for, read from
the repository facts (migrate.analysis.repository_facts builds it once per repository pass)."""

from __future__ import annotations

import ast
import functools
import keyword
import re
from collections.abc import Iterable

from migrate.analysis.pyscope import resolve_relative


class ImportIndex:
    """module.name -> the qualified name it stands for, over the repository: the parsed
    files' module-level imports (`reexports`, "module.name=qualname" entries) and the
    `from` lines the prefilter's skipped files remembered (`remembered`: module -> lines)."""

    def __init__(
        self, reexports: Iterable[str], remembered: Iterable[tuple[str, Iterable[str]]]
    ) -> None:
        self.table: dict[str, str] = {}
        self._resolved: dict[str, str] = {}
        for item in reexports:
            name, _, qual = item.partition("=")
            self.table[name] = qual
        for module, lines in remembered:
            for line in lines:
                if line.startswith("from"):
                    self._remembered(module, line)

    def _remembered(self, module: str, line: str) -> None:
        for local, qual in self.imported(module, line):
            self.table.setdefault(f"{module}.{local}", qual)

    @staticmethod
    def imported(module: str, line: str) -> list[tuple[str, str]]:
        """(the name bound, what it stands for) of each name a `from` line of `module`
        imports; a relative import, for a package's __init__ and for a plain module (either
        may be meant)."""
        node = _from_line(" ".join(line.split()))
        if node is None:
            return []
        bases = [node.module or ""]
        if node.level:
            bases = [
                resolve_relative(module, package, node.level, node.module)
                for package in (True, False)
            ]
        return [
            (alias.asname or alias.name, f"{base}.{alias.name}")
            for alias in node.names
            for base in bases
        ]

    @functools.cached_property
    def imported_as(self) -> dict[str, set[str]]:
        """{the last part of a name something stands for: the last parts of the names standing
        for it} (`from .io import f as g`: f -> {g}), built once per index."""
        found: dict[str, set[str]] = {}
        for name, qual in self.table.items():
            found.setdefault(qual.rpartition(".")[2], set()).add(name.rpartition(".")[2])
        return found

    def resolve(self, qual: str) -> str:
        """What `qual` stands for, following re-exports (at most 8 hops)."""
        if not self.table:
            return qual
        found = self._resolved.get(qual)
        if found is None:
            found = self._resolved[qual] = self._follow(qual)
        return found

    def _follow(self, qual: str) -> str:
        table = self.table
        for _ in range(8):
            head = qual  # the longest dotted prefix of qual that the table holds goes first
            while True:
                target = table.get(head)
                if target is not None and target != head:
                    qual = target + qual[len(head) :]
                    break
                cut = head.rfind(".")
                if cut < 0:
                    return qual
                head = head[:cut]
        return qual


_PLAIN_FROM = re.compile(r"from (\.*)([\w.]*) import ([\w, ]+)")


@functools.lru_cache(maxsize=16384)
def _from_line(line: str) -> ast.ImportFrom | None:
    """One remembered `from` line's node (its spaces already collapsed to one); the same line
    in many files is read once (the node is only read, never changed). The plain form
    (`from pkg.mod import a, b as c`) is read without the parser, as it would read it."""
    plain = _PLAIN_FROM.fullmatch(line)
    if plain is not None:
        dots, module, names = plain.groups()
        aliases = []
        for item in names.split(","):
            words = item.split()
            if len(words) == 3 and words[1] == "as":
                name, asname = words[0], words[2]
            elif len(words) == 1:
                name, asname = words[0], None
            else:
                return _parsed_from_line(line)
            if not all(_identifier(w) for w in (name, asname) if w is not None):
                return _parsed_from_line(line)
            aliases.append(ast.alias(name=name, asname=asname))
        if (module or dots) and all(_identifier(p) for p in module.split(".") if module):
            return ast.ImportFrom(module=module or None, names=aliases, level=len(dots))
    return _parsed_from_line(line)


def _identifier(word: str) -> bool:
    return word.isidentifier() and not keyword.iskeyword(word)


def _parsed_from_line(line: str) -> ast.ImportFrom | None:
    try:
        node = ast.parse(line).body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    return node if isinstance(node, ast.ImportFrom) else None
