"""What the `--test` gate found: the units kept and reverted, the tests that broke, the flaky
ones, the suite runs; as JSON (`--test-report`) and as the section of apply's text output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from migrate.fix.test_command import SuiteRun


@dataclass
class HeldWith:
    """A unit not tried once a unit it depends on was reverted: the planner holds it."""

    unit: int
    reason: str  # the planner's (what it assumed of the reverted unit)


@dataclass
class Reverted:
    unit: int
    tests: dict[str, str]  # test -> first line of its failure
    # The units whose plan assumed this one migrates, held with it without a trial of their own.
    held: list[HeldWith] = field(default_factory=list)

    def reason(self, units: list) -> str:
        """Why its dependents are held: the one real reason, for the whole group."""
        f = units[self.unit].findings[0]
        tests = ", ".join(sorted(self.tests))
        return f"{f.rule} at {f.path}:{f.line} stays: the tests failed with it ({tests})"


@dataclass
class GateReport:
    units: list  # the units the gate was given (plan.units.FixUnit)
    kept: list[int] = field(default_factory=list)
    reverted: list[Reverted] = field(default_factory=list)
    flaky: dict[str, str] = field(default_factory=dict)
    baseline_failing: list[str] = field(default_factory=list)
    runs: list[SuiteRun] = field(default_factory=list)
    seconds: float = 0.0
    command: str = ""
    estimate: int = 0
    # The suite never came back to its baseline: nothing is kept.
    unsettled: bool = False

    @property
    def suite_seconds(self) -> float:
        base = [r.seconds for r in self.runs if r.phase.startswith("baseline")]
        return base[0] if base else 0.0

    def to_dict(self) -> dict:
        def unit(i: int) -> dict:
            u = self.units[i]
            return {
                "fixes": [
                    {"rule": f.rule, "path": f.path, "line": f.line, "column": f.column}
                    for f in u.findings
                ],
                "applicability": sorted({str(f.applicability) for f in u.findings}),
            }

        return {
            "version": 1,
            "command": self.command,
            "kept": [unit(i) for i in self.kept],
            "reverted": [
                {
                    **unit(r.unit),
                    "broke": [{"test": t, "failure": m} for t, m in r.tests.items()],
                    "held_with": [{**unit(h.unit), "plan": h.reason} for h in r.held],
                }
                for r in self.reverted
            ],
            "flaky": [{"test": t, "why": why} for t, why in sorted(self.flaky.items())],
            "baseline_failing": self.baseline_failing,
            "unsettled": self.unsettled,
            "runs": [r.to_dict() for r in self.runs],
            "suite_runs": len(self.runs),
            "estimated_runs": self.estimate,
            "seconds": round(self.seconds, 3),
            "one_suite_seconds": round(self.suite_seconds, 3),
        }


def _where(unit) -> str:
    f = unit.findings[0]
    rules = "+".join(dict.fromkeys(m.rule for m in unit.findings))
    more = f" (group of {len(unit.findings)})" if len(unit.findings) > 1 else ""
    return f"{f.path}:{f.line}:{f.column} {rules}{more}"


def load_report(path: Path) -> dict:
    """A --test-report JSON file, or ValueError naming the file and what is wrong."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--test-report {path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--test-report {path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or "reverted" not in doc:
        raise ValueError(f"--test-report {path}: not a `migrate apply --test` report")
    return doc


def render_text(report: GateReport) -> str:
    """The --test section of apply's text output."""
    lines = [f"Tested with `{report.command}`:"]
    kept = sum(len(report.units[i].findings) for i in report.kept)
    lines.append(f"  kept {kept} fix{'es' * (kept != 1)} ({len(report.kept)} units)")
    for r in report.reverted:
        lines.append(f"  reverted {_where(report.units[r.unit])}: it broke")
        lines.extend(f"    {test}: {message}" for test, message in sorted(r.tests.items()))
        if r.held:
            lines.append(f"    held with it, not tried (because {r.reason(report.units)}):")
            lines.extend(f"      {_where(report.units[h.unit])}: {h.reason}" for h in r.held)
    if report.baseline_failing:
        n = len(report.baseline_failing)
        lines.append(f"  {n} test{'s' * (n != 1)} already failing before any fix: ignored")
    for test, why in sorted(report.flaky.items()):
        lines.append(f"  flaky, ignored: {test} ({why})")
    if report.unsettled:
        lines.append("  the suite never came back to its baseline: no fix kept")
    suite = report.suite_seconds
    ratio = f", {report.seconds / suite:.1f}x one suite run ({suite:.1f} s)" if suite else ""
    lines.append(
        f"  {len(report.runs)} suite runs (estimate {report.estimate}) in "
        f"{report.seconds:.1f} s{ratio}"
    )
    return "\n".join(lines) + "\n"
