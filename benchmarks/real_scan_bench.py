"""Scan speed on real code, side by side with `ruff check --select UP` on the same files.

    python benchmarks/real_scan_bench.py [--packages torch transformers torchvision executorch]
                                         [--keep DIR] [--repeat 3] [--baseline CHECKOUT]
                                         [--floor]

Copies the Python sources of installed packages that use TorchScript heavily (torch's own
package, transformers, torchvision, executorch; `pip install` them first, `--no-deps` is
enough: nothing is imported) into one temporary tree, then times, in one run:
  - ruff check --select UP --no-cache       (the reference: a Rust linter over the same files)
  - migrate scan, cold, -j 1 and -j 2       (no result cache: what a CI checkout sees)
  - migrate scan, warm                      (result cache filled by a cold run)
  - migrate scan / ruff on one file         (the pre-commit case)
  - with --floor, parse_floor.py -j 2       (read, word-search and ast.parse the same files
                                             the scan parses, nothing else: the least any
                                             whole-file analysis costs)
and prints the median wall time of each and its ratio to ruff. With `--baseline`, the same
migrate runs are repeated with another checkout's package first on PYTHONPATH, interleaved
with this one's, so two versions are compared on the same machine state.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PACKAGES = ("torch", "transformers", "torchvision", "executorch")
# A model file that uses TorchScript, as a pre-commit run would see it; the first that exists.
ONE_FILE_CANDIDATES = (
    "torchvision/models/resnet.py",
    "transformers/models/bert/modeling_bert.py",
    "torch/nn/modules/linear.py",
)


def package_dir(name: str) -> Path | None:
    """Where an installed package's sources lie, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def copy_sources(packages: list[str], root: Path) -> tuple[int, int]:
    """Copy every .py file of each package under root/<package>; returns (files, bytes)."""
    files = size = 0
    for name in packages:
        src = package_dir(name)
        if src is None:
            print(f"note: {name} is not installed; left out", file=sys.stderr)
            continue
        for path in src.rglob("*.py"):
            if not path.is_file():
                continue
            target = root / name / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files += 1
            size += target.stat().st_size
    return files, size


def run_once(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-800:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=list(DEFAULT_PACKAGES))
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median)")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout of this project to time side by side"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time parse_floor.py: reading, word-searching and parsing alone (-j 2)",
    )
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="migrate-real-bench-"))
    if not root.exists() or not any(root.iterdir()):
        root.mkdir(parents=True, exist_ok=True)
        files, size = copy_sources(args.packages, root)
    else:
        paths = list(root.rglob("*.py"))
        files, size = len(paths), sum(p.stat().st_size for p in paths)
    one_file = next((c for c in ONE_FILE_CANDIDATES if (root / c).is_file()), None)
    print(f"tree: {root} ({files:,} Python files, {size / 1e6:.0f} MB)")

    ruff = shutil.which("ruff") or "ruff"
    ruff_cmd = [ruff, "check", "--select", "UP", "--no-cache", "--isolated", "--exit-zero", "-q"]
    versions = {"this checkout": None}
    if args.baseline:
        versions["baseline"] = str(args.baseline.resolve())
    cache = Path(tempfile.mkdtemp(prefix="migrate-real-bench-cache-"))
    # An installed tool runs from compiled bytecode (pip writes it at install time); with
    # PYTHONDONTWRITEBYTECODE set every run would compile ~90 modules again (0.3 s here).
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def migrate(
        version: str | None, *argv: str, report: bool = True
    ) -> tuple[list[str], dict[str, str]]:
        env = dict(base_env, MIGRATE_CACHE_DIR=str(cache / (version or "head")))
        if version:
            env["PYTHONPATH"] = version + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-m", "migrate", "scan"]
        if report:  # the whole tree's report as JSON to nowhere: text rendering not timed
            cmd += ["--format", "json", "-o", os.devnull]
        return [*cmd, *argv], env

    cases: dict[str, list[float]] = {}

    def record(label: str, seconds: float) -> None:
        cases.setdefault(label, []).append(seconds)

    for _ in range(args.repeat):
        record("ruff check --select UP", run_once([*ruff_cmd, "."], root))
        if args.floor:
            floor = [
                sys.executable,
                str(Path(__file__).with_name("parse_floor.py")),
                ".",
                "-j",
                "2",
            ]
            record("parse floor -j 2 (read, search, parse)", run_once(floor, root, base_env))
        for name, version in versions.items():
            for jobs in ("1", "2"):
                cmd, env = migrate(version, "--no-cache", "-j", jobs, ".")
                record(f"migrate scan cold -j {jobs} [{name}]", run_once(cmd, root, env))
            cmd, env = migrate(version, ".")
            run_once(cmd, root, env)  # fill the cache (a no-op after the first round)
            record(f"migrate scan warm [{name}]", run_once(cmd, root, env))
        if one_file:
            record("ruff one file", run_once([*ruff_cmd, one_file], root))
            for name, version in versions.items():
                # Exactly the pre-commit command line; its text report goes to
                # /dev/null like every other run's output.
                cmd, env = migrate(version, one_file, "--no-cache", report=False)
                record(f"migrate scan one file [{name}]", run_once(cmd, root, env))
    shutil.rmtree(cache, ignore_errors=True)

    ruff_s = statistics.median(cases["ruff check --select UP"])
    print(f"\n{'run':<42}{'wall s':>9}{'× ruff':>9}")
    for label, times in cases.items():
        median = statistics.median(times)
        ratio = "" if "one file" in label else f"{median / ruff_s:>9.2f}"
        print(f"{label:<42}{median:>9.3f}{ratio}")
    for name in versions:
        j1 = statistics.median(cases[f"migrate scan cold -j 1 [{name}]"])
        j2 = statistics.median(cases[f"migrate scan cold -j 2 [{name}]"])
        print(f"-j 2 speed-up over -j 1 [{name}]: {j1 / j2:.2f}x")
    if one_file:
        print(f"one file: {one_file}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
