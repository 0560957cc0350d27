"""The suite's CPU time, printed at the end of every run (CI reads it from `.ci/run`'s log),
the `slow` marker: tests marked slow run only with `--slow` (CI passes it) or when
`-m` names markers itself, and the `sample_gate` marker: a whole sample migrated under
`apply --test` (tens of suite runs, 15-30 minutes here), only with `--sample-gates`.

Most of the suite's CPU is spent in the `migrate` subprocesses the tests start, so each
process counts itself and its waited-for children; under xdist each worker sends its figure
to the controller, which adds its own (without its children: those are the workers).
"""

from __future__ import annotations

import resource

import pytest

_WORKERS: list[float] = []


def cpu_seconds(children: bool = True) -> float:
    usage = [resource.getrusage(resource.RUSAGE_SELF)]
    if children:
        usage.append(resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(u.ru_utime + u.ru_stime for u in usage)


def pytest_addoption(parser):
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the tests marked slow: the full suite, as CI runs it (.ci/run)",
    )
    parser.addoption(
        "--sample-gates",
        action="store_true",
        help="also run the sample_gate tests (apply --test on a whole sample repository)",
    )


def pytest_collection_modifyitems(config, items):
    if config.option.markexpr:
        return
    held = [] if config.getoption("--sample-gates") else ["sample_gate"]
    if not config.getoption("--slow"):
        held.append("slow")
    out = [item for item in items if any(item.get_closest_marker(m) for m in held)]
    if out:
        config.hook.pytest_deselected(items=out)
        items[:] = [item for item in items if item not in out]


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: tell the controller
        workeroutput["cpu_seconds"] = cpu_seconds()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _WORKERS.append(getattr(node, "workeroutput", {}).get("cpu_seconds", 0.0))


def pytest_terminal_summary(terminalreporter, config):
    if getattr(config, "workeroutput", None) is not None:
        return
    total = cpu_seconds(children=not _WORKERS) + sum(_WORKERS)
    minutes, seconds = divmod(total, 60)
    where = f" ({len(_WORKERS)} workers and the controller)" if _WORKERS else ""
    terminalreporter.write_line(
        f"CPU time of the suite: {int(minutes)} min {seconds:.1f} s = {total:.1f} s{where}"
    )
