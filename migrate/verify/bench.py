"""``--bench``: the per-call latency of each runtime from Python, and its load time.

What is timed is the runtime's own call on inputs prepared beforehand (see
``runners.Prepared``): the TorchScript module, ``ep.module()``, ExecuTorch's
``method.execute(list_of_tensors)``.  Nothing of ours runs inside the timed
loop: no log capture (the caller captures native logs once around the whole
measurement), no pytree flattening, no device moves, no grad-mode switches.
Candidates are timed in alternating rounds, so that drift of a shared machine
hits all of them alike, each until a minimum measured time.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from migrate.verify.errors import VerifyError
from migrate.verify.runners import Prepared, is_accelerator

MIN_TIME_S = 0.2  # measured time per candidate
MIN_CALLS = 10  # timed calls per candidate, whatever the time
ROUNDS = 5  # the measured time is spread over this many alternating rounds
WARMUP_SHARE = 0.25  # untimed calls first: this share of min_time (at least WARMUP_CALLS)
WARMUP_CALLS = 3
LOAD_REPEATS = 3
MAX_ROUNDS = 10_000

TIMED = (
    "per-call latency of each runtime from Python (the TorchScript module, ep.module(), "
    "ExecuTorch method.execute, the AOTInductor package's compiled model) on inputs prepared "
    "beforehand"
)
NOT_TIMED = (
    "input preparation (flattening, contiguous copies, device moves), output comparison, "
    "log capture; load time is measured separately (load column)"
)
LOAD = (
    "from bytes in memory to a runnable: torch.jit.load (TorchScript), torch.export.load + "
    ".module() (.pt2), program load + method load (.pte), aoti_load_package of the file (.aoti.pt2)"
)


@dataclass
class Timing:
    """Per-call wall times of one runtime (seconds) and, where it has one, its load time."""

    times: list[float] = field(default_factory=list)
    load_s: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def minimum(self) -> float:
        return min(self.times)

    @property
    def p90(self) -> float:
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]

    def to_json(self) -> dict[str, Any]:
        return {
            "median_ms": 1e3 * self.median,
            "min_ms": 1e3 * self.minimum,
            "p90_ms": 1e3 * self.p90,
            "calls": len(self.times),
            "load_ms": None if self.load_s is None else 1e3 * self.load_s,
        }


def time_calls(
    fn: Callable[..., Any], args: tuple[Any, ...], n: int, sync: Callable[[], None] | None
) -> list[float]:
    """Wall time of each of ``n`` calls ``fn(*args)`` (then ``sync()`` on an accelerator)."""
    perf = time.perf_counter
    times = []
    if sync is None:
        for _ in range(n):
            t0 = perf()
            fn(*args)
            times.append(perf() - t0)
    else:
        for _ in range(n):
            t0 = perf()
            fn(*args)
            sync()
            times.append(perf() - t0)
    return times


def measure(
    calls: Sequence[Prepared],
    sync: Callable[[], None] | None = None,
    min_time: float = MIN_TIME_S,
    min_calls: int = MIN_CALLS,
    rounds: int = ROUNDS,
) -> list[Timing]:
    """Time every prepared call until each has ``min_calls`` calls and ``min_time`` measured
    (at the median, see ``_enough``).

    Each first gets untimed warm-up calls, which also size its share of a round (a chunk
    of back-to-back calls); then the candidates take turns, in alternating order.
    """
    chunks = []
    for call in calls:
        warm: list[float] = []
        spent = 0.0
        while len(warm) < WARMUP_CALLS or spent < WARMUP_SHARE * min_time:
            warm += time_calls(call.fn, call.args, 1, sync)
            spent += warm[-1]
        # The fastest warm-up call sizes the chunk: a call that follows other work can stall
        # (threads woken, CPU quota of a shared machine); sized by it, chunks would shrink to
        # single isolated calls and time the stall instead of the model.
        per_call = max(min(warm), 1e-9)
        chunks.append(max(1, math.ceil(min_time / rounds / per_call)))
    timings = [Timing() for _ in calls]
    order = list(range(len(calls)))
    for r in range(MAX_ROUNDS):
        pending = [i for i in order if not _enough(timings[i].times, min_time, min_calls)]
        if not pending:
            break
        for i in pending if r % 2 == 0 else reversed(pending):
            timings[i].times += time_calls(calls[i].fn, calls[i].args, chunks[i], sync)
    return timings


def _enough(times: list[float], min_time: float, min_calls: int) -> bool:
    """At least ``min_calls`` calls adding up to ``min_time`` at their median: on a shared
    machine a few calls stalled by the scheduler (tens of ms) must not cut the count short."""
    return len(times) >= min_calls and len(times) * statistics.median(times) >= min_time


def load_time(loader: Callable[[], Any], repeats: int = LOAD_REPEATS) -> float:
    """Median wall time of ``loader()``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        loader()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# --------------------------------------------------------------------------- threads


def _executorch_threadpool() -> Any:
    """ExecuTorch's pybindings module holding the threadpool controls (None if absent)."""
    try:
        from executorch.extension.pybindings import portable_lib
    except ImportError:  # pragma: no cover - executorch is part of the verify extra
        return None
    if not hasattr(portable_lib, "_threadpool_get_thread_count"):  # pragma: no cover
        return None
    return portable_lib


def thread_counts() -> dict[str, int | None]:
    """The threads the timed calls run with: torch's intra-op pool, ExecuTorch's threadpool
    (XNNPACK and the optimized kernels use it)."""
    pool = _executorch_threadpool()
    return {
        "torch": torch.get_num_threads(),
        "executorch": None if pool is None else int(pool._threadpool_get_thread_count()),
    }


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[dict[str, int | None]]:
    """Set torch's and ExecuTorch's thread counts to ``n`` (None: leave them), then restore.

    Yields the counts in force inside, read back from the libraries.
    """
    if n is None:
        yield thread_counts()
        return
    if n < 1:
        raise VerifyError("usage", f"--threads must be >= 1, not {n}")
    before = thread_counts()
    pool = _executorch_threadpool()
    torch.set_num_threads(n)
    if pool is not None:
        pool._unsafe_reset_threadpool(n)  # no ExecuTorch call is in flight here
    try:
        yield thread_counts()
    finally:
        torch.set_num_threads(int(before["torch"] or 1))
        if pool is not None and before["executorch"]:
            pool._unsafe_reset_threadpool(int(before["executorch"]))


# --------------------------------------------------------------------------- verify


@dataclass
class Entry:
    """One runtime to time on a device: how to build its runner (with ``prepare``) and
    whether to time its load."""

    make: Callable[[], Any]
    with_load: bool


def _prepare(runner: Any, args: tuple[Any, ...]) -> Prepared:
    if hasattr(runner, "prepare"):
        return runner.prepare(args)
    return Prepared(runner, (args,))  # a plain runner: its own wrapper is timed too


def bench_device(
    entries: Sequence[Entry],
    args: tuple[Any, ...],
    device: str,
    n_threads: int | None = None,
    min_time: float = MIN_TIME_S,
    min_calls: int = MIN_CALLS,
) -> tuple[list[Timing], dict[str, int | None]]:
    """Time every entry on ``device`` under the same thread settings; return the timings
    (in order) and the thread counts they ran with.  The caller captures logs around this."""
    with threads(n_threads) as counts:
        # Built inside: an ExecuTorch method loaded before the threadpool is reset crashes
        # when executed after it; and all of them are released before it is restored.
        runners = [e.make() for e in entries]
        calls = [_prepare(r, args) for r in runners]
        sync = torch.accelerator.synchronize if is_accelerator(device) else None
        with torch.no_grad():
            timings = measure(calls, sync, min_time, min_calls)
            for entry, runner, timing in zip(entries, runners, timings, strict=True):
                if entry.with_load and hasattr(runner, "loader"):
                    timing.load_s = load_time(runner.loader())
        del runners, calls
    return timings, counts


def describe_settings(
    counts: dict[str, int | None], min_time: float, min_calls: int
) -> dict[str, Any]:
    """What the latency figures are, for the report (text and JSON)."""
    return {
        "timed": TIMED,
        "not_timed": NOT_TIMED,
        "load": LOAD,
        "statistic": f"median, min and p90 of at least {min_calls} calls and {min_time:g} s "
        f"(calls x median) per runtime, in {ROUNDS} alternating rounds after warm-up",
        "threads": counts,
        "min_time_s": min_time,
        "min_calls": min_calls,
    }


def bench_verify(
    ref_run: Any,
    timed: Sequence[tuple[Any, Any]],
    args: tuple[Any, ...],
    device: str,
    cfg: Any,
    latency: dict[str, Any] | None,
) -> dict[str, Any]:
    """``--bench`` on one device: the reference and the passing candidates, timed together.

    ``timed`` holds (candidate, cell) pairs of the pipeline; each cell gets its figures,
    and the returned dict (the report's ``latency``) the reference's and the settings.
    """
    entries = [Entry(lambda: ref_run, with_load=True)]
    entries += [
        Entry(partial(c.runner, device), c.kind in ("pt2", "pte", "aoti")) for c, _ in timed
    ]
    timings, counts = bench_device(
        entries, args, device, cfg.threads, cfg.bench_min_time, cfg.bench_runs
    )
    ref = timings[0]
    for (_, cell), timing in zip(timed, timings[1:], strict=True):
        cell.bench = timing.to_json()
        cell.latency_ms = 1e3 * timing.median
        cell.reference_latency_ms = 1e3 * ref.median
    latency = latency or describe_settings(counts, cfg.bench_min_time, cfg.bench_runs)
    latency.setdefault("reference", {})[device] = ref.to_json()
    return latency
