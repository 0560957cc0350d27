"""The repository stays clean under its own ruff configuration, which also enforces that
torch and executorch are imported only under migrate/verify/ (TID251)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_check_is_clean():
    run = ruff("check", "migrate", "tests", "benchmarks")
    assert run.returncode == 0, run.stdout + run.stderr


def test_torch_import_outside_verify_is_banned(tmp_path):
    probe = tmp_path / "scan_module.py"
    probe.write_text("import torch\nfrom executorch.runtime import Runtime\n")
    run = ruff("check", "--config", str(ROOT / "pyproject.toml"), "--select", "TID251", str(probe))
    assert run.returncode == 1
    assert run.stdout.count("TID251") == 2, run.stdout


def test_ruff_format_is_clean():
    # the whole tree under the repository's own settings, as `ruff format --check .` sees it
    run = ruff("format", "--check", ".")
    assert run.returncode == 0, run.stdout + run.stderr
