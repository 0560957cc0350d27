"""One archive of a batch, in a fresh process: the parent starts an isolated worker
(``python -I``, its own session), kills it and all it started at its timeout, and makes the
record of its outcome; the worker (:func:`work`) audits the archive, imports torch and runs
convert or verify on it. A native abort or a hang costs that archive only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from migrate.verify.batch_jobs import Job
from migrate.verify.errors import VerifyError, describe


def _record(job: Job, outcome: dict[str, Any], seconds: float) -> dict[str, Any]:
    return {
        "path": job.archive,
        "device": job.settings.get("device"),
        "mode": job.mode,
        "digest": job.digest,
        "settings_digest": job.settings_digest,
        "verdict": outcome.get("verdict", "error"),
        "recovery": outcome.get("recovery", []),
        "max_errors": outcome.get("max_errors", {}),
        "lower_s": outcome.get("lower_s"),
        "seconds": round(seconds, 2),
        "peak_rss_mb": outcome.get("peak_rss_mb"),
        "artifacts": outcome.get("artifacts", {}),
        "error": outcome.get("error"),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


#: Workers running now, so that an interrupted batch leaves none behind (they run in their
#: own sessions, which Ctrl-C does not reach).
_LIVE: set[subprocess.Popen] = set()


def kill_live() -> None:
    for proc in list(_LIVE):
        _kill(proc)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker and anything it started
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


#: The worker's start: ``python -I`` puts neither the current folder nor PYTHONPATH on
#: sys.path (so a ``typing.py`` or ``migrate/`` in the folder the batch was started from is
#: never imported); the path is then set to this process's own, less the current folder.
_BOOTSTRAP = (
    "import json, sys; sys.path[:] = json.loads(sys.argv.pop(1)); "
    "from migrate.verify.batch_worker import _worker_main; sys.exit(_worker_main(sys.argv[1:]))"
)


def worker_path() -> list[str]:
    """This process's sys.path for a worker: the folder holding ``migrate`` first, then
    every absolute entry but the current folder (``''`` and relative entries are it)."""
    root = str(Path(__file__).resolve().parents[2])
    try:
        cwd = os.path.realpath(os.getcwd())
    except FileNotFoundError:  # the current folder was removed: nothing to leave out
        cwd = None
    keep = [root]
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or entry in keep:
            continue
        if os.path.realpath(entry) == cwd:
            continue
        keep.append(entry)
    return keep


def worker_command(*args: str) -> list[str]:
    """The command line of an isolated ``migrate.verify.batch_worker`` worker (Python 3.10+)."""
    return [sys.executable, "-I", "-c", _BOOTSTRAP, json.dumps(worker_path()), *args]


def run_job(job_doc: dict[str, Any], threads: int | None = None) -> dict[str, Any]:
    """Run one archive in a fresh ``python -m migrate.verify.batch_worker`` process; the result
    record. Used by the local pool and, inside a Ray task, by the cluster runner.

    ``threads``: torch's intra-op threads in the worker. N workers that each take every
    core oversubscribe the machine (Ray sets OMP_NUM_THREADS per task itself); a value
    the user set is kept."""
    job = Job.from_json(job_doc)
    env = dict(os.environ)
    if threads and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(threads)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="migrate-batch-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job_file.write_text(json.dumps(job_doc))
        cmd = worker_command(str(job_file), str(result_file))
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: a timeout kills all of it
        )
        _LIVE.add(proc)
        try:
            _, err = proc.communicate(timeout=job.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            outcome = {
                "verdict": "timeout",
                "error": {"stage": "timeout", "message": f"no result after {job.timeout:g} s"},
            }
            return _record(job, outcome, time.perf_counter() - start)
        except BaseException:  # Ctrl-C: leave no worker behind
            _kill(proc)
            raise
        finally:
            _LIVE.discard(proc)
        if result_file.exists():
            outcome = json.loads(result_file.read_text())
        else:
            code = proc.returncode
            why = (
                f"the worker was killed by {signal.Signals(-code).name}"
                if code < 0
                else f"the worker exited {code} without a result"
            )
            last = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
            if last:
                why += f": {last[-1].strip()[:300]}"
            outcome = {"verdict": "error", "error": {"stage": "crash", "message": why}}
    return _record(job, outcome, time.perf_counter() - start)


def _precheck(path: Path, trust: bool) -> None:
    """The cheap refusals before torch is imported: not a zip, or code the audit refuses."""
    from migrate.verify.archive_zip import ArchiveUnreadable
    from migrate.verify.audit import ArchiveRefused, audit_archive

    if not path.is_file():
        raise VerifyError("load", f"no such file: {path}")
    if not zipfile.is_zipfile(path):
        raise VerifyError("load", f"{path} is not a TorchScript archive (not a zip archive)")
    try:
        audit_archive(path, code=not trust)  # the zip's sizes and names: always
    except (ArchiveRefused, ArchiveUnreadable) as exc:
        raise VerifyError("audit", str(exc)) from exc


def _max_errors(cells: Iterable[Any]) -> dict[str, dict[str, Any]]:
    from migrate.verify.compare import json_float

    out: dict[str, dict[str, Any]] = {}
    for c in cells:
        out.setdefault(c.candidate, {})[c.device] = (
            None if c.status == "error" else json_float(c.max_abs)
        )
    return out


def _lower_seconds(recovery: list[dict[str, Any]]) -> float | None:
    times = [r["lower_s"] for r in recovery if r.get("lower_s") is not None]
    return round(sum(times), 2) if times else None


def _convert(job: Job) -> dict[str, Any]:
    from migrate.verify.compare import json_float
    from migrate.verify.convert_flow import run_convert

    s = job.settings
    res = run_convert(
        job.archive,
        s.get("inputs"),
        list(s.get("input_shapes") or []),
        Path(job.out),
        backend=s.get("backend") or "xnnpack",
        dynamic_dims=list(s.get("dynamic_dims") or []),
        seed=s.get("seed") or 0,
        method=s.get("method"),
        trust=bool(s.get("trust")),
        max_input_bytes=s.get("max_input_bytes"),
        rtol=s.get("rtol"),
        atol=s.get("atol"),
        root=Path(job.root) if job.root else None,
        aoti=bool(s.get("aoti")),
        device=s.get("aoti_device") or "cpu",
        dynamic_batch=s.get("dynamic_batch"),
    )
    recovery = [r.to_json() for r in res.recoveries.values()]
    artifacts = {f"pt2:{m}" if m != "forward" else "pt2": str(p) for m, p in res.pt2.items()}
    if res.pte is not None:
        artifacts["pte"] = str(res.pte)
    for pkg in res.packages:
        artifacts["aoti" if pkg.method == "forward" else f"aoti:{pkg.method}"] = str(pkg.path)
    error = None
    if res.mismatch:
        error = {"stage": "mismatch", "message": res.mismatch}
    elif res.pte_error is not None:
        error = {"stage": res.pte_error.stage, "message": res.pte_error.message}
    lower_s = _lower_seconds(recovery)
    if res.together_s is not None:
        lower_s = round(res.together_s, 2)
    return {
        "verdict": "mismatch" if res.mismatch else ("error" if error else "pass"),
        "recovery": recovery,
        # Candidates named as verify names them: pte, pte:encode (other methods).
        "max_errors": {
            "pte" if m == "forward" or len(res.max_abs) == 1 else f"pte:{m}": {"cpu": json_float(v)}
            for m, v in res.max_abs.items()
        },
        "lower_s": lower_s,
        "artifacts": artifacts,
        "error": error,
    }


def _verify(job: Job) -> dict[str, Any]:
    from migrate.verify.options import VerifyConfig
    from migrate.verify.verify_flow import run_verify

    s = job.settings
    cfg = VerifyConfig(
        target=job.archive,
        inputs=s.get("inputs"),
        input_shapes=list(s.get("input_shapes") or []),
        dynamic_dims=list(s.get("dynamic_dims") or []),
        device=s.get("device") or "auto",
        samples=3 if s.get("samples") is None else s["samples"],
        seed=s.get("seed") or 0,
        rtol=s.get("rtol"),
        atol=s.get("atol"),
        backend=s.get("backend") or "xnnpack",
        out=Path(job.out),
        out_root=Path(job.root) if job.root else None,
        trust_archive=bool(s.get("trust")),
        max_input_bytes=s.get("max_input_bytes"),
        aoti=bool(s.get("aoti")),
        dynamic_batch=s.get("dynamic_batch"),
        method=s.get("method"),
    )
    report = run_verify(cfg)
    error = report.errors[0] if report.errors else None
    if error is None:
        failing = next((c for c in report.cells if c.status == "fail"), None)
        if failing is not None:
            w = failing.worst or {}
            error = {
                "stage": "mismatch",
                "message": f"{failing.candidate} on {failing.device}: {w.get('leaf')} on "
                f"sample {w.get('sample')}: max abs {w.get('max_abs')}"
                + (f" ({w['note']})" if w.get("note") else ""),
            }
        elif report.branches is not None and report.branches.status == "fail":
            error = {"stage": "branches", "message": "the reference froze a branch"}
    return {
        "verdict": report.verdict,
        "recovery": report.recovery,
        "max_errors": _max_errors(report.cells),
        "lower_s": _lower_seconds(report.recovery),
        "artifacts": report.artifacts,
        "error": error,
    }


def work(job: Job) -> dict[str, Any]:
    """Convert or verify one archive in this process; the outcome part of its record."""
    import resource

    try:
        _precheck(Path(job.archive), bool(job.settings.get("trust")))
        outcome = _convert(job) if job.mode == "convert" else _verify(job)
    except VerifyError as exc:
        verdict = "refused" if exc.stage == "audit" else "error"
        outcome = {"verdict": verdict, "error": {"stage": exc.stage, "message": exc.message}}
    except Exception as exc:  # a crash inside torch: the record says so, the batch goes on
        outcome = {"verdict": "error", "error": {"stage": "crash", "message": describe(exc)}}
    # ru_maxrss is in KiB on Linux.
    outcome["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return outcome


def _worker_main(argv: list[str]) -> int:
    job_file, result_file = argv
    job = Job.from_json(json.loads(Path(job_file).read_text()))
    outcome = work(job)
    tmp = result_file + ".tmp"
    Path(tmp).write_text(json.dumps(outcome))
    os.replace(tmp, result_file)  # a result is whole or absent
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
