"""`migrate convert --aoti` on the zoo of benchmarks/convert_vs_bare.py: per archive, whether it
exports, whether an AOTInductor package is made, the compile seconds, the package checked
against the TorchScript archive on the CPU (`migrate verify --candidate PACKAGE`), and its
per-call latency against TorchScript's (`--bench`).

Each archive runs in its own worker process (what `migrate convert ARCHIVE --input-shape S
--aoti -o OUT` then `migrate verify ARCHIVE --candidate OUT/NAME.aoti.pt2 --device cpu
--bench --trust-archive` run), killed at ``--timeout``. AOTInductor compiles C++ with the
compiler of ``CXX`` (else g++): on a shared 2-core machine one package takes minutes, so
``--only`` picks a subset.

Run:  python benchmarks/aoti_zoo.py [--only NAME ...] [--kind trace] [--json rows.json]
      python benchmarks/aoti_zoo.py --table-from rows.json   (docs/performance.md's table)
Needs what convert_vs_bare.py needs (timm, torchvision, transformers) and a C++ compiler.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from convert_vs_bare import ZOO, _write_rows, zoo_archives  # noqa: E402

from migrate.verify.errors import one_line  # noqa: E402  (no torch import)


def _worker(archive: str, shape: str, out: str, threads: int) -> dict[str, Any]:
    """convert --aoti, then verify of the package against the archive with --bench."""
    import torch

    torch.set_num_threads(threads)
    from migrate.verify.convert_flow import run_convert
    from migrate.verify.errors import VerifyError, describe
    from migrate.verify.options import VerifyConfig
    from migrate.verify.verify_flow import run_verify

    row: dict[str, Any] = {"exported": False, "package": False}
    start = time.perf_counter()
    try:
        # Archives built by this script from code: trusted (no audit).
        res = run_convert(archive, None, [shape], Path(out), trust=True, aoti=True)
    except VerifyError as exc:
        row.update(exported=exc.stage not in ("convert", "export"), error=str(exc))
        row["convert_s"] = time.perf_counter() - start
        return row
    except Exception as exc:
        row.update(error=describe(exc), convert_s=time.perf_counter() - start)
        return row
    row.update(
        exported=True,
        convert_s=time.perf_counter() - start,
        compile_s=res.timings.get("aoti compile"),
        path=res.recoveries["forward"].path,
        package=bool(res.packages),
    )
    if not res.packages:
        row["error"] = res.mismatch
        return row
    package = str(res.packages[0].path)
    cfg = VerifyConfig(
        target=archive,
        input_shapes=[shape],
        device="cpu",
        candidates=[package],
        default_candidates=False,
        trust_archive=True,
        bench=True,
        threads=threads,
    )
    try:
        report = run_verify(cfg)
    except VerifyError as exc:
        row.update(verify="error", error=str(exc))
        return row
    (cell,) = report.cells
    row.update(
        verify=cell.status,
        max_abs=cell.max_abs,
        samples=cell.samples,
        latency_ms=cell.latency_ms,
        reference_ms=cell.reference_latency_ms,
    )
    if cell.error:
        row["error"] = cell.error["message"]
    return row


def _measure(archive: Path, shape: str, out: Path, timeout: float, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(archive), shape, str(out), str(threads)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exported": None, "package": False, "error": f"timed out ({timeout:.0f} s)"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {
            "exported": None,
            "package": False,
            "error": f"worker exit {proc.returncode}: {tail}",
        }
    return json.loads(lines[-1])


def _yes(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _secs(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """docs/performance.md's table and its closing line."""
    out = [
        "| archive | exported | package | compile s | convert s (all) | verify (CPU) | "
        "latency ms: package / TorchScript | ratio |",
        "|---|---|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        lat, ref = r.get("latency_ms"), r.get("reference_ms")
        verdict = r.get("verify") or "-"
        if verdict == "pass":
            verdict = f"pass ({r['samples']} samples, max abs {r['max_abs']:.2g})"
        elif r.get("error"):
            verdict = f"{verdict}: {one_line(r['error'], 120)}"
        out.append(
            f"| {r['archive']} | {_yes(r.get('exported'))} | {_yes(r.get('package'))} | "
            f"{_secs(r.get('compile_s'))} | {_secs(r.get('convert_s'))} | {verdict} | "
            + ("-" if lat is None else f"{lat:.3f} / {ref:.3f}")
            + " | "
            + ("-" if lat is None or not ref else f"{lat / ref:.2f}x")
            + " |"
        )
    exported = [r for r in rows if r.get("exported")]
    packaged = [r for r in exported if r.get("package")]
    passed = [r for r in packaged if r.get("verify") == "pass"]
    out += [
        "",
        f"{len(rows)} archives: {len(exported)} export, {len(packaged)} of those get a package "
        f"({100 * len(packaged) / max(len(exported), 1):.0f}%), {len(passed)} pass verify on "
        "the CPU.",
    ]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="architectures whose name contains this")
    ap.add_argument("--kind", choices=("trace", "script"), help="only traced or scripted")
    ap.add_argument("--size", type=int, default=64, help="image side (default 64)")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per archive")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the worker")
    ap.add_argument("--json", type=Path, help="write the rows to this file after every archive")
    ap.add_argument("--table-from", type=Path, metavar="JSON", help="print the table of a --json")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        archive, shape, out, threads = args.worker
        print(json.dumps(_worker(archive, shape, out, int(threads))), flush=True)
        return 0
    if args.table_from:
        try:
            rows = json.loads(args.table_from.read_text())
        except (OSError, ValueError) as exc:
            ap.error(f"--table-from {args.table_from}: cannot read it ({exc})")
        print("\n".join(table(rows)))
        return 0
    names = list(ZOO)
    if args.only:
        names = [n for n in ZOO if any(o.lower() in n.lower() for o in args.only)]
        if not names:
            ap.error(f"--only {args.only}: no architecture matches (see convert_vs_bare.ZOO)")
    print(f"load average at start: {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores", flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="aoti-zoo-") as tmp:
        folder = Path(tmp)
        for label, archive, shape in zoo_archives(names, args.kind, args.size, folder):
            out = folder / label.replace(" ", "_").replace("(", "").replace(")", "")
            row = {
                "archive": label,
                **_measure(archive, shape, out, args.timeout, args.threads),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
            if args.json:
                _write_rows(args.json, rows)
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
