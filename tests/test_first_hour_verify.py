"""verify's report: the tolerances each result was judged by, in the table and the
JSON, and a found mismatch stays the verdict when another candidate could not be lowered."""

from __future__ import annotations

import io
import json

import pytest

pytest.importorskip("torch")

from rich.console import Console  # noqa: E402

from migrate.verify.compare import LeafResult  # noqa: E402
from migrate.verify.report import render_json, render_text  # noqa: E402
from migrate.verify.results import Cell, Report  # noqa: E402

LOWER_ERROR = {"stage": "lower", "message": "to_edge refused the program: it differs"}


def _leaf(max_abs: float, rtol: float, atol: float) -> LeafResult:
    passed = max_abs <= atol
    return LeafResult("output", "torch.float32", [2, 8], passed, max_abs, max_abs, [0, 4],
                      rtol, atol)  # fmt: skip


def _report(cells: list[Cell]) -> Report:
    return Report(
        target="model.pt", target_kind="archive", reference="model.pt", devices=["cpu"],
        samples=[{"name": "example"}], candidates=[], cells=cells, artifacts={}, errors=[],
        notes=["the TorchScript reference is not deterministic (two runs on the example "
               "differ by 1.61); is the model in training mode (dropout)?"],
        seed=0, bench=False,
    )  # fmt: skip


def _cell(name: str, status: str, leaf: LeafResult | None = None, error=None) -> Cell:
    worst = {"sample": "example", "leaf": "output", "index": [0, 4]} if leaf else None
    return Cell("cpu", name, name, status, samples=1, max_abs=leaf.max_abs if leaf else 0.0,
                max_rel=leaf.max_rel if leaf else 0.0, worst=worst,
                leaves=[leaf] if leaf else [], error=error)  # fmt: skip


def _text(report: Report) -> str:
    buffer = io.StringIO()
    render_text(report, Console(file=buffer, width=200, color_system=None))
    return buffer.getvalue()


def test_tolerances_are_in_the_table_and_the_json():
    report = _report(
        [
            _cell("exported", "pass", _leaf(9.28e-4, 1.3e-6, 1e-3)),
            _cell("pte", "pass", _leaf(2e-6, 1e-5, 3e-5)),
        ]
    )
    text = _text(report)
    header = next(line for line in text.splitlines() if "max rel" in line)
    assert "rtol" in header and "atol" in header
    row = next(line for line in text.splitlines() if " pte " in line)
    assert "1e-05" in row and "3e-05" in row
    results = json.loads(render_json(report))["results"]
    assert [(r["rtol"], r["atol"]) for r in results] == [(1.3e-6, 1e-3), (1e-5, 3e-5)]


def test_a_mismatch_stays_the_verdict_when_lowering_failed():
    report = _report(
        [
            _cell("exported", "fail", _leaf(3.45, 1.3e-6, 1e-5)),
            _cell("pte", "error", error=LOWER_ERROR),
        ]
    )
    assert report.exit_code == 1 and report.verdict == "mismatch"
    text = _text(report)
    assert "verdict: MISMATCH" in text
    assert f"note: pte on cpu not checked: lower: {LOWER_ERROR['message']}" in text
    assert json.loads(render_json(report))["exit_code"] == 1


def test_an_error_alone_is_still_exit_2():
    report = _report([_cell("pte", "error", error=LOWER_ERROR)])
    assert report.exit_code == 2
    assert "not checked" not in _text(report)
