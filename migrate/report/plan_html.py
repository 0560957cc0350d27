"""The migration plan as one HTML page (`migrate report --format html`): cards, bar charts
as inline SVG, tables and the review items, with no script and no external asset; what
`apply --test` kept and a batch's results when given.
"""

from __future__ import annotations

import html
import re
from datetime import date

from migrate.registry import Rule
from migrate.report.batch_results import render_html as batch_results_html
from migrate.report.plan import (
    EFFORT_NOTE,
    TABLE_ROWS,
    PlanReport,
    ReviewItem,
    counted,
    hours,
    location,
    rule_guidance,
)

CHART_ROWS = 15

FIX_COLORS = {"auto": "#2e7d32", "assisted": "#c77800", "manual": "#8e24aa"}


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
        f"<p>{kept} fix{'es' * (kept != 1)} kept, {counted(len(doc.get('reverted', [])), 'unit')} "
        f"reverted; {counted(doc.get('suite_runs', 0), 'suite run')} in "
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
    equation = f"{counted(n, 'finding')} = " + " + ".join(f"{v} {k}" for v, k in parts)
    rule_colors = [FIX_COLORS[plan.found_kinds(code)[0]] for code, _ in plan.by_rule]
    rule_rows = [(f"{code} {plan.rule_name(code)}", k) for code, k in plan.by_rule]
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
                    f"<code>{e(plan.rule_name(c))}</code>",
                    " ".join(_pill(kind) for kind in plan.found_kinds(c)),
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
            f"<p>{e(plan.applied_line)} in {counted(len(plan.changes), 'file')}; "
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
            f"<p><b>{label}.</b> {_inline(text)}</p>" for label, text in rule_guidance(rule, items)
        ) + _long_form(rule, items)
        lis = "".join(
            f"<li><code>{e(location(i.finding))}</code> {_pill(i.status)}"
            f"{' <span class=muted>(apply leaves a TODO)</span>' if i.todo else ''} "
            f"{_inline(i.finding.message)}</li>"
            for i in items
        )
        body.append(
            f"<details open><summary><h3 style='display:inline'>{e(code)} "
            f"<code>{e(plan.rule_name(code))}</code> · {len(items)}</h3> "
            f"<span class=muted>{_inline(rule.title if rule else '')}</span></summary>"
            f"{guidance}<ul class=items>{lis}</ul></details>"
        )

    if any(f.rule.startswith("MIG4") for f in plan.findings):
        writers, alone = plan.serving_groups()
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
                        f"<code>{e(location(i.finding))}</code>",
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
        f"<title>Migration plan: {e(plan.title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>Migration plan: {e(plan.title)}</h1>"
        f"<p>torchscript-migrate · {date.today().isoformat()} · {counted(n, 'finding')} · "
        f"{counted(plan.files_scanned, 'file')} scanned</p></header>"
        f"<main>{''.join(body)}</main></body></html>\n"
    )
