"""Helpers for the scan tests: run the CLI as a real subprocess or in-process, build trees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SCAN_FIXTURES = ROOT / "fixtures" / "scan"


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment without colour or CI switches, a private cache, and git stopped at
    tmp_path's parent (so a plain folder is never taken for part of an outer work tree)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("FORCE_COLOR", "NO_COLOR", "CI", "MIGRATE_CACHE_DIR", "COLUMNS")
    }
    env["MIGRATE_CACHE_DIR"] = str(tmp_path / ".scan-cache")
    env["GIT_CEILING_DIRECTORIES"] = str(tmp_path.parent)
    env.update(extra)
    return env


def run_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """`python -m migrate ARGS` in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        env=env if env is not None else clean_env(cwd),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def invoke(args: list[str], cwd: Path, tmp_path: Path | None = None) -> Run:
    """The same command through typer's CliRunner, in this process."""
    from migrate.cli.commands import app

    old = os.getcwd()
    os.chdir(cwd)
    try:
        runner = CliRunner()
        result = runner.invoke(app, args, env=clean_env(tmp_path or cwd), catch_exceptions=False)
    finally:
        os.chdir(old)
    return Run(result.exit_code, result.stdout, result.stderr)


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write {relative path: text (dedented) or bytes} under root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")
    return root


def copy_fixture(name: str, dest: Path) -> Path:
    shutil.copytree(SCAN_FIXTURES / name, dest, symlinks=True)
    return dest


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)},
    )


def key(f: dict) -> tuple:
    """What identifies a finding in the expected sets."""
    return (f["path"], f["line"], f["column"], f["rule"], f["symbol"])


def keys(findings) -> list[tuple]:
    return sorted(key(f if isinstance(f, dict) else f.to_dict()) for f in findings)


def chromium() -> str:
    """The headless browser the HTML report tests render with (CI installs it: .ci/run)."""
    import shutil

    import pytest

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (the test command installs it: see .ci/run)")
        pytest.skip("chromium is not installed")
    return browser


def jit_lines(root: Path) -> list[str]:
    """Every line of a tree's Python files that says `torch.jit`, with its file."""
    return [
        f"{path.relative_to(root)}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if "torch.jit" in line
    ]
