"""Rungs chosen by the error class, each saying why it was chosen.

- traced archives whose sizes become unbacked symbols (traced Swin, MobileViT): the sizes
  the trace read are fixed to the example's in the TorchScript graph before conversion;
- scripted archives that hit the converter's ``input_values.size() ==
  param_count_list.size()`` assert (scripted ViT/DeiT: ``forward`` declares arguments with
  defaults beyond the example's): straight to freeze + re-capture (a frozen converter fails
  the same way), or, when freezing fails, the unfrozen archive under non-strict export.

The models reproduce the failures in a few layers; no lowering (``lower_once=None``:
the ladder stops at the first program that matches the archive), so each runs in seconds.
"""

from __future__ import annotations

import json
import warnings
from typing import Optional

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from migrate.verify import VerifyError, recapture, recover, specialisation  # noqa: E402
from migrate.verify.convert import Archive  # noqa: E402
from migrate.verify.convert_flow import convert_error_json  # noqa: E402
from migrate.verify.errors import one_line  # noqa: E402

pytestmark = pytest.mark.verify


class Windows(nn.Module):
    """Swin's window partition: pad to whole windows, read the padded size, attend, crop."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        ws = 2
        pad = (ws - h % ws) % ws
        x = F.pad(x, (0, 0, 0, 0, 0, pad))
        _, hp, _, _ = x.shape  # the size of a padded tensor: a second-hand scalar
        x = x.view(b, hp // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = self.proj(x.reshape(-1, ws * ws, c))
        x = x.view(b, hp // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(b, hp, w, c)[:, :h].contiguous()


class Masked(nn.Module):
    """timm's ViT in small: ``forward`` takes a mask and a flag with defaults."""

    def __init__(self) -> None:
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, 4))
        self.proj = nn.Linear(4, 3)

    def forward(
        self,
        x: torch.Tensor,
        mask: Optional[torch.Tensor] = None,  # noqa: UP045 (TorchScript reads it)
        causal: bool = False,
    ) -> torch.Tensor:
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1)
        if mask is not None:
            x = x * mask
        if causal:
            x = x.flip(1)
        return self.proj(x).mean(1)


def _ladder(ts, example):
    """The ladder up to the first program matching the archive on ``example``."""
    ref = ts(*example)

    def check(ep):
        out = ep.module()(*example)
        return None if torch.allclose(out, ref, atol=1e-5) else "differs"

    return recover.run_ladder(ts, "forward", ["forward"], example, check, None, archive=Archive(ts))


def _traced_windows():
    torch.manual_seed(0)
    x = torch.randn(1, 5, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(Windows().eval(), (x,), check_trace=False), x


def _scripted_masked():
    torch.manual_seed(0)
    return torch.jit.script(Masked().eval()), torch.randn(1, 5, 4)


def _listed(rec_or_err):
    doc = rec_or_err.to_json() if hasattr(rec_or_err, "to_json") else convert_error_json(rec_or_err)
    json.dumps(doc)  # the JSON of every tried rung serialises
    attempts = doc["recovery"][0]["attempts"] if "recovery" in doc else doc["attempts"]
    for a in attempts:
        assert a["line"] == one_line(a["reason"]) and "\n" not in a["line"]
    return doc, attempts


def test_unbacked_sizes_of_a_trace_are_fixed_before_conversion():
    ts, x = _traced_windows()
    rec = _ladder(ts, (x,))
    assert rec.path == recover.CONVERTER_SIZES
    assert "unbacked" in rec.why
    # No size is read back at run time any more (what lowering could not guard on).
    assert specialisation.scalar_nodes(rec.ep.module()) == []
    assert any("size read(s) of the trace fixed" in s for s in rec.specialised)
    other = torch.randn(1, 5, 4, 4)
    torch.testing.assert_close(rec.ep.module()(other), ts(other))
    doc, attempts = _listed(rec)
    # The cheaper FX specialisation was tried first and refused, with its one-line reason.
    assert [a["step"] for a in attempts] == [recover.CONVERTER_SPEC]
    assert attempts[0]["error"] == "refused" and "reads another scalar" in attempts[0]["line"]
    assert doc["why"] == rec.why


def test_sizes_rung_refuses_dimensions_declared_dynamic():
    ts, x = _traced_windows()
    fresh = Archive(ts).fresh()
    with pytest.raises(specialisation.NotShapeDerived, match="--dynamic-dim"):
        specialisation.specialise_sizes(fresh, (x,), ({1: torch.export.Dim("h")},))


def test_parameter_count_assert_goes_straight_to_recapture_and_says_why():
    ts, x = _scripted_masked()
    rec = _ladder(ts, (x,))
    assert rec.path == recover.RECAPTURE
    assert "parameter-count assert" in rec.why and "mask, causal" in rec.why
    assert "mask, causal left at their defaults" in rec.specialised
    torch.testing.assert_close(rec.ep.module()(x), ts(x))
    _, attempts = _listed(rec)
    # The frozen converter would fail on the same assert: it is not tried.
    assert [a["step"] for a in attempts] == ["converter"]
    assert "param_count_list.size()" in attempts[0]["line"]


def test_unfrozen_recapture_with_parameters_as_buffers_when_freezing_fails(monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("freeze failed")

    monkeypatch.setattr(recover, "freeze", refuse)
    ts, x = _scripted_masked()
    rec = _ladder(ts, (x,))
    assert rec.path == recover.RECAPTURE_BUFFERS and "freezing failed" in rec.why
    torch.testing.assert_close(rec.ep.module()(x), ts(x))
    # The archive's own parameters are untouched (the re-capture used a fresh load).
    assert all(p.requires_grad for p in ts.parameters())
    _, attempts = _listed(rec)
    assert [(a["step"], a["error"]) for a in attempts] == [
        ("converter", "RuntimeError"),
        (recover.RECAPTURE, "RuntimeError"),
    ]
    assert "parameter-count assert" in attempts[1]["why"]


def test_a_failed_ladder_lists_every_rung_with_its_one_line_error(monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("refused\nsecond line")

    monkeypatch.setattr(recover, "freeze", refuse)
    monkeypatch.setattr(recover, "recapture_unfrozen", refuse)
    ts, x = _scripted_masked()
    with pytest.raises(VerifyError) as info:
        _ladder(ts, (x,))
    _, attempts = _listed(info.value)
    assert [a["step"] for a in attempts] == [
        "converter",
        recover.RECAPTURE,
        recover.RECAPTURE_BUFFERS,
    ]
    assert [a["line"] for a in attempts[1:]] == ["RuntimeError: refused"] * 2
    assert all(a["why"] for a in attempts[1:])


@pytest.mark.parametrize("unfrozen", [False, True])
def test_recapture_traces_the_plain_interpreter(monkeypatch, unfrozen):
    """Scripted Swin (timm swin_tiny at 64x64) failed every rung: the converter on its
    ``prim::If``s, and the re-capture because TorchScript's optimizing executor compared
    the frozen module's constants with ``aten::equal`` under export's fake tensors
    (``DataDependentOutputException``; how often it compares depends on the constants'
    hashes, so a small model shows it only now and then). Both re-captures trace the
    plain interpreter, and leave the executor's setting as it was."""
    seen = []
    export = torch.export.export

    def spy(*args, **kwargs):
        seen.append(torch._C._get_graph_executor_optimize())
        return export(*args, **kwargs)

    monkeypatch.setattr(torch.export, "export", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        archive = Archive(torch.jit.script(nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval()))
    x = torch.randn(2, 3)
    if unfrozen:
        ep = recapture.recapture_unfrozen(archive.fresh(), "forward", (x,), None)
    else:
        frozen = recapture.freeze(archive.fresh(), ["forward"], copy_first=False)
        ep = recapture.recapture(frozen, "forward", (x,), None)
    assert seen == [False] and torch._C._get_graph_executor_optimize()
    with torch.no_grad():
        assert torch.allclose(ep.module()(x), archive.fresh()(x))
