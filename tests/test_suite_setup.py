"""The suite's own setup: the `slow` marker's default, CI's command, the shared folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.scan_support import clean_env

ROOT = Path(__file__).resolve().parent.parent


def _pytest(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """pytest on cwd's test files with this suite's conftest (its options and hooks)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest"]
        + list(args),
        cwd=cwd,
        env={
            **{k: v for k, v in clean_env(cwd).items() if not k.startswith("PYTEST_")},
            "PYTHONPATH": str(ROOT),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outcome(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout.strip().splitlines()[-1]


def test_slow_tests_run_only_with_slow_or_a_marker_expression(tmp_path):
    (tmp_path / "test_two.py").write_text(
        "import pytest\n\n\n@pytest.mark.slow\ndef test_long():\n    pass\n\n\n"
        "def test_short():\n    pass\n",
        encoding="utf-8",
    )
    default = _pytest(tmp_path, "test_two.py")
    assert default.returncode == 0, default.stdout + default.stderr
    assert re.match(r"1 passed, 1 deselected", _outcome(default)), default.stdout
    full = _pytest(tmp_path, "--slow", "test_two.py")
    assert re.match(r"2 passed", _outcome(full)), full.stdout
    only = _pytest(tmp_path, "-m", "slow", "--collect-only", "test_two.py")
    assert "test_two.py::test_long" in only.stdout and "test_short" not in only.stdout


def test_ci_runs_the_readme_test_command_with_the_slow_tests():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("this is exactly what CI runs, `.ci/run`", 1)[1].split("```bash\n", 1)[1]
    command = block.split("\n```", 1)[0].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == command
    assert command.endswith("python -m pytest -n 2 -q --slow"), command


def test_a_shared_folder_is_new_in_each_session(tmp_path):
    """Two sessions in a row (no xdist): the second never finds what the first built, even
    when started from an xdist worker (whose name the environment passes on)."""
    (tmp_path / "test_build.py").write_text(
        "from tests.shared_dir import shared_folder\n\n\n"
        "def test_build(tmp_path_factory):\n"
        "    with shared_folder(tmp_path_factory, 'built') as root:\n"
        "        assert not (root / 'done').exists(), 'left by an earlier session'\n"
        "        (root / 'done').write_text('1')\n",
        encoding="utf-8",
    )
    for _ in range(2):
        proc = _pytest(tmp_path, "test_build.py", PYTEST_XDIST_WORKER="gw0")
        assert proc.returncode == 0, proc.stdout + proc.stderr
