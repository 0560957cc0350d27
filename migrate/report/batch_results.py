"""The model-registry section of `migrate report --verify-results FILE`: what a batch of
`migrate convert`/`verify` found (pass rate, recovery paths used, failure reasons grouped).

Reads the batch's JSON-lines results file only; no torch import.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

VERDICT_ORDER = ("pass", "mismatch", "error", "timeout", "refused")


@dataclass
class BatchResults:
    """What one `migrate convert`/`verify` batch over a registry of archives found."""

    path: str
    records: list[dict]
    counts: dict[str, int] = field(default_factory=dict)
    recovery: list[tuple[str, int]] = field(default_factory=list)  # ladder step -> archives
    reasons: list[tuple[str, int, list[str]]] = field(default_factory=list)  # why, n, examples

    @property
    def pass_rate(self) -> float:
        return self.counts.get("pass", 0) / len(self.records) if self.records else 0.0


def _reason(record: dict) -> str:
    """A failure's reason without what differs from archive to archive (paths, numbers)."""
    err = record.get("error") or {}
    msg = str(err.get("message", ""))
    msg = msg.replace(record.get("path", "\0"), "ARCHIVE")
    msg = re.sub(r"(?<![\w.])(/[^\s:;,()]+)+", "PATH", msg)
    msg = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", msg)
    if len(msg) > 160:
        msg = msg[:157] + "..."
    stage = err.get("stage", "?")
    return (
        f"{record['verdict']}: {msg}"
        if stage == record["verdict"]
        else (f"{record['verdict']}: {stage}: {msg}")
    )


def load_batch_results(path: Path) -> BatchResults:
    """The latest result per archive (and device) of a results file; ValueError when it
    cannot be read or holds no result."""
    latest: dict[tuple, dict] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--verify-results {path}: cannot read: {exc}") from None
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line of a killed batch
        if isinstance(doc, dict) and "path" in doc and doc.get("verdict") in VERDICT_ORDER:
            latest[(doc["path"], doc.get("device"))] = doc
    if not latest:
        raise ValueError(
            f"--verify-results {path}: no results (expected the JSON lines of a batch)"
        )
    records = list(latest.values())
    counts = Counter(r["verdict"] for r in records)
    steps: Counter = Counter()
    for r in records:
        for rec in r.get("recovery") or []:
            lowering = rec.get("lowering")
            steps[rec["path"] + (f" (lowering: {lowering})" if lowering else "")] += 1
    groups: dict[str, list[str]] = {}
    for r in records:
        if r["verdict"] != "pass":
            groups.setdefault(_reason(r), []).append(r["path"])
    reasons = sorted(((k, len(v), v) for k, v in groups.items()), key=lambda t: (-t[1], t[0]))
    return BatchResults(
        str(path),
        records,
        {v: counts[v] for v in VERDICT_ORDER if counts[v]},
        steps.most_common(),
        reasons,
    )


def render_html(reg: BatchResults, table) -> str:
    """The section's HTML; ``table(headers, rows, numeric)`` renders like the plan's tables."""
    e = html.escape
    n = len(reg.records)
    parts = [
        "<h2>Model registry</h2>",
        f"<p>{n} archive result{'s' if n != 1 else ''} from <code>{e(reg.path)}</code>: "
        f"<b>{reg.pass_rate:.0%}</b> pass.</p>",
        table(
            ["Verdict", "Archives"],
            [[e(v), str(k)] for v, k in reg.counts.items()],
            {1},
        ),
        "<h3>Recovery paths used</h3>",
    ]
    if reg.recovery:
        parts.append(table(["Path", "Methods"], [[e(p), str(k)] for p, k in reg.recovery], {1}))
    else:
        parts.append("<p>None: no archive converted.</p>")
    parts.append("<h3>Failure reasons</h3>")
    if not reg.reasons:
        parts.append("<p>None: every archive passes.</p>")
    else:
        rows = []
        for why, k, paths in reg.reasons:
            shown = ", ".join(f"<code>{e(Path(p).name)}</code>" for p in paths[:5])
            more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
            rows.append([e(why), str(k), shown + more])
        parts.append(table(["Reason", "Archives", "Examples"], rows, {1}))
    return "".join(parts)


def render_markdown(reg: BatchResults, table) -> list[str]:
    """The section's Markdown lines; ``table(headers, rows)`` renders like the plan's tables."""
    out = [
        "## Model registry",
        "",
        f"{len(reg.records)} archive results from `{reg.path}`: {reg.pass_rate:.0%} pass.",
        "",
        *table(["Verdict", "Archives"], [[v, k] for v, k in reg.counts.items()]),
        "",
        "### Recovery paths used",
        "",
    ]
    out += (
        table(["Path", "Methods"], [[p, k] for p, k in reg.recovery])
        if reg.recovery
        else ["None: no archive converted."]
    )
    out += ["", "### Failure reasons", ""]
    if not reg.reasons:
        return [*out, "None: every archive passes."]
    rows = [[why, k, ", ".join(Path(p).name for p in paths[:5])] for why, k, paths in reg.reasons]
    return out + table(["Reason", "Archives", "Examples"], rows)
