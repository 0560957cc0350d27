"""MIG306: hard-coded CUDA 12.8 toolkit paths: `/usr/local/cuda-12.8`, `CUDA\\v12.8`."""

from __future__ import annotations

import re

from migrate.checks import _cuda
from migrate.checks.base import FileContext

POSIX = re.compile(
    r"(?<![\w.-])(?:/usr/local|/opt(?:/nvidia)?|/usr/lib)/cuda-(?P<ver>12\.8)(?![\w.]|\.\d)"
)
WINDOWS = re.compile(r"CUDA(?:\\\\|\\|/)+v(?P<ver>12\.8)(?![\w.]|\.\d)")


class CudaToolkitPath(_cuda.CudaTextCheck):
    code = "MIG306"
    prefilter = r"12\.8"
    kinds = _cuda.PIP_KINDS | {_cuda.PYTHON, _cuda.CMAKE}

    def scan(self, ctx: FileContext, code: str, kind: str) -> None:
        for pattern in (POSIX, WINDOWS):
            for m in pattern.finditer(code):
                path = m.group()
                new = path[: m.start("ver") - m.start()] + self.target
                self.report(
                    ctx,
                    m.start("ver"),
                    m.end("ver"),
                    f"path `{path}` is the CUDA 12.8 toolkit; use `{new}` (or the unversioned "
                    "`/usr/local/cuda` link)",
                    symbol="cuda-12.8 path",
                    replacement=self.target,
                )
