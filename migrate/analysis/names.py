"""The repository's import index: module.name -> the qualified name it stands for, read from
the repository facts (migrate.analysis.repository_facts builds it once per repository pass)."""

from __future__ import annotations

import ast
import functools
import keyword
import re
from collections.abc import Collection, Iterable

from migrate.analysis.pyscope import resolve_relative


class ImportIndex:
    """module.name -> the qualified name it stands for, over the repository: the parsed
    files' module-level imports (`reexports`, "module.name=qualname" entries) and the
    `from` lines the prefilter's skipped files remembered (`remembered`: module -> lines)."""

    def __init__(
        self, reexports: Iterable[str], remembered: Iterable[tuple[str, Iterable[str]]]
    ) -> None:
        self._table: dict[str, str] = {}
        self._resolved: dict[str, str] = {}
        for item in reexports:
            name, _, qual = item.partition("=")
            self._table[name] = qual
        # The skipped files' remembered words by module (their `from` lines among them), read
        # when a name of that module is first looked up: tens of thousands of lines, of which
        # a scan follows a few.
        self._pending: dict[str, Collection[str]] = {}
        self.modules_read = 0  # of the remembered modules (a count for tests)
        for module, lines in remembered:
            known = self._pending.get(module)
            self._pending[module] = lines if known is None else [*known, *lines]

    @property
    def table(self) -> dict[str, str]:
        """Every entry, the remembered lines all read."""
        for module in list(self._pending):
            self._load(module)
        return self._table

    def _load(self, module: str) -> None:
        lines = self._pending.pop(module, None)
        if lines is None:
            return
        self.modules_read += 1
        for line in lines:
            if line.startswith("from"):
                for local, qual in self.imported(module, line):
                    self._table.setdefault(f"{module}.{local}", qual)

    def _get(self, name: str) -> str | None:
        found = self._table.get(name)
        if found is None and self._pending:
            module = name.rpartition(".")[0]
            if module in self._pending:
                self._load(module)
                found = self._table.get(name)
        return found

    def values_named(self, names: Collection[str]) -> list[str]:
        """The names standing for something whose last part is one of `names` (the remembered
        lines spelling one of them read first)."""
        if self._pending and names:
            spelled = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
            hits = []
            for module, lines in self._pending.items():
                text = "\n".join(lines)
                if any(name in text for name in names) and spelled.search(text):
                    hits.append(module)  # a substring test first: most spell none
            for module in hits:
                self._load(module)
        return [qual for qual in self._table.values() if qual.rpartition(".")[2] in names]

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
        for it under another name} (`from .io import f as g`: f -> {g}), built once per index.
        Of the remembered lines only those saying `as` are read: the others keep the name."""
        found: dict[str, set[str]] = {}

        def add(name: str, qual: str) -> None:
            last, alias = qual.rpartition(".")[2], name.rpartition(".")[2]
            if alias != last:
                found.setdefault(last, set()).add(alias)

        for name, qual in self._table.items():
            add(name, qual)
        for module, lines in self._pending.items():
            for line in lines:
                if line.startswith("from") and _AS.search(line):
                    for local, qual in self.imported(module, line):
                        add(local, qual)
        return found

    def resolve(self, qual: str) -> str:
        """What `qual` stands for, following re-exports (at most 8 hops)."""
        if not self._table and not self._pending:
            return qual
        found = self._resolved.get(qual)
        if found is None:
            found = self._resolved[qual] = self._follow(qual)
        return found

    def _follow(self, qual: str) -> str:
        get = self._get
        for _ in range(8):
            head = qual  # the longest dotted prefix of qual that the table holds goes first
            while True:
                target = get(head)
                if target is not None and target != head:
                    qual = target + qual[len(head) :]
                    break
                cut = head.rfind(".")
                if cut < 0:
                    return qual
                head = head[:cut]
        return qual


_AS = re.compile(r"\bas\b")
_PLAIN_FROM = re.compile(r"from (\.*)([\w.]*) import ([\w, ]+)")
_PARENTHESISED_FROM = re.compile(r"from (\.*)([\w.]*) import \(([\w, ]+)\)")


@functools.lru_cache(maxsize=16384)
def _from_line(line: str) -> ast.ImportFrom | None:
    """One remembered `from` line's node (its spaces already collapsed to one); the same line
    in many files is read once (the node is only read, never changed). The plain forms
    (`from pkg.mod import a, b as c`, and in parentheses with a trailing comma) are read
    without the parser, as it would read them."""
    plain = _PLAIN_FROM.fullmatch(line)
    if plain is not None:
        dots, module, names = plain.groups()
    else:
        plain = _PARENTHESISED_FROM.fullmatch(line)
        if plain is None:
            return _parsed_from_line(line)
        dots, module, names = plain.groups()
        names = names.strip()
        names = names[:-1] if names.endswith(",") else names  # one trailing comma is allowed
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
