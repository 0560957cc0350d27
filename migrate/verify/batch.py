"""Convert or verify a whole registry of TorchScript archives.

Every archive runs in a fresh process (:mod:`migrate.verify.batch_worker`), so a native
abort or a hang in one archive costs that archive only: the parent kills it at its
timeout and records ``timeout``. The parent runs N such processes at a time (``-j``) or
hands them to Ray as tasks (:mod:`migrate.verify.ray_runner`), and appends one JSON line
per archive to the results file as soon as it ends (:mod:`migrate.verify.batch_results_file`),
so a killed batch resumes where it stopped. The jobs come from
:mod:`migrate.verify.batch_jobs`, what the batch shows from :mod:`migrate.verify.batch_output`.
No torch import here: the worker imports the pipeline inside its own process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.safe_write import UnsafeOutput, check_output
from migrate.verify.batch_jobs import Job, sha256_file
from migrate.verify.batch_results_file import ResultsFile, compact, read_results, result_key, to_run
from migrate.verify.batch_worker import kill_live, run_job
from migrate.verify.errors import VerifyError

VERDICTS = ("pass", "mismatch", "error", "timeout", "refused")
EXIT_CODES = {"pass": 0, "mismatch": 1, "error": 2, "timeout": 2, "refused": 2}

#: Memory budgeted per worker for the default ``-j``. One worker converting a tiny archive
#: peaks at about 0.4 GiB RSS (torch and executorch loaded, one lowering; measured with
#: benchmarks/registry_bench.py); 1 GiB leaves room for the weights of a small real model,
#: which export and lowering copy a few times. Larger models need an explicit ``-j``.
JOB_MEMORY_BYTES = 1 << 30


def default_jobs() -> tuple[int, str]:
    """Cores, limited by the memory available per job; and how N was chosen."""
    cores = _cores()
    avail = _available_memory()
    if avail is None:
        return cores, f"{cores} cores"
    by_memory = max(1, avail // JOB_MEMORY_BYTES)
    n = max(1, min(cores, by_memory))
    return n, (
        f"{cores} cores, {avail / 2**30:.1f} GiB available / "
        f"{JOB_MEMORY_BYTES / 2**30:.1f} GiB per job"
    )


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@dataclass
class BatchResult:
    records: list[dict[str, Any]]  # one per job of this batch (run now or earlier)
    ran: int  # how many ran now
    skipped: int
    wall_s: float
    results_path: Path
    jobs_label: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return max((EXIT_CODES.get(r["verdict"], 2) for r in self.records), default=0)


def run_batch(
    jobs: list[Job],
    results_path: Path,
    n_jobs: int,
    rerun: str | None = None,
    remote: Callable[[list[dict[str, Any]], int, Callable[[dict[str, Any]], None]], None]
    | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> BatchResult:
    """Run the jobs that have no up-to-date result, append each result as it ends; `remote`
    (the jobs' JSON, -j, the callback for each record) runs them elsewhere instead of in local
    worker processes (--ray: migrate.verify.ray_runner.run_on_ray)."""
    start = time.perf_counter()
    try:
        check_output(results_path)
    except UnsafeOutput as exc:
        raise VerifyError("output", str(exc)) from None
    for job in jobs:
        job.digest = sha256_file(job.archive) if Path(job.archive).is_file() else ""
    previous = read_results(results_path)
    todo = to_run(jobs, previous, rerun)
    if on_start is not None:
        on_start(len(todo), len(jobs) - len(todo))
    done: dict[tuple[str, str | None], dict[str, Any]] = {}
    results = ResultsFile(results_path)
    try:

        def finished(record: dict[str, Any]) -> None:
            results.append(record)
            done[result_key(record)] = record
            if on_result is not None:
                on_result(record)

        if remote is not None:
            remote([j.to_json() for j in todo], n_jobs, finished)
        else:
            _run_local(todo, n_jobs, finished)
    finally:
        results.close()
    compact(results_path)
    records = []
    for job in jobs:
        key = (job.archive, job.settings.get("device"))
        record = done.get(key) or previous.get(key)
        if record is not None:
            records.append(record)
    counts = {v: 0 for v in VERDICTS}
    for r in records:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return BatchResult(
        records,
        len(done),
        len(jobs) - len(todo),
        time.perf_counter() - start,
        results_path,
        counts=counts,
    )


def _run_local(todo: list[Job], n_jobs: int, finished: Callable[[dict[str, Any]], None]) -> None:
    """N worker processes at a time; threads only wait on them."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    threads = max(1, _cores() // max(1, n_jobs))
    with ThreadPoolExecutor(max_workers=max(1, n_jobs)) as pool:
        pending = {pool.submit(run_job, job.to_json(), threads) for job in todo}
        try:
            while pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in ready:
                    finished(fut.result())
        except BaseException:  # Ctrl-C or SIGTERM: stop the queue and the running workers
            for fut in pending:
                fut.cancel()
            kill_live()
            raise
