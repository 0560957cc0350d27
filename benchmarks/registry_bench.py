"""Registry batch scaling (issue 14): ``-j 1`` against ``-j 2`` and ``--ray`` on the same
archives, a resumed run, and the peak memory of one archive's worker.

    PYTHONPATH=. python benchmarks/registry_bench.py [--count 20] [--backend portable] [--no-ray]

Builds ``--count`` tiny Linear/ReLU archives (scripted and traced in turn), then times
``migrate convert DIR -o OUT --input-shape 2x4`` as a subprocess for each setting, each in a
fresh output folder. Target: ``-j 2`` at least 1.7x faster than ``-j 1`` on 2 idle cores.
The load average is printed before each run: on a shared machine the ratio means
something only when it is low.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (5 min {five:.2f})"


def convert(folder: Path, out: Path, backend: str, *extra: str) -> tuple[float, dict]:
    cmd = [
        sys.executable, "-m", "migrate", "convert", str(folder), "-o", str(out),
        "--input-shape", "2x4", "--backend", backend, "--format", "json", *extra,
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, json.loads(proc.stdout)


def _comparable(summary: dict) -> dict:
    """Per archive: what must not depend on where it ran (no timings, no output folder)."""
    return {
        r["path"]: (r["verdict"], r["digest"], r["settings_digest"], r["max_errors"],
                    [(x["path"], x["lowering"]) for x in r["recovery"]])
        for r in summary["archives"]
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--backend", default="portable", choices=("portable", "xnnpack"))
    parser.add_argument("--no-ray", action="store_true", help="Skip the --ray run.")
    args = parser.parse_args()

    from tests.verify.registry_models import passing_archives

    with tempfile.TemporaryDirectory(prefix="registry-bench-") as tmp:
        root = Path(tmp)
        folder = root / "registry"
        passing_archives(folder, args.count)
        print(f"{args.count} archives, backend {args.backend}, {os.cpu_count()} CPUs", flush=True)
        rows = []
        for label, extra in (("-j 1", ["-j", "1"]), ("-j 2", ["-j", "2"])):
            before = load()
            wall, summary = convert(folder, root / label.replace(" ", ""), args.backend, *extra)
            rows.append((label, wall, summary, before))
            print(f"{label}: {wall:.1f} s ({before})", flush=True)
        if not args.no_ray:
            try:
                import ray  # noqa: F401
            except ImportError:
                print("--ray skipped: ray is not installed")
            else:
                before = load()
                wall, summary = convert(folder, root / "ray", args.backend, "--ray", "-j", "2")
                rows.append(("--ray -j 2", wall, summary, before))
                print(f"--ray -j 2: {wall:.1f} s ({before})", flush=True)
        print(f"\n{'run':<12} {'wall s':>8} {'per archive s':>14}  verdicts  load before")
        for label, wall, summary, before in rows:
            counts = {k: v for k, v in summary["counts"].items() if v}
            print(f"{label:<12} {wall:8.1f} {wall / args.count:14.2f}  {counts}  {before}")
        j1, j2 = rows[0][1], rows[1][1]
        print(f"\n-j 1 / -j 2 = {j1 / j2:.2f}x (target >= 1.7x on 2 idle cores)")
        if len(rows) > 2:
            print(f"-j 1 / --ray = {j1 / rows[2][1]:.2f}x (includes Ray's start-up)")
            same = _comparable(rows[1][2]) == _comparable(rows[2][2])
            print(f"--ray results equal -j 2's apart from timings: {same}")

        rss = [r["peak_rss_mb"] for r in rows[0][2]["archives"] if r.get("peak_rss_mb")]
        lower = [r["lower_s"] for r in rows[0][2]["archives"] if r.get("lower_s")]
        print(
            f"per-archive worker peak RSS (-j 1): median {statistics.median(rss)} MiB, "
            f"max {max(rss)} MiB; lowering median {statistics.median(lower):.1f} s"
        )

        # Resume: the -j 2 results file loses its second half, as if killed midway.
        results = root / "-j2" / "results.jsonl"
        kept = results.read_text().splitlines()[: args.count // 2]
        results.write_text("\n".join(kept) + "\n")
        before = load()
        wall, summary = convert(folder, root / "-j2", args.backend, "-j", "2")
        print(
            f"resume after losing {args.count - len(kept)} results: {summary['ran']} run, "
            f"{summary['skipped']} skipped, {wall:.1f} s ({before})"
        )


if __name__ == "__main__":
    main()
