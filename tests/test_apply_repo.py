"""`migrate apply` end to end on the bundled sample repository (fixtures/repos/sample).

The CLI runs as a subprocess, as users run it. The sample's after/ tree is the golden
result; the comparison covers whole trees so files other rules add or change show up too.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "fixtures" / "repos" / "sample"


def migrate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def digest(root: Path) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in tree(root).items()}


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    dest = tmp_path / "sample_repo"
    shutil.copytree(SAMPLE / "before", dest)
    return dest


def assert_same_tree(got: Path, expected: Path) -> None:
    got_files, expected_files = tree(got), tree(expected)
    assert sorted(got_files) == sorted(expected_files)
    for name, data in expected_files.items():
        assert got_files[name].decode() == data.decode(), name


def test_apply_matches_golden_tree_and_second_run_is_a_no_op(sample):
    first = migrate("apply", "--unsafe-fixes", str(sample))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "MIG102" in first.stdout and "left for review" not in first.stdout
    for code in ("MIG301", "MIG302", "MIG304", "MIG305", "MIG306"):  # requirements, image, CI
        assert code in first.stdout, code
    assert_same_tree(sample, SAMPLE / "after")

    before = digest(sample)
    second = migrate("apply", "--unsafe-fixes", str(sample))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Fixed 0 findings in 0 files." in second.stdout
    assert digest(sample) == before


def test_dry_run_prints_the_diff_and_writes_nothing(sample):
    before = digest(sample)
    result = migrate("apply", "--unsafe-fixes", "--dry-run", str(sample))
    assert result.returncode == 1, result.stdout + result.stderr
    assert digest(sample) == before
    assert not list(sample.rglob("*.migrate-tmp"))
    assert "+++ b/" in result.stdout
    assert "+        traced = torch.export.export(model, (example,))" in result.stdout
    assert "+FROM nvidia/cuda:13.0.0-cudnn-runtime-ubuntu22.04" in result.stdout
    assert "Would fix " in result.stdout


def test_cuda_13_2_keeps_each_index_with_the_torch_pin_it_serves(sample):
    """torch 2.9.1 has no cu132 wheels: index, pins and the CI's wheel tag stay on cu128 and
    are left for review; what does not depend on the torch release moves to 13.2."""
    result = migrate("apply", "--unsafe-fixes", "--cuda", "13.2", str(sample))
    assert result.returncode == 1, result.stdout + result.stderr
    before = SAMPLE / "before"
    assert (sample / "requirements.txt").read_bytes() == (before / "requirements.txt").read_bytes()
    docker = (sample / "Dockerfile").read_text()
    assert "whl/cu128 torch==2.9.1+cu128" in docker
    assert "FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu22.04" in docker  # no known 13.2 tag
    assert "CUDA_HOME=/usr/local/cuda-13.2" in docker
    ci = (sample / ".github" / "workflows" / "ci.yml").read_text()
    assert 'CUDA_VERSION: "13.2"' in ci and "torch-variant: [cpu, cu128]" in ci
    review = result.stdout.split("left for review", 1)[1]
    # 2 indexes, 2 CI matrix values; a reason they share is said once, under them.
    assert findings_saying(review, "which has no cu132 wheels") == 4
    assert review.count("[assisted]") == 8


def test_out_writes_a_migrated_copy_and_leaves_the_original(sample, tmp_path):
    before = digest(sample)
    out = tmp_path / "migrated"
    result = migrate("apply", "--unsafe-fixes", "--out", str(out), str(sample))
    assert result.returncode == 0, result.stdout + result.stderr
    assert digest(sample) == before
    assert_same_tree(out / sample.name, SAMPLE / "after")


def test_out_refuses_a_non_empty_folder(sample, tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = migrate("apply", "--unsafe-fixes", "--out", str(out), str(sample))
    assert result.returncode == 2
    assert "not empty" in result.stderr
    assert (out / "keep.txt").read_text() == "mine"


def findings_saying(report: str, phrase: str) -> int:
    """How many findings of apply's review list give `phrase`, on their own line or on a
    shared-cause line (`└ the 2 findings above: ...`, `└ 3:1, 9:1: ...`)."""
    n = 0
    for line in report.splitlines():
        if phrase not in line:
            continue
        head = line.strip()
        if head.startswith("└ the "):
            n += int(head.split()[2])
        elif head.startswith("└ "):
            n += head.split(": ", 1)[0].count(",") + 1
        else:
            n += 1
    return n
