"""A batch's results file: one JSON line per archive, appended and fsynced as soon as it
ends, so that a killed batch resumes where it stopped; read back for the latest result of
each archive and device, and which jobs still need a run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from migrate.safe_write import check_output, make_folder, open_append, write_atomic
from migrate.verify.batch_jobs import Job


def result_key(record: dict[str, Any]) -> tuple[str, str | None]:
    return (record["path"], record.get("device"))


def read_results(path: Path) -> dict[tuple[str, str | None], dict[str, Any]]:
    """The latest line per archive (and device); a torn last line of a killed run is skipped."""
    found: dict[tuple[str, str | None], dict[str, Any]] = {}
    if not path.exists():
        return found
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and "path" in doc and "verdict" in doc:
                found[result_key(doc)] = doc
    return found


class ResultsFile:
    """Append-only JSON lines, each flushed and fsynced as soon as its archive ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        make_folder(path.parent, path.parent)
        check_output(path)  # appended to, never through a symlink
        torn = path.exists() and path.stat().st_size > 0 and not _ends_with_newline(path)
        self._fh = open_append(path)
        if torn:  # a killed run left half a line: start ours on a fresh one
            self._fh.write("\n")

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, sort_keys=True) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def compact(path: Path) -> None:
    """Rewrite the file with the latest line per archive (a rerun appended newer ones)."""
    latest = read_results(path)
    text = "".join(json.dumps(record, sort_keys=True) + "\n" for record in latest.values())
    write_atomic(path, text.encode("utf-8"))


def to_run(
    jobs: list[Job], previous: dict[tuple[str, str | None], dict[str, Any]], rerun: str | None
) -> list[Job]:
    """The jobs without an up-to-date result: same archive digest and settings, and (with
    ``--rerun failed``) a pass. ``--rerun all`` runs everything."""
    todo = []
    for job in jobs:
        prev = previous.get((job.archive, job.settings.get("device")))
        fresh = (
            prev is not None
            and prev.get("digest") == job.digest
            and prev.get("settings_digest") == job.settings_digest
        )
        if rerun == "all" or not fresh or (rerun == "failed" and prev["verdict"] != "pass"):
            todo.append(job)
    return todo
