"""Repository-level CUDA 12.8 migration: real `migrate scan` / `migrate apply` subprocesses
over fixtures/repos/cuda_mix (every file kind, positives and negatives mixed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT / "fixtures" / "repos" / "cuda_mix"

# Text that sits on lines no CUDA finding may touch (library versions, sizes, dates...).
NEGATIVE_MARKERS = ("1.12.8", "3.12.8", "12.8.0", "12.8 GB", "48.12.8", "MB", "REQUIRED", "timeout")


def run(*args: str, cwd: Path, env_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MIGRATE_CACHE_DIR": str(env_dir), "NO_COLOR": "1", "CI": "1"}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def files(tree: Path) -> dict[str, bytes]:
    return {
        p.relative_to(tree).as_posix(): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture
def work(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(REPO / "before", target)
    return target


def test_scan_reports_every_file_kind_and_no_negative(work: Path, tmp_path: Path) -> None:
    proc = run(
        "scan",
        "repo",
        "--select",
        "MIG3",
        "--format",
        "json",
        cwd=tmp_path,
        env_dir=tmp_path / "cache",
    )
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    findings = report["findings"] if isinstance(report, dict) else report
    by_file: dict[str, set[str]] = {}
    for f in findings:
        rel = Path(f["path"]).relative_to("repo").as_posix()
        by_file.setdefault(rel, set()).add(f["rule"])
        line = (work / rel).read_text(encoding="utf-8").splitlines()[f["line"] - 1]
        span = line[f["column"] - 1 : f["end_column"] - 1]
        assert span and not any(m in span for m in NEGATIVE_MARKERS), (rel, line, f["message"])
        assert not line.lstrip().startswith("#"), (rel, line)  # comments are never reported
        assert "580" in f["message"] and "pre-Turing" in f["message"]
    # Exactly the expected findings (reviewed by hand): nothing more, nothing less.
    got = sorted(
        f"{Path(f['path']).relative_to('repo').as_posix()}:{f['line']}:{f['column']} "
        f"{f['rule']} [{f['fix']}]"
        for f in findings
    )
    assert got == (REPO / "findings.txt").read_text(encoding="utf-8").splitlines()
    # Hidden folders (.github) are walked; setup.py and Python strings reach the text checks.
    assert by_file == {
        ".github/workflows/ci.yml": {"MIG301", "MIG305"},
        "CMakeLists.txt": {"MIG307"},
        "Dockerfile": {"MIG301", "MIG302", "MIG304", "MIG305", "MIG306", "MIG307"},
        "Makefile": {"MIG305"},
        "constraints.txt": {"MIG302", "MIG303"},
        "environment.yml": {"MIG302", "MIG305"},
        "pyproject.toml": {"MIG301"},
        "requirements.txt": {"MIG301", "MIG302", "MIG303"},
        "scripts/setup_env.sh": {"MIG301", "MIG306"},
        "setup.py": {"MIG302", "MIG303"},
        "src/demo/cuda_info.py": {"MIG306", "MIG308"},
    }


def test_apply_matches_after_tree_and_is_idempotent(work: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    proc = run("apply", "--unsafe-fixes", "repo", "--allow-dirty", cwd=tmp_path, env_dir=cache)
    # Assisted findings stay (arch lists, pinned cuDNN, pytorch-cuda, the version test): exit 1.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    expected = files(REPO / "after")
    got = files(work)
    assert sorted(got) == sorted(expected)
    for name, data in expected.items():
        assert got[name] == data, f"{name} differs from fixtures/repos/cuda_mix/after"
    # Nothing outside the changed tokens moved: CRLF survives in constraints.txt.
    assert b"\r\n" in got["constraints.txt"] and b"\n" not in got["constraints.txt"].replace(
        b"\r\n", b""
    )
    # A second run changes nothing; the assisted findings remain, so it exits 1 as apply did.
    again = run("apply", "--unsafe-fixes", "repo", "--dry-run", cwd=tmp_path, env_dir=cache)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "+++ " not in again.stdout and "Would fix 0 findings in 0 files." in again.stdout
    run("apply", "--unsafe-fixes", "repo", "--allow-dirty", cwd=tmp_path, env_dir=cache)
    assert files(work) == expected


def test_apply_cuda_13_2(work: Path, tmp_path: Path) -> None:
    proc = run(
        "apply",
        "--unsafe-fixes",
        "repo",
        "--allow-dirty",
        "--cuda",
        "13.2",
        cwd=tmp_path,
        env_dir=tmp_path / "cache",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    requirements = (work / "requirements.txt").read_text()
    # torch 2.9.1 has no cu132 wheels (they start at 2.12): its pin stays, and so does the
    # index it installs from (a cu132 index cannot serve +cu128 wheels); both assisted.
    assert "whl/cu128" in requirements and "torch==2.9.1+cu128" in requirements
    assert "torch 2.9.1 has no cu132 wheels" in proc.stdout
    assert "pins torch==2.9.1, which has no cu132 wheels" in proc.stdout
    dockerfile = (work / "Dockerfile").read_text()
    assert "nvidia/cuda:13.2.0-cudnn-runtime-ubuntu24.04" in dockerfile
    assert "ARG CUDA_VERSION=13.2.0" in dockerfile and "/usr/local/cuda-13.2" in dockerfile
    assert "cuda-version=13.2" in (work / "environment.yml").read_text()
    assert 'cuda: ["12.6", "13.2"]' in (work / ".github/workflows/ci.yml").read_text()
