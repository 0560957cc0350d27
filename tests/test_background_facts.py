"""The planner's facts are built on a thread while the repository pass keeps the process pool
busy. They must be the facts built afterwards, with the pass's merged facts in them, a scan
must plan the same with them, and an error while building them must surface where the facts
are asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

import migrate.pipeline.scan as pipeline
import migrate.scan.engine as engine
from migrate.checks.repository_wrappers import repository_wrappers
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


def _pooled(monkeypatch) -> list[tuple[BackgroundFacts, tuple]]:
    """Send every repository pass to the pool from its first file; the facts threads its
    start begins, each with the arguments it was given, are listed in the returned list."""
    started: list[tuple[BackgroundFacts, tuple]] = []
    original = BackgroundFacts.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        started.append((self, args))

    monkeypatch.setattr(engine, "PARALLEL_THRESHOLD", 1)  # the pass goes to the pool,
    monkeypatch.setattr(engine, "POOL_AFTER_BYTES", 0)  # from its first file
    monkeypatch.setattr(BackgroundFacts, "__init__", spy)
    return started


def test_a_pooled_repository_pass_plans_with_the_background_facts(monkeypatch):
    plain = Scanner(ScanOptions(cache=False, jobs=1)).scan([REPOS])
    started = _pooled(monkeypatch)
    pooled = Scanner(ScanOptions(cache=False, jobs=2)).scan([REPOS])
    assert len(started) == 1
    thread = started[0][0]._thread
    assert thread.ident is not None and not thread.is_alive()
    monkeypatch.setattr(pipeline, "build_scan_facts", None)  # planning may not build its own
    again = Scanner(ScanOptions(cache=False, jobs=2)).scan([REPOS])
    assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in plain.findings]
    assert [f.to_dict() for f in pooled.findings] == [f.to_dict() for f in plain.findings]
    held = [f for f in pooled.findings if f.applicability and f.applicability.value != "safe"]
    assert held  # the planner held some fixes back: the facts were used


def test_the_background_facts_carry_the_merged_facts_the_pass_reads(monkeypatch):
    """The thread starts with the repository pass's merged facts, which are complete then:
    the planner's facts hold that object and take its wrappers, decoded once."""
    started = _pooled(monkeypatch)
    scanner = Scanner(ScanOptions(cache=False, jobs=2))
    scanner.scan([REPOS / "wrappers"])
    assert len(started) == 1
    _, (_jobs, _results, repository_facts, wrappers_told) = started[0]
    assert repository_facts is scanner.repo_facts and wrappers_told
    facts = scanner.facts()
    assert facts is started[0][0].result()
    assert facts.repository_facts is scanner.repo_facts
    assert facts.wrappers is repository_wrappers(scanner.repo_facts).wrappers
    assert facts.wrappers  # the sample's wrappers: not vacuous


def test_the_pass_pool_leaves_a_core_to_the_facts_thread(monkeypatch):
    """With the facts built beside the pass, the pass's pool has one worker fewer: on two
    cores, two workers and the thread each got two thirds of a core, and the thread ended
    last. Without facts to build beside it, the pass takes every worker."""
    sizes: list[tuple[str, int]] = []
    pool = engine.Scanner._pool

    def spy(self, workers, repo_facts, inputs=None):
        sizes.append(("pass" if inputs is not None else "phase 1", workers))
        return pool(self, workers, repo_facts, inputs)

    started = _pooled(monkeypatch)
    monkeypatch.setattr(engine.Scanner, "_pool", spy)
    Scanner(ScanOptions(cache=False, jobs=3)).scan([REPOS / "wrappers"])
    assert len(started) == 1 and sizes == [("phase 1", 3), ("pass", 2)]
    sizes.clear()
    engine.Scanner(ScanOptions(cache=False, jobs=3)).scan([REPOS / "wrappers"])
    assert sizes == [("phase 1", 3), ("pass", 3)]


def test_an_error_while_building_reaches_whoever_asks(monkeypatch):
    def broken(jobs, hints, *repository_pass):
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
