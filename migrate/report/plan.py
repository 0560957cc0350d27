"""`migrate report`: a migration plan for a whole repository, as Markdown or one HTML page.

The plan is built from one scan plus a dry run of `migrate apply` (nothing is written):
counts per rule, folder and fix kind; what apply would change; the assisted and manual
items with the rule's guidance; the CUDA (MIG3xx) findings; a rough effort estimate. This
module builds it and holds the wording both pages share; `plan_markdown` and `plan_html`
render it.
"""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from migrate.findings import FileError, Finding, FixKind
from migrate.registry import Rule, all_rules
from migrate.report.batch_results import BatchResults
from migrate.report.intent import intent_line, shown

# The effort estimate, in minutes per item (documented in docs/report.md).
# auto: read the diff and rerun the tests; auto, not applied: apply's edits overlapped
# another fix, so a person makes the same edit by hand; assisted: the tool names the target
# but a person supplies inputs or picks a branch; manual: follow the rule's recipe.
EFFORT_MINUTES = {
    "auto": 2,
    "auto, not applied": 10,
    "assisted": 15,
    "manual": 45,
}
# Plus a fixed cost per Python file that apply changes: run `migrate verify` on its models.
VERIFY_MINUTES_PER_FILE = 5

TABLE_ROWS = 200  # a longer table is cut, saying how many rows are left out


@dataclass
class FileChange:
    path: str
    findings: int
    added: int
    removed: int
    rules: list[str]


@dataclass
class ReviewItem:
    finding: Finding
    status: str  # "assisted", "manual", "auto, not applied", or "auto" (CUDA list only)
    todo: bool = False  # apply leaves a TODO comment at the spot


@dataclass
class EffortLine:
    label: str
    count: int
    minutes_each: int

    @property
    def minutes(self) -> int:
        return self.count * self.minutes_each


@dataclass
class PlanReport:
    root: str
    files_scanned: int
    findings: list[Finding]
    errors: list[FileError]
    by_rule: list[tuple[str, int]]
    by_folder: list[tuple[str, int]]
    by_fix: dict[str, int]
    changes: list[FileChange]
    applied_by_rule: list[tuple[str, int]]
    review: dict[str, list[ReviewItem]]
    cuda: list[ReviewItem]
    effort: list[EffortLine] = field(default_factory=list)
    rules: dict[str, Rule] = field(default_factory=dict)
    # `migrate apply --test --test-report FILE`'s JSON, shown by the HTML plan.
    tests: dict | None = None
    batch_results: BatchResults | None = None  # --verify-results: what a batch found
    intent: str = ""  # the migration intent line (migrate.report.intent), "" when not shown

    @property
    def applied_total(self) -> int:
        return sum(c.findings for c in self.changes)

    @property
    def fixed_total(self) -> int:
        """Findings outside MIG3xx that apply fixes: with review_total and the CUDA list,
        every finding is counted once (the HTML cards add up)."""
        return sum(1 for f in self.findings if not _is_cuda(f.rule)) - self.review_total

    @property
    def applied_line(self) -> str:
        """ "6 findings fixed (4 TorchScript, 2 CUDA 12.8)": the apply section's
        count said in the cards' terms, so the page never shows two different "fixed"."""
        cuda = self.applied_total - self.fixed_total
        split = f" ({self.fixed_total} TorchScript, {cuda} CUDA 12.8)" if cuda > 0 else ""
        return f"{counted(self.applied_total, 'finding')} fixed{split}"

    @property
    def review_total(self) -> int:
        return sum(len(items) for items in self.review.values())

    @property
    def effort_minutes(self) -> int:
        return sum(e.minutes for e in self.effort)

    @property
    def title(self) -> str:
        """The repository's folder name (`.` says nothing in a browser tab)."""
        return os.path.basename(os.path.abspath(self.root)) or self.root

    def rule_name(self, code: str) -> str:
        rule = self.rules.get(code)
        return rule.name if rule else ""

    def _rule_fix(self, code: str) -> str:
        rule = self.rules.get(code)
        return rule.fix.value if rule else "manual"

    def found_kinds(self, code: str) -> list[str]:
        """The fix kinds a rule's findings actually carry (a rule's `auto` can be `assisted`
        at a call it cannot rewrite), most common first, the less automatic one on a tie."""
        order = [kind.value for kind in FixKind]
        counts = Counter(f.fix.value for f in self.findings if f.rule == code)
        return sorted(counts, key=lambda k: (-counts[k], -order.index(k))) or [self._rule_fix(code)]

    def serving_groups(self) -> tuple[list[tuple[Finding, list]], list[str]]:
        """Serving code outside Python (MIG4xx): each Python writer with the native files that
        load its archive (`served_by`, migrate.facts.serving), and the native files that no
        Python code of the repository feeds."""
        writers = [(f, list(f.get("served_by"))) for f in self.findings if f.get("served_by")]
        linked = {path for _, uses in writers for _, path, _, _ in uses}
        native = sorted({f.path for f in self.findings if f.rule.startswith("MIG4")})
        return writers, [p for p in native if p not in linked]


def folder_of(path: str, root: str) -> str:
    """The folder of a finding's file, relative to the report's root ("." for the root)."""
    rel = os.path.relpath(path, root) if os.path.isdir(root) else os.path.basename(path)
    rel = rel.replace(os.sep, "/")
    return posixpath.dirname(rel) or "."


def _diff_stats(diff: str) -> tuple[int, int]:
    added = removed = 0
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif not in_hunk:  # the ---/+++ file header
            continue
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _ranked(counter: Counter) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))


def _is_cuda(code: str) -> bool:
    return code.startswith("MIG3")


def build_plan(root: str, options, progress: Callable[[int], None] | None = None) -> PlanReport:
    """Scan `root` and dry-run apply on it (nothing is written)."""
    from migrate.pipeline.apply import run_apply

    # The plan is where a team chooses its intent: without one it counts what each would fix.
    options = replace(options, compare_intents=True)
    # The plan shows every automatic fix, unsafe ones too (each marked as such).
    result = run_apply([root], options, dry_run=True, unsafe_fixes=True, progress=progress)
    scan = result.scan
    rules = all_rules()
    findings = scan.findings
    applied = {f for f in result.applied}

    by_fix = {kind.value: 0 for kind in FixKind}
    for f in findings:
        by_fix[f.fix.value] += 1

    changes = []
    applied_by_rule: Counter = Counter()
    for fix in sorted(result.changed, key=lambda x: x.path):
        added, removed = _diff_stats(fix.diff())
        codes = Counter(a.rule for a in fix.applied)
        applied_by_rule.update(codes)
        changes.append(FileChange(fix.path, len(fix.applied), added, removed, sorted(codes)))

    review: dict[str, list[ReviewItem]] = {}
    cuda: list[ReviewItem] = []
    effort_counts: Counter = Counter()
    for f in findings:
        done = f in applied
        if f.fix is FixKind.AUTO:
            status = "auto" if done else "auto, not applied"
        else:
            status = f.fix.value
        effort_counts[status] += 1
        item = ReviewItem(f, status, todo=done and f.fix is FixKind.ASSISTED)
        if _is_cuda(f.rule):
            cuda.append(item)
        elif status != "auto":
            review.setdefault(f.rule, []).append(item)

    effort = [
        EffortLine(label, effort_counts[label], minutes)
        for label, minutes in EFFORT_MINUTES.items()
        if effort_counts[label]
    ]
    python_changed = [c for c in changes if c.path.endswith((".py", ".pyi"))]
    if python_changed:
        effort.append(
            EffortLine(
                "run migrate verify (per changed Python file)",
                len(python_changed),
                VERIFY_MINUTES_PER_FILE,
            )
        )
    return PlanReport(
        root=root,
        files_scanned=scan.files_seen,
        findings=findings,
        errors=list(result.errors),
        by_rule=_ranked(Counter(f.rule for f in findings)),
        by_folder=_ranked(Counter(folder_of(f.path, root) for f in findings)),
        by_fix=by_fix,
        changes=changes,
        applied_by_rule=_ranked(applied_by_rule),
        review=dict(sorted(review.items())),
        cuda=cuda,
        effort=effort,
        rules=rules,
        intent=intent_line(scan) if shown(scan) else "",
    )


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def hours(minutes: int) -> str:
    """Minutes as a rough figure: '45 min', '2.5 h' (rounded up to the half hour)."""
    if minutes < 60:
        return f"{minutes} min"
    half_hours = -(-minutes // 30)
    value = half_hours / 2
    return f"{value:g} h"


def rule_guidance(
    rule: Rule | None, items: list[ReviewItem] | None = None
) -> list[tuple[str, str]]:
    """What a review section says about its rule: what to use instead, and the short fix
    safety only where an automatic fix is in question (for assisted and manual items it
    would introduce them with "Unsafe: ..."; the long form stays one click away)."""
    if rule is None:
        return []
    auto = items is None or any(i.status.startswith("auto") for i in items)
    return [
        (label, text)
        for label, text in (
            ("Use instead", rule.use_instead),
            ("Fix safety", rule.fix_safety if auto else ""),
        )
        if text
    ]


def location(f: Finding) -> str:
    return f"{f.path}:{f.line}:{f.column}"


EFFORT_NOTE = (
    "A rough figure for planning, not a promise: minutes per finding by how far the tool "
    "takes it (auto 2, auto not applied 10, assisted 15, manual 45) plus 5 per Python "
    "file that apply changes, for running `migrate verify` on the models it touches."
)
