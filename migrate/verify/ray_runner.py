"""Run a batch's archives as Ray tasks: one task per archive and device (issue 14).

Each task runs :func:`migrate.verify.batch_worker.run_job`, which starts the same fresh worker
process as the local pool (a native abort or a hang costs that task only). A task
declares one CPU, plus one GPU when it checks a CUDA device, so Ray places GPU checks on
GPU nodes. Results come back as tasks end. Artifacts go to the job's output path, which
must be a folder every node can write (a shared filesystem) on a real cluster.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Callable
from typing import Any

from migrate.verify.errors import VerifyError, install_command

INSTALL_RAY = f"migrate --ray needs Ray: {install_command('ray')}"


def ray_available() -> bool:
    return importlib.util.find_spec("ray") is not None


def _connect(ray: Any, address: str | None, n_jobs: int | None, empty: str) -> bool:
    """Join ``address`` (or RAY_ADDRESS), or start a local instance; True when we started
    it (and so shut it down). A session the caller already started is reused."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False}
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        kwargs["address"] = address  # a cluster's own settings (dashboard, CPUs) are its own
    else:
        kwargs["include_dashboard"] = False
        if n_jobs:
            kwargs["num_cpus"] = n_jobs
    # Ray puts the driver's current folder on its workers' sys.path (and a local instance's
    # workers start in it): start it from an empty folder, which lives as long as the
    # session, so that nothing in the folder the batch was started from is imported there.
    here = os.getcwd()
    try:
        os.chdir(empty)
        try:
            ray.init(**kwargs)
        finally:
            os.chdir(here)
    except Exception as exc:
        where = address or "a local instance"
        raise VerifyError("usage", f"--ray: cannot start or join {where}: {exc}") from None
    return True


def run_on_ray(
    jobs: list[dict[str, Any]],
    address: str | None,
    n_jobs: int | None,
    finished: Callable[[dict[str, Any]], None],
) -> None:
    import ray

    with tempfile.TemporaryDirectory(prefix="migrate-ray-") as empty:
        _run(ray, jobs, _connect(ray, address, n_jobs, empty), finished)


def _run(
    ray: Any, jobs: list[dict[str, Any]], started: bool, finished: Callable[[dict[str, Any]], None]
) -> None:
    from migrate.verify.batch_jobs import Job
    from migrate.verify.batch_worker import run_job

    try:
        remote = ray.remote(run_job)
        refs = {}
        for doc in jobs:
            gpus = Job.from_json(doc).gpus
            # max_retries=0: a worker that died is a verdict, not something to run again.
            ref = remote.options(num_cpus=1, num_gpus=gpus, max_retries=0).remote(doc)
            refs[ref] = doc
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    try:
                        record = ray.get(ref)
                    except Exception as exc:  # the task itself died (node lost, OOM kill)
                        record = _lost(refs[ref], exc)
                    finished(record)
        except BaseException:  # Ctrl-C: a cluster would otherwise go on running them
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:
            ray.shutdown()


def _lost(doc: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    from migrate.verify.batch_jobs import Job
    from migrate.verify.batch_worker import _record
    from migrate.verify.errors import describe

    outcome = {"verdict": "error", "error": {"stage": "crash", "message": describe(exc)}}
    return _record(Job.from_json(doc), outcome, 0.0)
