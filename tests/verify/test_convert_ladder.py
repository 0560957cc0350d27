"""Every rung of the recovery ladder starts from a fresh load of the archive, its
full reason is kept (JSON, ``--verbose``), non-core ops are rewritten before lowering, and
``--timings`` names the seconds per stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from torch import nn  # noqa: E402

from migrate.verify import VerifyError, recapture, recover  # noqa: E402
from migrate.verify.convert_flow import run_convert  # noqa: E402
from tests.verify import recovery_models as rm  # noqa: E402

pytestmark = pytest.mark.verify

REPO = Path(__file__).resolve().parents[2]
#: A converter failure longer than a one-line error keeps (300 characters).
LONG = "input_values.size() == param_count_list.size() INTERNAL ASSERT FAILED " + "x" * 400


class TinyConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).mean((2, 3)))


def _traced():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(TinyConv().eval(), (x,)), (x,)


@pytest.fixture
def archive(tmp_path):
    ts, example = _traced()
    path = tmp_path / "tiny.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(ts, str(path))
    return path, example


class SpoilingConverter:
    """A converter that changes the module it is given (as TS2EPConverter's graph passes
    do), then fails: a later rung that reused that module would see zeroed weights."""

    seen: list = []

    def __init__(self, ts, example) -> None:
        SpoilingConverter.seen.append(ts)
        with torch.no_grad():
            for p in ts.parameters():
                p.zero_()
        raise AssertionError(LONG)


@pytest.fixture
def spoiling(monkeypatch):
    import torch._export.converter as converter

    SpoilingConverter.seen = []
    monkeypatch.setattr(converter, "TS2EPConverter", SpoilingConverter)
    return SpoilingConverter.seen


def test_each_rung_gets_a_fresh_archive_and_the_full_reason_is_kept(archive, spoiling, tmp_path):
    path, _ = archive
    res = run_convert(str(path), None, ["1x3x8x8"], tmp_path / "out")
    rec = res.recoveries["forward"]
    # The converter got its own load (no frozen retry: the parameter-count assert fails the
    # same way frozen); re-capture another one, so it saw the archive's weights, not the
    # zeros the failed converter left.
    assert len(spoiling) == 1
    assert rec.path == recover.RECAPTURE and "parameter-count assert" in rec.why
    assert res.mismatch is None and res.max_abs["forward"] < 1e-5 and res.pte.exists()
    first = rec.attempts[0]
    assert (first.step, first.error) == ("converter", "AssertionError")
    assert first.reason == f"AssertionError: {LONG}"  # whole, not cut at 300 characters
    data = res.to_json()
    assert data["recovery"][0]["attempts"][0]["reason"] == first.reason
    assert {"load", "reference", recover.CONVERTER, recover.RECAPTURE, "lower", "total"} <= set(
        data["timings"]
    )


def test_a_failed_ladder_names_every_rung_and_its_error_class(archive, spoiling, monkeypatch):
    path, example = archive
    ts = torch.jit.load(str(path))

    def broken(*args, **kwargs):
        raise RuntimeError("SpecViolationError: " + "y" * 400)

    monkeypatch.setattr(recover, "recapture", broken)
    with pytest.raises(VerifyError) as err:
        recover.run_ladder(ts, "forward", ["forward"], example, lambda ep: None, None)
    msg = err.value.message
    assert msg.startswith("no recovery converted forward: converter: AssertionError; ")
    for part in ("converter: AssertionError", "freeze + re-capture: RuntimeError"):
        assert part in msg
    assert "..." not in msg and len(msg) <= 300
    reasons = [a.reason for a in err.value.attempts]
    assert reasons[-1] == "RuntimeError: SpecViolationError: " + "y" * 400
    # The caller's module was never handed to a rung.
    assert all(seen is not ts for seen in spoiling)


def test_recaptured_traced_conv_is_core_aten_and_lowers():
    """The interpreter of a traced archive calls ``aten::_convolution``; re-capture must not
    keep it (no lowering accepts it)."""
    ts, example = _traced()
    ep = recapture.recapture(recapture.freeze(ts, ["forward"]), "forward", example, None)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "aten._convolution.default" not in targets
    assert "aten.convolution.default" in targets
    assert torch.allclose(ep.module()(*example), ts(*example), atol=1e-6)
    recover.edge_once(ep)  # to_edge accepts it


@pytest.mark.slow  # a convert subprocess that imports torch and executorch and lowers: ~24 s CPU
def test_cli_verbose_prints_full_reasons_and_timings_per_stage(tmp_path):
    ts, example = rm.shape_loop()
    path = tmp_path / "loop.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(ts, str(path))
    torch.save(example, tmp_path / "in.pt")
    cmd = [sys.executable, "-m", "migrate", "convert", str(path), "--inputs"]
    result = subprocess.run(
        [*cmd, str(tmp_path / "in.pt"), "-o", str(tmp_path / "out"), "--verbose", "--timings"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "recovery: freeze + re-capture" in out
    assert "note: forward: converter failed (" in out
    stages = [ln.split()[1] for ln in out.splitlines() if ln.startswith("timing: ")]
    assert {"load", "converter", "freeze", "lower", "total"} <= set(stages)


def test_cli_failure_keeps_every_full_reason_in_json_and_verbose(
    archive, spoiling, monkeypatch, invoke, tmp_path
):
    path, _ = archive

    def broken(*args, **kwargs):
        raise RuntimeError("re-capture broke: " + "z" * 400)

    monkeypatch.setattr(recover, "recapture", broken)
    args = ("convert", path, "--input-shape", "1x3x8x8", "-o", tmp_path / "out")
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["verdict"] == "error" and data["error"]["stage"] == "convert"
    assert [(a["step"], a["error"]) for a in data["attempts"]] == [
        ("converter", "AssertionError"),
        ("freeze + re-capture", "RuntimeError"),
    ]
    assert data["attempts"][0]["reason"] == f"AssertionError: {LONG}"
    verbose = invoke(*args, "--verbose")
    assert verbose.exit_code == 2
    assert (
        f"note: freeze + re-capture failed (RuntimeError): RuntimeError: re-capture broke: {'z' * 400}"
        in verbose.stderr
    )
    assert (
        verbose.stderr.strip()
        .splitlines()[-1]
        .startswith("error: convert: no recovery converted forward: converter: AssertionError; ")
    )


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scale > 1.0:
            return x * self.scale
        return x


@pytest.mark.parametrize("kind", ["traced", "scripted"])
def test_the_frozen_converter_is_tried_only_where_freezing_folds_a_branch(kind, monkeypatch):
    import torch._export.converter as converter

    seen = []

    class Failing:
        def __init__(self, ts, example) -> None:
            seen.append(ts)
            raise RuntimeError("converter failed")

    monkeypatch.setattr(converter, "TS2EPConverter", Failing)
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = (
            torch.jit.trace(Branchy().eval(), (x,))
            if kind == "traced"
            else torch.jit.script(Branchy().eval())
        )
    rec = recover.run_ladder(ts, "forward", ["forward"], (x,), lambda ep: None, None)
    assert rec.path == recover.RECAPTURE
    steps = [a.step for a in rec.attempts]
    # A trace records no branch: freezing it cannot change what the converter sees.
    assert steps == (["converter"] if kind == "traced" else ["converter", "converter (frozen)"])
    assert len(seen) == len(steps)
