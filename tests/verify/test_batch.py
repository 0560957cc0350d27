"""Issue 14: convert and verify a whole registry, in worker processes or on Ray, resumably.

The registry (``registry_models.registry``): two passing archives, one mismatching (an int
loop count the program is specialised to), one hostile (the audit refuses it), one corrupt
(random bytes) and one that never returns (killed at its 10 s timeout). Every batch runs
the real CLI in a subprocess, as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from tests.shared_dir import shared_folder  # noqa: E402
from tests.verify import registry_models  # noqa: E402

pytestmark = pytest.mark.verify

REPO = Path(__file__).resolve().parents[2]
#: What each archive of the registry must get.
VERDICTS = {
    "pass_scripted": "pass",
    "pass_traced": "pass",
    "mismatch": "mismatch",
    "refused": "refused",
    "corrupt": "error",
    "timeout": "timeout",
}
REGISTRY_FILES = {
    "pass_scripted": "linear_00.pt",
    "pass_traced": "linear_01.pt",
    "mismatch": "arg_loop.pt",
    "refused": "hostile.pt",
    "corrupt": "corrupt.pt",
    "timeout": "hang.pt",
    "manifest": "manifest.jsonl",
}
#: A local Ray instance that did not come up (on a loaded machine its raylet gives the
#: dashboard agent about 15 s to write its port files and aborts after that, and ray.init
#: gives the raylet 30 s; neither wait is configurable): Ray's start-up, not the batch.
RAY_DID_NOT_START = "--ray: cannot start or join a local instance:"
RAY_STARTS = 3
#: Fields that differ between two runs of the same batch.
TIMINGS = {"seconds", "lower_s", "peak_rss_mb", "finished", "recovery"}


def migrate(*args, env_extra=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), CI="1")
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "migrate", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def by_path(records: list[dict]) -> dict[str, dict]:
    return {r["path"]: r for r in records}


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    # The batch is the slow part of this file: built once per session for every worker.
    with shared_folder(tmp_path_factory, "registry14") as root:
        paths = {k: root / "registry" / v for k, v in REGISTRY_FILES.items()}
        if not (root / "registry" / "manifest.jsonl").exists():
            assert registry_models.registry(root / "registry") == paths
        return paths


@pytest.fixture(scope="module")
def batch(reg, tmp_path_factory):
    """``migrate convert --manifest ... -j 2`` over the whole registry, run once."""
    with shared_folder(tmp_path_factory, "registry14_batch") as out:
        done = out / "process.json"
        if not done.exists():
            proc = migrate(
                "convert", "--manifest", reg["manifest"], "-o", out, "-j", "2",
                "--timeout", "300", "--backend", "portable", "--format", "json",
            )  # fmt: skip
            done.write_text(json.dumps([proc.returncode, proc.stdout, proc.stderr]))
        code, stdout, stderr = json.loads(done.read_text())
        return subprocess.CompletedProcess([], code, stdout, stderr), out


@pytest.mark.slow  # the batch fixture converts the whole registry with -j 2: ~60 s CPU
def test_each_archive_gets_its_own_verdict_and_the_exit_code_is_the_worst(reg, batch):
    proc, out = batch
    assert proc.returncode == 2, proc.stderr
    summary = json.loads(proc.stdout)
    records = lines(out / "results.jsonl")
    assert len(records) == len(VERDICTS)  # one line per archive
    got = by_path(records)
    for name, verdict in VERDICTS.items():
        rec = got[str(reg[name])]
        assert rec["verdict"] == verdict, (name, rec)
        assert rec["digest"] == registry_models_digest(reg[name])
    assert summary["counts"] == {
        "pass": 2, "mismatch": 1, "error": 1, "timeout": 1, "refused": 1
    }  # fmt: skip


def registry_models_digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # the batch fixture converts the whole registry with -j 2: ~60 s CPU
def test_passing_records_hold_recovery_errors_timings_and_artifacts(reg, batch):
    _, out = batch
    rec = by_path(lines(out / "results.jsonl"))[str(reg["pass_scripted"])]
    assert rec["recovery"][0]["path"] == "converter"
    assert rec["max_errors"]["pte"]["cpu"] < 1e-5
    assert rec["lower_s"] > 0 and rec["seconds"] >= rec["lower_s"]
    assert rec["peak_rss_mb"] > 100  # torch and executorch were loaded
    # Artifacts mirror the registry's layout under -o, and load.
    assert rec["artifacts"]["pte"] == str(out / "linear_00.pte")
    ep = torch.export.load(rec["artifacts"]["pt2"])
    x = torch.randn(2, 4)
    ref = torch.jit.load(str(reg["pass_scripted"]))
    torch.testing.assert_close(ep.module()(x), ref(x))


@pytest.mark.slow  # the batch fixture converts the whole registry with -j 2: ~60 s CPU
def test_failures_name_their_stage(reg, batch):
    _, out = batch
    got = by_path(lines(out / "results.jsonl"))
    assert got[str(reg["refused"])]["error"]["stage"] == "audit"
    assert "torch.from_file" in got[str(reg["refused"])]["error"]["message"]
    assert not (reg["refused"].parent / "victim").exists()  # never loaded, never run
    assert got[str(reg["corrupt"])]["error"]["stage"] == "load"
    assert "not a zip archive" in got[str(reg["corrupt"])]["error"]["message"]
    assert got[str(reg["timeout"])]["error"] == {
        "stage": "timeout",
        "message": "no result after 10 s",
    }
    assert "input1=4" in got[str(reg["mismatch"])]["error"]["message"]
    assert not (out / "arg_loop.pte").exists()  # a mismatch writes nothing


@pytest.mark.slow  # the batch fixture converts the whole registry with -j 2: ~60 s CPU
def test_resume_runs_only_the_archives_without_a_result(reg, batch, tmp_path):
    _, out = batch
    results = tmp_path / "results.jsonl"
    complete = lines(out / "results.jsonl")
    # A batch killed after four archives: their lines, and half of the fifth.
    kept = [r for r in complete if r["path"] not in (str(reg["corrupt"]), str(reg["refused"]))]
    torn = json.dumps(next(r for r in complete if r["path"] == str(reg["corrupt"])))[:40]
    results.write_text("".join(json.dumps(r) + "\n" for r in kept) + torn)
    proc = migrate(
        "convert", "--manifest", reg["manifest"], "-o", tmp_path / "out", "-j", "2",
        "--backend", "portable", "--results", results, "--timeout", "300",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "4 archive(s) already have a result; running 2" in proc.stderr
    after = lines(results)  # compacted: one line per archive again, the torn one dropped
    assert len(after) == len(VERDICTS)
    rerun = {p for p, r in by_path(after).items() if r not in kept}
    assert rerun == {str(reg["corrupt"]), str(reg["refused"])}
    assert {r["path"]: r["verdict"] for r in after} == {
        str(reg[name]): v for name, v in VERDICTS.items()
    }
    assert "2 run, 4 already done" in proc.stdout


@pytest.mark.slow  # the batch fixture converts the whole registry with -j 2: ~60 s CPU
def test_rerun_failed_retries_only_the_failures(reg, batch, tmp_path):
    """A manifest of three rows whose results exist: --rerun failed runs the two failures."""
    _, out = batch
    rows = [json.loads(x) for x in reg["manifest"].read_text().splitlines()]
    sub = reg["manifest"].parent / "sub.jsonl"
    sub.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in rows
            if r["archive"] in ("linear_00.pt", "hostile.pt", "corrupt.pt")
        )
    )
    results = tmp_path / "results.jsonl"
    results.write_text((out / "results.jsonl").read_text())
    before = by_path(lines(results))
    proc = migrate(
        "convert", "--manifest", sub, "-o", tmp_path / "out", "--backend", "portable",
        "--results", results, "--rerun", "failed",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    after = by_path(lines(results))
    changed = {p for p in after if after[p]["finished"] != before[p]["finished"]}
    assert changed <= {str(reg["refused"]), str(reg["corrupt"])}
    assert str(reg["pass_scripted"]) not in changed
    assert "2 run, 1 already done" in proc.stdout


@pytest.mark.slow  # the whole batch again on a local Ray instance (its own processes uncounted): minutes
def test_ray_gives_the_same_results_file(reg, batch, tmp_path):
    pytest.importorskip("ray", reason='the ray extra is not installed: pip install ".[ray]"')
    _, out = batch
    results = tmp_path / "ray.jsonl"
    for _ in range(RAY_STARTS):
        proc = migrate(
            "convert", "--manifest", reg["manifest"], "-o", tmp_path / "out", "--ray", "-j", "2",
            "--backend", "portable", "--results", results, "--timeout", "300",
        )  # fmt: skip
        if RAY_DID_NOT_START not in proc.stderr:
            break
        assert not results.exists() or not lines(results), "a task ran: Ray did start"
    assert proc.returncode == 2, proc.stderr
    local, ray = by_path(lines(out / "results.jsonl")), by_path(lines(results))
    assert set(ray) == set(local)

    def same(record: dict) -> dict:
        kept = {k: v for k, v in record.items() if k not in TIMINGS}
        kept["artifacts"] = {k: Path(v).name for k, v in record["artifacts"].items()}
        # Seconds differ between runs: the per-stage timings of each recovery too.
        kept["recovery"] = [{**r, "lower_s": None, "timings": None} for r in record["recovery"]]
        return kept

    for path in local:
        assert same(ray[path]) == same(local[path]), path


@pytest.mark.slow  # an isolated verify worker that exports and lowers: ~25 s CPU
def test_verify_batch_of_a_folder(reg, tmp_path):
    """``migrate verify DIR``: every *.pt under it, a report folder per archive."""
    folder = tmp_path / "models"
    (folder / "team").mkdir(parents=True)
    (folder / "team" / "a.pt").write_bytes(reg["pass_scripted"].read_bytes())
    (folder / "b.pt").write_bytes(b"not an archive")
    proc = migrate(
        "verify", folder, "--input-shape", "2x4", "--device", "cpu", "--samples", "1",
        "--out", tmp_path / "out", "-j", "2", "--isolated",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    got = by_path(lines(tmp_path / "out" / "results.jsonl"))
    a = got[str(folder / "team" / "a.pt")]
    assert a["verdict"] == "pass" and a["device"] == "cpu"
    assert set(a["max_errors"]) == {"exported", "pt2", "pte"}
    assert Path(a["artifacts"]["report"]) == tmp_path / "out" / "team" / "a" / "report.json"
    assert got[str(folder / "b.pt")]["verdict"] == "error"
    assert "pass" in proc.stdout and "error" in proc.stdout  # the summary table


def test_ray_without_ray_says_how_to_install(reg, tmp_path):
    shadow = tmp_path / "noray"
    shadow.mkdir()
    # As if the extra were not installed: an import of ray fails, find_spec finds nothing.
    (shadow / "sitecustomize.py").write_text("import sys\nsys.modules['ray'] = None\n")
    proc = migrate(
        "convert", reg["corrupt"].parent, "-o", tmp_path / "o", "--ray",
        env_extra={"PYTHONPATH": f"{shadow}{os.pathsep}{REPO}"},
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: migrate --ray needs Ray: pip install -e '.[ray]' in a checkout of "
        "torchscript-migrate (docs/install.md)"
    )


def test_batch_usage_errors(reg, tmp_path):
    proc = migrate("convert", reg["pass_scripted"], "-j", "2", "--input-shape", "2x4")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: usage: -j: only for a folder or --manifest batch"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"archive": "a.pt", "tolerance": 1}\n')
    proc = migrate("convert", "--manifest", bad, "-o", tmp_path / "o")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: usage: {bad}:1: unknown key tolerance")
    proc = migrate("verify", reg["corrupt"].parent, "--input-shape", "2x4")
    assert proc.returncode == 2
    assert "a batch needs --out DIR" in proc.stderr


def test_csv_manifest_rows_override_the_command_line(tmp_path):
    from migrate.verify.batch_jobs import build_jobs

    (tmp_path / "m.csv").write_text(
        "archive,inputs,input_shapes,rtol,atol,devices,method,timeout\n"
        "a.pt,,1x8;2,0.5,,cpu;cuda,encode,7\n"
        "b.pt,b_inputs.pt,,,,,,\n"
    )
    cli = {"inputs": None, "input_shapes": ["2x4"], "rtol": 1e-3, "atol": 1e-4, "device": "cpu"}
    jobs = build_jobs("verify", None, tmp_path / "m.csv", tmp_path / "out", cli, 60.0)
    a_cpu, a_cuda, b = jobs
    assert a_cpu.settings["input_shapes"] == ["1x8", "2"] and a_cpu.settings["rtol"] == 0.5
    assert a_cpu.settings["atol"] == 1e-4 and a_cpu.settings["method"] == "encode"
    assert (a_cpu.settings["device"], a_cuda.settings["device"]) == ("cpu", "cuda")
    assert (a_cpu.gpus, a_cuda.gpus) == (0, 1) and a_cpu.timeout == 7
    assert b.settings["inputs"] == str(tmp_path / "b_inputs.pt")
    assert b.settings["input_shapes"] == [] and b.timeout == 60.0
    assert a_cpu.out == str(tmp_path / "out" / "a@cpu")
    assert a_cuda.out == str(tmp_path / "out" / "a@cuda")
    assert b.out == str(tmp_path / "out" / "b")


@pytest.mark.slow  # the batch fixture converts the whole registry with -j 2: ~60 s CPU
def test_report_adds_a_registry_section(reg, batch, tmp_path):
    _, out = batch
    page = tmp_path / "plan.html"
    proc = migrate(
        "report", reg["manifest"].parent, "--format", "html", "-o", page,
        "--verify-results", out / "results.jsonl",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    section = html[html.index("<h2>Model registry</h2>") :]
    assert "<b>33%</b> pass" in section  # 2 of 6
    assert '<td>converter (lowering: direct)</td><td class="num">2</td>' in section
    assert "freeze + re-capture (lowering: direct)" in section  # arg_loop's ladder step
    # Failure reasons, grouped, with the archives they hold.
    assert "refused: audit: ARCHIVE: refusing to load: torch.from_file" in section
    assert "timeout: no result after N s" in section and "<code>hang.pt</code>" in section
    proc = migrate("report", reg["manifest"].parent, "--verify-results", tmp_path / "none")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: --verify-results {tmp_path / 'none'}: cannot read")


def test_a_killed_batch_resumes_with_the_unfinished_archives(reg, tmp_path):
    """SIGTERM while the hanging archive runs: its worker dies with the batch, the two
    finished results stay, and the rerun runs the hanging archive only."""
    import signal
    import time

    rows = [json.loads(x) for x in reg["manifest"].read_text().splitlines()]
    names = ("corrupt.pt", "hostile.pt", "hang.pt")
    manifest = reg["manifest"].parent / "killed.jsonl"
    manifest.write_text(
        "".join(
            json.dumps({k: v for k, v in r.items() if k != "timeout"}) + "\n"
            for r in rows
            if r["archive"] in names
        )
    )
    results, workdir = tmp_path / "results.jsonl", tmp_path / "tmp"
    workdir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), CI="1", TMPDIR=str(workdir))
    cmd = [sys.executable, "-m", "migrate", "convert", "--manifest", str(manifest)]
    args = ["-o", str(tmp_path / "out"), "-j", "1", "--results", str(results)]
    batch = subprocess.Popen([*cmd, *args, "--timeout", "300"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 600  # event-driven: only a hang waits this long
    while time.monotonic() < deadline and (
        not results.exists() or len(lines(results)) < 2 or not any(workdir.iterdir())
    ):
        time.sleep(0.2)
    time.sleep(1.0)  # the hanging archive's worker is running
    batch.send_signal(signal.SIGTERM)
    _, err = batch.communicate(timeout=600)
    assert batch.returncode == 130, err
    assert "interrupted: rerun the same command to resume" in err
    assert {Path(r["path"]).name for r in lines(results)} == {"corrupt.pt", "hostile.pt"}
    # No worker left behind: none runs from the batch's temporary folder.
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert str(workdir) not in cmdline.read_text()
        except OSError:
            continue
    first = by_path(lines(results))
    proc = migrate(*cmd[3:], *args, "--timeout", "3", "--format", "json")
    assert proc.returncode == 2, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["ran"], summary["skipped"]) == (1, 2)
    after = by_path(lines(results))
    assert after[str(reg["timeout"])]["verdict"] == "timeout"
    for name in ("corrupt", "refused"):
        assert after[str(reg[name])] == first[str(reg[name])]
