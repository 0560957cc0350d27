"""Long runs show a progress bar on a terminal (stderr) and nothing in CI or pipes."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

SOURCE = "import torch\n\nm = torch.jit.script(f)\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for i in range(60):
        (tmp_path / f"m{i}.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def on_tty(command: str, cwd: Path, **env: str) -> bytes:
    """Run `command` under script(1): a pseudo-terminal, as a user's shell gives it."""
    if shutil.which("script") is None:
        pytest.skip("script(1) (util-linux) is not installed")
    full = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "FORCE_COLOR")}
    full.update(env)
    log = cwd.parent / f"{cwd.name}.typescript"
    # What a pseudo-terminal still held from an earlier run can reach the log before the
    # command starts: only what follows the marker is this command's.
    marker = f"command-starts-{uuid.uuid4().hex}"
    subprocess.run(
        ["script", "-q", "-e", "-c", f"echo {marker}; {command}", str(log)],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        timeout=120,
    )
    typescript = log.read_bytes()
    assert marker.encode() in typescript, typescript[-500:]
    return typescript.rsplit(marker.encode(), 1)[1]


def cli(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "migrate", *args))


def test_no_progress_bar_in_ci_and_one_on_a_terminal_on_stderr(tree):
    """One test, the CI run first: on this project's machines a new pseudo-terminal can show
    what an earlier one printed shortly before (the terminal run's progress bar in the CI
    run's log), so no run that prints a bar may come before the one that must not."""
    typescript = on_tty(cli("scan", ".", "-j", "1") + " > /dev/null", tree, CI="true")
    assert b"scanning" not in typescript

    out = tree / "report.json"
    typescript = on_tty(cli("scan", ".", "-j", "1", "--format", "json") + f" > {out}", tree)
    assert b"scanning" in typescript
    # The report itself stays clean JSON even though stderr is a terminal.
    assert b"scanning" not in out.read_bytes()
    assert out.read_text().lstrip().startswith("{")


def test_no_progress_bar_in_pipes(tree):
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "scan", ".", "-j", "1"],
        cwd=tree,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "CI"},
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr == b""
    assert b"scanning" not in proc.stdout
    assert b"\x1b[" not in proc.stdout
