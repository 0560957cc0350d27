"""Share of findings fixed on the sample repositories, per migration intent.

    python benchmarks/fix_share.py [--baseline CHECKOUT] [REPO ...]
    python benchmarks/fix_share.py --corpus PKG [PKG ...]   (e.g. torchvision timm transformers)
    python benchmarks/fix_share.py --kept [REPO ...]         (what each sample's check keeps)

For each sample repository under fixtures/repos/ (each safety case on its own): the findings
`migrate scan` reports, and the fixes `migrate apply --dry-run` would write (safe only; with
`--unsafe-fixes`; with `--unsafe-fixes` under `--intent drop` and `--intent keep-scriptable`).
The share is fixes / findings. `--baseline` runs another checkout of the tool (for example
`git worktree add /tmp/base 469f4b5`) on the same repositories, side by side; a checkout
without `--intent` gets no intent columns. This counts what would be written, not whether
the program still runs: the sample repositories' own tests check that (tests/test_*_repo.py),
and `--kept` measures it (benchmarks/kept_share.py: `apply --unsafe-fixes --intent I --test
CHECK` on a copy of each sample with a runnable check; what the tests keep).

`--corpus` measures installed packages instead (the scan corpus of real code that
benchmarks/real_scan_bench.py times): each package's Python sources are copied into a
temporary tree of its own, the same copy as that benchmark's, and measured like a sample.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from real_scan_bench import copy_sources

ROOT = Path(__file__).resolve().parents[1]
REPOS = ROOT / "fixtures" / "repos"
WOULD_FIX = re.compile(r"Would fix (\d+) finding")
RUNS = {
    "safe": [],
    "unsafe": ["--unsafe-fixes"],
    "drop": ["--unsafe-fixes", "--intent", "drop"],
    "keep": ["--unsafe-fixes", "--intent", "keep-scriptable"],
}


def sample_repositories() -> list[tuple[str, Path]]:
    found = []
    for repo in sorted(p for p in REPOS.iterdir() if p.is_dir()):
        if repo.name == "safety":
            found += [(f"safety/{c.name}", c / "before") for c in sorted(repo.iterdir())]
        elif (repo / "before").is_dir():
            found.append((repo.name, repo / "before"))
        else:
            found.append((repo.name, repo))
    return [(name, path) for name, path in found if path.is_dir()]


def migrate(code: Path, *args: str, cwd: Path | str = "/") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code), "MIGRATE_CACHE_DIR": "/tmp/fix-share-cache"}
    return subprocess.run(
        # From a neutral folder: `python -m` puts the working folder before PYTHONPATH.
        [sys.executable, "-m", "migrate", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def measure(code: Path, path: Path) -> dict[str, int | None]:
    scan = migrate(code, "scan", "--isolated", "--no-cache", "--format", "json", str(path))
    counts: dict[str, int | None] = {"findings": len(json.loads(scan.stdout)["findings"])}
    for name, extra in RUNS.items():
        run = migrate(code, "apply", "--isolated", "--dry-run", "--allow-dirty", *extra, str(path))
        found = WOULD_FIX.search(run.stdout)
        # No such option in this checkout (an old baseline): no figure, not zero.
        unknown = run.returncode == 2 and "--intent" in run.stderr
        counts[name] = None if unknown else int(found.group(1)) if found else 0
    return counts


def share(part: int | None, total: int) -> str:
    if part is None:
        return "   -"
    return f"{100 * part / total:3.0f}%" if total else "   -"


def line(name: str, c: dict) -> str:
    cells = " ".join(
        f"{c[k] if c[k] is not None else '-':>3} {share(c[k], c['findings'])}" for k in RUNS
    )
    return f"{name:<26} {c['findings']:>4}  {cells}"


def corpus_trees(packages: list[str], base: Path) -> list[tuple[str, Path]]:
    """One tree per installed package under `base` (real_scan_bench.copy_sources); packages
    that are not installed are left out with a note."""
    trees = []
    for name in packages:
        files, size = copy_sources([name], base / name)
        if files:
            print(f"{name}: {files:,} Python files, {size / 1e6:.1f} MB", file=sys.stderr)
            trees.append((name, base / name / name))
    return trees


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout of the tool")
    parser.add_argument(
        "--corpus", nargs="+", metavar="PKG", help="measure installed packages' sources instead"
    )
    parser.add_argument(
        "--kept",
        action="store_true",
        help="apply --test each sample's own check: what the tests keep (benchmarks/kept_share.py)",
    )
    parser.add_argument("repos", nargs="*", help="names as printed (default: all)")
    args = parser.parse_args()
    if args.kept:
        from kept_share import measure_kept

        os.nice(10)  # a benchmark: every process it starts runs niced too
        measure_kept(sample_repositories(), args.repos, args.baseline or ROOT)
        return
    sides = [("this", ROOT)] + ([("baseline", args.baseline)] if args.baseline else [])
    head = f"{'repository':<26} {'find':>4}  " + " ".join(f"{k:>8}" for k in RUNS)
    totals = {side: dict.fromkeys(["findings", *RUNS], 0) for side, _ in sides}
    scratch = Path(tempfile.mkdtemp(prefix="migrate-fix-share-")) if args.corpus else None
    try:
        targets = corpus_trees(args.corpus, scratch) if scratch else sample_repositories()
        print(head)
        _measure_all(targets, args.repos, sides, totals)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    for side, _ in sides:
        print(line(f"TOTAL ({side})", totals[side]))


def _measure_all(targets, wanted, sides, totals) -> None:
    for name, path in targets:
        if wanted and name not in wanted:
            continue
        for side, code in sides:
            started = time.perf_counter()
            c = measure(code, path)
            for k, v in c.items():
                t = totals[side]
                t[k] = None if v is None or t[k] is None else t[k] + v
            took = f"  ({time.perf_counter() - started:.0f} s)"
            print(line(name if side == "this" else f"  ({side})", c) + took, flush=True)


if __name__ == "__main__":
    main()
