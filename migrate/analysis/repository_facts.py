"""What the files of a repository tell each other: the scan's repository pass.

In phase 1 each parsed file tells the others what they may need of it (`FileFacts`, a
check's `ctx.facts`): the wrappers it defines, the names it re-exports, what it scripts and
where. After phase 1 the scan merges what every file told, by union over the repository,
with the `remember` words of the files the prefilter skipped (`RepositoryFacts.merge`), and
analyses the files that asked again with the merged facts (a check's `ctx.repo_facts`).

Each kind of fact is a key of those mappings, spelled here only; checks, the scan engine
and the pipeline ask for a kind by its accessor. Underneath, both objects are still the
mapping of key -> strings: that is what a scan's cache stores and what a process pool's
workers receive (pickled once per process). The structures derived from the merged facts
(the import index, the first place of each kind, the published example inputs by class, and
the checks' own: the decoded wrappers, the captured-class index) are the same for every
file, so `RepositoryFacts.built` builds each on the first ask and keeps it with the facts:
the repository pass costs the files it analyses, not files times facts.

After the scan the merged facts go on to the planner as they are, inside the one facts object
it reads (migrate.facts.RepoFacts.repository_facts), derived structures included: what a
file tells here is not searched for again there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from migrate.analysis.names import ImportIndex

T = TypeVar("T")

# The kinds of fact: each a key of a file's facts and of the merged ones.
WRAPPERS = "wrappers"  # the encoded wrappers (checks.repository_wrappers) a file defines
REEXPORTS = "reexports"  # "module.name=qualname" of a file's module-level imports
CALLS = "calls"  # qualnames a file imports (from elsewhere) or calls
TOP_LEVEL_DEFS = "top_level_defs"  # module.name of every top-level def and class
SCRIPTED_IMPORTS = "scripted_imports"  # qualnames a file scripts, imported from elsewhere
STATIC_INPUTS = "static_inputs"  # "pkg.mod.Cls {json}": what a class with a forward fixes
STATIC_ASKED = "static_asked"  # qualnames of classes scripted by a file, defined elsewhere
CAPTURED_CLASSES = "captured_classes"  # classes a file captures (checks._captures)
DEFINED_CLASSES = "defined_classes"  # names of the classes a file defines
# Places ("path:line") where a file still scripts, traces, or exports to ONNX with the
# TorchScript-based exporter: what keeps `is_scripting()` / `is_tracing()` answering.
SCRIPTS, TRACES, ONNX_EXPORTS = "scripts", "traces", "onnx_exports"
PLACES = (SCRIPTS, TRACES, ONNX_EXPORTS)
TORCHSCRIPT_ASKS = "torchscript_asks"  # `is_scripting` / `is_tracing`, when a file calls it
_REMEMBERED = "remembered:"  # + module: a skipped file's `remember` words
# Changed with any key above: a scan's cache holds the files' facts under their keys, and
# one written with other keys is not read (migrate.scan.engine keys the cache with it).
KEYS_VERSION = 3


def _framework_users(code: str) -> str:
    return f"{code}:users"  # modules that import a framework rule's framework


def _framework_asks(code: str) -> str:
    return f"{code}:asks"  # modules a file imports, asking whether they import it


class Facts:
    """Facts by kind, read from a mapping of key -> strings."""

    __slots__ = ("_facts",)

    def __init__(self, facts: Mapping[str, Collection[str]] | None = None) -> None:
        self._facts: Mapping[str, Collection[str]] = facts if facts is not None else {}

    def __bool__(self) -> bool:
        return bool(self._facts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._facts)!r})"

    def _get(self, key: str) -> Collection[str]:
        return self._facts.get(key, ())

    def wrappers(self) -> Collection[str]:
        """The encoded wrappers (checks.repository_wrappers.Wrapper.encode) defined."""
        return self._get(WRAPPERS)

    def reexports(self) -> Collection[str]:
        """ "module.name=qualname" of the module-level imports."""
        return self._get(REEXPORTS)

    def calls(self) -> Collection[str]:
        """Qualnames of the repository functions called."""
        return self._get(CALLS)

    def top_level_defs(self) -> Collection[str]:
        """module.name of every top-level def and class."""
        return self._get(TOP_LEVEL_DEFS)

    def scripted_imports(self) -> Collection[str]:
        """Qualnames scripted but imported from another module (is it a function, a class?)."""
        return self._get(SCRIPTED_IMPORTS)

    def static_inputs(self) -> Collection[str]:
        """ "pkg.mod.Cls {json}": the example inputs a class's source fixes, or why not."""
        return self._get(STATIC_INPUTS)

    def static_asked(self) -> Collection[str]:
        """Qualnames of classes scripted without example inputs, defined elsewhere."""
        return self._get(STATIC_ASKED)

    def captured_classes(self) -> Collection[str]:
        """The classes capture calls reach (checks._captures.shared_fact)."""
        return self._get(CAPTURED_CLASSES)

    def defined_classes(self) -> Collection[str]:
        """The names of the classes defined."""
        return self._get(DEFINED_CLASSES)

    def places(self, kind: str) -> Collection[str]:
        """ "path:line" of each place of a kind in PLACES (scripts, traces, ONNX exports)."""
        return self._get(kind)

    def torchscript_asks(self) -> Collection[str]:
        """`is_scripting` / `is_tracing`, for each of them called."""
        return self._get(TORCHSCRIPT_ASKS)

    def framework_users(self, code: str) -> Collection[str]:
        """The modules that import the framework of the rule `code`."""
        return self._get(_framework_users(code))

    def framework_asks(self, code: str) -> Collection[str]:
        """The modules asked whether they import the framework of the rule `code`."""
        return self._get(_framework_asks(code))


class FileFacts(Facts):
    """What one parsed file tells the others (a check's `ctx.facts`): each `tell_`/`ask_`
    adds to one kind."""

    __slots__ = ()

    def __init__(self, told: dict[str, set[str]] | None = None) -> None:
        super().__init__(told if told is not None else {})

    def told(self) -> dict[str, set[str]]:
        """The mapping under the facts (what the scan keeps of the file and merges)."""
        return self._facts  # type: ignore[return-value]

    def _add(self, key: str, values: Iterable[str]) -> None:
        self.told().setdefault(key, set()).update(values)

    def tell_wrappers(self, encoded: Iterable[str]) -> None:
        self._add(WRAPPERS, encoded)

    def tell_reexports(self, exports: Iterable[str]) -> None:
        self._add(REEXPORTS, exports)

    def tell_calls(self, calls: Iterable[str]) -> None:
        self._add(CALLS, calls)

    def tell_top_level_defs(self, names: Iterable[str]) -> None:
        self._add(TOP_LEVEL_DEFS, names)

    def ask_scripted_import(self, qual: str) -> None:
        self._add(SCRIPTED_IMPORTS, (qual,))

    def tell_static_inputs(self, facts: Iterable[str]) -> None:
        self._add(STATIC_INPUTS, facts)

    def ask_static_inputs(self, qual: str) -> None:
        self._add(STATIC_ASKED, (qual,))

    def tell_captured_classes(self, names: Iterable[str]) -> None:
        self._add(CAPTURED_CLASSES, names)

    def tell_defined_classes(self, names: Iterable[str]) -> None:
        self._add(DEFINED_CLASSES, names)

    def tell_places(self, kind: str, places: Iterable[str]) -> None:
        self._add(kind, places)

    def ask_torchscript(self, name: str) -> None:
        self._add(TORCHSCRIPT_ASKS, (name,))

    def tell_framework_user(self, code: str, module: str) -> None:
        self._add(_framework_users(code), (module,))

    def ask_framework(self, code: str, modules: Iterable[str]) -> None:
        self._add(_framework_asks(code), modules)


class RepositoryFacts(Facts):
    """What every file told, merged over the repository (a check's `ctx.repo_facts`), with
    the words the files the prefilter skipped remembered, and the structures derived from
    them, built once."""

    __slots__ = ("_built",)

    def __init__(self, facts: Mapping[str, frozenset[str]] | None = None) -> None:
        super().__init__(facts)
        self._built: dict[str, Any] = {}

    def __reduce__(self) -> tuple:
        # Pickled as the mapping alone (the cache, a pool's workers): derived ones are rebuilt.
        return (type(self), (dict(self._facts),))

    @classmethod
    def merge(
        cls,
        told: Iterable[Mapping[str, Iterable[str]]],
        remembered: Iterable[tuple[str, Iterable[str]]],
    ) -> RepositoryFacts:
        """The union of what the files told; with the `remember` words of the skipped files
        (module, words) only when some file told something (no facts: no repository pass)."""
        merged: dict[str, set[str]] = {}
        for facts in told:
            for key, values in facts.items():
                merged.setdefault(key, set()).update(values)
        if not merged:
            return cls()
        for module, words in remembered:
            merged.setdefault(f"{_REMEMBERED}{module}", set()).update(words)
        return cls({key: frozenset(values) for key, values in merged.items()})

    @classmethod
    def of_captured_classes(cls, names: Iterable[str]) -> RepositoryFacts:
        """Facts saying only that these classes are captured (a model's source, alone)."""
        return cls({CAPTURED_CLASSES: frozenset(names)})

    @classmethod
    def of_places(cls, places: Mapping[str, Iterable[str]]) -> RepositoryFacts:
        """Facts holding only places (kind in PLACES -> "path:line")."""
        return cls({kind: frozenset(found) for kind, found in places.items()})

    def remembered(self, module: str) -> Collection[str]:
        """The `remember` words of the skipped file of this module."""
        return self._get(f"{_REMEMBERED}{module}")

    def remembered_modules(self) -> Iterator[tuple[str, Collection[str]]]:
        """(module, its `remember` words) of every skipped file that remembered some."""
        for key, words in self._facts.items():
            if key.startswith(_REMEMBERED):
                yield key[len(_REMEMBERED) :], words

    def built(self, name: str, build: Callable[[], T]) -> T:
        """`build()`, computed on the first ask under `name` and kept with these facts."""
        if name not in self._built:
            self._built[name] = build()
        return self._built[name]  # type: ignore[no-any-return]

    def import_index(self) -> ImportIndex:
        """The repository's import index (module.name -> what it stands for), from the
        parsed files' re-exports and the skipped files' remembered `from` lines."""
        if not self:
            return _NO_INDEX
        return self.built(
            "import index", lambda: ImportIndex(self.reexports(), self.remembered_modules())
        )

    def first_places(self) -> dict[str, str]:
        """The first place (in sorted order) of each kind in PLACES that has one."""
        return self.built(
            "first places", lambda: {k: min(self.places(k)) for k in PLACES if self.places(k)}
        )

    def static_inputs_by_class(self) -> dict[str, str]:
        """{class qualname: its published STATIC_INPUTS fact}, the first one of each class."""

        def build() -> dict[str, str]:
            found: dict[str, str] = {}
            for fact in self.static_inputs():
                found.setdefault(fact.partition(" ")[0], fact)
            return found

        return self.built("static inputs", build)


_NO_INDEX = ImportIndex((), ())
NO_FACTS = RepositoryFacts()  # the facts of a file analysed without a repository pass
