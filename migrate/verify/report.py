"""Render a verify report: a rich table (text) or JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table

from migrate.verify.branch_check import BranchCheck
from migrate.verify.results import Report


def _num(x: float) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else "inf"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _lat(x: float | None) -> str:
    """Latency in ms: four decimals below 0.1 ms, where calls take microseconds."""
    if x is None:
        return "-"
    return f"{x:.4f}" if x < 0.1 else f"{x:.3f}"


def tolerance(cell: Any) -> tuple[float | None, float | None]:
    """The (rtol, atol) a cell was judged by: its worst leaf's (tolerances are per dtype and
    backend unless --rtol/--atol set them), else its first floating leaf's."""
    leaves = cell.leaves
    worst = (cell.worst or {}).get("leaf")
    leaf = next((x for x in leaves if x.leaf == worst), None)
    leaf = leaf or next((x for x in leaves if x.rtol or x.atol), None)
    return (leaf.rtol, leaf.atol) if leaf is not None else (None, None)


def render_json(report: Report) -> str:
    doc = report.to_json()
    for result, cell in zip(doc["results"], report.cells, strict=True):
        result["rtol"], result["atol"] = tolerance(cell)
    return json.dumps(doc, indent=2)


def _tol(x: float | None) -> str:
    return "-" if x is None else _num(x)


def render_text(report: Report, console: Console) -> None:
    n = len(report.samples)
    console.print(
        f"[bold]migrate verify[/bold] {report.target}  (reference: {report.reference}; "
        f"{n} sample{'s' if n != 1 else ''}, seed {report.seed})",
        highlight=False,
    )
    table = Table(show_lines=False)
    for col in ("device", "candidate", "result", "max abs", "max rel", "rtol", "atol", "worst"):
        table.add_column(col, no_wrap=col not in ("worst",))
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
            *(_tol(x) for x in tolerance(c)),
            worst,
        ]
        table.add_row(*row)
    console.print(table)
    if report.latency is not None:
        render_latency(report, console)
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
    if report.verdict == "mismatch":
        for c in report.cells:
            if c.status == "error" and c.error:
                console.print(
                    f"note: {c.candidate} on {c.device} not checked: {c.error['stage']}: "
                    f"{c.error['message']}",
                    highlight=False,
                )
    if report.branches is not None:
        render_branches(report.branches, console)
    if report.settings.get("from_config"):
        taken = ", ".join(f"{k}={report.settings[k]}" for k in report.settings["from_config"])
        console.print(f"note: from {report.settings['config']}: {taken}", highlight=False)
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


def render_latency(report: Report, console: Console) -> None:
    """The ``--bench`` table: what is timed, the threads, then one row per device and runtime."""
    lat = report.latency
    assert lat is not None
    table = Table(
        title=f"Latency: {lat['timed']}; {lat['statistic']}",
        caption=f"Not timed: {lat['not_timed']}. Load: {lat['load']}.",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("device", "runtime", "median ms", "min ms", "p90 ms", "calls", "load ms", "vs TS"):
        table.add_column(col, justify="left" if col in ("device", "runtime") else "right")
    stalled: list[str] = []
    for device in report.devices:
        ref = lat.get("reference", {}).get(device)
        if ref is None:
            continue
        rows = [("TorchScript (reference)", ref)]
        rows += [(c.candidate, c.bench) for c in report.cells if c.device == device and c.bench]
        stalled += [name for name, b in rows if b["p90_ms"] > 10 * b["median_ms"]]
        for name, b in rows:
            table.add_row(
                device,
                name,
                _lat(b["median_ms"]),
                _lat(b["min_ms"]),
                _lat(b["p90_ms"]),
                str(b["calls"]),
                _lat(b["load_ms"]),
                f"{b['median_ms'] / ref['median_ms']:.2f}x",
            )
    console.print(table)
    th = lat["threads"]
    et = "unknown" if th["executorch"] is None else th["executorch"]
    console.print(
        f"threads: torch.get_num_threads() = {th['torch']}, ExecuTorch threadpool = {et}"
        " (--threads N sets both)",
        highlight=False,
    )
    if stalled:
        console.print(
            f"note: calls stalled (p90 over 10x the median: {', '.join(stalled)}): the machine "
            "is busy; figures hold while under half the calls stall; --threads 1 stalls less",
            highlight=False,
        )


def _side(hits: list[str], reached: bool) -> str:
    if not reached:
        return "[yellow]not reached[/]"
    if not hits:
        return "[bold yellow]none found[/]"
    return "[green]covered[/] " + ", ".join(hits)


def render_branches(check: BranchCheck, console: Console) -> None:
    """The "Branches" section: each condition, the samples that take each side, and whether
    the TorchScript reference agrees with the eager module on all samples."""
    where = check.module + (f" ({check.source})" if check.source else "")
    console.print(f"[bold]Branches[/bold] {where}", highlight=False)
    if not check.conditions and not check.error:
        console.print(
            "  no data-dependent branches in forward or the functions it calls", highlight=False
        )
    if check.conditions:
        table = Table(show_lines=False)
        for col in ("condition", "line", "true side", "false side"):
            table.add_column(col, justify="right" if col == "line" else "left")
        for cov in check.conditions:
            cond = cov.condition
            table.add_row(
                f"{cond.function}: {cond.condition}",
                str(cond.line),
                _side(cov.true_samples, cov.reached),
                _side(cov.false_samples, cov.reached),
            )
        console.print(table)
        console.print(
            f"  {check.samples_searched} samples searched; added to the comparison: "
            + (", ".join(check.added) if check.added else "none (the samples covered every side)"),
            highlight=False,
        )
        for cov in check.conditions:
            if not cov.covered:
                console.print(f"  [yellow]warning[/]: {cov.message()}", highlight=False)
    if check.error:
        console.print(f"  [bold yellow]error[/]: {check.error}", highlight=False)
    trace = check.trace
    if trace is None:
        return
    ref = {"trace": "torch.jit.trace", "script": "torch.jit.script"}.get(
        check.reference, "the TorchScript archive"
    )
    if not trace.frozen:
        console.print(
            f"  [green]PASS[/] the reference ({ref}) agrees with the eager module on "
            f"{trace.samples_checked} samples",
            highlight=False,
        )
        return
    console.print(
        f"  [bold red]FAIL[/] the reference ({ref}) disagrees with the eager module on "
        f"{len(trace.mismatches)} of {trace.samples_checked} samples: it froze a branch",
        highlight=False,
    )
    for m in trace.mismatches[:3]:
        console.print(f"    {m.message()}", highlight=False)
    if len(trace.mismatches) > 3:
        console.print(f"    ... and {len(trace.mismatches) - 3} more", highlight=False)
