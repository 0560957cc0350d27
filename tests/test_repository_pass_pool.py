"""After a phase 1 that ran in a process pool, the repository pass runs in a pool forked
with phase 1's results: its workers pick the files to judge again, settle or analyse them,
and send back what changed. The outcome is the one a single process gives."""

from __future__ import annotations

import os
from pathlib import Path

import migrate.scan.engine as engine
from migrate.pipeline.scan import PlannedScanner
from migrate.scan.engine import ScanOptions
from migrate.scan.repository_pass import PassInputs

REPOS = Path(__file__).resolve().parent.parent / "fixtures" / "repos"


def _scan(jobs: int, monkeypatch) -> tuple[list[dict], list[int]]:
    """The findings, and the process of each file pick (`PassInputs.codes_for`) that asked
    checks to run again here and in the workers (a worker's own count stays in it: only the
    calls this process made are listed)."""
    picked_here: list[int] = []
    original = PassInputs.codes_for

    def spy(self, job):
        codes = original(self, job)
        if codes:
            picked_here.append(os.getpid())
        return codes

    with monkeypatch.context() as patch:
        patch.setattr(PassInputs, "codes_for", spy)
        out = PlannedScanner(ScanOptions(cache=False, jobs=jobs)).scan([REPOS / "wrappers"])
    return [f.to_dict() for f in out.findings], picked_here


def test_a_pooled_pass_picks_in_its_workers_and_reports_what_one_process_does(monkeypatch):
    alone, picked_alone = _scan(1, monkeypatch)
    assert picked_alone and set(picked_alone) == {os.getpid()}  # files were picked: not vacuous
    monkeypatch.setattr(engine, "PARALLEL_THRESHOLD", 1)  # phase 1 goes to a pool,
    monkeypatch.setattr(engine, "POOL_AFTER_BYTES", 0)  # from its first file
    pooled, picked_pooled = _scan(2, monkeypatch)
    assert picked_pooled == []  # every pick was a worker's
    assert pooled == alone
    assert any(f["rule"] == "MIG121" for f in pooled)  # the pass's own rule reported
