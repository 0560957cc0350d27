"""The records every stage passes along: findings, fix kinds, per-file errors."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Edit:
    """Replace text[start:end] (character offsets) with `text`; "\\n" follows the file's newline."""

    start: int
    end: int
    text: str


class Applicability(str, enum.Enum):
    """What a fix promises (ruff's applicability): which runs may write it."""

    SAFE = "safe"  # every caller in the repository sees the same behaviour
    UNSAFE = "unsafe"  # right in the common case; the rule's fix_safety says how it can differ
    DISPLAY = "display"  # shown as a suggestion, never written

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class ImportSpec:
    """An import a fix needs: `import module [as alias]` or `from module import name [as alias]`."""

    module: str
    name: str | None = None
    alias: str | None = None

    @classmethod
    def parse(cls, spec: str) -> ImportSpec:
        """'import a.b [as c]' or 'from a.b import c [as d]'."""
        words = spec.split()
        if words[0] == "import":
            return cls(words[1], None, words[3] if len(words) > 3 else None)
        return cls(words[1], words[3], words[5] if len(words) > 5 else None)

    @property
    def bound_name(self) -> str:
        """The name this import binds in the module."""
        if self.alias:
            return self.alias
        return self.name if self.name else self.module.split(".")[0]

    def statement(self) -> str:
        alias = f" as {self.alias}" if self.alias else ""
        if self.name is None:
            return f"import {self.module}{alias}"
        return f"from {self.module} import {self.name}{alias}"


@dataclass(frozen=True)
class Fix:
    """One finding's fix: text edits, the imports they need, what it promises, its group.

    Fixes that share a `group` are written together or not at all; `members` names every
    finding of the group (`RULE@line:column`) so that a run missing one of them (deselected,
    suppressed, held back) writes none of it.
    """

    edits: tuple[Edit, ...]
    imports: tuple[ImportSpec, ...] = ()
    applicability: Applicability = Applicability.SAFE
    group: str | None = None
    members: tuple[str, ...] = ()
    # (path, key) of the findings this one is fixed with: a call of the repository's own
    # wrapper (MIG121) needs no edit and is fixed exactly when its wrapper's body is
    # (plan.units joins it to their unit, in the wrapper's file).
    rides: tuple[tuple[str, str], ...] = ()


class FixKind(str, enum.Enum):
    """How far `migrate apply` can take a finding (see STYLE: auto / assisted / manual)."""

    AUTO = "auto"
    ASSISTED = "assisted"
    MANUAL = "manual"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class Finding:
    """One reported use of a deprecated API or a CUDA 12.8 assumption.

    Lines are 1-based; columns are 1-based character offsets (as ruff prints them);
    the end is exclusive.
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    symbol: str
    message: str
    fix: FixKind = FixKind.MANUAL
    # Rule-specific data (kept out of reports).
    data: tuple[tuple[str, Any], ...] = field(default=(), compare=False, repr=False)
    # The edits `migrate apply` may write, with their promise; None for assisted/manual.
    autofix: Fix | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        """How a group fix names its members."""
        return f"{self.rule}@{self.line}:{self.column}"

    @property
    def applicability(self) -> Applicability | None:
        return self.autofix.applicability if self.autofix is not None else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("data")
        d.pop("autofix")
        d["fix"] = self.fix.value
        d["applicability"] = self.applicability.value if self.applicability else None
        return d

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.data:
            if k == key:
                return v
        return default


@dataclass(frozen=True, order=True)
class FileError:
    """A file the tool could not handle; the run goes on without it."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_seen: int = 0
    files_parsed: int = 0
    # Named or found but not read (a FIFO, a file over the size cap, a type no rule reads,
    # a folder holding nothing to read): one note each, on stderr; not an error.
    skipped: list[FileError] = field(default_factory=list)

    @property
    def read_nothing(self) -> bool:
        """Nothing at all was read: every input was skipped or could not be read."""
        return self.files_seen == 0 and bool(self.skipped or self.errors)

    intent: str | None = None  # the migration intent the fixes were planned for
    # Without one, when the findings are TorchScript ones: the fixes the run would write per
    # site ("none") and under each intent (fixplan.attach_unlocks, `--compare-intents`); {}
    # when the comparison was not asked for.
    unlocks: dict[str, int] | None = None
    evidence: str | None = None  # the `migrate record` evidence file the checks read

    def sort(self) -> None:
        self.findings.sort(key=lambda f: (f.path, f.line, f.column, f.rule))
        self.errors.sort()
        self.skipped.sort()
