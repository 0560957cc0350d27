"""Errors and quiet-running helpers shared by the verify modules (no torch import)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator

#: Stages named in ``error: <stage>: <message>`` lines and in the JSON report.
STAGES = (
    "usage",
    "config",
    "load",
    "audit",
    "inputs",
    "branches",
    "convert",
    "export",
    "lower",
    "run",
    "output",
)


def install_command(extra: str) -> str:
    """How to add an extra: no release is published yet, so from a checkout."""
    return f"pip install -e '.[{extra}]' in a checkout of torchscript-migrate (docs/install.md)"


INSTALL_HINT = f"migrate verify needs torch and executorch: {install_command('verify')}"


class VerifyError(Exception):
    """A failure at a named stage; the CLI prints ``error: <stage>: <message>`` and exits 2."""

    def __init__(self, stage: str, message: str) -> None:
        if stage not in STAGES:  # pragma: no cover - programming error
            raise ValueError(f"unknown stage {stage!r}")
        self.stage = stage
        self.message = one_line(message)
        super().__init__(f"{stage}: {self.message}")


def one_line(text: object, limit: int = 300) -> str:
    """The first meaningful line of an exception text, trimmed."""
    s = str(text).strip()
    lines = [ln.strip() for ln in s.splitlines() if ln.strip()]
    first = lines[0] if lines else s
    if len(first) > limit:
        first = first[: limit - 3] + "..."
    return first


_TS_PREAMBLE = "The following operation failed in the TorchScript interpreter"


def describe(exc: BaseException) -> str:
    text = str(exc)
    if text.lstrip().startswith(_TS_PREAMBLE):
        # The TorchScript interpreter puts a traceback of the archive's code first; the
        # cause is its last "SomeError: ..." line.
        causes = [
            ln.strip()
            for ln in text.splitlines()
            if re.match(r"\s*[A-Za-z_.]*(Error|Exception): ", ln)
        ]
        if causes:
            return one_line(causes[-1])
    msg = one_line(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


class NativeLog:
    """Text that native code wrote to file descriptor 2 while captured."""

    def __init__(self) -> None:
        self.text = ""

    def last_line(self) -> str:
        lines = [ln.strip() for ln in self.text.splitlines() if ln.strip()]
        # Skip ExecuTorch/cpuinfo chatter; keep the most specific error line.
        useful = [ln for ln in lines if "cpuinfo" not in ln and "Failed to load" not in ln]
        return useful[-1] if useful else ""


@contextlib.contextmanager
def quiet(debug: bool = False) -> Iterator[NativeLog]:
    """Silence Python warnings, torch's export logging and native stderr chatter.

    Native libraries (ExecuTorch runtime, cpuinfo, torchao loaders) print to
    file descriptor 2 directly; that text is captured and made available so
    that an error message can quote the native reason.  With ``debug`` nothing
    is silenced.
    """
    log = NativeLog()
    if debug:
        yield log
        return
    # Python-level writes too (torch prints failing graphs to sys.stderr, which is not fd 2
    # when the caller replaced it).
    py_err = io.StringIO()
    try:
        with contextlib.redirect_stderr(py_err), _quiet_fd(log):
            yield log
    finally:
        log.text = py_err.getvalue() + log.text


@contextlib.contextmanager
def _quiet_fd(log: NativeLog) -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in ("torch", "executorch", "torchao", "root")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sys.stderr.flush()
            fd_ok = True
            saved = os.dup(2)
        except (OSError, ValueError):  # pragma: no cover - no real fd 2
            fd_ok = False
        if not fd_ok:  # pragma: no cover
            try:
                yield log
            finally:
                for lg, lv in zip(loggers, levels, strict=True):
                    lg.setLevel(lv)
            return
        with tempfile.TemporaryFile(mode="w+b") as tmp:
            os.dup2(tmp.fileno(), 2)
            try:
                yield log
            finally:
                try:
                    sys.stderr.flush()
                except (OSError, ValueError):  # pragma: no cover
                    pass
                os.dup2(saved, 2)
                os.close(saved)
                tmp.seek(0)
                log.text = tmp.read().decode("utf-8", "replace")
                for lg, lv in zip(loggers, levels, strict=True):
                    lg.setLevel(lv)
