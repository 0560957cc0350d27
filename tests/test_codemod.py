"""The LibCST codemod entry point (migrate/codemod.py), run by LibCST's own command line, writes
what `migrate apply` writes: on copies of sample repositories, with and without an intent,
every file of the two trees is compared byte for byte.

LibCST visits Python files only; the codemod names the other files of the plan (requirements,
Dockerfiles, CI files) and the `migrate apply` that writes them, and after that command the
whole tree is apply's."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scan_support import clean_env, run_cli

ROOT = Path(__file__).resolve().parent.parent
REPOS = ROOT / "fixtures" / "repos"
CASES = [
    pytest.param("sample/before", ["--unsafe-fixes"], id="sample"),
    pytest.param("intent_lib", ["--intent", "drop", "--unsafe-fixes"], id="intent_lib-drop"),
    pytest.param("intent_lib", [], id="intent_lib-safe-only"),
]
FOLLOW_UP = re.compile(r"`(migrate apply --select [^`]+)` writes them")


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.name != ".libcst.codemod.yaml"
    }


def _libcst(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "libcst.tool", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _configure(tree: Path, env: dict[str, str]) -> None:
    """What a user does once: LibCST's `initialize`, then `migrate` under `modules`."""
    assert _libcst(["initialize", "."], tree, env).returncode == 0
    config = tree / ".libcst.codemod.yaml"
    text = config.read_text(encoding="utf-8")
    assert "- 'libcst.codemod.commands'" in text
    config.write_text(text.replace("- 'libcst.codemod.commands'", "- 'migrate'"), "utf-8")


@pytest.mark.parametrize("repo, flags", CASES)
def test_codemod_writes_what_apply_writes(tmp_path, repo, flags):
    env = clean_env(tmp_path)
    applied, codemodded = tmp_path / "applied", tmp_path / "codemodded"
    shutil.copytree(REPOS / repo, applied)
    shutil.copytree(REPOS / repo, codemodded)
    before = _files(codemodded)

    run = run_cli(["apply", "--allow-dirty", *flags, "."], applied, env)
    assert run.code in (0, 1), run.stdout + run.stderr
    _configure(codemodded, env)
    # Two workers: the plan is computed once for the run and shared.
    args = ["codemod", "codemod.TorchScriptToExport", "--no-format", "--hide-progress", "-j", "2"]
    proc = _libcst([*args, *flags, "."], codemodded, env)
    assert proc.returncode == 0, proc.stderr

    apply_tree, codemod_tree = _files(applied), _files(codemodded)
    assert apply_tree != before  # the comparison is about real edits
    python = [p for p in before if p.endswith(".py")]
    assert [p for p in python if codemod_tree[p] != apply_tree[p]] == []
    others = sorted(p for p in before if not p.endswith(".py") and apply_tree[p] != before[p])
    assert all(codemod_tree[p] == before[p] for p in others)  # LibCST visits Python only

    follow_up = FOLLOW_UP.findall(proc.stderr)
    assert len(follow_up) == (1 if others else 0), proc.stderr
    if others:
        assert all(p in proc.stderr for p in others)
        run = run_cli(follow_up[0].split()[1:], codemodded, env)
        assert run.code in (0, 1), run.stdout + run.stderr
    assert _files(codemodded) == apply_tree
    plans = list((tmp_path / ".scan-cache").rglob("codemod-plan-*.json"))
    assert len(plans) == 1, plans


def test_stdin_and_files_outside_the_root_are_left_alone(tmp_path):
    env = clean_env(tmp_path)
    tree = tmp_path / "tree"
    shutil.copytree(REPOS / "sample" / "before", tree)
    _configure(tree, env)
    outside = tmp_path / "outside.py"
    outside.write_text("import torch\n\ntorch.jit.annotate(int, 1)\n", encoding="utf-8")
    args = ["codemod", "codemod.TorchScriptToExport", "--no-format", "--hide-progress"]
    proc = _libcst([*args, str(outside)], tree, env)
    assert "outside the repository the plan covers" in proc.stderr, proc.stderr
    assert outside.read_text(encoding="utf-8").startswith("import torch\n\ntorch.jit")
    proc = subprocess.run(
        [sys.executable, "-m", "libcst.tool", *args, "-"],
        cwd=tree,
        env=env,
        input="import torch\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "give paths, not stdin" in proc.stderr, proc.stderr
