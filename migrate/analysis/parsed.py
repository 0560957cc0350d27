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
nothing (`keep_trees(False)`): each file of its batch is analysed there once. The last few
texts `tree_of` parsed are kept apart from the files: apply checks, tidies and analyses each
version of a file it writes.

`parse_counts()` says how often each file was parsed since the scan started: the tests that
guard against re-parsing read it.
"""

from __future__ import annotations

import ast
import gc
import threading
import warnings
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")

# Source bytes whose trees a scan keeps (a 17 MB package's trees take about 530 MB).
KEEP_BYTES = 16_000_000
# Parsing allocates millions of AST nodes that hold no reference cycles, and a scan keeps many
# of them alive; under the default thresholds the cycle collector kept walking every live
# tree (a third of a scan of real code, and after the scan every collection the report or the
# fixer set off walked them again). Collections stay on, just rarer.
GC_THRESHOLDS = (100_000, 50, 100)


class ParsedFile:
    """One file's text, its tree (or why it has none) and what was built on that tree."""

    __slots__ = ("display", "text", "_tree", "error", "_derived")

    def __init__(self, display: str, text: str) -> None:
        self.display = display
        self.text = text
        self._tree, self.error = _parse(text, display)
        self._derived: dict[Hashable, object] = {}

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
_state = {"kept": 0, "keep": True, "parsed": 0, "frozen": False, "retire": 0}
# A pool worker's trees, held and never freed (`retire_trees`).
_retired: list[ParsedFile] = []
# A forked worker's copy of the trees its parent kept: never read there, and never freed
# either (freeing them would write to, and so copy, every page they lie on).
_inherited: list[dict[str, ParsedFile]] = []
# The kept files by text: `tree_of` is handed a scan's text without its file (apply's tidy
# compares a rewrite with the original).
_kept_texts: dict[str, ParsedFile] = {}
_parses: Counter[str] = Counter()
# The last texts `tree_of` parsed: `migrate apply` checks, tidies and analyses each version
# of a file it writes (fixer, tidy, the next round), one parse for all of them. A scan's
# files are not among them: the last few trees of a scan kept alive, each freed as another
# came, left the young generation of the cycle collector three times its threshold, and its
# collections took a tenth of a one-process scan.
_RECENT = 32
_recent: OrderedDict[
    str, tuple[ast.Module | None, SyntaxError | ValueError | RecursionError | None]
]
_recent = OrderedDict()
_recent_lock = threading.Lock()


def _parse(
    text: str, display: str, remember: bool = False
) -> tuple[ast.Module | None, SyntaxError | ValueError | RecursionError | None]:
    """(tree, None) or (None, why not): parsed now unless it is one of the last texts
    `tree_of` parsed; `remember`: one of them now."""
    with _recent_lock:  # the planner's facts may be built on a thread meanwhile
        found = _recent.get(text)
        if found is not None:
            _recent.move_to_end(text)
            return found
    _parses[display] += 1
    _state["parsed"] += len(text)
    tree: ast.Module | None = None
    error: SyntaxError | ValueError | RecursionError | None = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in user code
            tree = ast.parse(text, filename=display)
    except (SyntaxError, ValueError, RecursionError) as exc:
        error = exc
    if remember and _state["keep"]:  # a worker analyses each file once
        with _recent_lock:
            _recent[text] = (tree, error)
            if len(_recent) > _RECENT:
                _recent.popitem(last=False)
    return tree, error


def new_scan() -> None:
    """Forget the last scan's files and counts (a scan starts)."""
    _files.clear()
    _kept_texts.clear()
    _recent.clear()
    _parses.clear()
    _state["kept"] = 0
    thaw()


def keep_trees(keep: bool) -> None:
    """Whether this process keeps trees for later stages (a pool worker does not: it lets go
    of the trees it inherited without freeing them)."""
    global _files
    _state["keep"] = keep
    if not keep:
        _inherited.append(_files)
        _files = {}
        _kept_texts.clear()
        _recent.clear()
        _parses.clear()
        _state["kept"] = 0


def retire_trees(budget: int) -> None:
    """A pool worker keeps no tree for later stages, but holds those it parses, up to
    `budget` bytes of their source, and never frees them: freeing a tree costs a quarter of
    parsing it, and a worker forked by multiprocessing leaves through `os._exit`, which frees
    nothing."""
    _state["retire"] = budget


def freeze() -> None:
    """Hide everything alive now from the cycle collector until the next scan (`thaw`): the
    kept trees, and a parent's heap before it forks workers (their collectors then never
    walk, and so never copy, the pages they share with it)."""
    gc.freeze()
    _state["frozen"] = True


def thaw() -> None:
    """Give the kept trees back to the cycle collector (they were frozen as they were kept)."""
    if _state["frozen"]:
        _state["frozen"] = False
        gc.unfreeze()


def parsed_bytes() -> int:
    """The characters this process has parsed (it never decreases)."""
    return _state["parsed"]


def parse_counts() -> Counter[str]:
    """{display: how many times its text was parsed since the scan started}."""
    return Counter(_parses)


def parsed_file(display: str, text: str) -> ParsedFile:
    """The file shown as `display` with this text: parsed now unless this scan kept it."""
    found = _files.get(display)
    if found is not None and (found.text is text or found.text == text):
        return found
    found = ParsedFile(display, text)
    if _state["keep"]:
        old = _files.pop(display, None)
        if old is not None:
            _state["kept"] -= len(old.text)
            if _kept_texts.get(old.text) is old:
                del _kept_texts[old.text]
        if _state["kept"] + len(text) <= KEEP_BYTES:
            _files[display] = found
            _kept_texts[text] = found
            _state["kept"] += len(text)
            # A kept tree lives to the scan's end and holds no reference cycle: frozen, the
            # collector stops walking its nodes at every young collection (a tenth of the
            # scan of a large tree).
            freeze()
    elif _state["retire"] >= len(text):
        _state["retire"] -= len(text)
        _retired.append(found)
        freeze()  # never walked by the collector either
    return found


def parse(display: str, text: str) -> ast.Module:
    """parsed_file(display, text).tree."""
    return parsed_file(display, text).tree


def tree_of(text: str, display: str = "<unknown>") -> ast.Module:
    """The tree of a text that may be no file's as the scan read it (a version of a file that
    `migrate apply` is writing): the scan's tree when it is that file's text, else parsed now
    and kept among the last few. Raises what `ast.parse` raises."""
    for found in (_files.get(display), _kept_texts.get(text)):
        if found is not None and (found.text is text or found.text == text):
            return found.tree
    tree, error = _parse(text, display, remember=True)
    if error is not None:
        raise error.with_traceback(None)
    return tree  # type: ignore[return-value]
