"""`migrate report`: a migration plan for a whole repository, as Markdown or one HTML page.

The plan is built from one scan plus a dry run of `migrate apply` (nothing is written):
counts per rule, folder and fix kind; what apply would change; the assisted and manual
items with the rule's guidance; the CUDA (MIG3xx) findings; a rough effort estimate.
"""

from __future__ import annotations

import html
import os
import posixpath
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date

from migrate.findings import FileError, Finding, FixKind
from migrate.printable import printable
from migrate.registry import Rule, all_rules
from migrate.report.batch_results import BatchResults
from migrate.report.batch_results import render_html as batch_results_html
from migrate.report.batch_results import render_markdown as batch_results_markdown
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

CHART_ROWS = 15
TABLE_ROWS = 200

FIX_COLORS = {"auto": "#2e7d32", "assisted": "#c77800", "manual": "#8e24aa"}


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
        return f"{_count(self.applied_total, 'finding')} fixed{split}"

    @property
    def review_total(self) -> int:
        return sum(len(items) for items in self.review.values())

    @property
    def effort_minutes(self) -> int:
        return sum(e.minutes for e in self.effort)


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


def serving_groups(plan: PlanReport) -> tuple[list[tuple[Finding, list]], list[str]]:
    """Serving code outside Python (MIG4xx): each Python writer with the native files that
    load its archive (`served_by`, migrate.facts.serving), and the native files that no
    Python code of the repository feeds."""
    writers = [(f, list(f.get("served_by"))) for f in plan.findings if f.get("served_by")]
    linked = {path for _, uses in writers for _, path, _, _ in uses}
    native = sorted({f.path for f in plan.findings if f.rule.startswith("MIG4")})
    return writers, [p for p in native if p not in linked]


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


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def hours(minutes: int) -> str:
    """Minutes as a rough figure: '45 min', '2.5 h' (rounded up to the half hour)."""
    if minutes < 60:
        return f"{minutes} min"
    half_hours = -(-minutes // 30)
    value = half_hours / 2
    return f"{value:g} h"


def _rule_name(plan: PlanReport, code: str) -> str:
    rule = plan.rules.get(code)
    return rule.name if rule else ""


def _rule_fix(plan: PlanReport, code: str) -> str:
    rule = plan.rules.get(code)
    return rule.fix.value if rule else "manual"


def _found_kinds(plan: PlanReport, code: str) -> list[str]:
    """The fix kinds a rule's findings actually carry (a rule's `auto` can be `assisted`
    at a call it cannot rewrite), most common first, the less automatic one on a tie."""
    order = [kind.value for kind in FixKind]
    counts = Counter(f.fix.value for f in plan.findings if f.rule == code)
    return sorted(counts, key=lambda k: (-counts[k], -order.index(k))) or [_rule_fix(plan, code)]


def plan_title(plan: PlanReport) -> str:
    """The repository's folder name (`.` says nothing in a browser tab)."""
    return os.path.basename(os.path.abspath(plan.root)) or plan.root


def _guidance(rule: Rule | None, items: list[ReviewItem] | None = None) -> list[tuple[str, str]]:
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


def _long_form(rule: Rule | None, items: list[ReviewItem]) -> str:
    """The HTML plan's collapsed part: the fix safety when it is not shown, and the details."""
    if rule is None:
        return ""
    parts = []
    if not any(i.status.startswith("auto") for i in items) and rule.fix_safety:
        parts.append(rule.fix_safety)
    parts += [p for p in rule.details.split("\n") if p.strip()]
    if not parts:
        return ""
    body = "".join(f"<p>{_inline(p)}</p>" for p in parts)
    return (
        f"<details class=more><summary>Fix safety and details "
        f"(<code>migrate explain {html.escape(rule.code)}</code>)</summary>{body}</details>"
    )


# --------------------------------------------------------------------------- markdown


def _md_cell(text: str) -> str:
    """A table cell from the tree (a file name): one line, control characters and HTML
    escaped (a Markdown viewer renders `<img src=x>` in a cell as an image)."""
    return html.escape(printable(" ".join(str(text).split())), quote=False).replace("|", "\\|")


def _md_code(text: str) -> str:
    """`text` as a code span, which shows it as it is: fenced by more backticks than any run
    it holds, so a backtick in a file name cannot end the span early."""
    text = printable(str(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_text(text: str) -> str:
    """A message (its code in backticks) as Markdown: control characters escaped, HTML
    escaped outside its code spans."""
    parts = printable(text).split("`")
    if len(parts) % 2 == 0:  # a lone backtick opens no span: what follows it is text
        parts[-2:] = [parts[-2] + "\\`" + parts[-1]]
    return "`".join(
        html.escape(part, quote=False) if i % 2 == 0 else part for i, part in enumerate(parts)
    )


def _md_table(headers: list[str], rows: list[list], limit: int = TABLE_ROWS) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows[:limit]:
        lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    if len(rows) > limit:
        lines.append(f"\n… and {len(rows) - limit} more rows.")
    return lines


def _where(f: Finding) -> str:
    return f"{f.path}:{f.line}:{f.column}"


def render_markdown(plan: PlanReport) -> str:
    n = len(plan.findings)
    files = len({f.path for f in plan.findings})
    out = [
        f"# Migration plan: {_md_text(plan_title(plan))}",
        "",
        f"Generated by `migrate report` on {date.today().isoformat()}.",
        "",
        "## Summary",
        "",
        f"- Files scanned: {plan.files_scanned}",
        f"- Findings: {n} in {_count(files, 'file')}",
        f"- Fixed automatically by `migrate apply`: {plan.fixed_total}",
        f"- Left for a person (assisted, manual, auto not applied): {plan.review_total}",
        f"- CUDA 12.8 findings (MIG3xx, fixed or not): {len(plan.cuda)}",
        f"- Rough effort: {hours(plan.effort_minutes)}",
        *([f"- {plan.intent}"] if plan.intent else []),
        "",
    ]
    if plan.errors:
        out += [f"- Files that could not be read or parsed: {len(plan.errors)}", ""]

    out += ["## Findings per rule", ""]
    out += _md_table(
        ["Rule", "Name", "Fix", "Findings"],
        [[c, _rule_name(plan, c), ", ".join(_found_kinds(plan, c)), k] for c, k in plan.by_rule],
    )
    out += ["", "## Findings per folder", ""]
    out += _md_table(["Folder", "Findings"], [[d, k] for d, k in plan.by_folder])
    out += ["", "## Findings per fix kind", ""]
    out += _md_table(["Fix", "Findings"], [[k, v] for k, v in plan.by_fix.items()])

    out += ["", "## What `migrate apply` does automatically", ""]
    if plan.changes:
        out += [
            f"{plan.applied_line} in {_count(len(plan.changes), 'file')} "
            f"({_md_code(f'migrate apply --dry-run {plan.root}')} shows the diff).",
            "",
        ]
        out += _md_table(
            ["File", "Fixes", "Lines +", "Lines -", "Rules"],
            [[c.path, c.findings, c.added, c.removed, ", ".join(c.rules)] for c in plan.changes],
        )
        out += ["", "Per rule:", ""]
        out += _md_table(["Rule", "Fixes"], [[c, k] for c, k in plan.applied_by_rule])
    else:
        out += ["Nothing: no automatic fix applies."]

    out += ["", "## Items for a person", ""]
    if not plan.review:
        out += ["None."]
    for code, items in plan.review.items():
        rule = plan.rules.get(code)
        title = rule.title if rule else ""
        out += [f"### {code} {_rule_name(plan, code)} ({len(items)})", "", title, ""]
        for label, text in _guidance(rule, items):
            out += [f"**{label}.** {' '.join(text.split())}", ""]
        for item in items:
            note = "; apply leaves a TODO" if item.todo else ""
            out.append(
                f"- {_md_code(_where(item.finding))} [{item.status}{note}] "
                f"{_md_text(item.finding.message)}"
            )
        out += ["", f"`migrate explain {code}` prints the full rule.", ""]

    out += _serving_markdown(plan)
    out += ["## CUDA 12.8 (MIG3xx)", ""]
    if not plan.cuda:
        out += ["No CUDA 12.8 pins or assumptions found."]
    else:
        for item in plan.cuda:
            f = item.finding
            out.append(f"- {_md_code(_where(f))} {f.rule} [{item.status}] {_md_text(f.message)}")
        codes = sorted({i.finding.rule for i in plan.cuda})
        out.append("")
        for code in codes:
            for label, text in _guidance(plan.rules.get(code)):
                out += [f"**{code} — {label}.** {' '.join(text.split())}", ""]

    out += ["", "## Effort estimate", ""]
    out += _md_table(
        ["Item", "Count", "Minutes each", "Minutes"],
        [[e.label, e.count, e.minutes_each, e.minutes] for e in plan.effort]
        + [["**Total**", "", "", f"**{plan.effort_minutes}** (≈ {hours(plan.effort_minutes)})"]],
    )
    out += ["", EFFORT_NOTE]
    if plan.batch_results is not None:
        out += ["", *batch_results_markdown(plan.batch_results, _md_table)]

    if plan.errors:
        out += ["", "## Files not analysed", ""]
        out += [f"- {_md_code(e.path)}: {_md_text(e.message)}" for e in plan.errors]
    return "\n".join(out).rstrip() + "\n"


def _serving_markdown(plan: PlanReport) -> list[str]:
    if not any(f.rule.startswith("MIG4") for f in plan.findings):
        return []
    writers, alone = serving_groups(plan)
    out = ["## Serving code outside Python (MIG4xx)", ""]
    if writers:
        out += [
            "Python writers and the serving code that loads their archives (move together):",
            "",
        ]
        for f, uses in writers:
            loads = ", ".join(
                f"{_md_code(f'{path}:{line}')} ({rule})" for _, path, line, rule in uses
            )
            out.append(
                f"- {_md_code(f'{f.path}:{f.line}')} {f.rule} writes {_md_code(uses[0][0])}: "
                f"loaded by {loads}"
            )
        out.append("")
    if alone:
        out += [
            "Other serving files to move (build files, and code whose archive no Python code "
            "here writes): " + ", ".join(_md_code(p) for p in alone),
            "",
        ]
    return out


EFFORT_NOTE = (
    "A rough figure for planning, not a promise: minutes per finding by how far the tool "
    "takes it (auto 2, auto not applied 10, assisted 15, manual 45) plus 5 per Python "
    "file that apply changes, for running `migrate verify` on the models it touches."
)


# --------------------------------------------------------------------------- html


def _inline(text: str) -> str:
    """Escape, then render `code` spans."""
    escaped = html.escape(" ".join(text.split()))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def bar_chart(
    rows: list[tuple[str, int]],
    title: str,
    colors: list[str] | None = None,
    limit: int = CHART_ROWS,
) -> str:
    """A horizontal bar chart as inline SVG (no scripts, no external assets)."""
    shown = rows[:limit]
    rest = rows[limit:]
    if rest:
        shown = [*shown, (f"{len(rest)} more", sum(k for _, k in rest))]
    label_w, bar_w, row_h, top = 270, 340, 24, 8
    height = top * 2 + row_h * max(1, len(shown))
    width = label_w + bar_w + 60
    peak = max((k for _, k in shown), default=1) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="100%" '
        f'viewBox="0 0 {width} {height}" style="max-width:{width}px">',
        f"<title>{html.escape(title)}</title>",
    ]
    if not shown:
        parts.append(f'<text x="0" y="{top + 16}" class="empty">No findings</text>')
    for i, (label, count) in enumerate(shown):
        y = top + i * row_h
        w = max(2, round(bar_w * count / peak))
        color = colors[i] if colors and i < len(colors) else "#1565c0"
        short = label if len(label) <= 36 else label[:35] + "…"
        parts += [
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" class="lbl">'
            f"<title>{html.escape(label)}</title>{html.escape(short)}</text>",
            f'<rect x="{label_w}" y="{y + 4}" width="{w}" height="{row_h - 8}" rx="3" '
            f'fill="{color}"/>',
            f'<text x="{label_w + w + 6}" y="{y + 16}" class="val">{count}</text>',
        ]
    parts.append("</svg>")
    return "".join(parts)


CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#e3e7ee; --bg:#f6f8fb; --card:#fff;
  --auto:#2e7d32; --assisted:#c77800; --manual:#8e24aa; --accent:#1565c0; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.5 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color:var(--fg); background:var(--bg); }
header { background:#17202e; color:#fff; padding:24px 40px; }
header h1 { margin:0; font-size:24px; font-weight:600; }
header p { margin:4px 0 0; color:#b8c2d3; }
main { padding:24px 40px 48px; max-width:1280px; }
h2 { font-size:19px; margin:32px 0 12px; }
h3 { font-size:16px; margin:0; }
.cards { display:grid; grid-template-columns:repeat(auto-fit, minmax(170px, 1fr)); gap:12px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:14px 16px; }
.card .n { font-size:26px; font-weight:650; }
.card .k { color:var(--muted); font-size:13px; }
.charts { display:grid; grid-template-columns:repeat(auto-fit, minmax(560px, 1fr)); gap:16px; }
.panel { background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:16px 18px; overflow-x:auto; }
svg .lbl { font:12px "DejaVu Sans Mono", Menlo, monospace; fill:var(--fg); }
svg .val { font:12px sans-serif; fill:var(--muted); }
table { border-collapse:collapse; width:100%; background:var(--card); }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line);
  vertical-align:top; }
th { font-size:13px; color:var(--muted); font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
code { font:13px "DejaVu Sans Mono", Menlo, monospace; background:#eef1f6; padding:1px 4px;
  border-radius:3px; }
.pill { display:inline-block; padding:0 8px; border-radius:10px; color:#fff; font-size:12px; }
.pill.auto { background:var(--auto); } .pill.assisted { background:var(--assisted); }
.pill.manual { background:var(--manual); } .pill.unapplied { background:#c62828; }
.legend span { margin-right:14px; font-size:13px; color:var(--muted); }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px;
  margin-right:5px; }
details { background:var(--card); border:1px solid var(--line); border-radius:8px;
  margin:8px 0; padding:10px 16px; }
summary { cursor:pointer; }
details p { margin:8px 0; }
details.more { border:none; background:none; margin:4px 0; padding:0; }
details.more summary { color:var(--accent); font-size:13px; }
p.sum { margin:8px 2px 0; }
ul.items { margin:8px 0 4px; padding-left:20px; }
.muted { color:var(--muted); }
"""


def _pill(status: str) -> str:
    cls = {"auto, not applied": "unapplied"}.get(status, status)
    return f'<span class="pill {cls}">{html.escape(status)}</span>'


def _html_table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(
        f'<th class="num">{h}</th>' if i in numeric else f"<th>{h}</th>"
        for i, h in enumerate(headers)
    )
    body = []
    for row in rows[:TABLE_ROWS]:
        cells = "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    more = ""
    if len(rows) > TABLE_ROWS:
        more = f'<p class="muted">… and {len(rows) - TABLE_ROWS} more rows.</p>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def _tests_html(doc: dict) -> str:
    """What `apply --test` kept and reverted (its --test-report JSON)."""
    e = html.escape

    def where(unit: dict) -> str:
        first = unit["fixes"][0]
        return f"{first['path']}:{first['line']}:{first['column']}"

    kept = sum(len(u["fixes"]) for u in doc.get("kept", []))
    rows = [
        [
            f"<code>{e(where(u))}</code>",
            e(" + ".join(f["rule"] for f in u["fixes"])),
            f"<code>{e(b['test'])}</code>",
            e(b["failure"]),
        ]
        for u in doc.get("reverted", [])
        for b in u.get("broke", [])
    ]
    parts = [
        f"<h2>Tested with <code>{e(doc.get('command', ''))}</code></h2>",
        f"<p>{kept} fix{'es' * (kept != 1)} kept, {_count(len(doc.get('reverted', [])), 'unit')} "
        f"reverted; {_count(doc.get('suite_runs', 0), 'suite run')} in "
        f"{doc.get('seconds', 0):.1f} s (one run: {doc.get('one_suite_seconds', 0):.1f} s).</p>",
    ]
    if rows:
        parts.append(_html_table(["Where", "Fixes", "Test it broke", "Failure"], rows))
    flaky = doc.get("flaky", [])
    if flaky:
        items = "".join(f"<li><code>{e(f['test'])}</code>: {e(f['why'])}</li>" for f in flaky)
        parts.append(f"<p>Flaky tests, ignored:</p><ul>{items}</ul>")
    return "".join(parts)


def render_html(plan: PlanReport) -> str:
    e = html.escape
    n = len(plan.findings)
    # The three cards after the findings split them: each finding is in exactly one.
    parts = [
        (plan.fixed_total, "fixed by migrate apply"),
        (plan.review_total, "for a person"),
        (len(plan.cuda), "CUDA 12.8 (MIG3xx), fixed or not"),
    ]
    cards = [
        (plan.files_scanned, "file scanned" if plan.files_scanned == 1 else "files scanned"),
        (n, "finding" if n == 1 else "findings"),
        *parts,
        (hours(plan.effort_minutes), "rough effort"),
    ]
    equation = f"{_count(n, 'finding')} = " + " + ".join(f"{v} {k}" for v, k in parts)
    rule_colors = [FIX_COLORS[_found_kinds(plan, code)[0]] for code, _ in plan.by_rule]
    rule_rows = [(f"{code} {_rule_name(plan, code)}", k) for code, k in plan.by_rule]
    legend = "".join(
        f'<span><i style="background:{c}"></i>{k}</span>' for k, c in FIX_COLORS.items()
    )
    body = [
        '<section class="cards">',
        *(
            f'<div class="card"><div class="n">{e(str(v))}</div><div class="k">{k}</div></div>'
            for v, k in cards
        ),
        "</section>",
        f'<p class="muted sum">{e(equation)}</p>',
        *([f'<p class="intent">{_inline(plan.intent)}</p>'] if plan.intent else []),
        '<h2>Findings</h2><section class="charts">',
        f'<div class="panel"><h3>Per rule</h3><p class="legend">{legend}</p>'
        f"{bar_chart(rule_rows, 'Findings per rule', rule_colors)}</div>",
        '<div class="panel"><h3>Per folder</h3><p class="legend"><span>'
        f"relative to <code>{e(plan.root)}</code></span></p>"
        f"{bar_chart(plan.by_folder, 'Findings per folder')}</div>",
        "</section>",
        "<h2>Per fix kind</h2>",
        _html_table(
            ["Fix", "Findings"],
            [[_pill(k), str(v)] for k, v in plan.by_fix.items()],
            numeric={1},
        ),
        "<h2>Per rule</h2>",
        _html_table(
            ["Rule", "Name", "Fix", "Findings"],
            [
                [
                    e(c),
                    f"<code>{e(_rule_name(plan, c))}</code>",
                    " ".join(_pill(kind) for kind in _found_kinds(plan, c)),
                    str(k),
                ]
                for c, k in plan.by_rule
            ],
            numeric={3},
        ),
        "<h2>What <code>migrate apply</code> does automatically</h2>",
    ]
    if plan.changes:
        body += [
            f"<p>{e(plan.applied_line)} in {_count(len(plan.changes), 'file')}; "
            f"<code>migrate apply --dry-run {e(plan.root)}</code> shows the diff.</p>",
            _html_table(
                ["File", "Fixes", "Lines +", "Lines −", "Rules"],
                [
                    [
                        f"<code>{e(c.path)}</code>",
                        str(c.findings),
                        str(c.added),
                        str(c.removed),
                        e(", ".join(c.rules)),
                    ]
                    for c in plan.changes
                ],
                numeric={1, 2, 3},
            ),
        ]
    else:
        body.append("<p>Nothing: no automatic fix applies.</p>")

    body.append("<h2>Items for a person</h2>")
    if not plan.review:
        body.append("<p>None.</p>")
    for code, items in plan.review.items():
        rule = plan.rules.get(code)
        guidance = "".join(
            f"<p><b>{label}.</b> {_inline(text)}</p>" for label, text in _guidance(rule, items)
        ) + _long_form(rule, items)
        lis = "".join(
            f"<li><code>{e(_where(i.finding))}</code> {_pill(i.status)}"
            f"{' <span class=muted>(apply leaves a TODO)</span>' if i.todo else ''} "
            f"{_inline(i.finding.message)}</li>"
            for i in items
        )
        body.append(
            f"<details open><summary><h3 style='display:inline'>{e(code)} "
            f"<code>{e(_rule_name(plan, code))}</code> · {len(items)}</h3> "
            f"<span class=muted>{_inline(rule.title if rule else '')}</span></summary>"
            f"{guidance}<ul class=items>{lis}</ul></details>"
        )

    if any(f.rule.startswith("MIG4") for f in plan.findings):
        writers, alone = serving_groups(plan)
        body.append("<h2>Serving code outside Python (MIG4xx)</h2>")
        if writers:
            rows = [
                [
                    f"<code>{e(f.path)}:{f.line}</code> {e(f.rule)}",
                    f"<code>{e(uses[0][0])}</code>",
                    ", ".join(f"<code>{e(p)}:{ln}</code> ({e(r)})" for _, p, ln, r in uses),
                ]
                for f, uses in writers
            ]
            body.append(
                _html_table(["Python writer", "Archive", "Loaded by (move together)"], rows)
            )
        if alone:
            listed = ", ".join(f"<code>{e(p)}</code>" for p in alone)
            body.append(
                "<p>Other serving files to move (build files, and code whose archive no Python "
                f"code here writes): {listed}</p>"
            )
    body.append("<h2>CUDA 12.8 (MIG3xx)</h2>")
    if not plan.cuda:
        body.append("<p>No CUDA 12.8 pins or assumptions found.</p>")
    else:
        body.append(
            _html_table(
                ["Where", "Rule", "Status", "Message"],
                [
                    [
                        f"<code>{e(_where(i.finding))}</code>",
                        e(i.finding.rule),
                        _pill(i.status),
                        _inline(i.finding.message),
                    ]
                    for i in plan.cuda
                ],
            )
        )
    if plan.tests is not None:
        body.append(_tests_html(plan.tests))
    body += [
        "<h2>Effort estimate</h2>",
        _html_table(
            ["Item", "Count", "Minutes each", "Minutes"],
            [[e(x.label), str(x.count), str(x.minutes_each), str(x.minutes)] for x in plan.effort]
            + [
                [
                    "<b>Total</b>",
                    "",
                    "",
                    f"<b>{plan.effort_minutes}</b> (≈ {hours(plan.effort_minutes)})",
                ]
            ],
            numeric={1, 2, 3},
        ),
        f'<p class="muted">{_inline(EFFORT_NOTE)}</p>',
    ]
    if plan.batch_results is not None:
        body.append(batch_results_html(plan.batch_results, _html_table))
    if plan.errors:
        body.append("<h2>Files not analysed</h2><ul>")
        body += [f"<li><code>{e(x.path)}</code>: {e(x.message)}</li>" for x in plan.errors]
        body.append("</ul>")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Migration plan: {e(plan_title(plan))}</title><style>{CSS}</style></head><body>"
        f"<header><h1>Migration plan: {e(plan_title(plan))}</h1>"
        f"<p>torchscript-migrate · {date.today().isoformat()} · {_count(n, 'finding')} · "
        f"{_count(plan.files_scanned, 'file')} scanned</p></header>"
        f"<main>{''.join(body)}</main></body></html>\n"
    )


RENDERERS = {"markdown": render_markdown, "html": render_html}
