"""Latency: warm-up, then the median of several timed runs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from migrate.verify.runners import synchronize


def median_latency(
    run: Callable[[tuple[Any, ...]], Any],
    args: tuple[Any, ...],
    device: str = "cpu",
    warmup: int = 3,
    runs: int = 10,
) -> float:
    """Median wall time of ``run(args)`` in seconds after ``warmup`` untimed calls."""
    for _ in range(warmup):
        run(args)
    synchronize(device)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run(args)
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
