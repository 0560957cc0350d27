"""A folder that the xdist workers of one test session share, and no other session sees.

A session-scoped fixture runs once per worker; work that costs a model export or a batch
of subprocesses is done by the first worker that needs it, under a lock, and read by the
others. The folder lives under this session's own temporary root (pytest-N), so a result
from an earlier session (older code) can never be read as this one's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This session's temporary root: an xdist worker's basetemp is <session root>/popen-gwN
    (the worker's name is also in the environment that pytest subprocesses inherit)."""
    base = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return base.parent if worker and base.name.endswith(worker) else base


@contextlib.contextmanager
def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """``<session root>/shared-NAME``, held under an exclusive lock while the block runs:
    the first worker in builds what the folder should hold, the others find it built."""
    root = session_root(tmp_path_factory) / f"shared-{name}"
    root.mkdir(exist_ok=True)
    with open(root.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield root
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
