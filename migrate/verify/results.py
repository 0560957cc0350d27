"""What `migrate verify` found: one `Cell` per candidate and device, the `Report` over them
(its verdict and exit code, its JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from migrate.verify.branch_check import BranchCheck
from migrate.verify.compare import LeafResult, json_float

SCHEMA_VERSION = 1


@dataclass
class Cell:
    """One candidate on one device, over all samples."""

    device: str
    candidate: str
    kind: str
    status: str  # pass | fail | error
    samples: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: dict[str, Any] | None = None  # {sample, leaf, index, ...}
    leaves: list[LeafResult] = field(default_factory=list)  # leaves of the worst sample
    error: dict[str, str] | None = None  # {stage, message}
    latency_ms: float | None = None
    reference_latency_ms: float | None = None
    divergence: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    bench: dict[str, Any] | None = None  # median/min/p90/calls/load with --bench

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "candidate": self.candidate,
            "kind": self.kind,
            "status": self.status,
            "samples": self.samples,
            "max_abs": json_float(self.max_abs),
            "max_rel": json_float(self.max_rel),
            "worst": self.worst,
            "leaves": [leaf.to_json() for leaf in self.leaves],
            "error": self.error,
            "latency_ms": self.latency_ms,
            "reference_latency_ms": self.reference_latency_ms,
            "bench": self.bench,
            "first_divergence": self.divergence,
            "notes": self.notes,
        }


@dataclass
class Report:
    target: str
    target_kind: str
    reference: str
    devices: list[str]
    samples: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    cells: list[Cell]
    artifacts: dict[str, str]
    errors: list[dict[str, str]]
    notes: list[str]
    seed: int
    bench: bool
    elapsed_s: float = 0.0
    branches: BranchCheck | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    recovery: list[dict[str, Any]] = field(default_factory=list)  # per method, archives only
    latency: dict[str, Any] | None = None  # with --bench: what was timed, threads, reference

    @property
    def exit_code(self) -> int:
        # A mismatch found is the verdict (1) even when another candidate could not be
        # built or run (a lowering that refused the differing program): that is a note.
        if any(c.status == "fail" for c in self.cells):
            return 1
        if self.branches is not None and self.branches.status == "fail":
            return 1
        if self.errors or any(c.status == "error" for c in self.cells):
            return 2
        if self.branches is not None and self.branches.status == "error":
            return 2
        return 0

    @property
    def verdict(self) -> str:
        return {0: "pass", 1: "mismatch", 2: "error"}[self.exit_code]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": "migrate verify",
            "target": self.target,
            "target_kind": self.target_kind,
            "reference": self.reference,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "seed": self.seed,
            "devices": self.devices,
            "samples": self.samples,
            "candidates": self.candidates,
            "results": [c.to_json() for c in self.cells],
            "artifacts": self.artifacts,
            "errors": self.errors,
            "notes": self.notes,
            "settings": self.settings,
            "branches": None if self.branches is None else self.branches.to_json(),
            "recovery": self.recovery,
            "latency": self.latency,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def cell_reason(cell: Cell) -> str:
    """Why a cell did not pass, in one phrase: its error, else its worst leaf."""
    if cell.error:
        return cell.error["message"]
    where = cell.worst or {}
    return f"{where.get('leaf')} on sample {where.get('sample')}: max abs {cell.max_abs:.3g}" + (
        f" ({where['note']})" if where.get("note") else ""
    )


def first_error(cells: list[Cell]) -> dict[str, str] | None:
    for c in cells:
        if c.error:
            return c.error
    return None
