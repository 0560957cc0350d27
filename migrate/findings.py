"""The records every stage passes along: findings, fix kinds, per-file errors."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


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
    # Rule-specific data the fixer needs (kept out of reports).
    data: tuple[tuple[str, Any], ...] = field(default=(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("data")
        d["fix"] = self.fix.value
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

    def sort(self) -> None:
        self.findings.sort(key=lambda f: (f.path, f.line, f.column, f.rule))
        self.errors.sort()
