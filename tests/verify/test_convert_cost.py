"""Convert pays for each step once (no second reference run of the
example, no graph inlining for a flag only a failed conversion reads)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from migrate.verify import convert as conv  # noqa: E402
from migrate.verify import convert_flow  # noqa: E402
from migrate.verify import runners as rn  # noqa: E402

pytestmark = pytest.mark.verify


class Stop(Exception):
    pass


def _scripted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(torch.nn.Sequential(torch.nn.Linear(3, 2)).eval())


def test_the_example_is_run_once_for_its_reference(tmp_path, monkeypatch):
    path = tmp_path / "m.pt"
    torch.jit.save(_scripted(), str(path))
    calls = []
    runner = rn.script_runner

    def counting(ts, device, method):
        run = runner(ts, device, method)
        return lambda args: calls.append(args) or run(args)

    def stop(*args, **kwargs):
        raise Stop  # the references are all computed before the ladder

    monkeypatch.setattr(rn, "script_runner", counting)
    monkeypatch.setattr(convert_flow, "ladder", stop)
    with pytest.raises(Stop):
        convert_flow.run_convert(str(path), None, ["2x3"], tmp_path / "out", trust=True)
    assert len(calls) == 1 + convert_flow.CONVERT_SAMPLES  # the example, then each sample
    assert len({id(a) for a in calls}) == len(calls)


def test_the_control_flow_flag_is_read_only_when_asked(monkeypatch):
    reads = []
    monkeypatch.setattr(conv, "_has_control_flow", lambda ts: reads.append(ts) or False)
    ts = _scripted()
    archive = conv.Archive(ts)
    assert reads == []
    assert archive.control_flow is False and archive.control_flow is False
    assert reads == [ts]
