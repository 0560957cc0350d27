"""The pre-commit hooks end to end: the real pre-commit installs them from a snapshot of
this working tree (base dependencies from PyPI) and runs them in a throwaway git project."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

BAD = "import torch\n\n\ndef capture(model, x):\n    return torch.jit.trace(model, x)\n"
CLEAN = "import torch\n\n\ndef run(model, x):\n    return model(x)\n"
FIXABLE = "import torch\n\n\ndef f(x):\n    return torch.jit.annotate(int, x) + 1\n"
# An unsafe fix (MIG110 may fold a guard another file's script still needs): never written.
UNSAFE = "import torch\n\n\ndef f(x):\n    if torch.jit.is_scripting():\n        return x\n    return x + 1\n"


def _git(*args: str, cwd: Path) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _snapshot(dest: Path) -> str:
    """pre-commit clones `repo:` at `rev`: commit the current working tree to a new repo."""
    names = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, names.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "snapshot", cwd=dest)
    return _git("rev-parse", "HEAD", cwd=dest)


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


def test_hook_definitions_keep_torch_out():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"migrate-scan", "migrate-fix"}
    assert hooks["migrate-scan"]["entry"] == "migrate scan"
    fix_entry = "migrate apply --allow-dirty --no-unsafe-fixes --pre-commit"
    assert hooks["migrate-fix"]["entry"] == fix_entry
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert "additional_dependencies" not in hook
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in deps if d.split(">")[0].split("=")[0].strip() in ("torch", "executorch")]


@pytest.mark.slow  # pre-commit builds the hook's environment with pip: ~20 s CPU, minutes
def test_precommit_hooks_end_to_end(tmp_path):
    if not _pypi_reachable():
        if os.environ.get("CI"):
            pytest.fail("PyPI is not reachable: the hook environment cannot be installed")
        pytest.skip("PyPI is not reachable")
    hooks_repo, project = tmp_path / "hooks", tmp_path / "project"
    hooks_repo.mkdir()
    project.mkdir()
    sha = _snapshot(hooks_repo)
    _git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks_repo}\n  rev: {sha}\n  hooks:\n"
        "  - id: migrate-scan\n  - id: migrate-fix\n",
        encoding="utf-8",
    )
    (project / "clean.py").write_text(CLEAN, encoding="utf-8")
    _git("add", "-A", cwd=project)
    _git("commit", "-q", "-m", "start", cwd=project)
    env = dict(
        os.environ,
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
    )

    def run(hook: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", hook, "--color", "never"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    # A clean staged file passes.
    (project / "clean.py").write_text(CLEAN + "\nVALUE = 1\n", encoding="utf-8")
    _git("add", "clean.py", cwd=project)
    proc = run("migrate-scan")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
    _git("commit", "-q", "-m", "clean change", cwd=project)

    # The hook env has the base dependencies and no torch.
    site = list((tmp_path / "pre-commit-home").glob("repo*/py_env-*/lib/python*/site-packages"))
    assert site, "pre-commit did not create a python environment"
    installed = {p.name.split("-")[0].lower() for p in site[0].glob("*.dist-info")}
    assert {"libcst", "typer", "rich", "pyyaml", "torchscript_migrate"} <= installed
    assert not installed & {"torch", "executorch"}

    # A staged torch.jit.trace fails, with the finding in the output.
    (project / "bad.py").write_text(BAD, encoding="utf-8")
    _git("add", "bad.py", cwd=project)
    proc = run("migrate-scan")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert "bad.py" in proc.stdout
    assert "5:12 MIG102" in proc.stdout

    # The fix hook rewrites a staged file and fails because it changed it.
    (project / "fixable.py").write_text(FIXABLE, encoding="utf-8")
    _git("reset", "-q", "bad.py", cwd=project)
    _git("add", "fixable.py", cwd=project)
    proc = run("migrate-fix")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "files were modified by this hook" in proc.stdout
    fixed = (project / "fixable.py").read_text(encoding="utf-8")
    assert "def f(x):\n    return x + 1\n" in fixed
    assert "torch.jit" not in fixed
    # Staged again, the fixed file passes both hooks.
    _git("add", "fixable.py", cwd=project)
    assert run("migrate-fix").returncode == 0
    assert run("migrate-scan").returncode == 0

    # An unsafe fix is never written by the hook, even when the project opts in to them.
    pyproject = project / "pyproject.toml"
    pyproject.write_text("[tool.migrate]\nunsafe-fixes = true\n", encoding="utf-8")
    (project / "unsafe.py").write_text(UNSAFE, encoding="utf-8")
    _git("add", "unsafe.py", "pyproject.toml", cwd=project)
    proc = run("migrate-fix")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (project / "unsafe.py").read_text(encoding="utf-8") == UNSAFE
    # Both hooks are configured: the fix hook says why it wrote nothing, the scan hook lists.
    assert "pass --unsafe-fixes to write them" in proc.stdout
    assert "left for review: the migrate-scan hook lists" in proc.stdout


# --------------------------------------------------------------------------- docs, local

PAGE = ROOT / "docs" / "pre-commit.md"


def local_config() -> str:
    """docs/pre-commit.md's copy-paste `repo: local` block, verbatim."""
    section = PAGE.read_text(encoding="utf-8")
    blocks = [b.split("\n", 1)[1] for b in section.split("```yaml")[1:]]
    return next(b.split("```", 1)[0] for b in blocks if "repo: local" in b)


def test_the_local_hooks_match_the_published_ones():
    published = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    (repo,) = yaml.safe_load(local_config())["repos"]
    assert repo["repo"] == "local"
    for hook in repo["hooks"]:
        assert hook["language"] == "system"
        for key in ("entry", "files", "types_or"):
            assert hook[key] == published[hook["id"]][key], (hook["id"], key)


def test_the_clone_form_names_a_commit_and_the_published_hooks():
    """docs/pre-commit.md's second block (`repo:` a clone, `rev:` a commit), the form
    test_precommit_hooks_end_to_end installs: not a placeholder URL or a tag that does not
    exist."""
    section = PAGE.read_text(encoding="utf-8")
    blocks = [b.split("\n", 1)[1].split("```", 1)[0] for b in section.split("```yaml")[1:]]
    (clone,) = [b for b in blocks if "repo: local" not in b and "repos:" in b]
    (repo,) = yaml.safe_load(clone)["repos"]
    assert "example.invalid" not in repo["repo"]
    assert re.fullmatch(r"[0-9a-f]{40}", str(repo["rev"])), repo["rev"]
    published = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for h in repo["hooks"]} == published


@pytest.fixture
def local_project(tmp_path):
    """A fresh git repository whose hooks run this checkout's `migrate` (`language: system`
    finds it on PATH, as a developer's `pip install -e` puts it there)."""
    bin_dir, project = tmp_path / "bin", tmp_path / "project"
    bin_dir.mkdir()
    project.mkdir()
    wrapper = bin_dir / "migrate"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m migrate "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(ROOT),
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        MIGRATE_CACHE_DIR=str(tmp_path / "cache"),
        GIT_CEILING_DIRECTORIES=str(tmp_path),
    )
    for key in ("SKIP", "NO_COLOR", "FORCE_COLOR"):
        env.pop(key, None)
    _git("init", "-q", cwd=project)
    (project / "clean.py").write_text(CLEAN, encoding="utf-8")

    def setup(config: str) -> None:
        (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
        _git("add", "-A", cwd=project)
        _git("commit", "-q", "-m", "start", cwd=project)

    def run() -> subprocess.CompletedProcess:
        # Every hook on the staged files, as `git commit` runs them; no network is needed.
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--color", "never"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    return project, setup, run


def _only(config: str, hook_id: str) -> str:
    doc = yaml.safe_load(config)
    doc["repos"][0]["hooks"] = [h for h in doc["repos"][0]["hooks"] if h["id"] == hook_id]
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.parametrize("hooks", ["both", "migrate-scan", "migrate-fix"])
def test_local_config_blocks_a_staged_trace_once(local_project, hooks):
    project, setup, run = local_project
    config = local_config()
    setup(config if hooks == "both" else _only(config, hooks))
    (project / "bad.py").write_text(BAD, encoding="utf-8")
    (project / "fixable.py").write_text(FIXABLE, encoding="utf-8")
    _git("add", "bad.py", "fixable.py", cwd=project)
    proc = run()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Failed" in out
    # The returned trace needs a person: listed exactly once, whichever hooks run.
    assert out.count("5:12 MIG102") == 1, out
    fixed = (project / "fixable.py").read_text(encoding="utf-8")
    if hooks == "migrate-scan":
        assert "5:12 MIG111" in out and "torch.jit.annotate" in fixed
        return
    assert "files were modified by this hook" in out
    assert "torch.jit" not in fixed
    assert "MIG111" not in out  # fixed, so no hook lists it
    if hooks == "both":
        assert "1 finding left for review: the migrate-scan hook lists it." in out
