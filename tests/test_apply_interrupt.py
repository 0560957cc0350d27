"""Ctrl-C during `migrate apply` leaves every file wholly old or wholly new, and no temp file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from migrate.pipeline.apply import run_apply
from migrate.scan.engine import ScanOptions
from tests.interrupts import AS_FROM_A_TERMINAL

# The body uses torch, so the import stays (an import the rewrite leaves unused is dropped).
BEFORE = "import torch\n\n\n@torch.jit.unused\ndef helper_{i}(x):\n    return torch.relu(x) + {i}\n"
AFTER = "import torch\n\n\ndef helper_{i}(x):\n    return torch.relu(x) + {i}\n"


def make_tree(root, n):
    root.mkdir()
    for i in range(n):
        (root / f"m{i:04d}.py").write_text(BEFORE.format(i=i))


def check_whole(root, n):
    """Each file is exactly its old or its new text; returns how many were rewritten."""
    new = 0
    for i in range(n):
        text = (root / f"m{i:04d}.py").read_text()
        assert text in (BEFORE.format(i=i), AFTER.format(i=i)), f"m{i:04d}.py is torn"
        new += text == AFTER.format(i=i)
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(".migrate-tmp")]
    assert leftovers == []
    return new


def test_interrupt_between_renames(tmp_path, monkeypatch):
    """KeyboardInterrupt raised by the 5th rename: earlier files new, the rest old."""
    root = tmp_path / "tree"
    make_tree(root, 12)
    real_replace = os.replace
    calls = []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 5:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        run_apply(
            [str(root)],
            ScanOptions(use_git=False, cache=False),
            allow_dirty=True,
            unsafe_fixes=True,
        )
    assert check_whole(root, 12) == 4


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_to_a_real_apply(tmp_path):
    """A real process interrupted at an arbitrary moment; whatever the moment, nothing torn."""
    n = 1500
    root = tmp_path / "tree"
    make_tree(root, n)
    env = {**os.environ, "MIGRATE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "migrate",
            "apply",
            "--jobs",
            "1",
            "--allow-dirty",
            "--unsafe-fixes",
            str(root),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **AS_FROM_A_TERMINAL,  # else a CI runner's ignored SIGINT lets it run to the end
    )
    # Wait until the rewriting has begun (the first file is new), then interrupt.
    first = root / "m0000.py"
    deadline = time.monotonic() + 600  # event-driven: only a hang waits this long
    while proc.poll() is None and time.monotonic() < deadline:
        if first.read_text() == AFTER.format(i=0):
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert b"Traceback" not in err
    rewritten = check_whole(root, n)
    if proc.returncode == 130:
        assert b"interrupted" in err
    else:  # it finished before the signal came
        assert rewritten == n
