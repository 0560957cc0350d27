"""The least a whole-file cold scan can cost: discover, read and word-search every file, then
`ast.parse` each file the prefilter keeps, in a process pool of the scan's shape. No scope
table, no walk, no repository pass, no plan.

real_scan_bench.py times this beside ruff and `migrate scan` (`--floor`): when the floor alone
is over a target, no tuning of the analysis meets it; only parsing less than whole files, or
a faster parser, can.

    python benchmarks/parse_floor.py TREE [-j N]
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from migrate.registry import select_codes  # noqa: E402
from migrate.scan.checkset import CheckSet  # noqa: E402
from migrate.scan.discover import discover, read_source  # noqa: E402
from migrate.scan.workers import _SCAN_GC_THRESHOLDS  # noqa: E402

_CHECKS: list[CheckSet] = []


def _init() -> None:
    gc.set_threshold(*_SCAN_GC_THRESHOLDS)  # as the scan's workers
    _CHECKS.append(CheckSet(select_codes(None, None), {"cuda": "13.0"}))


def _parse_wanted(paths: list[str]) -> tuple[int, int]:
    """(files parsed, bytes parsed) of a batch."""
    checks = _CHECKS[0]
    parsed = size = 0
    for path in paths:
        text = read_source(Path(path))
        if not checks.wants_parse(text):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ast.parse(text)
            except (SyntaxError, ValueError, RecursionError):
                continue
        parsed += 1
        size += len(text)
    return parsed, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    start = time.perf_counter()
    paths = [str(f.path) for f in discover([args.tree], [], True, []) if f.is_python]
    size = max(8, len(paths) // (args.jobs * 8))  # the scan's batch size
    batches = [paths[i : i + size] for i in range(0, len(paths), size)]
    if args.jobs <= 1:
        _init()
        counts = [_parse_wanted(b) for b in batches]
    else:
        with ProcessPoolExecutor(args.jobs, initializer=_init) as pool:
            counts = list(pool.map(_parse_wanted, batches))
    parsed = sum(c[0] for c in counts)
    size_mb = sum(c[1] for c in counts) / 1e6
    elapsed = time.perf_counter() - start
    print(f"{len(paths)} files read, {parsed} parsed ({size_mb:.1f} MB) in {elapsed:.2f} s")


if __name__ == "__main__":
    main()
