"""Does `migrate verify --bench` measure the model, not the tool?

For three models (a 5-layer MLP 8->16->16->4 at batch 3, the
test conv net, a one-layer transformer encoder), each repeat:

1. `--bench`'s figures, from the same API `migrate verify` calls (run_verify,
   in-process), for the TorchScript archive, the .pt2 and the .pte;
2. a direct timing loop written plainly below: load each artifact, warm up,
   time 2,000 calls one by one, take the median.

and prints the ratio bench / direct per runtime (target: within 10%, i.e.
0.90-1.10).  Ratios matter more than absolute figures on a shared machine;
the load average is printed at the start and end.

Run:  python benchmarks/bench_vs_direct.py [--repeats 3] [--calls 2000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from fixtures.models import zoo  # noqa: E402
from migrate.verify.convert_flow import run_convert  # noqa: E402
from migrate.verify.errors import quiet  # noqa: E402
from migrate.verify.options import VerifyConfig  # noqa: E402
from migrate.verify.verify_flow import run_verify  # noqa: E402

RUNTIMES = ("TorchScript", "ep.module() (.pt2)", ".pte (XNNPACK)")


def mlp() -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    m = nn.Sequential(
        nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)
    ).eval()
    return m, (torch.randn(3, 8),)


MODELS = {"mlp": mlp, "convnet": zoo.convnet, "transformer": zoo.transformer}


def build(name: str, tmp: Path) -> tuple[Path, Path, Path, Path]:
    """The TorchScript archive, its inputs, and `migrate convert`'s .pt2 and .pte."""
    module, example = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.jit.trace(module, example, check_trace=False, strict=False)
    archive, inputs = tmp / f"{name}.pt", tmp / f"{name}_inputs.pt"
    torch.jit.save(ts, str(archive))
    torch.save(example, inputs)
    res = run_convert(str(archive), str(inputs), [], tmp / "out")
    assert res.pte is not None
    return archive, inputs, res.pt2, res.pte


def bench_figures(archive: Path, inputs: Path, pt2: Path, pte: Path, threads: int | None):
    """Median ms per runtime as `migrate verify --bench` reports them."""
    cfg = VerifyConfig(
        target=str(archive),
        inputs=str(inputs),
        device="cpu",
        samples=0,
        candidates=[str(pt2), str(pte)],
        bench=True,
        threads=threads,
    )
    report = run_verify(cfg)
    assert report.exit_code == 0, report.errors
    assert report.latency is not None
    by_kind = {c.kind: c.bench["median_ms"] for c in report.cells if c.bench}
    figures = [report.latency["reference"]["cpu"]["median_ms"], by_kind["pt2"], by_kind["pte"]]
    return figures, report.latency["threads"]


def direct_figures(archive: Path, inputs: Path, pt2: Path, pte: Path, calls: int):
    """The plain way: load, warm up, time each call, take the median (ms)."""
    from executorch.runtime import Runtime

    (x,) = torch.load(inputs)
    ts = torch.jit.load(str(archive))
    gm = torch.export.load(str(pt2)).module()
    method = Runtime.get().load_program(str(pte)).load_method("forward")
    out = []
    with torch.no_grad():
        for call in (lambda: ts(x), lambda: gm(x), lambda: method.execute([x])):
            for _ in range(50):
                call()
            times = []
            for _ in range(calls):
                t0 = time.perf_counter()
                call()
                times.append(time.perf_counter() - t0)
            out.append(1e3 * statistics.median(times))
    return out


def set_threads(n: int) -> None:
    from executorch.extension.pybindings import portable_lib

    torch.set_num_threads(n)
    portable_lib._unsafe_reset_threadpool(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000, help="timed calls in the direct loop")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    print(f"torch {torch.__version__}; load average at start: {os.getloadavg()}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as d, quiet():
        if args.threads:
            set_threads(args.threads)  # the direct loop's; --bench sets (and restores) its own
        for name in args.models.split(","):
            tmp = Path(d) / name
            tmp.mkdir()
            paths = build(name, tmp)
            rows: list[tuple[list[float], list[float]]] = []
            for _ in range(args.repeats):
                bench, threads = bench_figures(*paths, args.threads)
                rows.append((bench, direct_figures(*paths, args.calls)))
            print(f"\n{name}: median ms per call, {args.repeats} repeats, threads {threads}")
            print(f"  {'runtime':<20}{'--bench':>10}{'direct':>10}{'bench/direct':>14}  per repeat")
            for i, runtime in enumerate(RUNTIMES):
                ratios = [b[i] / dr[i] for b, dr in rows]
                worst = max(worst, max(abs(r - 1) for r in ratios))
                b_med = statistics.median(b[i] for b, _ in rows)
                d_med = statistics.median(dr[i] for _, dr in rows)
                print(
                    f"  {runtime:<20}{b_med:>10.4f}{d_med:>10.4f}"
                    f"{statistics.median(ratios):>14.3f}  " + " ".join(f"{r:.3f}" for r in ratios)
                )
            pte_ts = [b[2] / b[0] for b, _ in rows]
            print(
                "  --bench .pte / TorchScript: " + " ".join(f"{r:.2f}x" for r in pte_ts)
                + "  (direct: " + " ".join(f"{dr[2] / dr[0]:.2f}x" for _, dr in rows) + ")"
            )  # fmt: skip
    print(f"\nworst |bench/direct - 1| over all repeats: {worst:.1%} (target within 10%)")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
