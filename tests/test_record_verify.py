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
    assert verify_inputs(spec) == (
        ["8x16:float32", "3:int64"],
        ["0:0:2:8"],
        "pkg/serve.py:12",
    )


def test_several_sites_need_a_name(tmp_path):
    spec = _file(tmp_path, _site("a.py", 3, [CALL]), _site("b.py", 9, [CALL], "torch.jit.load"))
    with pytest.raises(ValueError, match=r"several recorded captures .* \(a.py:3, b.py:9\)"):
        verify_inputs(spec)
    assert verify_inputs(spec + "#b.py:9")[2] == "b.py:9"
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
