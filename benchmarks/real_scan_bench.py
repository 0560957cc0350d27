"""Scan speed on real code, side by side with ruff and the parse floor on the same files.

    python benchmarks/real_scan_bench.py [--trees DIR ...] [--packages PKG ...]
                                         [--baseline CHECKOUT] [--scale 1 2 4]
                                         [--repeat 3] [--one-file PATH] [--keep DIR]

Builds one tree: the folders given with --trees (whole repositories, each copied under its
folder name; .git and files over 2 MB left out) and the Python sources of the installed
packages given with --packages (default, when no folder is given: torch, transformers,
torchvision, executorch; `pip install` them first, `--no-deps` is enough: nothing is
imported). Then times, in one run and interleaved, the median wall time of each:
  - ruff check --select UP --no-cache       (the reference: a Rust linter over the same files)
  - parse_floor.py -j 2                     (read, word-search and ast.parse the files the
                                             scan parses, nothing else: the least any
                                             whole-file analysis costs)
  - migrate scan, cold, -j 1 and -j 2       (no result cache: what a CI checkout sees), for
                                             this checkout and, with --baseline, another one
                                             (its package first on PYTHONPATH)
  - migrate scan, warm                      (result cache filled by a cold run)
  - migrate scan --intent drop, cold, -j 2  (a scan without intent must cost no more)
  - migrate apply --dry-run, cold, -j 2     (at most 1.5x the scan)
  - migrate scan / ruff on one file         (the pre-commit case)
  - with --scale 2 4, migrate scan cold -j 2 and ruff on the tree doubled and quadrupled:
    each folder and package copied again under a new package name (`fairseq` -> `fairseq_2`,
    the copy's own imports renamed with it; torch keeps its name: the scan resolves
    TorchScript by it), so cost can be read against the number of files.
Prints each median, its ratio to ruff, and the ratios the scan is held to.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import resource
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
    "fairseq/fairseq/sequence_generator.py",
    "torchvision/models/resnet.py",
    "transformers/models/bert/modeling_bert.py",
    "torch/nn/modules/linear.py",
)
MAX_COPIED = 2_000_000  # bytes: data files of a repository are not what a scan is about
# A copy keeps this name: the scan resolves TorchScript through it.
KEEP_NAMES = frozenset({"torch"})


def package_dir(name: str) -> Path | None:
    """Where an installed package's sources lie, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def copy_sources(packages: list[str], trees: list[Path], root: Path) -> None:
    """Copy each package's .py files under root/<package> and each folder (a repository)
    under root/<its name>, without .git and files over MAX_COPIED bytes."""
    for name in packages:
        src = package_dir(name)
        if src is None:
            print(f"note: {name} is not installed; left out", file=sys.stderr)
            continue
        for path in src.rglob("*.py"):
            if path.is_file():
                target = root / name / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)

    def left_out(folder: str, names: list[str]) -> list[str]:
        return [
            n
            for n in names
            if n == ".git"
            or (
                os.path.isfile(os.path.join(folder, n))
                and os.path.getsize(os.path.join(folder, n)) > MAX_COPIED
            )
        ]

    for tree in trees:
        tree = tree.resolve()
        if not tree.is_dir():
            raise SystemExit(f"--trees {tree}: not a folder")
        # Links are copied as the files they name; a dangling one (a repository's docs link
        # to a file it does not ship) is left out: the scan would report it as an error.
        shutil.copytree(tree, root / tree.name, ignore=left_out, ignore_dangling_symlinks=True)


def renamed_copy(src: Path, dest: Path, packages: set[str], suffix: str) -> None:
    """`src` copied to `dest` with its packages renamed (`pkg` -> `pkg_2`): the name as a
    word in the copy's Python files, and the package folders at the top of a repository (an
    installed package's own folder is `dest`). Other files are hard links."""
    renames = {p: p + suffix for p in packages - KEEP_NAMES}
    word = (
        re.compile(r"\b(" + "|".join(map(re.escape, sorted(renames))) + r")\b") if renames else None
    )
    repository = not (src / "__init__.py").exists()
    for folder, _, files in os.walk(src):
        parts = list(Path(folder).relative_to(src).parts)
        if repository and parts:
            parts[0] = renames.get(parts[0], parts[0])
        out = dest.joinpath(*parts)
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            source, target = Path(folder, name), out / name
            if source.is_symlink():
                continue
            if name.endswith(".py") and word is not None:
                text = source.read_text(encoding="utf-8", errors="surrogateescape")
                renamed = word.sub(lambda m: renames[m.group(1)], text)
                target.write_text(renamed, encoding="utf-8", errors="surrogateescape")
            else:
                os.link(source, target)


def packages_of(entry: Path) -> set[str]:
    """An installed package's name, or the packages at the top of a repository."""
    if (entry / "__init__.py").exists():
        return {entry.name}
    return {p.parent.name for p in entry.glob("*/__init__.py")}


def build_scaled(base: Path, scale: int, dest: Path) -> None:
    """`dest`: the entries of `base` (hard links) and scale-1 renamed copies of each."""
    entries = sorted(p for p in base.iterdir() if p.is_dir())
    for entry in entries:
        shutil.copytree(entry, dest / entry.name, copy_function=os.link, symlinks=True)
    for k in range(2, scale + 1):
        for entry in entries:
            renamed_copy(entry, dest / f"{entry.name}_{k}", packages_of(entry), f"_{k}")


def count_files(root: Path) -> tuple[int, int]:
    paths = [p for p in root.rglob("*.py") if p.is_file()]
    return len(paths), sum(p.stat().st_size for p in paths)


def run_once(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its worker processes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-800:]}")
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def report(cases: dict, versions: dict, scales: list[int], sizes: dict) -> None:
    """Each case's median wall and CPU time, its ratio to ruff, and the ratios the scan is
    held to. On a shared machine the wall time also measures the other processes; the CPU
    time (a pool's workers included) is the work done."""
    med = {label: statistics.median(w for w, _ in runs) for label, runs in cases.items()}
    cpu = {label: statistics.median(c for _, c in runs) for label, runs in cases.items()}
    ruff_s = med["ruff check --select UP"]
    print(f"\n{'run':<58}{'wall s':>9}{'cpu s':>9}{'× ruff':>9}")
    for label, median in med.items():
        ratio = "" if "one file" in label or ", tree x" in label else f"{median / ruff_s:>9.2f}"
        print(f"{label:<58}{median:>9.3f}{cpu[label]:>9.3f}{ratio}")
    print()

    def ratio(a: str, b: str) -> str:
        return f"{med[a] / med[b]:.2f} wall, {cpu[a] / cpu[b]:.2f} CPU"

    scan = "migrate scan cold -j 2 [this checkout]"
    for name in versions:
        j1, j2 = f"migrate scan cold -j 1 [{name}]", f"migrate scan cold -j 2 [{name}]"
        print(f"-j 2 speed-up over -j 1 [{name}]: {med[j1] / med[j2]:.2f}x")
    if "baseline" in versions:
        for jobs in ("1", "2"):
            this_run, base_run = (f"migrate scan cold -j {jobs} [{n}]" for n in versions)
            print(f"cold scan -j {jobs}, this checkout / baseline: {ratio(this_run, base_run)}")
    print(f"cold scan -j 2 / parse floor: {ratio(scan, 'parse floor -j 2 (read, search, parse)')}")
    drop = "migrate scan cold -j 2 --intent drop [this checkout]"
    print(f"scan without intent / with --intent drop: {ratio(scan, drop)} (held to <= 1.10)")
    apply = "migrate apply --dry-run -j 2 [this checkout]"
    print(f"apply --dry-run / scan: {ratio(apply, scan)} (held to <= 1.5)")
    for scale in scales[1:]:
        files = sizes[scale][0] / sizes[1][0]
        bigger = f"migrate scan cold -j 2, tree x{scale} [this checkout]"
        ruff_took = med[f"ruff check --select UP, tree x{scale}"] / ruff_s
        print(
            f"tree x{scale}: {files:.2f}x the files, scan {ratio(bigger, scan)} "
            f"(held to <= {1.1 * files:.1f}; ruff {ruff_took:.2f}x the wall time)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[], help="repository folders")
    parser.add_argument(
        "--packages",
        nargs="+",
        help="installed packages (default without --trees: torch transformers torchvision executorch)",
    )
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median)")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout of this project to time side by side"
    )
    parser.add_argument(
        "--scale",
        nargs="+",
        type=int,
        default=[1, 2, 4],
        help="also time the tree copied this many times over (1: the tree as built)",
    )
    parser.add_argument("--one-file", help="the pre-commit case's file, relative to the tree")
    args = parser.parse_args()
    packages = (
        args.packages
        if args.packages is not None
        else ([] if args.trees else list(DEFAULT_PACKAGES))
    )

    root = args.keep or Path(tempfile.mkdtemp(prefix="migrate-real-bench-"))
    base = root / "x1"
    if not base.exists() or not any(base.iterdir()):
        base.mkdir(parents=True, exist_ok=True)
        copy_sources(packages, args.trees, base)
    scales = sorted(set(args.scale) | {1})
    trees = {1: base}
    for scale in scales[1:]:
        trees[scale] = root / f"x{scale}"
        if not trees[scale].exists():
            trees[scale].mkdir()
            build_scaled(base, scale, trees[scale])
    sizes = {scale: count_files(tree) for scale, tree in trees.items()}
    for scale, (files, size) in sizes.items():
        print(f"tree x{scale}: {trees[scale]} ({files:,} Python files, {size / 1e6:.0f} MB)")
    one_file = args.one_file or next((c for c in ONE_FILE_CANDIDATES if (base / c).is_file()), None)

    ruff = shutil.which("ruff") or "ruff"
    ruff_cmd = [ruff, "check", "--select", "UP", "--no-cache", "--isolated", "--exit-zero", "-q"]
    versions = {"this checkout": None}
    if args.baseline:
        versions["baseline"] = str(args.baseline.resolve())
    cache = Path(tempfile.mkdtemp(prefix="migrate-real-bench-cache-"))
    # An installed tool runs from compiled bytecode (pip writes it at install time); with
    # PYTHONDONTWRITEBYTECODE set every run would compile ~90 modules again (0.3 s here).
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    floor = [sys.executable, str(Path(__file__).with_name("parse_floor.py")), ".", "-j", "2"]
    this = str(Path(__file__).resolve().parents[1])

    def migrate(version: str | None, command: str, *argv: str, report: bool = True):
        env = dict(base_env, MIGRATE_CACHE_DIR=str(cache / (version or "head")))
        env["PYTHONPATH"] = (version or this) + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-m", "migrate", command]
        if report and command == "scan":  # the report as JSON to nowhere: rendering not timed
            cmd += ["--format", "json", "-o", os.devnull]
        return [*cmd, *argv], env

    cases: dict[str, list[tuple[float, float]]] = {}

    def record(label: str, seconds: tuple[float, float]) -> None:
        cases.setdefault(label, []).append(seconds)

    for _ in range(args.repeat):
        record("ruff check --select UP", run_once([*ruff_cmd, "."], base))
        record("parse floor -j 2 (read, search, parse)", run_once(floor, base, base_env))
        for name, version in versions.items():
            for jobs in ("1", "2"):
                cmd, env = migrate(version, "scan", "--no-cache", "-j", jobs, ".")
                record(f"migrate scan cold -j {jobs} [{name}]", run_once(cmd, base, env))
            cmd, env = migrate(version, "scan", ".")
            run_once(cmd, base, env)  # fill the cache (a no-op after the first round)
            record(f"migrate scan warm [{name}]", run_once(cmd, base, env))
        cmd, env = migrate(None, "scan", "--no-cache", "-j", "2", "--intent", "drop", ".")
        record("migrate scan cold -j 2 --intent drop [this checkout]", run_once(cmd, base, env))
        cmd, env = migrate(None, "apply", "--dry-run", "--no-cache", "-j", "2", ".")
        record("migrate apply --dry-run -j 2 [this checkout]", run_once(cmd, base, env))
        for scale in scales[1:]:
            record(
                f"ruff check --select UP, tree x{scale}", run_once([*ruff_cmd, "."], trees[scale])
            )
            cmd, env = migrate(None, "scan", "--no-cache", "-j", "2", ".")
            label = f"migrate scan cold -j 2, tree x{scale} [this checkout]"
            record(label, run_once(cmd, trees[scale], env))
        if one_file:
            record("ruff one file", run_once([*ruff_cmd, one_file], base))
            for name, version in versions.items():
                # Exactly the pre-commit command line; its text report goes to /dev/null
                # like every other run's output.
                cmd, env = migrate(version, "scan", one_file, "--no-cache", report=False)
                record(f"migrate scan one file [{name}]", run_once(cmd, base, env))
    shutil.rmtree(cache, ignore_errors=True)

    report(cases, versions, scales, sizes)
    if one_file:
        print(f"one file: {one_file}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
