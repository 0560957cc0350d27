"""`migrate apply` never loses a file: encodings, newlines and modes survive; files that do
not parse, rewrites that would not parse and uncommitted work are left alone."""

from __future__ import annotations

import codecs
import dataclasses
import os
import shutil
import stat
import subprocess

import pytest

from migrate.checks.base import Edit
from migrate.findings import Finding, Fix, FixKind
from migrate.fix.tidy import fix_source
from tests.test_apply_repo import digest, migrate

# The body uses torch, so the import stays (an import the rewrite leaves unused is dropped).
SCRIPTED = "import torch\n\n\n@torch.jit.unused\ndef helper(x):\n    return torch.relu(x)\n"
FIXED = "import torch\n\n\ndef helper(x):\n    return torch.relu(x)\n"


def test_crlf_bom_and_mode_are_kept(tmp_path):
    path = tmp_path / "model.py"
    path.write_bytes(codecs.BOM_UTF8 + SCRIPTED.replace("\n", "\r\n").encode())
    path.chmod(0o755)
    result = migrate("apply", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_bytes() == codecs.BOM_UTF8 + FIXED.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]  # no temp files left


def test_latin1_file_stays_latin1(tmp_path):
    path = tmp_path / "legacy.py"
    source = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + SCRIPTED
    path.write_bytes(source.encode("latin-1"))
    assert migrate("apply", str(path)).returncode == 0
    expected = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + FIXED
    assert path.read_bytes() == expected.encode("latin-1")


def test_a_file_that_does_not_parse_is_reported_and_untouched(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\n\n@torch.jit.unused\ndef f(:\n    pass\n")
    good = tmp_path / "good.py"
    good.write_text(SCRIPTED)
    before = broken.read_bytes()
    result = migrate("apply", str(tmp_path))
    assert result.returncode == 2
    assert "broken.py: cannot parse (line 4)" in result.stdout
    assert broken.read_bytes() == before
    assert good.read_text() == FIXED  # the rest of the tree is still migrated


def test_output_that_would_not_parse_is_never_produced():
    bad = Finding(
        "m.py",
        4,
        1,
        4,
        18,
        "MIG104",
        "torch.jit.unused",
        "test",
        FixKind.AUTO,
        autofix=Fix((Edit(27, 43, "@@@"),)),
    )
    result = fix_source("m.py", SCRIPTED, lambda text: [bad] if text == SCRIPTED else [])
    assert result.error is not None and "invalid code" in result.error
    assert not result.changed and result.fixed == SCRIPTED


def test_fix_that_breaks_syntax_is_skipped_by_apply(tmp_path, monkeypatch):
    from migrate.pipeline import apply as apply_mod
    from migrate.scan.engine import ScanOptions

    path = tmp_path / "m.py"
    path.write_text(SCRIPTED)
    real = apply_mod.fix_source

    def breaking(display, text, analyze, newline, findings=None, **kw):
        def broken(found):
            return [
                dataclasses.replace(f, autofix=Fix((Edit(0, 6, "def"),)))
                if f.rule == "MIG104"
                else f
                for f in found
            ]

        return real(
            display, text, lambda t: broken(analyze(t)), newline, findings=broken(findings), **kw
        )

    monkeypatch.setattr(apply_mod, "fix_source", breaking)
    result = apply_mod.run_apply([str(path)], ScanOptions(use_git=False), allow_dirty=True)
    assert path.read_text() == SCRIPTED
    assert len(result.errors) == 1 and "invalid code" in result.errors[0].message
    assert not result.written


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_uncommitted_files_are_refused_without_allow_dirty(tmp_path):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True)

    git("init", "-q")
    clean, dirty = tmp_path / "clean.py", tmp_path / "dirty.py"
    clean.write_text(SCRIPTED)
    dirty.write_text(SCRIPTED)
    git("add", ".")
    git("commit", "-q", "-m", "init")
    dirty.write_text(SCRIPTED + "\n# work in progress\n")
    before = dirty.read_bytes()

    result = migrate("apply", str(tmp_path))
    assert result.returncode == 2
    assert "dirty.py: has uncommitted changes; not touched" in result.stdout
    assert "--allow-dirty" in result.stdout
    assert dirty.read_bytes() == before
    assert clean.read_text() == FIXED

    again = migrate("apply", "--allow-dirty", str(tmp_path))
    assert again.returncode == 0, again.stdout + again.stderr
    assert dirty.read_text() == FIXED + "\n# work in progress\n"


def test_dry_run_on_a_git_tree_changes_nothing(tmp_path):
    (tmp_path / "a.py").write_text(SCRIPTED)
    before = digest(tmp_path)
    result = migrate("apply", "--dry-run", str(tmp_path))
    assert result.returncode == 1
    assert digest(tmp_path) == before
