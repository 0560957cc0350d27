"""A scan with workers: this process analyses the first files, a pool the rest once enough
source was parsed here to show it pays (a small tree stays in one process), and the outcome
is the one a single process gives, in the jobs' order, each job run and counted once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import migrate.scan.engine as engine
import migrate.scan.workers as workers
from migrate.analysis import parsed as parse_once
from migrate.scan.engine import Scanner, ScanOptions
from tests.scan_support import write_tree

MODEL = """\
import torch


class Net{i}(torch.nn.Module):
    def forward(self, x):
        return x + {i}


scripted = torch.jit.script(Net{i}())
torch.jit.save(scripted, "net{i}.pt")
"""


def _tree(root: Path, count: int) -> Path:
    # Sizes vary, so that the pool's order (largest first) is not the jobs' order.
    files = {
        f"models/m{i:03}.py": MODEL.format(i=i) + "# padding\n" * (i * 7 % 30) for i in range(count)
    }
    files.update({f"docs/note{i:03}.txt": "nothing to see\n" for i in range(count // 2)})
    return write_tree(root, files)


def _scan(root: Path, jobs: int) -> tuple[Scanner, list, Counter]:
    progress: Counter = Counter()
    scanner = Scanner(
        ScanOptions(cache=False, jobs=jobs),
        progress=lambda n: progress.update(done=n),
    )
    out = scanner.scan([root])
    found = [(f.path, f.line, f.column, f.rule, f.message) for f in out.findings]
    return scanner, found, progress


@pytest.fixture
def small_pool_threshold(monkeypatch):
    # A pool for a test-sized tree: from the 8th job, after a few files parsed here.
    monkeypatch.setattr(engine, "PARALLEL_THRESHOLD", 8)
    monkeypatch.setattr(engine, "POOL_AFTER_BYTES", 1_000)


def test_the_pool_takes_the_rest_and_the_outcome_is_one_processs(
    tmp_path, small_pool_threshold, monkeypatch
):
    root = _tree(tmp_path / "repo", 120)
    single, expected, _ = _scan(root, jobs=1)
    here_alone = parse_once.parse_counts()
    pooled_jobs: list[str] = []
    in_pool = engine.Scanner._in_pool
    batched = engine.size_balanced_batches
    sent: list[int] = []
    monkeypatch.setattr(
        engine,
        "size_balanced_batches",
        lambda *a: (batches := batched(*a), sent.extend(i for b in batches for i in b))[0],
    )

    def spy(self, work, *args, **kwargs):
        pooled_jobs.extend(job.display for job, *_ in work)
        return in_pool(self, work, *args, **kwargs)

    monkeypatch.setattr(engine.Scanner, "_in_pool", spy)
    pooled, found, progress = _scan(root, jobs=2)
    here = parse_once.parse_counts()
    assert found == expected and len(found) >= 240  # a capture and a save in each model
    assert len(here_alone) == 120
    # The first models were parsed here, the rest in the pool's workers: none of those here,
    # none twice.
    models = {name for name in pooled_jobs if name.endswith(".py")}
    assert here and models and not models & set(here)
    assert len(here) + len(models) == 120 and max(here.values()) == 1
    # Every job ran once, counted once, results in the jobs' order.
    assert progress["done"] == len(pooled.jobs)
    assert list(pooled._results) == list(pooled.jobs)
    assert list(single._results) == list(single.jobs)
    assert sorted(sent) == list(range(len(pooled_jobs))) and sent != sorted(sent)


def test_batches_send_the_largest_files_first_and_the_smallest_many_to_a_batch():
    sizes = [10, 50_000, 300, 50_000, 20, 900, 1, 4000, 30, 2] * 4
    batches = engine.size_balanced_batches(sizes, 2)
    order = [i for b in batches for i in b]
    assert sorted(order) == list(range(len(sizes)))  # each job once
    assert [sizes[i] for i in order] == sorted(sizes, reverse=True)
    # Equal sizes keep the jobs' order (a stable sort).
    assert [i for i in order if sizes[i] == 50_000] == [
        i for i, s in enumerate(sizes) if s == 50_000
    ]
    share = sum(sizes) // (2 * workers.BATCHES_PER_WORKER)
    held = [sum(sizes[i] for i in b) for b in batches]
    assert len(batches[0]) == 1 and held[0] == 50_000 >= share  # a large file goes alone
    # A batch closes once it holds its share (or its count): none holds a share before its
    # last file.
    assert all(h - sizes[b[-1]] < share for h, b in zip(held, batches, strict=True))
    assert all(len(b) <= workers.MAX_BATCH_FILES for b in batches)
    assert len(batches[-1]) > 1  # the smallest files many to a batch
    assert engine.size_balanced_batches([], 2) == []


def test_a_small_tree_stays_in_one_process(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "PARALLEL_THRESHOLD", 8)
    root = _tree(tmp_path / "repo", 40)  # parses far less than POOL_AFTER_BYTES

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool started for a small tree")

    monkeypatch.setattr(engine.Scanner, "_in_pool", no_pool)
    _, found, _ = _scan(root, jobs=2)
    assert len(parse_once.parse_counts()) == 40 and len(found) >= 80
