"""`migrate verify --evidence FILE[#PATH:LINE]`: a capture's recorded call shapes become
verify's example shapes and dynamic-dim ranges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.record.verify_inputs import verify_inputs

ROOT = Path(__file__).resolve().parents[1]


def _site(path: str, line: int, calls: list[dict], api: str = "torch.jit.script") -> dict:
    return {
        "path": path, "line": line, "end_line": line, "digest": "0" * 16, "api": api,
        "count": 1, "captured": [], "examples": [], "calls": calls, "saved": [], "loaded": [],
        "saves_of": [],
    }  # fmt: skip


def _tensor(*shape: int, dtype: str = "float32") -> dict:
    return {"t": "tensor", "shape": list(shape), "dtype": dtype, "device": "cpu"}


def _file(tmp_path: Path, *sites: dict) -> str:
    path = tmp_path / "evidence.json"
    data = {"version": 1, "tool": "torchscript-migrate", "runs": [], "sites": list(sites)}
    path.write_text(json.dumps(data))
    return str(path)


CALL = {
    "args": [_tensor(2, 16), _tensor(3, dtype="int64")],
    "kwargs": {},
    "count": 5,
    "axes": [[[2, 5, 8], [16]], [[3]]],
}


def test_varied_axes_become_dynamic_dims(tmp_path):
    spec = _file(tmp_path, _site("pkg/serve.py", 12, [CALL]))
    found = verify_inputs(spec)
    assert (found.shapes, found.dynamic, found.site) == (
        ["8x16:float32", "3:int64"],
        ["0:0:2:8"],
        "pkg/serve.py:12",
    )
    # Evidence recorded without joint shapes: each recorded size of the varied axis, the
    # others at the example's (the example itself, 8, is its own sample).
    assert found.checked == [[[2, 16], [3]], [[5, 16], [3]]]
    assert found.note is None


def test_every_recorded_shape_is_checked_once(tmp_path):
    """Two axes varied together: the joint shapes the calls had (not the min/middle/max of
    each axis), each once, the example's own left out."""
    shapes = [[[2, 7]], [[4, 3]], [[2, 7]], [[4, 7]], [[3, 5]]]
    call = {"args": [_tensor(2, 7)], "kwargs": {}, "count": 5, "axes": [[[2, 3, 4], [3, 5, 7]]]}
    found = verify_inputs(_file(tmp_path, _site("a.py", 3, [{**call, "shapes": shapes}])))
    assert found.shapes == ["4x7:float32"]
    assert found.checked == [[[2, 7]], [[3, 5]], [[4, 3]]]


def test_very_many_recorded_shapes_are_sampled_with_a_note(tmp_path):
    from migrate.record.verify_inputs import MAX_CHECKED

    sizes = list(range(1, 101))
    call = {
        "args": [_tensor(1, 16)],
        "kwargs": {},
        "count": 100,
        "axes": [[sizes, [16]]],
        "shapes": [[[n, 16]] for n in sizes],
    }
    found = verify_inputs(_file(tmp_path, _site("a.py", 3, [call])))
    assert len(found.checked) == MAX_CHECKED
    assert found.checked[0] == [[1, 16]] and found.checked[-1] == [[99, 16]]  # 100: example
    assert found.note == (
        f"99 distinct shapes recorded: {MAX_CHECKED} checked, evenly spaced (smallest and "
        "largest included)"
    )


@pytest.mark.slow  # a verify process that exports and runs the model per recorded shape: ~15 s CPU
def test_cli_compares_on_each_recorded_shape(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "recnet.py").write_text(
        "import torch\n\n\ndef build():\n    return torch.nn.Linear(16, 4)\n"
    )
    call = {
        "args": [_tensor(2, 16)],
        "kwargs": {},
        "count": 4,
        "axes": [[[2, 3, 8], [16]]],
        "shapes": [[[2, 16]], [[3, 16]], [[8, 16]]],
    }
    spec = _file(tmp_path, _site("a.py", 3, [call]))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "verify", "recnet:build", "--evidence", spec]
        + ["--backend", "portable", "--samples", "0", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert [(s["name"], s["inputs"]) for s in report["samples"]] == [
        ("example", "(8x16:float32)"),
        ("recorded[2x16]", "(2x16:float32)"),
        ("recorded[3x16]", "(3x16:float32)"),  # recorded; not the range's middle (5)
    ]
    assert {r["samples"] for r in report["results"]} == {3}
    assert "inputs from a.py:3: 8x16:float32 0:0:2:8; and 2 recorded shapes" in run.stderr


def test_several_sites_need_a_name(tmp_path):
    spec = _file(tmp_path, _site("a.py", 3, [CALL]), _site("b.py", 9, [CALL], "torch.jit.load"))
    with pytest.raises(ValueError, match=r"several recorded captures .* \(a.py:3, b.py:9\)"):
        verify_inputs(spec)
    assert verify_inputs(spec + "#b.py:9").site == "b.py:9"
    with pytest.raises(ValueError, match="no recorded captures with calls match"):
        verify_inputs(spec + "#c.py:1")


def test_keyword_calls_are_refused(tmp_path):
    spec = _file(tmp_path, _site("a.py", 3, [{**CALL, "kwargs": {"mask": _tensor(2)}}]))
    with pytest.raises(ValueError, match="pass keywords or non-tensor arguments"):
        verify_inputs(spec)


def test_cli_reports_a_bad_evidence_site(tmp_path):
    pytest.importorskip("torch")
    # An importable callable (verify checks the target before it reads the evidence), so the
    # error is the evidence site's.
    (tmp_path / "recnet.py").write_text(
        "import torch\n\n\ndef build():\n    return torch.nn.Linear(16, 4)\n"
    )
    spec = _file(tmp_path, _site("a.py", 3, [CALL]))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "verify", "recnet:build", "--evidence", spec + "#z.py:1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stderr
    assert f"--evidence {spec}#z.py:1: no recorded captures with calls match (none)" in run.stderr
