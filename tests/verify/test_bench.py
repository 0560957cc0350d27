"""`migrate verify --bench`: what is timed, how, and with which threads (issue 18).

No test here passes or fails on a measured time: they check which calls the
timed loop makes, that a slower call is ranked slower, and what the report says.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from migrate.verify import bench  # noqa: E402
from migrate.verify import runners as rn  # noqa: E402


class Counting:
    """A stub callable that counts its calls (optionally busy for ``busy_s`` each)."""

    def __init__(self, busy_s: float = 0.0) -> None:
        self.calls = 0
        self.busy_s = busy_s

    def __call__(self, *args: object) -> None:
        self.calls += 1
        if self.busy_s:
            end = time.perf_counter() + self.busy_s
            while time.perf_counter() < end:
                pass


# --------------------------------------------------------------------------- the timed loop


def test_slow_stub_is_reported_slower_than_fast_one():
    fast, slow = Counting(), Counting(busy_s=200e-6)
    timings = bench.measure(
        [rn.Prepared(fast, ()), rn.Prepared(slow, ())], min_time=0.02, min_calls=10
    )
    assert timings[1].median > timings[0].median
    assert timings[1].minimum >= 200e-6  # the busy wait is inside what is timed
    for t in timings:
        assert len(t.times) >= 10
        assert t.minimum <= t.median <= t.p90
        assert len(t.times) * t.median >= 0.02


def test_loop_calls_only_the_prepared_callable_once_per_timed_call():
    stubs = [Counting(), Counting(busy_s=50e-6)]
    timings = bench.measure([rn.Prepared(s, (1, 2)) for s in stubs], min_time=0.01)
    for stub, timing in zip(stubs, timings, strict=True):
        warmup = stub.calls - len(timing.times)
        assert bench.WARMUP_CALLS <= warmup < stub.calls


def test_candidates_are_alternated_in_rounds():
    order: list[str] = []
    calls = [
        rn.Prepared(lambda: order.append("a"), ()),
        rn.Prepared(lambda: order.append("b"), ()),
    ]
    bench.measure(calls, min_time=0.005, min_calls=10)
    timed = "".join(order)
    # after each one's warm-up ("aaa...bbb..."), the timed part switches back and forth
    switches = sum(1 for x, y in zip(timed, timed[1:], strict=False) if x != y)
    assert switches >= 3, timed[:80]


def test_pte_loop_runs_without_log_capture_or_flattening(convnet_converted, monkeypatch):
    """The prepared .pte call is method.execute(list) itself: with quiet() and pytree made to
    fail after preparation, timing still works and the output matches the runner's."""
    _, pte, _ = convnet_converted
    runner = rn.PteRunner(pte)
    args = (torch.randn(2, 3, 16, 16),)
    prepared = runner.prepare(args)
    assert prepared.fn == runner.method.execute
    assert isinstance(prepared.args[0], list) and prepared.args[0][0].is_contiguous()

    def forbidden(*a, **k):
        raise AssertionError("called inside the timed loop")

    monkeypatch.setattr(rn, "quiet", forbidden)
    monkeypatch.setattr(rn.pytree, "tree_leaves", forbidden)
    counted = Counting()
    timings = bench.measure([prepared, rn.Prepared(counted, ())], min_time=0.01)
    assert len(timings[0].times) >= bench.MIN_CALLS
    monkeypatch.undo()
    torch.testing.assert_close(prepared.fn(*prepared.args)[0], runner(args)[0])


def test_torch_runners_prepare_the_module_itself(archives):
    path, _ = archives[("convnet", "trace")]
    ts = torch.jit.load(str(path))
    x = torch.randn(2, 3, 16, 16)
    prepared = rn.ScriptRunner(ts, "cpu").prepare((x,))
    assert prepared.fn is ts and prepared.args[0] is x


def test_threads_are_set_for_the_run_and_restored():
    before = bench.thread_counts()
    n = int(before["torch"] or 1) + 1
    with bench.threads(n) as inside:
        assert inside == {"torch": n, "executorch": n}
        assert torch.get_num_threads() == n
    assert bench.thread_counts() == before


# --------------------------------------------------------------------------- the CLI


PROBE = '''
import torch
from fixtures.models import zoo

SEEN = []


class Probe(torch.nn.Module):
    """scripted_helpers that records the thread count of every call."""

    def __init__(self):
        super().__init__()
        self.inner = zoo.scripted_helpers()[0]

    def forward(self, x):
        SEEN.append(torch.get_num_threads())
        return self.inner(x)


def make():
    return Probe().eval()
'''


def test_bench_text_states_what_is_timed_threads_and_load(archives, invoke):
    path, inputs = archives[("scripted_helpers", "trace")]
    result = invoke("verify", path, "--inputs", inputs, "--samples", "0", "--bench",
                    "--candidate", "fixtures.models.zoo:scripted_helpers")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())  # the table wraps its title
    assert "Latency: per-call latency of each runtime from Python" in out
    assert "Not timed: input preparation" in out
    for col in ("median ms", "min ms", "p90 ms", "calls", "load ms", "vs TS"):
        assert col in out
    assert "TorchScript (reference)" in out
    assert "threads: torch.get_num_threads() = " in out and "ExecuTorch threadpool = " in out


@pytest.mark.slow  # a second timed bench of the same archive: ~9 s CPU
def test_bench_json_and_threads_option_is_honoured(archives, invoke, tmp_path, monkeypatch):
    (tmp_path / "threadprobe18.py").write_text(PROBE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    path, inputs = archives[("scripted_helpers", "trace")]
    before = torch.get_num_threads()
    n = before + 1
    result = invoke("verify", path, "--inputs", inputs, "--samples", "0", "--bench",
                    "--bench-runs", "12", "--threads", n, "--default-candidates",
                    "--candidate", "threadprobe18:make", "--device", "cpu",
                    "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    latency = report["latency"]
    assert latency["threads"] == {"torch": n, "executorch": n}
    assert "per-call latency" in latency["timed"] and "log capture" in latency["not_timed"]
    ref = latency["reference"]["cpu"]
    assert ref["calls"] >= 12 and ref["load_ms"] > 0
    cells = {c["kind"]: c for c in report["results"]}
    for kind in ("exported_program", "pt2", "pte", "callable"):
        b = cells[kind]["bench"]
        assert b["calls"] >= 12 and 0 < b["min_ms"] <= b["median_ms"] <= b["p90_ms"]
        assert cells[kind]["latency_ms"] == b["median_ms"]
    # load time: program + method load for the .pte, export.load for the .pt2; none in memory
    assert cells["pte"]["bench"]["load_ms"] > 0 and cells["pt2"]["bench"]["load_ms"] > 0
    assert cells["exported_program"]["bench"]["load_ms"] is None
    assert cells["callable"]["bench"]["load_ms"] is None
    seen = sys.modules["threadprobe18"].SEEN
    assert seen[-1] == n and seen.count(n) >= 12  # every timed call ran with --threads
    assert torch.get_num_threads() == before  # restored after the run


def test_threads_must_be_positive(archives, invoke):
    path, inputs = archives[("scripted_helpers", "trace")]
    result = invoke("verify", path, "--inputs", inputs, "--bench", "--threads", "0")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: usage: --threads must be at least 1, not 0"
