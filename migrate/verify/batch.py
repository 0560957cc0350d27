"""Convert or verify a whole registry of TorchScript archives.

Every archive runs in a fresh process (``python -m migrate.verify.batch``), so a native
abort or a hang in one archive costs that archive only: the parent kills it at its
timeout and records ``timeout``. The parent runs N such processes at a time (``-j``) or
hands them to Ray as tasks (:mod:`migrate.verify.ray_runner`), and appends one JSON line
per archive to the results file as soon as it ends, so a killed batch resumes where it
stopped. No torch import here: the worker imports the pipeline inside :func:`work`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.safe_write import UnsafeOutput, check_output, make_folder, open_append, write_atomic
from migrate.verify.errors import VerifyError, describe
from migrate.verify.options import check_options

VERDICTS = ("pass", "mismatch", "error", "timeout", "refused")
EXIT_CODES = {"pass": 0, "mismatch": 1, "error": 2, "timeout": 2, "refused": 2}

#: Memory budgeted per worker for the default ``-j``. One worker converting a tiny archive
#: peaks at about 0.4 GiB RSS (torch and executorch loaded, one lowering; measured with
#: benchmarks/registry_bench.py); 1 GiB leaves room for the weights of a small real model,
#: which export and lowering copy a few times. Larger models need an explicit ``-j``.
JOB_MEMORY_BYTES = 1 << 30

#: Per-archive settings a manifest may give, and the command-line settings they override.
SETTING_KEYS = (
    "inputs",
    "input_shapes",
    "dynamic_dims",
    "rtol",
    "atol",
    "device",
    "method",
    "samples",
    "seed",
    "backend",
    "trust",
    "max_input_bytes",
)
_MANIFEST_KEYS = {"archive", "timeout", "devices", *SETTING_KEYS}


@dataclass
class Job:
    """One archive to convert or verify, with its settings after the manifest's overrides."""

    archive: str  # absolute path
    mode: str  # convert | verify
    out: str  # folder for its artifacts
    settings: dict[str, Any]
    timeout: float | None = None
    digest: str = ""
    root: str = ""  # the batch's --out: every artifact stays inside it

    @property
    def settings_digest(self) -> str:
        text = json.dumps({"mode": self.mode, **self.settings}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def gpus(self) -> int:
        """GPUs the job needs: one when it checks a CUDA device."""
        return int(str(self.settings.get("device") or "").startswith("cuda"))

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": self.archive,
            "mode": self.mode,
            "out": self.out,
            "settings": self.settings,
            "timeout": self.timeout,
            "digest": self.digest,
            "root": self.root,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Job:
        return cls(**doc)


# --------------------------------------------------------------------------- input


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def archives_under(root: Path) -> list[Path]:
    """Every ``*.pt`` file under ``root``, in a stable order."""
    return sorted(p for p in root.rglob("*.pt") if p.is_file())


def _text(raw: dict[str, Any], key: str, where: str, what: str = "a string") -> str | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or "\0" in value:
        raise VerifyError("usage", f"{where}: `{key}` must be {what}, not {_shown(value)}")
    return value


def _split_list(raw: dict[str, Any], key: str, where: str) -> list[str]:
    value = raw.get(key)
    if value is None or value == "":
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, str):
        return [v for v in value.replace(";", " ").split() if v]
    raise VerifyError(
        "usage",
        f"{where}: `{key}` must be a list of strings or one string, not {_shown(value)}",
    )


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _number(value: Any, key: str, where: str, kind: type = float) -> Any:
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError
        if not math.isfinite(float(value)):
            raise VerifyError("usage", f"{where}: `{key}` must be a finite number, not {value!r}")
        out = kind(value)
    except (TypeError, ValueError):
        raise VerifyError(
            "usage", f"{where}: `{key}` must be a number, not {_shown(value)}"
        ) from None
    if out < 0:
        raise VerifyError("usage", f"{where}: `{key}` must be >= 0, not {value!r}")
    return out


def _entry(raw: dict[str, Any], base: Path, where: str) -> dict[str, Any]:
    """A manifest row as ``{archive, timeout, devices, <setting>: value}``, paths resolved.
    A row may ask for the audit (`trust: false`) but never skip it: only the command line's
    --trust-archive does, like any setting that would run what a file carries."""
    unknown = sorted(k for k in raw if k not in _MANIFEST_KEYS and raw[k] not in (None, ""))
    if unknown:
        raise VerifyError(
            "usage",
            f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(_MANIFEST_KEYS))})",
        )
    archive = _text(raw, "archive", where, "a path (a string)")
    if not archive:
        raise VerifyError("usage", f"{where}: no `archive` path")
    entry: dict[str, Any] = {"archive": str((base / archive).resolve())}
    inputs = _text(raw, "inputs", where, "a path (a string)")
    if inputs:
        entry["inputs"] = str((base / inputs).resolve())
    for key in ("input_shapes", "dynamic_dims"):
        if raw.get(key):
            entry[key] = _split_list(raw, key, where)
    for key in ("rtol", "atol", "timeout"):
        value = _number(raw.get(key), key, where)
        if value is not None:
            entry[key] = value
    for key in ("samples", "seed", "max_input_bytes"):
        value = _number(raw.get(key), key, where, int)
        if value is not None:
            entry[key] = value
    for key in ("method", "backend", "device"):
        value = _text(raw, key, where)
        if value:
            entry[key] = value
    if raw.get("devices"):
        entry["devices"] = _split_list(raw, "devices", where)
    if raw.get("trust") not in (None, ""):
        if str(raw["trust"]).lower() in ("1", "true", "yes"):
            sys.stderr.write(
                f"warning: {where}: `trust` ignored: only --trust-archive on the command line "
                "loads an archive without its audit\n"
            )
        else:
            entry["trust"] = False
    try:  # as the command line's, before any worker imports torch
        for device in entry.get("devices") or [entry.get("device")]:
            check_options(
                input_shapes=entry.get("input_shapes", ()),
                dynamic_dims=entry.get("dynamic_dims", ()),
                device=device,
                method=entry.get("method"),
                backend=entry.get("backend"),
            )
    except VerifyError as exc:
        raise VerifyError("usage", f"{where}: {exc.message}") from None
    return entry


def read_manifest(path: Path) -> list[dict[str, Any]]:
    """JSON lines (one object per line) or CSV with a header row; paths are relative to the
    manifest's folder. A bad row is a usage error naming the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VerifyError("usage", f"--manifest {path}: cannot read: {describe(exc)}") from None
    base = path.parent
    rows: list[tuple[int, dict[str, Any]]] = []
    if path.suffix.lower() == ".csv":
        for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            rows.append((i, {k.strip(): (v or "").strip() for k, v in row.items() if k}))
    else:
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise VerifyError(
                    "usage", f"{path}:{i}: not a JSON object ({exc.msg}); use JSON lines or .csv"
                ) from None
            if not isinstance(doc, dict):
                raise VerifyError("usage", f"{path}:{i}: expected a JSON object per line")
            rows.append((i, doc))
    entries = [_entry(raw, base, f"{path}:{i}") for i, raw in rows]
    if not entries:
        raise VerifyError("usage", f"--manifest {path}: no archives listed")
    return entries


def _artifact_dir(archive: Path, root: Path | None, out: Path, mode: str) -> Path:
    """Artifacts mirror the registry's layout under ``out`` (verify: a folder per archive)."""
    try:
        rel = archive.relative_to(root) if root else Path(archive.name)
    except ValueError:  # a manifest entry outside the manifest's folder
        rel = Path("_external") / sha256_file(archive)[:12] / archive.name
    where = out / rel.parent
    return where / archive.stem if mode == "verify" else where


def build_jobs(
    mode: str,
    target: str | None,
    manifest: Path | None,
    out: Path,
    settings: dict[str, Any],
    timeout: float | None,
) -> list[Job]:
    """The jobs of a folder (every ``*.pt`` with the command line's settings) or a manifest
    (each row's settings over the command line's)."""
    if manifest is not None:
        entries = read_manifest(manifest)
        root: Path | None = manifest.parent.resolve()
    else:
        assert target is not None
        root = Path(target).resolve()
        entries = [{"archive": str(p)} for p in archives_under(root)]
        if not entries:
            raise VerifyError("usage", f"{target}: no *.pt archives under it")
    jobs = []
    for entry in entries:
        job_settings = dict(settings)
        job_settings.update({k: v for k, v in entry.items() if k in SETTING_KEYS})
        if job_settings.get("inputs"):
            job_settings["input_shapes"] = entry.get("input_shapes", [])
        elif entry.get("input_shapes"):
            job_settings["inputs"] = None
        archive = Path(entry["archive"])
        devices = entry.get("devices") or [job_settings.get("device")]
        where = _artifact_dir(archive, root, out, mode)
        for device in devices:
            s = dict(job_settings, device=device)
            if len(devices) > 1:  # one report folder per device
                where_d = where.with_name(f"{where.name}@{str(device).replace(':', '-')}")
            else:
                where_d = where
            jobs.append(
                Job(
                    archive=str(archive),
                    mode=mode,
                    out=str(where_d),
                    settings=s,
                    timeout=entry.get("timeout", timeout),
                    root=str(out),
                )
            )
    return jobs


# --------------------------------------------------------------------------- results


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


# --------------------------------------------------------------------------- one archive


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
    "from migrate.verify.batch import _worker_main; sys.exit(_worker_main(sys.argv[1:]))"
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
    """The command line of an isolated ``migrate.verify.batch`` worker (Python 3.10+)."""
    return [sys.executable, "-I", "-c", _BOOTSTRAP, json.dumps(worker_path()), *args]


def run_job(job_doc: dict[str, Any], threads: int | None = None) -> dict[str, Any]:
    """Run one archive in a fresh ``python -m migrate.verify.batch`` process; the result
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
    from migrate.verify.audit import ArchiveRefused, ArchiveUnreadable, audit_archive

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


# --------------------------------------------------------------------------- the batch


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


# --------------------------------------------------------------------------- output


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


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
