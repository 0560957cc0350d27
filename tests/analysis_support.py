"""Helpers for the migrate.facts tests: write a small repository, point at its calls."""

from __future__ import annotations

import textwrap
from pathlib import Path

from migrate.facts import RepoFacts, build_facts


class Tree:
    """A repository written under tmp_path, its facts, and positions found by text."""

    def __init__(self, root: Path, files: dict[str, str]) -> None:
        self.texts = {}
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            self.texts[name] = textwrap.dedent(text).lstrip("\n")
            path.write_text(self.texts[name], encoding="utf-8")
        self.facts: RepoFacts = build_facts(root)

    def at(self, display: str, snippet: str, nth: int = 0) -> tuple[str, int, int]:
        """(display, line, column 1-based in characters) of the nth occurrence of snippet."""
        text = self.texts[display]
        start = -1
        for _ in range(nth + 1):
            start = text.index(snippet, start + 1)
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        return display, line, column
