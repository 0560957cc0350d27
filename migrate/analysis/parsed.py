"""Each file parsed once per scan.

A scan looks at some files more than once: the checks' walk, the repository pass (checks that
need other files' facts analyse a file again), the intent comparison of a report without an
intent, and the planner's facts. Each stage asks here for the file (`parsed_file`): its text
is parsed the first time, and the same tree, with the structures built on it (its scope
table: `ParsedFile.derived`), is handed out afterwards while the text is unchanged. No stage
changes a tree.

What is kept lives until the next scan starts (`new_scan`), up to a budget of source bytes
(the trees take about thirty times that): past it a file is parsed and not kept, so a scan of
a very large tree parses some files again instead of holding gigabytes. A pool worker keeps
nothing (`keep_trees(False)`): each file of its batch is analysed there once.

`parse_counts()` says how often each file was parsed since the scan started: the tests that
guard against re-parsing read it.
"""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")

# Source bytes whose trees a scan keeps (a 17 MB package's trees take about 530 MB).
KEEP_BYTES = 16_000_000


class ParsedFile:
    """One file's text, its tree (or why it has none) and what was built on that tree."""

    __slots__ = ("display", "text", "_tree", "error", "_derived")

    def __init__(self, display: str, text: str) -> None:
        self.display = display
        self.text = text
        self._tree: ast.Module | None = None
        self.error: SyntaxError | ValueError | RecursionError | None = None
        self._derived: dict[Hashable, object] = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences in user code
                self._tree = ast.parse(text, filename=display)
        except (SyntaxError, ValueError, RecursionError) as exc:
            self.error = exc

    @property
    def tree(self) -> ast.Module:
        """The tree; raises what `ast.parse` raised (SyntaxError, ValueError for a NUL byte,
        RecursionError), on every ask."""
        if self.error is not None:
            raise self.error.with_traceback(None)
        return self._tree  # type: ignore[return-value]

    def derived(self, key: Hashable, build: Callable[[ast.Module], T]) -> T:
        """`build(tree)`, once per `key`: its scope table, say, shared by the stages that ask
        with the same key (the same module name, re-export table...)."""
        if key not in self._derived:
            self._derived[key] = build(self.tree)
        return self._derived[key]  # type: ignore[return-value]


_files: dict[str, ParsedFile] = {}
_state = {"kept": 0, "keep": True}
_parses: Counter[str] = Counter()


def new_scan() -> None:
    """Forget the last scan's files and counts (a scan starts)."""
    _files.clear()
    _parses.clear()
    _state["kept"] = 0


def keep_trees(keep: bool) -> None:
    """Whether this process keeps trees for later stages (a pool worker does not)."""
    _state["keep"] = keep
    if not keep:
        new_scan()


def parse_counts() -> Counter[str]:
    """{display: how many times its text was parsed since the scan started}."""
    return Counter(_parses)


def parsed_file(display: str, text: str) -> ParsedFile:
    """The file shown as `display` with this text: parsed now unless this scan kept it."""
    found = _files.get(display)
    if found is not None and (found.text is text or found.text == text):
        return found
    _parses[display] += 1
    found = ParsedFile(display, text)
    if _state["keep"]:
        old = _files.pop(display, None)
        if old is not None:
            _state["kept"] -= len(old.text)
        if _state["kept"] + len(text) <= KEEP_BYTES:
            _files[display] = found
            _state["kept"] += len(text)
    return found


def parse(display: str, text: str) -> ast.Module:
    """parsed_file(display, text).tree."""
    return parsed_file(display, text).tree
