"""The planner's facts are built on a thread while the repository pass keeps the process pool
busy. They must be the facts built afterwards, a scan must plan the same with them, and an
error while building them must surface where the facts are asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

import migrate.pipeline.scan as pipeline
import migrate.scan.engine as engine
from migrate.pipeline import planfacts
from migrate.pipeline.planfacts import BackgroundFacts, build_scan_facts
from migrate.pipeline.scan import PlannedScanner as Scanner
from migrate.scan.engine import ScanOptions

ROOT = Path(__file__).resolve().parent.parent
REPOS = ROOT / "fixtures" / "repos"


def summary(facts) -> tuple:
    classes = sorted((k, v.class_name, v.forward) for k, v in facts._classes.items())
    return facts.captures, facts.sites, classes, facts._traces


def test_facts_built_in_the_background_equal_facts_built_after():
    scanner = Scanner(ScanOptions(cache=False, jobs=1))
    scanner.scan([REPOS])
    jobs, results = scanner.jobs.values(), scanner._results
    early = summary(BackgroundFacts(jobs, results).result())
    assert early == summary(build_scan_facts(jobs, results))
    assert early[0] and early[1]  # captures and archive sites: not vacuous


def test_a_pooled_repository_pass_plans_with_the_background_facts(monkeypatch):
    plain = Scanner(ScanOptions(cache=False, jobs=1)).scan([REPOS])
    started: list[BackgroundFacts] = []
    original = BackgroundFacts.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(engine, "PARALLEL_THRESHOLD", 1)  # the pass goes to the pool,
    monkeypatch.setattr(engine, "POOL_AFTER_BYTES", 0)  # from its first file
    monkeypatch.setattr(BackgroundFacts, "__init__", spy)
    pooled = Scanner(ScanOptions(cache=False, jobs=2)).scan([REPOS])
    assert len(started) == 1
    assert started[0]._thread.ident is not None and not started[0]._thread.is_alive()
    monkeypatch.setattr(pipeline, "build_scan_facts", None)  # planning may not build its own
    again = Scanner(ScanOptions(cache=False, jobs=2)).scan([REPOS])
    assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in plain.findings]
    assert [f.to_dict() for f in pooled.findings] == [f.to_dict() for f in plain.findings]
    held = [f for f in pooled.findings if f.applicability and f.applicability.value != "safe"]
    assert held  # the planner held some fixes back: the facts were used


def test_an_error_while_building_reaches_whoever_asks(monkeypatch):
    def broken(jobs, hints):
        raise RuntimeError("facts broke")

    monkeypatch.setattr(planfacts, "build_scan_facts", broken)
    background = BackgroundFacts([], {})
    background.wait()  # waiting does not raise: the facts may never be asked for
    with pytest.raises(RuntimeError, match="facts broke"):
        background.result()


def test_a_pool_taking_over_midway_reports_what_one_process_does(monkeypatch):
    """Jobs start in the scanning process and a pool takes the rest once enough source was
    parsed there: both halves' results make the scan."""
    plain = Scanner(ScanOptions(cache=False, jobs=1)).scan([REPOS])
    monkeypatch.setattr(engine, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(engine, "POOL_AFTER_BYTES", 1)  # after the first parsed file
    pooled = Scanner(ScanOptions(cache=False, jobs=2)).scan([REPOS])
    assert pooled.files_parsed == plain.files_parsed > 10
    assert [f.to_dict() for f in pooled.findings] == [f.to_dict() for f in plain.findings]
