"""How long pre-commit takes to install the migrate hooks, and how big the environment is.

    python benchmarks/hook_install.py

Snapshots the current working tree into a temporary git repository (pre-commit clones a
repo at a commit), points a throwaway project at it, and times `pre-commit install-hooks`
in an empty PRE_COMMIT_HOME: a first install, as a new user gets it. Needs network access
to PyPI (pip's cache makes later runs faster; pass --no-cache-dir to pip via
PIP_NO_CACHE_DIR=1 for a cold figure).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str, cwd: Path) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def snapshot(dest: Path) -> str:
    """Copy the working tree (tracked + untracked, not ignored) into a new repo; its sha."""
    names = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, names.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "snapshot", cwd=dest)
    return git("rev-parse", "HEAD", cwd=dest)


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        hooks, project, home = base / "hooks", base / "project", base / "home"
        hooks.mkdir()
        project.mkdir()
        sha = snapshot(hooks)
        git("init", "-q", cwd=project)
        (project / ".pre-commit-config.yaml").write_text(
            f"repos:\n- repo: {hooks}\n  rev: {sha}\n  hooks:\n"
            "  - id: migrate-scan\n  - id: migrate-fix\n",
            encoding="utf-8",
        )
        env = dict(os.environ, PRE_COMMIT_HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("CI", None)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pre_commit", "install-hooks"],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
        )
        elapsed = time.perf_counter() - start
        envs = [p for p in home.glob("repo*/py_env-*") if p.is_dir()]
        env_size = sum(size_of(p) for p in envs)
        site = next(iter(envs[0].glob("lib/python*/site-packages")), None) if envs else None
        packages = sorted(p.name.split("-")[0] for p in (site.glob("*.dist-info") if site else []))
        print(f"install time: {elapsed:.1f} s (pre-commit install-hooks, empty PRE_COMMIT_HOME)")
        print(f"environment size: {env_size / 2**20:.1f} MiB ({len(envs)} env)")
        print(f"packages: {', '.join(packages)}")
        torch_like = [p for p in packages if p.lower() in ("torch", "executorch")]
        print(f"torch/executorch in the hook env: {'yes' if torch_like else 'no'}")


if __name__ == "__main__":
    main()
