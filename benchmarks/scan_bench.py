"""Scan speed on a synthetic repository, side by side with `grep -rl jit` on the same tree.

    python benchmarks/scan_bench.py [--files 5000] [--keep DIR]

Generates a repository of realistic Python files (about 5% using TorchScript, a few large
ones, plus requirements/Dockerfiles/CI YAML), then times, in one run:
  - grep -rl jit              (the floor: reading every byte once)
  - migrate scan, cold        (no cache)
  - migrate scan, warm        (content-hash cache filled by the cold run)
  - migrate scan on one file  (the pre-commit case)
  - migrate apply --dry-run   (every rewrite computed and diffed, nothing written)
and prints wall times, files per second and ratios against grep.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN_MODULE = '''"""{doc}"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np


@dataclass
class {cls}Config:
    name: str = "{name}"
    size: int = {size}
    ratio: float = {ratio}
    tags: list[str] = field(default_factory=list)


class {cls}:
    """Keeps {name} state between calls."""

    def __init__(self, config: {cls}Config | None = None) -> None:
        self.config = config or {cls}Config()
        self.cache: dict[str, float] = {{}}

    def score(self, values: list[float]) -> float:
        total = 0.0
        for i, v in enumerate(values):
            if v > self.config.ratio:
                total += math.log1p(v) * (i + 1)
            else:
                total -= v / (i + 1)
        return total

    def normalize(self, array: np.ndarray) -> np.ndarray:
        mean = array.mean(axis=0)
        std = array.std(axis=0) + 1e-6
        return (array - mean) / std

    def save(self, path: str) -> None:
        with open(os.path.join(path, "{name}.txt"), "w") as handle:
            handle.write(str(self.cache))


def helper_{name}(x: int, y: int = {size}) -> int:
    """Return a deterministic mix of x and y."""
    return (x * 31 + y) % 1000003
'''

TORCH_MODEL = """import torch
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, {size}, 3, padding=1)
        self.bn = nn.BatchNorm2d({size})
        self.head = nn.Linear({size}, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = y.mean(dim=(2, 3))
        return self.head(y)
"""

TORCHSCRIPT_FILES = [
    """import torch
from torch import jit
from .model_{i} import Model{i}


@torch.jit.script
def gelu_{i}(x):
    return x * torch.sigmoid(1.702 * x)


def export_{i}(path: str) -> None:
    model = Model{i}().eval()
    example = torch.randn(1, 3, 32, 32)
    traced = torch.jit.trace(model, example)
    torch.jit.save(traced, path + "/model_{i}.pt")
""",
    """import torch
import torch.jit as J
from typing import List


class Block{i}(torch.nn.Module):
    eps: torch.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.eps = 1e-5

    @torch.jit.unused
    def debug(self, x):
        print(x)

    def forward(self, x):
        if torch.jit.is_scripting():
            return x
        out = torch.jit.annotate(List[torch.Tensor], [])
        out.append(x)
        return out[0]


def load_{i}(path):
    return J.load(path, map_location="cpu")
""",
    """import torch
from torch.utils.mobile_optimizer import optimize_for_mobile


def ship_{i}(model, example):
    traced = torch.jit.trace(model.eval(), example)
    mobile = optimize_for_mobile(traced)
    mobile._save_for_lite_interpreter("model_{i}.ptl")
""",
]

# Mentions "jit" without being TorchScript: the prefilter lets these through, the parse
# must report nothing.
JIT_LOOKALIKE = """from numba import jit


@jit(nopython=True)
def kernel_{i}(a, b):
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k] * b[k]
    return s
"""

REQUIREMENTS = "numpy==1.26.4\nrequests>=2.31\n"
CUDA_REQUIREMENTS = (
    "--extra-index-url https://download.pytorch.org/whl/cu128\ntorch==2.7.1+cu128\nnumpy==1.26.4\n"
)
DOCKERFILE = "FROM python:3.11-slim\nRUN pip install -r requirements.txt\n"
CUDA_DOCKERFILE = "FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu22.04\nRUN pip install torch\n"


def generate(root: Path, n_files: int, seed: int = 0) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"python": 0, "torchscript": 0, "other": 0, "large": 0}
    n_packages = max(1, n_files // 100)
    i = 0
    while i < n_files:
        pkg = root / "src" / f"pkg{i % n_packages:03d}"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / "__init__.py").touch()
        roll = rng.random()
        if roll < 0.05:
            text = TORCHSCRIPT_FILES[i % len(TORCHSCRIPT_FILES)].format(i=i)
            (pkg / f"model_{i}.py").write_text(TORCH_MODEL.format(cls=f"Model{i}", size=16))
            path = pkg / f"export_{i}.py"
            counts["torchscript"] += 1
            i += 1  # the model file counts as a file too
        elif roll < 0.07:
            text = JIT_LOOKALIKE.format(i=i)
            path = pkg / f"kernels_{i}.py"
        elif roll < 0.20:
            text = TORCH_MODEL.format(cls=f"Net{i}", size=8 + i % 32)
            path = pkg / f"net_{i}.py"
        elif roll < 0.22:
            text = CUDA_REQUIREMENTS if rng.random() < 0.5 else REQUIREMENTS
            path = root / "deploy" / f"svc{i}" / "requirements.txt"
            counts["other"] += 1
        elif roll < 0.23:
            text = CUDA_DOCKERFILE if rng.random() < 0.5 else DOCKERFILE
            path = root / "deploy" / f"svc{i}" / "Dockerfile"
            counts["other"] += 1
        else:
            name = f"mod{i}"
            text = PLAIN_MODULE.format(
                doc=f"Utilities for {name}.",
                cls=f"Thing{i}",
                name=name,
                size=i % 97,
                ratio=round(rng.random(), 3),
            )
            if rng.random() < 0.01:  # a few large generated files
                text = text * 60
                counts["large"] += 1
            path = pkg / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if path.suffix == ".py":
            counts["python"] += 1
        i += 1
    return counts


def timed(cmd: list[str], cwd: Path, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--keep", type=Path, help="generate here and keep the tree")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="migrate-bench-"))
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    counts = generate(root, args.files)
    total = sum(1 for p in root.rglob("*") if p.is_file())
    size_mb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
    print(
        f"tree: {total} files ({size_mb:.1f} MB), {counts['torchscript']} using TorchScript, "
        f"{counts['large']} large, {counts['other']} requirements/Dockerfiles"
    )

    migrate = [sys.executable, "-m", "migrate", "scan", "--format", "json", "-o", os.devnull]
    grep = timed(["grep", "-rl", "jit", "."], root)
    cold = timed([*migrate, "--no-cache", "."], root)
    subprocess.run([*migrate, "."], cwd=root, stdout=subprocess.DEVNULL)  # fill the cache
    warm = timed([*migrate, "."], root)
    one_file = next(root.rglob("export_*.py")).relative_to(root)
    single = timed([*migrate, "--no-cache", str(one_file)], root, repeat=5)
    dry_run = timed(
        [sys.executable, "-m", "migrate", "apply", "--dry-run", "--no-cache", "."], root, repeat=1
    )

    print(f"{'run':<28}{'wall s':>9}{'files/s':>10}{'x grep':>9}")
    for label, seconds in (
        ("grep -rl jit", grep),
        ("migrate scan (cold)", cold),
        ("migrate scan (warm cache)", warm),
    ):
        print(f"{label:<28}{seconds:>9.3f}{total / seconds:>10.0f}{seconds / grep:>9.2f}")
    print(f"{'migrate scan (one file)':<28}{single:>9.3f}")
    print(
        f"{'migrate apply --dry-run':<28}{dry_run:>9.3f}{total / dry_run:>10.0f}{dry_run / grep:>9.2f}"
    )
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
