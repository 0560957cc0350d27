"""fixtures/repos/aoti_server, a C++ server on the TorchScript runtime built with CMake against the
libtorch the torch wheel ships: built and run on a TorchScript archive, then migrated
(`migrate apply --intent drop --unsafe-fixes`, `migrate convert --aoti`), built and run again
on the AOTInductor package: the same numbers. Real builds and an AOTInductor compile: slow.

`MIGRATE_TEST_DEVICE=cuda` (benchmarks/device_check.sh) runs both on a GPU instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "fixtures" / "repos" / "aoti_server"
DEVICE = os.environ.get("MIGRATE_TEST_DEVICE", "cpu")
# TorchScript's and Inductor's kernels differ by a few ulps; a GPU's kernels a little more.
CLOSE = {"rel": 1e-5, "abs": 1e-6} if DEVICE == "cpu" else {"rel": 1e-4, "abs": 1e-5}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("cmake") is None or shutil.which(os.environ.get("CXX", "g++")) is None,
        reason="needs cmake and a C++ compiler",
    ),
]


def _run(args: list[str], cwd: Path, codes: tuple[int, ...] = (0,)) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode in codes, f"{' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return proc.stdout


def _build_and_serve(repo: Path, *server_args: str) -> list[float]:
    import torch.utils

    build = repo / "build"
    _run(
        ["cmake", "-S", ".", "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}"],
        repo,
    )  # fmt: skip
    _run(["cmake", "--build", str(build), "-j", "1"], repo)
    out = _run([str(build / "server"), *server_args], repo)
    return [float(line) for line in out.split()]


def _archive(path: Path) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    torch.jit.trace(model, torch.randn(2, 4)).save(str(path))


def test_the_server_gives_the_same_numbers_after_the_migration(tmp_path):
    repo = tmp_path / "aoti_server"
    shutil.copytree(SAMPLE, repo)
    _archive(repo / "model.pt")
    before = _build_and_serve(repo, "model.pt", DEVICE)
    assert len(before) == 9  # a batch of 3 rows, 3 outputs each

    applied = _run(
        [sys.executable, "-m", "migrate", "apply", ".", "--intent", "drop", "--unsafe-fixes",
         "--allow-dirty", "--no-cache", "--exclude", "build"],
        repo,
        codes=(0, 1),  # 1: the CMake findings (manual) are left, saying the link stays
    )  # fmt: skip
    source = (repo / "server.cpp").read_text(encoding="utf-8")
    assert "torch::jit" not in source and "torch/script.h" not in source, applied
    assert "torch::inductor::AOTIModelPackageLoader module(path);" in source
    assert '"model.aoti.pt2"' in source
    assert (repo / "CMakeLists.txt").read_text(encoding="utf-8") == (
        SAMPLE / "CMakeLists.txt"
    ).read_text(encoding="utf-8")  # the libtorch link stays for the package loader

    # The server's batch of 3 is not the example's: the package takes batches of 1 to 16.
    device = ["--device", DEVICE] if DEVICE != "cpu" else []
    _run(
        [sys.executable, "-m", "migrate", "convert", "model.pt", "--input-shape", "2x4",
         "--dynamic-batch", "16", "--aoti", *device, "-o", "."],
        repo,
    )  # fmt: skip
    assert (repo / "model.aoti.pt2").is_file()
    (repo / "model.pt").unlink()  # the migrated server needs no TorchScript archive
    after = _build_and_serve(repo, "model.aoti.pt2", DEVICE)
    assert after == pytest.approx(before, **CLOSE)
    if DEVICE == "cpu":  # without arguments: the renamed default, the package convert wrote
        default = _run([str(repo / "build" / "server")], repo)
        assert [float(x) for x in default.split()] == pytest.approx(before, **CLOSE)
