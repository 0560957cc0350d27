"""What a batch shows: a progress bar on a terminal while it runs, then the verdicts, the
slowest archives and those not passing as tables, or the whole result as JSON.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from migrate.verify.batch import VERDICTS, BatchResult


class Progress:
    """A rich progress bar on a terminal (stderr): done / total, verdicts so far, ETA."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty() and not os.environ.get("CI")
        self.counts = {v: 0 for v in VERDICTS}
        self._bar: Any = None
        self._task: Any = None

    def _label(self) -> str:
        c = self.counts
        return (
            f"pass {c['pass']}  mismatch {c['mismatch']}  "
            f"error {c['error'] + c['timeout'] + c['refused']}"
        )

    def start(self, total: int, skipped: int) -> None:
        if skipped:
            print(f"{skipped} archive(s) already have a result; running {total}", file=sys.stderr)
        if not self.enabled or not total:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self._label(), total=total)

    def advance(self, record: dict[str, Any]) -> None:
        self.counts[record["verdict"]] = self.counts.get(record["verdict"], 0) + 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=self._label())

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _short(path: str) -> str:
    """Relative to the current folder when under it, else as recorded (absolute)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def render_summary(result: BatchResult, console: Any, slowest: int = 5) -> None:
    from rich.table import Table

    counts = Table(title=None)
    counts.add_column("verdict")
    counts.add_column("archives", justify="right")
    for verdict, n in result.counts.items():
        if n:
            counts.add_row(verdict, str(n))
    counts.add_row("total", str(len(result.records)))
    console.print(counts)
    timed = sorted(
        (r for r in result.records if r.get("seconds") is not None),
        key=lambda r: -r["seconds"],
    )[:slowest]
    if timed:
        table = Table(title="slowest")
        for col in ("archive", "verdict", "seconds", "lowering s", "peak MiB"):
            table.add_column(col, justify="left" if col in ("archive", "verdict") else "right")
        for r in timed:
            table.add_row(
                _short(r["path"]),
                r["verdict"],
                f"{r['seconds']:.1f}",
                "-" if r.get("lower_s") is None else f"{r['lower_s']:.1f}",
                "-" if r.get("peak_rss_mb") is None else str(r["peak_rss_mb"]),
            )
        console.print(table)
    failing = [r for r in result.records if r["verdict"] != "pass"]
    if failing:
        table = Table(title="not passing")
        for col in ("archive", "device", "verdict", "why"):
            table.add_column(col, no_wrap=col != "why")
        for r in failing:
            err = r.get("error") or {}
            why = str(err.get("message", "")).replace(r["path"], Path(r["path"]).name)
            table.add_row(
                _short(r["path"]),
                r.get("device") or "-",
                r["verdict"],
                f"{err.get('stage')}: {why}",
            )
        console.print(table)
    console.print(
        f"{result.ran} run, {result.skipped} already done, in {result.wall_s:.1f} s"
        + (f" ({result.jobs_label})" if result.jobs_label else "")
        + f"; results: {result.results_path}",
        highlight=False,
    )


def summary_json(result: BatchResult) -> dict[str, Any]:
    return {
        "results": str(result.results_path),
        "counts": result.counts,
        "exit_code": result.exit_code,
        "ran": result.ran,
        "skipped": result.skipped,
        "wall_s": round(result.wall_s, 2),
        "archives": result.records,
    }
