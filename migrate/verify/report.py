"""Render a verify report: a rich table (text) or JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table

from migrate.verify.pipeline import Report


def _num(x: float) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else "inf"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def render_json(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2)


def render_text(report: Report, console: Console) -> None:
    n = len(report.samples)
    console.print(
        f"[bold]migrate verify[/bold] {report.target}  (reference: {report.reference}; "
        f"{n} sample{'s' if n != 1 else ''}, seed {report.seed})",
        highlight=False,
    )
    table = Table(show_lines=False)
    for col in ("device", "candidate", "result", "max abs", "max rel", "worst"):
        table.add_column(col, no_wrap=col not in ("worst",))
    if report.bench:
        table.add_column("ms", justify="right")
        table.add_column("ref ms", justify="right")
        table.add_column("ratio", justify="right")
    styles = {"pass": "green", "fail": "bold red", "error": "bold yellow"}
    for c in report.cells:
        worst = ""
        if c.status == "error" and c.error:
            worst = f"{c.error['stage']}: {c.error['message']}"
        elif c.worst and (c.status == "fail" or c.max_abs > 0):
            idx = c.worst.get("index")
            worst = f"{c.worst['leaf']}"
            if idx:
                worst += "[" + ",".join(map(str, idx)) + "]"
            worst += f" @ {c.worst['sample']}"
            if c.worst.get("note"):
                worst += f" ({c.worst['note']})"
        row: list[Any] = [
            c.device,
            c.candidate,
            f"[{styles[c.status]}]{c.status.upper()}[/]",
            "-" if c.status == "error" else _num(c.max_abs),
            "-" if c.status == "error" else _num(c.max_rel),
            worst,
        ]
        if report.bench:
            ratio = (
                f"{c.latency_ms / c.reference_latency_ms:.2f}x"
                if c.latency_ms and c.reference_latency_ms
                else "-"
            )
            row += [_ms(c.latency_ms), _ms(c.reference_latency_ms), ratio]
        table.add_row(*row)
    console.print(table)
    for c in report.cells:
        if c.status == "fail" and c.worst:
            idx = c.worst.get("index")
            where = c.worst["leaf"] + (f" at index {tuple(idx)}" if idx else "")
            console.print(
                f"mismatch: {c.candidate} on {c.device}: {where} on sample {c.worst['sample']}: "
                f"max abs {_num(c.max_abs)}, max rel {_num(c.max_rel)}",
                highlight=False,
            )
            d = c.divergence
            if d:
                if d.get("operator"):
                    mod = f" (module {d['module']})" if d.get("module") else ""
                    console.print(
                        f"  first divergence: {d['operator']} node {d['node']}{mod}, "
                        f"max abs {_num(d['max_abs'])}",
                        highlight=False,
                    )
                if d.get("candidate_only_operators"):
                    console.print(
                        "  operators only in the candidate before it: "
                        + ", ".join(d["candidate_only_operators"][:8]),
                        highlight=False,
                    )
                if d.get("differing_parameters"):
                    console.print(
                        "  parameters that differ from the reference: "
                        + ", ".join(d["differing_parameters"][:8]),
                        highlight=False,
                    )
                if d.get("note"):
                    console.print(f"  {d['note']}", highlight=False)
        for note in c.notes:
            console.print(f"note: {c.candidate}: {note}", highlight=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
    if report.artifacts:
        console.print(
            "artifacts: " + ", ".join(f"{k}={v}" for k, v in report.artifacts.items()),
            highlight=False,
            soft_wrap=True,
        )
    verdict = {"pass": "[green]PASS[/]", "mismatch": "[bold red]MISMATCH[/]"}.get(
        report.verdict, "[bold yellow]ERROR[/]"
    )
    console.print(f"verdict: {verdict}")
