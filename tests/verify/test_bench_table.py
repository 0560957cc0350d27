"""Issue 32: the convert-vs-bare benchmark renders the docs/performance.md table from its --json rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "convert_vs_bare.py"

pytestmark = pytest.mark.verify


def _way(ok, seconds, cpu, **kw):
    return {"ok": ok, "seconds": seconds, "cpu": cpu, **kw}


def test_table_from_json_prints_the_rows_and_the_median_ratios(tmp_path):
    rows = [
        {"archive": "a (traced)", "bare": _way(True, 10.0, 8.0, path="converter"),
         "tool": _way(True, 12.0, 8.8, path="converter / direct")},
        {"archive": "b (scripted)", "bare": _way(True, 20.0, 10.0, path="converter"),
         "tool": _way(True, 22.0, 10.4, path="converter / direct")},
        {"archive": "c (scripted)",
         "bare": _way(False, 1.0, 1.0, error="convert: RuntimeError: TS2EPConverter failed"),
         "tool": _way(True, 30.0, 20.0, path="freeze + re-capture / direct")},
        {"archive": "d (traced)", "bare": {"ok": False, "seconds": None, "error": "timed out (600 s)"},
         "tool": _way(False, 5.0, 4.0, error="convert: no recovery converted forward")},
    ]  # fmt: skip
    src = tmp_path / "rows.json"
    src.write_text(json.dumps(rows))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--table-from", str(src)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| archive | bare | tool | ratio (wall / CPU) |")
    assert (
        "| a (traced) | 10.0 s (8.0 s CPU) ok | 12.0 s (8.8 s CPU) ok | 1.20 / 1.10 |" in lines[2]
    )
    assert "fails (`RuntimeError`)" in lines[4] and "freeze + re-capture / direct" in lines[4]
    assert "| d (traced) | timed out (600 s) |" in lines[5]
    assert "bare converts 2, the tool 3; the tool only: 1; bare only: 0" in proc.stdout
    assert "median ratio 1.15x wall, 1.07x CPU" in proc.stdout  # (1.2, 1.1) and (1.1, 1.04)


def test_table_from_a_missing_file_is_one_clear_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--table-from", str(tmp_path / "none.json")],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert proc.returncode == 2
    assert f"--table-from {tmp_path / 'none.json'}: cannot read it" in proc.stderr.splitlines()[-1]
