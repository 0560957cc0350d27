"""apply inside one large file: cost per finding at 1,000 / 2,000 / 4,000 findings (issue 15).

Each file holds N functions decorated `@torch.jit.unused` (MIG104, a safe fix), so apply
computes, checks for overlap and writes N edits in one file. Run side by side in one process
tree; the figure that matters is the time per finding as N grows (near-linear: flat).

    python benchmarks/apply_one_file_bench.py [--sizes 1000 2000 4000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_file(path: Path, n: int) -> None:
    parts = ["import torch\n\n"]
    for i in range(n):
        parts.append(f"\n@torch.jit.unused\ndef helper_{i}(x):\n    return x + {i}\n\n")
    path.write_text("".join(parts), encoding="utf-8")


def time_apply(path: Path) -> tuple[float, float]:
    """(wall seconds, user+sys CPU seconds of the child) of `migrate apply --dry-run`."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", "--dry-run", "--no-cache", str(path)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = os.times()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"apply failed: {proc.stderr.strip()}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for n in args.sizes:
            path = Path(tmp) / f"many_{n}.py"
            make_file(path, n)
            runs = [time_apply(path) for _ in range(args.repeat)]
            wall = min(r[0] for r in runs)
            cpu = min(r[1] for r in runs)
            rows.append((n, wall, cpu))
    base = rows[0][2] / rows[0][0]
    print(f"{'findings':>9} {'wall s':>8} {'cpu s':>8} {'cpu ms/finding':>15} {'x first':>8}")
    for n, wall, cpu in rows:
        per = cpu / n
        print(f"{n:>9} {wall:>8.2f} {cpu:>8.2f} {1e3 * per:>15.3f} {per / base:>8.2f}")


if __name__ == "__main__":
    main()
