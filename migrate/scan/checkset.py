"""The enabled checks of a run: split by target, indexed by symbol, with the prefilter that
decides which Python files are parsed at all."""

from __future__ import annotations

import fnmatch
import re
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import PurePosixPath

from migrate.analysis.textsearch import WordSearch, lines_holding
from migrate.checks import check_classes
from migrate.checks.base import PythonCheck, TextCheck
from migrate.registry import all_rules

# Every TorchScript API spelling contains one of these; files without them are not parsed.
TORCHSCRIPT_WORDS = (
    r"jit",
    r"_lite_interpreter",
    r"optimize_for_mobile",
)


class CheckSet:
    """The enabled checks, split by target, with the symbol index for the shared walk."""

    def __init__(self, codes: Iterable[str], options: dict | None = None) -> None:
        rules = all_rules()
        classes = check_classes()
        self.options = dict(options or {})
        self.python: list[PythonCheck] = []
        self.text: list[TextCheck] = []
        for code in codes:
            cls = classes.get(code)
            if cls is None:
                continue
            check = cls(rules[code], options)
            (self.python if isinstance(check, PythonCheck) else self.text).append(check)
        # The symbol index covers every Python rule, enabled or not: a symbol whose own rule
        # is ignored must not fall through to a catch-all pattern (MIG120 torch.jit.*).
        self._exact: dict[str, str] = {}
        self._patterns: list[tuple[str, str]] = []
        # Top packages the walk resolves: torch, and frameworks whose rules list symbols
        # (detectron2, timm: issue 19); their APIs are followed through repo re-exports.
        self.roots = {"torch"}
        self.framework_apis: set[str] = set()
        for rule in rules.values():
            if rule.target != "python":
                continue
            self.roots.update(s.split(".")[0] for s in rule.symbols)
            apis = [*rule.symbols, *rule.extra.get("calls", ())]
            self.framework_apis.update(s for s in apis if not s.startswith("torch"))
            for symbol in rule.symbols:
                if "*" in symbol:
                    self._patterns.append((symbol, rule.code))
                else:
                    self._exact[symbol] = rule.code
        # The most specific pattern (longest literal prefix) wins.
        self._patterns.sort(key=lambda p: -len(p[0].split("*")[0]))
        self._enabled: dict[str, PythonCheck] = {c.code: c for c in self.python}
        self._cache: dict[str, PythonCheck | None] = {}
        words = list(TORCHSCRIPT_WORDS)
        self._prefilter_pairs: list[tuple[WordSearch, WordSearch]] = []
        for check in self.python:
            if check.prefilter and check.prefilter_also:
                both = (WordSearch(check.prefilter), WordSearch([check.prefilter_also]))
                self._prefilter_pairs.append(both)
            else:
                words.extend(check.prefilter)
        self.python_prefilter = WordSearch(words)
        # Each `remember` holds at a line's start: one search for "\n" + the alternatives over
        # "\n" + text (a literal first character is what lets the engine skip ahead fast;
        # `^` in multiline mode tried every position).
        self._remember = [
            (c.remember_words, f"(?:{c.remember})")
            for c in self.python
            if c.remember and not c.remember_imports
        ]
        # Patterns of import statements: each tried on its own at the lines that say
        # `import` (in one alternation, MIG121's `from` lines hid MIG140's `from lightning`).
        self._remember_imports = [
            re.compile(c.remember) for c in self.python if c.remember and c.remember_imports
        ]
        self._remember_by_kept: dict[tuple[bool, ...], re.Pattern[str] | None] = {}
        self._text_prefilters = {id(c): WordSearch([c.prefilter]) for c in self.text if c.prefilter}
        # One search for all the prefilters of the text checks a path takes (six CUDA checks
        # read every Python file; nearly all hold none of their words): None when one of
        # them reads every file.
        self._text_gates: dict[tuple[int, ...], WordSearch | None] = {}
        self.node_hooks: dict[type, list[PythonCheck]] = {}
        for check in self.python:
            for node_type in check.node_types:
                self.node_hooks.setdefault(node_type, []).append(check)
        self._hooks_by_types: dict[tuple, dict[type, list[PythonCheck]]] = {}
        self._reach: dict[tuple[str, tuple[str, ...]], bool] = {}
        self._chain_words: dict[tuple[str, tuple[str, ...]], tuple[str, ...] | None] = {}
        # What an enabled check's references can be (for_symbol answers only those checks).
        self._reachable = [s for s, code in self._exact.items() if code in self._enabled]
        self._reachable += [p.split("*")[0] for p, code in self._patterns if code in self._enabled]
        # Pattern heads end inside a name (torch._C._jit_*): their last segment is partial.
        self._partial_heads = {p.split("*")[0] for p, _ in self._patterns}
        self._reachable_sorted = sorted(set(self._reachable))
        self._reachable_set = frozenset(self._reachable)

    def remembered(self, text: str, import_lines: list[tuple[int, int]] | None = None) -> set[str]:
        """The words the checks' `remember` patterns capture at a line's start of a file the
        prefilter skips; a pattern whose `remember_words` the text lacks is not tried (the
        framework imports: about 60% of the search on a large tree). `import_lines`: the
        lines holding "import" (textsearch.lines_holding), found here when not given."""
        words: set[str] = set()
        if self._remember_imports:
            if import_lines is None:
                import_lines = lines_holding(text, "import")
            for start, _ in import_lines:
                for regex in self._remember_imports:
                    match = regex.match(text, start)
                    if match:
                        words.update(w for w in match.groups() if w)
        kept = tuple(not words or any(w in text for w in words) for words, _ in self._remember)
        if kept not in self._remember_by_kept:
            chosen = [p for (_, p), keep in zip(self._remember, kept, strict=True) if keep]
            self._remember_by_kept[kept] = (
                re.compile("\n(?:" + "|".join(chosen) + ")") if chosen else None
            )
        regex = self._remember_by_kept[kept]
        if regex is None:
            return words
        found = regex.findall("\n" + text)
        words.update(w for m in found for w in ((m,) if isinstance(m, str) else m) if w)
        return words

    def python_check(self, code: str) -> PythonCheck:
        return self._enabled[code]

    def wants_parse(self, text: str) -> bool:
        """Whether a Python file's text holds a word some enabled check needs."""
        if self.python_prefilter.search(text):
            return True
        return any(a.search(text) and b.search(text) for a, b in self._prefilter_pairs)

    def hooks_for(self, text: str) -> dict[type, list[PythonCheck]]:
        """The node hooks that can act on a file with this text (`PythonCheck.hooked_types`):
        most files call no `.save` and pass no `torchscript=`, and every call of a parsed file
        would otherwise go to each of those checks."""
        types: dict[int, tuple[type, ...]] = {}
        for listed in self.node_hooks.values():
            for check in listed:
                if id(check) not in types:
                    types[id(check)] = check.hooked_types(text)
        key = tuple(types.items())
        hooks = self._hooks_by_types.get(key)
        if hooks is None:
            hooks = self._hooks_by_types[key] = {}
            for node_type, listed in self.node_hooks.items():
                chosen = [c for c in listed if node_type in types[id(c)]]
                if chosen:
                    hooks[node_type] = chosen
        return hooks

    def may_reach(self, qual: str, extra: tuple[str, ...] = ()) -> bool:
        """Whether a name bound to `qual` can start a chain for which `for_symbol` answers an
        enabled check (or that reaches one of `extra`): `qual` is such a symbol (a pattern's
        literal head), a module above one, or below one. Compared as strings, which admits
        more than the dotted relation, never less."""
        key = (qual, extra)
        found = self._reach.get(key)
        if found is None:
            found = self._meets_reachable(qual) or any(
                s.startswith(qual) or qual.startswith(s) for s in extra
            )
            self._reach[key] = found
        return found

    def _meets_reachable(self, qual: str) -> bool:
        """Whether a reachable symbol starts with `qual`, or `qual` starts with one: the first
        by the symbols' order, the second by each of `qual`'s prefixes (thousands of symbols,
        asked for each name a file imports)."""
        symbols = self._reachable_sorted
        at = bisect_left(symbols, qual)
        if at < len(symbols) and symbols[at].startswith(qual):
            return True
        return any(qual[:end] in self._reachable_set for end in range(len(qual) + 1))

    def chain_words(self, qual: str, extra: tuple[str, ...] = ()) -> tuple[str, ...] | None:
        """What a statement must spell to hold a reference that starts with a name bound to
        `qual` (`may_reach`), as regular expressions: None when the name alone can be one
        (`qual` is a symbol or lies under one); otherwise, for each symbol under `qual`, one
        segment of the path from `qual` down to it, which every chain reaching it writes out
        as a whole name (`import torch`: `\bjit\b` for torch.jit.*); a pattern's partial last
        segment is found inside the name (`_jit_` of torch._C._jit_*). Any segment would do:
        the longest, unless the path holds a segment already chosen (every torch.jit.X path
        holds `jit`)."""
        key = (qual, extra)
        if key in self._chain_words:
            return self._chain_words[key]
        chosen: list[str] | None = []
        found: list[str] = []
        for head in sorted({*self._reachable, *extra}, key=len):
            if qual.startswith(head) or (
                head.startswith(qual) and head[len(qual) : len(qual) + 1] != "."
            ):
                chosen = None  # at or under a symbol, or a prefix compared as a string
                break
            if not head.startswith(qual):
                continue
            segments = head[len(qual) + 1 :].split(".")
            partial = segments[-1] if head in self._partial_heads else ""
            named = [s for s in segments if s]
            if not named:  # a pattern right under `qual` (torch.jit.*): any attribute
                chosen = None
                break
            if any(s in chosen for s in named):
                continue
            word = max(named, key=len)
            chosen.append(word)
            found.append(re.escape(word) if word == partial else rf"\b{word}\b")
        result = None if chosen is None else tuple(found)
        self._chain_words[key] = result
        return result

    def for_symbol(self, qualname: str) -> PythonCheck | None:
        if qualname in self._cache:
            return self._cache[qualname]
        code: str | None = None
        parts = qualname.split(".")
        for cut in range(len(parts), 2, -1):
            code = self._exact.get(".".join(parts[:cut]))
            if code:
                break
        # Dunders (torch.jit.__name__) are module metadata, not private TorchScript API.
        if code is None and not parts[-1].startswith("__"):
            for pattern, pattern_code in self._patterns:
                if fnmatch.fnmatchcase(qualname, pattern):
                    code = pattern_code
                    break
        found = self._enabled.get(code) if code else None
        self._cache[qualname] = found
        return found

    def text_checks_for(self, path: PurePosixPath) -> list[TextCheck]:
        return [c for c in self.text if c.applies_to(path)]

    def text_checks_wanted(self, path: PurePosixPath, text: str) -> list[TextCheck]:
        """The text checks for this path whose prefilter the text passes."""
        checks = self.text_checks_for(path)
        if not checks:
            return checks
        key = tuple(map(id, checks))
        if key not in self._text_gates:
            every = all(c.prefilter for c in checks)
            self._text_gates[key] = WordSearch([c.prefilter for c in checks]) if every else None
        gate = self._text_gates[key]
        if gate is not None and not gate.search(text):
            return []
        return [c for c in checks if not c.prefilter or self._text_prefilters[id(c)].search(text)]
