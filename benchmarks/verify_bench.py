"""Benchmark for `migrate verify`.

1. Overhead: the wall time of `migrate verify` (the pipeline behind the CLI,
   report rendering included) against the bare sequence of API calls it wraps
   (torch.jit.load, TS2EPConverter, torch.export.save/load,
   to_edge_transform_and_lower + XNNPACK, executorch.runtime, allclose), on the
   same model and the same samples.  Target: ratio under 1.15.
2. Latency: ExecuTorch (.pte, XNNPACK) and the exported program against the
   TorchScript archive for each test model, measured as `migrate verify --bench`
   does (migrate.verify.bench: each runtime's own call on prepared inputs,
   alternating rounds, median of at least --min-time seconds per runtime),
   plus each artifact's load time.

Run:  python benchmarks/verify_bench.py [--repeats 3] [--min-time 0.2] [--threads N]
      [--part all|overhead|latency]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from fixtures.models import zoo  # noqa: E402
from migrate.verify import bench  # noqa: E402
from migrate.verify import runners as rn  # noqa: E402
from migrate.verify.errors import quiet  # noqa: E402

SAMPLES = 3
SEED = 0


def build_archive(name: str, tmp: Path) -> tuple[Path, Path]:
    module, example = getattr(zoo, name)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ts = torch.jit.trace(module, example, check_trace=False, strict=False)
        except Exception:
            ts = torch.jit.script(module)
        path = tmp / f"{name}.pt"
        torch.jit.save(ts, str(path))
    inputs = tmp / f"{name}_inputs.pt"
    torch.save(example, inputs)
    return path, inputs


def run_migrate_verify(path: Path, inputs: Path, out: Path) -> int:
    from rich.console import Console

    from migrate.verify.options import VerifyConfig
    from migrate.verify.report import render_text
    from migrate.verify.verify_flow import run_verify

    cfg = VerifyConfig(
        target=str(path), inputs=str(inputs), device="cpu", samples=SAMPLES, seed=SEED, out=out
    )
    report = run_verify(cfg)
    render_text(report, Console(file=io.StringIO(), width=200))
    return report.exit_code


def run_bare(path: Path, inputs: Path, out: Path) -> bool:
    """The API calls `migrate verify` wraps, with nothing around them."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime
    from torch._export.converter import TS2EPConverter

    ts = torch.jit.load(str(path))
    example = torch.load(inputs)
    gen = torch.Generator().manual_seed(SEED)
    samples = [example] + [
        tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(SAMPLES)
    ]
    refs = [ts(*s) for s in samples]
    ep = TS2EPConverter(ts, example).convert()
    torch.export.save(ep, str(out / "bare.pt2"))
    ep2 = torch.export.load(str(out / "bare.pt2"))
    buf = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    (out / "bare.pte").write_bytes(buf.buffer)
    method = Runtime.get().load_program(str(out / "bare.pte")).load_method("forward")
    ok = True
    gm, gm2 = ep.module(), ep2.module()
    with torch.no_grad():
        for s, r in zip(samples, refs, strict=True):
            ok &= torch.allclose(gm(*s), r)
            ok &= torch.allclose(gm2(*s), r)
            ok &= torch.allclose(method.execute(list(s))[0], r, rtol=1e-5, atol=1e-5)
    return bool(ok)


def overhead(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path, inputs = build_archive("convnet", tmp)
        with quiet():
            run_bare(path, inputs, tmp)  # warm imports and kernels for both
            run_migrate_verify(path, inputs, tmp / "warm")
        t_verify, t_bare = [], []
        for i in range(repeats):
            with quiet():
                t0 = time.perf_counter()
                assert run_bare(path, inputs, tmp)
                t_bare.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                assert run_migrate_verify(path, inputs, tmp / f"v{i}") == 0
                t_verify.append(time.perf_counter() - t0)
        mv, mb = statistics.median(t_verify), statistics.median(t_bare)
        print(f"overhead on convnet (traced archive), {SAMPLES + 1} samples, {repeats} repeats:")
        print(f"  {'bare API calls':<28}{mb:8.3f} s")
        print(f"  {'migrate verify (pipeline)':<28}{mv:8.3f} s")
        print(f"  {'ratio verify / bare':<28}{mv / mb:8.3f}   (target < 1.15)")
        import subprocess

        t0 = time.perf_counter()
        rc = subprocess.run(
            [sys.executable, "-m", "migrate", "verify", str(path), "--inputs", str(inputs),
             "--device", "cpu", "--samples", str(SAMPLES)],
            cwd=REPO, capture_output=True,
        ).returncode  # fmt: skip
        t_cli = time.perf_counter() - t0
        print(f"  {'`migrate verify` subprocess':<28}{t_cli:8.3f} s   (rc {rc}; incl. interpreter "
              "start and imports)")  # fmt: skip


def latency(min_time: float, threads: int | None) -> None:
    from migrate.verify import convert as conv
    from migrate.verify.load import load_archive

    with bench.threads(threads) as counts:
        print(
            f"\nlatency per model, CPU, per call from Python (median of >= {min_time:g} s per "
            f"runtime, alternating rounds), threads {counts}; load from bytes (ms):"
        )
        head = f"  {'model':<18}{'TorchScript':>12}{'exported':>10}{'.pte xnnpack':>14}"
        print(head + f"{'pte/TS':>9}{'ep/TS':>8}{'TS load':>9}{'pt2 load':>10}{'pte load':>10}")
        with tempfile.TemporaryDirectory() as d, quiet():
            tmp = Path(d)
            for name in zoo.FACTORIES:
                path, inputs = build_archive(name, tmp)
                example = torch.load(inputs)
                ts = load_archive(path)
                ep = conv.convert_archive(ts, example).ep
                pte = tmp / f"{name}.pte"
                pte.write_bytes(conv.lower(ep, example, "xnnpack").buffer)
                runners = [rn.ScriptRunner(ts, "cpu"), rn.EpRunner(ep, "cpu"), rn.PteRunner(pte)]
                with torch.no_grad():  # only here: tracing under it takes fused fast paths
                    calls = [r.prepare(example) for r in runners]
                    t_ts, t_ep, t_pte = (t.median for t in bench.measure(calls, None, min_time))
                loads = [bench.load_time(r.loader()) for r in runners]
                print(
                    f"  {name:<18}{t_ts * 1e3:>12.4f}{t_ep * 1e3:>10.4f}{t_pte * 1e3:>14.4f}"
                    f"{t_pte / t_ts:>8.2f}x{t_ep / t_ts:>7.2f}x"
                    + "".join(f"{x * 1e3:>{w}.2f}" for x, w in zip(loads, (9, 10, 10), strict=True))
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=bench.MIN_TIME_S)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--part", choices=("all", "overhead", "latency"), default="all")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.part in ("all", "overhead"):
        overhead(args.repeats)
    if args.part in ("all", "latency"):
        latency(args.min_time, args.threads)


if __name__ == "__main__":
    main()
