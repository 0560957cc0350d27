"""Hostile trees and bad input (issue 15): nothing the scanned repository configures runs,
nothing is lost or left behind, and every bad input is one line with the right exit code."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from migrate.pipeline.apply import run_apply
from migrate.report.apply_text import unprotected_note
from migrate.scan.engine import ScanOptions
from tests.scan_support import clean_env, run_cli

SCRIPTED = "import torch\n\n\n@torch.jit.unused\ndef helper(x):\n    return x\n"
# The decorator was torch's only use here: the rewrite drops the import it left unused.
FIXED = "def helper(x):\n    return x\n"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks and signals")


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root, links as links (os.lstat/readlink), files by content and mode."""
    entries: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                entries[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                entries[rel] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                entries[rel] = ("file", digest, stat.S_IMODE(info.st_mode))
    return entries


def changed(before: dict[str, tuple], after: dict[str, tuple]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def outside_env(tmp_path: Path) -> dict[str, str]:
    """clean_env with the scan cache beside tmp_path, so snapshots of tmp_path see no cache."""
    return clean_env(tmp_path.parent / f"{tmp_path.name}-env")


def cli(args: list[str], cwd: Path, tmp_path: Path):
    """The CLI in a fresh interpreter."""
    return run_cli(args, cwd, outside_env(tmp_path))


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


def no_traceback(run) -> None:
    assert "Traceback" not in run.stdout + run.stderr


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_CEILING_DIRECTORIES": str(cwd.parent),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


# --------------------------------------------------------------------------- security


@needs_git
@posix
def test_repository_git_config_never_runs_a_command(tmp_path):
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    hook.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(SCRIPTED)
    (repo / "other.py").write_text("x = 1\n")
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    for key, value in {
        "core.fsmonitor": str(hook),
        "core.hooksPath": str(tmp_path),
        "core.pager": str(hook),
        "core.sshCommand": str(hook),
        "diff.external": str(hook),
        "filter.evil.clean": str(hook),
        "filter.evil.smudge": str(hook),
        "filter.evil.process": str(hook),
        "filter.evil.required": "true",
        "diff.evil.textconv": str(hook),
    }.items():
        git(repo, "config", key, value)
    # A changed mtime makes status hash the file, through the clean filter if allowed.
    os.utime(repo / "model.py", (time.time() + 5, time.time() + 5))
    os.utime(repo / "other.py", (time.time() + 5, time.time() + 5))

    scan = cli(["scan", "."], repo, tmp_path)
    assert scan.code == 1, scan.stdout + scan.stderr
    dry = cli(["apply", "--dry-run", "."], repo, tmp_path)
    assert dry.code == 1 and "+++ b/model.py" in dry.stdout
    before = snapshot(repo)
    applied = cli(["apply", "."], repo, tmp_path)
    assert applied.code == 0, applied.stdout + applied.stderr
    assert (repo / "model.py").read_text() == FIXED
    assert changed(before, snapshot(repo)) == {"model.py"}
    for run in (scan, dry, applied):
        no_traceback(run)
    assert not marker.exists(), marker.read_text()

    # The trap is real: plain git in that repository runs the hook.
    subprocess.run(["git", "status"], cwd=repo, capture_output=True)
    assert marker.exists()


# --------------------------------------------------------------------------- data safety


@posix
def test_symlinks_are_never_replaced(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(SCRIPTED)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "real.py").write_text(SCRIPTED)
    (tree / "alias.py").symlink_to("real.py")
    (tree / "far.py").symlink_to(outside)
    before = snapshot(tmp_path)

    run = cli(["apply", "--allow-dirty", "tree"], tmp_path, tmp_path)
    no_traceback(run)
    # far.py points out of the tree: not even read (docs/security.md), said in one line.
    assert run.code == 0, run.stdout + run.stderr
    real = os.path.realpath(outside)
    lines = run.stderr.splitlines()
    assert lines[0] == f"tree/far.py: symlink to {real}, outside the tree; skipped"
    # And the one line a write outside version control ends with (docs/apply.md).
    assert lines[1:] == [unprotected_note([str(tree.resolve())], 1)]
    assert "Fixed 1 finding in 1 file." in run.stdout
    assert (tree / "real.py").read_text() == FIXED
    after = snapshot(tmp_path)
    assert changed(before, after) == {"tree/real.py"}
    assert after["tree/alias.py"] == ("link", "real.py")
    assert outside.read_text() == SCRIPTED


def test_out_inside_the_tree_is_refused(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(SCRIPTED)
    before = snapshot(tmp_path)
    run = cli(["apply", "src", "--out", "src/migrated"], tmp_path, tmp_path)
    assert run.code == 2
    assert error_lines(run.stderr) == [
        "error: --out src/migrated: inside the folder being migrated (src); "
        "choose a folder outside it"
    ]
    no_traceback(run)
    assert changed(before, snapshot(tmp_path)) == set()


def test_out_naming_a_file_is_one_line(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(SCRIPTED)
    before = snapshot(tmp_path)
    run = cli(["apply", "src", "--out", "src/m.py"], tmp_path, tmp_path)
    assert run.code == 2
    assert run.stderr.strip() == "error: --out src/m.py: is a file, not a folder"
    assert changed(before, snapshot(tmp_path)) == set()


def test_out_with_two_inputs_of_the_same_name_is_refused(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side / "src").mkdir(parents=True)
        (tmp_path / side / "src" / "m.py").write_text(SCRIPTED)
    before = snapshot(tmp_path)
    run = cli(["apply", "a/src", "b/src", "--out", "out"], tmp_path, tmp_path)
    assert run.code == 2
    assert error_lines(run.stderr) == [
        "error: --out out: a/src and b/src would both be copied to out/src; "
        "migrate them one at a time or name their common folder"
    ]
    assert changed(before, snapshot(tmp_path)) == set()  # no out/ either


def test_out_with_a_missing_input_copies_the_rest(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(SCRIPTED)
    before = snapshot(tmp_path)
    run = cli(["apply", "nothere", "src", "--out", "out"], tmp_path, tmp_path)
    assert run.code == 2
    no_traceback(run)
    assert error_lines(run.stdout) == ["error: nothere: no such file or directory"]
    assert changed(before, snapshot(tmp_path)) == {"out", "out/src", "out/src/m.py"}
    assert (tmp_path / "out" / "src" / "m.py").read_text() == FIXED


def test_dry_run_with_out_writes_nothing(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(SCRIPTED)
    before = snapshot(tmp_path)
    run = cli(["apply", "--dry-run", "src", "--out", "out"], tmp_path, tmp_path)
    assert run.code == 1, run.stdout + run.stderr
    assert "+++ b/src/m.py" in run.stdout
    assert changed(before, snapshot(tmp_path)) == set()


@needs_git
def test_ignored_files_named_on_the_command_line_need_allow_dirty(tmp_path):
    repo = tmp_path / "repo"
    (repo / "gen").mkdir(parents=True)
    (repo / ".gitignore").write_text("gen/\nlocal.py\n")
    (repo / "tracked.py").write_text("x = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    (repo / "gen" / "m.py").write_text(SCRIPTED)
    (repo / "local.py").write_text(SCRIPTED)
    before = snapshot(repo)

    run = cli(["apply", "gen", "local.py"], repo, tmp_path)
    assert run.code == 2
    no_traceback(run)
    assert error_lines(run.stdout) == [
        f"error: {name}: is ignored by git; not touched (commit first or pass --allow-dirty)"
        for name in ("gen/m.py", "local.py")
    ]
    assert changed(before, snapshot(repo)) == set()

    again = cli(["apply", "--allow-dirty", "gen", "local.py"], repo, tmp_path)
    assert again.code == 0, again.stdout + again.stderr
    assert changed(before, snapshot(repo)) == {"gen/m.py", "local.py"}


@needs_git
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_work_tree_git_will_not_read_is_not_overwritten(tmp_path):
    """git refuses a repository owned by someone else (safe.directory); we do not widen
    that, so apply cannot know the file is committed and leaves it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text(SCRIPTED)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    for dirpath, dirnames, filenames in os.walk(repo):
        for name in [".", *dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), 65534, 65534, follow_symlinks=False)
    before = snapshot(repo)
    run = cli(["apply", "m.py"], repo, tmp_path)
    assert run.code == 2
    assert error_lines(run.stdout) == [
        "error: m.py: git could not say whether it has uncommitted changes; not touched "
        "(commit first or pass --allow-dirty)"
    ]
    assert changed(before, snapshot(repo)) == set()


@posix
def test_a_symlink_loop_on_the_command_line_is_one_line_and_the_rest_is_migrated(tmp_path):
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "good.py").write_text(SCRIPTED)
    before = snapshot(tmp_path)
    run = cli(["apply", "--allow-dirty", "loop1", "good.py"], tmp_path, tmp_path)
    assert run.code == 2
    no_traceback(run)
    assert error_lines(run.stdout) == ["error: loop1: too many levels of symbolic links"]
    assert changed(before, snapshot(tmp_path)) == {"good.py"}
    assert (tmp_path / "good.py").read_text() == FIXED


def test_an_unwritable_folder_is_one_error_and_its_siblings_are_migrated(tmp_path, monkeypatch):
    # chmod cannot stop root, so the refusal is the one mkstemp raises in such a folder.
    for folder in ("a", "locked", "z"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(SCRIPTED)
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if Path(kwargs["dir"]).name == "locked":
            raise PermissionError(13, "Permission denied", kwargs["dir"])
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    before = snapshot(tmp_path)
    result = run_apply(
        [str(tmp_path)], ScanOptions(use_git=False, cache=False, jobs=1), allow_dirty=True
    )
    assert [(e.path.rsplit("/", 2)[-2:], e.message) for e in result.errors] == [
        (["locked", "m.py"], "cannot write: permission denied")
    ]
    assert changed(before, snapshot(tmp_path)) == {"a/m.py", "z/m.py"}
    assert len(result.written) == 2


@posix
def test_sigterm_leaves_no_temp_files(tmp_path):
    from tests.test_apply_interrupt import AFTER, check_whole, make_tree

    n = 600
    root = tmp_path / "tree"
    make_tree(root, n)
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "apply", "--jobs", "1", "--allow-dirty", str(root)],
        env=outside_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = root / "m0000.py"
    deadline = time.monotonic() + 600  # event-driven: only a hang waits this long
    while proc.poll() is None and time.monotonic() < deadline:
        if first.read_text() == AFTER.format(i=0):
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=600)
    assert b"Traceback" not in err
    check_whole(root, n)  # no file torn, no *.migrate-tmp left
    if proc.returncode != 0:  # it may have finished first on a fast machine
        assert proc.returncode == 143
        assert err.decode().strip().splitlines()[-1] == "terminated"


# --------------------------------------------------------------------------- bad input


def test_report_on_a_missing_folder_fails(tmp_path):
    before = snapshot(tmp_path)
    run = cli(["report", str(tmp_path / "nowhere"), "-o", "plan.md"], tmp_path, tmp_path)
    assert run.code == 2
    assert run.stderr.strip() == f"error: {tmp_path / 'nowhere'}: no such file or directory"
    assert run.stdout == ""
    assert changed(before, snapshot(tmp_path)) == set()  # no plan.md


def test_report_exits_2_when_a_file_cannot_be_read(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "bad.py").write_text("import torch\n@torch.jit.unused\ndef f(:\n")
    before = snapshot(tmp_path)
    run = cli(["report", "repo", "-o", "plan.md"], tmp_path, tmp_path)
    assert run.code == 2
    no_traceback(run)
    assert error_lines(run.stderr) == ["error: repo/bad.py: cannot parse (line 3): invalid syntax"]
    assert changed(before, snapshot(tmp_path)) == {"plan.md"}  # the plan is still written


def test_unreadable_folder_is_reported(tmp_path, monkeypatch):
    from migrate.pipeline.scan import PlannedScanner as Scanner

    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "m.py").write_text(SCRIPTED)
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    before = snapshot(tmp_path)
    result = Scanner(ScanOptions(use_git=False, cache=False, jobs=1)).scan([str(tmp_path)])
    assert [(e.path, e.message) for e in result.errors] == [
        ((tmp_path / "locked").as_posix(), "cannot read folder: permission denied")
    ]
    assert [f.path for f in result.findings] == [(tmp_path / "ok" / "m.py").as_posix()]
    assert changed(before, snapshot(tmp_path)) == set()


def test_git_warning_about_an_unreadable_folder_becomes_an_error(tmp_path, monkeypatch):
    from migrate import gitsafe
    from migrate.scan import discover

    def fake_run(args, cwd, timeout=60):
        return subprocess.CompletedProcess(
            args,
            0,
            b"a.py\0",
            b"warning: could not open directory 'secret/': Permission denied\n",
        )

    monkeypatch.setattr(gitsafe, "run", fake_run)
    errors: list[tuple[str, str]] = []
    (tmp_path / "a.py").write_text("x = 1\n")
    files = discover.discover([tmp_path], errors=errors)
    assert [f.path.name for f in files] == ["a.py"]
    assert errors == [((tmp_path / "secret").as_posix(), "cannot read folder: permission denied")]


def test_non_utf8_pyproject_with_our_table_is_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.migrate]\nexclude = ["caf\xe9"]\n')
    (tmp_path / "m.py").write_text("x = 1\n")
    before = snapshot(tmp_path)
    run = cli(["scan", "m.py"], tmp_path, tmp_path)
    assert run.code == 2
    no_traceback(run)
    assert changed(before, snapshot(tmp_path)) == set()
    assert run.stderr.strip() == (
        f"error: {tmp_path / 'pyproject.toml'}: not UTF-8 (byte 30: invalid continuation "
        "byte); TOML files must be UTF-8"
    )


def test_negative_jobs_is_refused(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    before = snapshot(tmp_path)
    for command in ("scan", "apply"):
        run = cli([command, "-j", "-3", "m.py"], tmp_path, tmp_path)
        assert run.code == 2
        assert run.stderr.strip() == "error: --jobs must be 0 (one per CPU) or more, not -3"
    assert changed(before, snapshot(tmp_path)) == set()


def test_cr_only_file_keeps_its_line_endings(tmp_path):
    path = tmp_path / "m.py"
    # The capture is also saved, so it stays a capture (torch.export), not the eager module:
    # lines are rewritten, added (`import torch`) and removed (the `from torch import jit`).
    source = (
        "from torch import jit\n\n\ndef g(m, x):\n    s = jit.trace(m, (x,))\n"
        '    s.save("m.pt")\n    return s(x)\n'
    )
    path.write_bytes(source.replace("\n", "\r").encode())
    before = snapshot(tmp_path)
    run = cli(["apply", "--allow-dirty", "--unsafe-fixes", "m.py"], tmp_path, tmp_path)
    assert run.code == 0, run.stdout + run.stderr
    data = path.read_bytes()
    assert b"\n" not in data
    assert b"    s = torch.export.export(m, (x,))\r" in data
    assert b'    torch.export.save(s, "m.pt2")\r' in data
    assert data.startswith(b"import torch\r")
    assert data.endswith(b"\r")
    assert changed(before, snapshot(tmp_path)) == {"m.py"}


def test_git_is_only_run_for_read_only_commands(tmp_path):
    from migrate import gitsafe

    for args in (["diff"], ["fetch"], ["commit", "-m", "x"], []):
        with pytest.raises(gitsafe.GitUnavailable):
            gitsafe.run(args, tmp_path)


# --------------------------------------------------------------------------- clear output


def test_demo_says_where_the_plan_is_beside_the_report_step(tmp_path):
    from tests.test_demo import PLAN_REPO

    work = tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "demo", "--no-verify", "--sample", str(PLAN_REPO)]
        + ["--dir", str(work)],
        cwd=tmp_path,
        env=outside_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    report = next(i for i, line in enumerate(lines) if line.startswith("$ migrate report"))
    assert lines[report + 1] == f"wrote {work / 'sample-plan.html'}"
    assert lines.index(f"wrote {work / 'sample-plan.html'}") < next(
        i for i, line in enumerate(lines) if line.startswith("Demo finished")
    )


def test_html_plan_colours_rules_by_their_findings_and_names_the_folder(tmp_path, monkeypatch):
    from migrate.report.plan import build_plan
    from migrate.report.plan_html import FIX_COLORS, render_html

    repo = tmp_path / "my-repo"
    repo.mkdir()
    # MIG102 is `auto` by default; both calls here are assisted (the save blocks the rewrite).
    (repo / "m.py").write_text(
        "import torch\n\n\ndef save_mobile(model, x, options):\n"
        "    traced = torch.jit.trace(model, (x,))\n"
        '    traced._save_for_lite_interpreter("model.ptl", **options)\n\n\n'
        "def save_buffer(model, x):\n"
        "    traced = torch.jit.trace(model, (x,))\n"
        "    return traced._save_to_buffer_for_lite_interpreter(True)\n",
        encoding="utf-8",
    )
    (repo / "requirements.txt").write_text(
        "--extra-index-url https://download.pytorch.org/whl/cu128\n"
    )
    monkeypatch.chdir(repo)
    before = snapshot(repo)
    plan = build_plan(".", ScanOptions(use_git=False, cache=False, jobs=1))
    assert changed(before, snapshot(repo)) == set()  # the plan's dry run writes nothing
    page = render_html(plan)
    assert "<title>Migration plan: my-repo</title>" in page
    assert "<h1>Migration plan: my-repo</h1>" in page
    assert '<div class="k">CUDA 12.8 (MIG3xx), fixed or not</div>' in page
    bars = re.findall(r"<title>(MIG\d+) [^<]*</title>.*?fill=\"(#[0-9a-f]+)\"", page)
    assert dict(bars) == {
        "MIG102": FIX_COLORS["assisted"],
        "MIG204": FIX_COLORS["assisted"],
        "MIG301": FIX_COLORS["auto"],
    }
    row = re.search(r"<td>MIG102</td>.*?</tr>", page).group(0)
    assert "assisted" in row and ">auto<" not in row
