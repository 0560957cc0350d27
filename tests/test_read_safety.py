"""Only regular files inside the tree are read, to a size cap (issue 29, items 7 and 2 of
"What to build" 4), and paths that give nothing to read say so in one line (issue 30).

Each scan runs `python -m migrate` in a subprocess under a timeout and an address-space
limit: before these checks a FIFO hung the scan and `/dev/zero` was read until memory ran
out, which must fail the test, not take the machine down.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
TRACE = "import torch\n\n\ndef capture(model, x):\n    return torch.jit.trace(model, x)\n"
MEMORY_LIMIT = 2 * 1024**3  # bytes of address space for one scan

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")


def _limit_memory() -> None:
    import resource  # POSIX; the tests that need the limit need a POSIX system anyway

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def migrate(cwd: Path, *args: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT)
    if cache is not None:
        env["MIGRATE_CACHE_DIR"] = str(cache)
    extra = [] if cache is not None else ["--no-cache"]
    command = [sys.executable, "-m", "migrate", *args]
    if args[0] in ("scan", "apply") and "--no-cache" not in args:
        command += extra
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=_limit_memory if os.name == "posix" else None,
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def tree(root: Path, use_git: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.py").write_text(TRACE)
    if use_git:
        git(root, "init", "-q")
    return root


def finding_paths(proc: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r"^(\S+\.py)$", proc.stdout, re.MULTILINE)


# --------------------------------------------------------------------------- special files


@needs_fifo
def test_a_fifo_in_the_tree_is_skipped_with_a_note(tmp_path):
    root = tree(tmp_path / "repo", use_git=False)  # git lists no FIFO; the plain walk does
    os.mkfifo(root / "x.py")
    proc = migrate(root, "scan", ".")
    assert proc.stderr == "x.py: not a regular file (FIFO); skipped\n"
    assert proc.returncode == 1, proc.stderr
    assert finding_paths(proc) == ["model.py"]


@needs_fifo
def test_a_fifo_named_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    os.mkfifo(tmp_path / "x.py")
    proc = migrate(tmp_path, "scan", "x.py")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "x.py: not a regular file (FIFO); skipped\n"


@needs_dev_zero
@pytest.mark.parametrize("use_git", [False, True])
def test_a_symlink_to_dev_zero_is_not_read(tmp_path, use_git):
    root = tree(tmp_path / "repo", use_git)
    (root / "x.py").symlink_to("/dev/zero")
    if use_git:
        git(root, "add", "-A")  # git stores the link itself
    proc = migrate(root, "scan", ".")
    assert proc.stderr == "x.py: symlink to /dev/zero, outside the tree; skipped\n"
    assert proc.returncode == 1
    assert finding_paths(proc) == ["model.py"]
    # Named on the command line, a link is followed; a device is still not read.
    proc = migrate(root, "scan", "x.py")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "x.py: not a regular file (character device); skipped\n"


@needs_dev_zero
def test_a_cached_file_replaced_by_a_link_to_dev_zero_is_not_read(tmp_path):
    """The result cache re-reads a file whose stat changed to compare digests: that read
    goes through the same checks (an empty file and /dev/zero both have size 0)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "empty.py").write_text("")
    (root / "model.py").write_text(TRACE)
    cache = tmp_path / "cache"
    assert migrate(root, "scan", "empty.py", "model.py", cache=cache).returncode == 1
    (root / "empty.py").unlink()
    (root / "empty.py").symlink_to("/dev/zero")
    proc = migrate(root, "scan", "empty.py", "model.py", cache=cache)
    assert proc.stderr == "empty.py: not a regular file (character device); skipped\n"
    assert proc.returncode == 1
    assert finding_paths(proc) == ["model.py"]


# --------------------------------------------------------------------------- symlinks out


@pytest.mark.parametrize("use_git", [False, True])
def test_a_symlink_out_of_the_tree_is_not_followed(tmp_path, use_git):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(TRACE)
    root = tree(tmp_path / "repo", use_git)
    (root / "out.py").symlink_to(outside / "secret.py")
    (root / "alias.py").symlink_to("model.py")  # inside the tree: read
    if use_git:
        git(root, "add", "-A")
    proc = migrate(root, "scan", ".")
    target = os.path.realpath(outside / "secret.py")
    assert proc.stderr == f"out.py: symlink to {target}, outside the tree; skipped\n"
    assert proc.returncode == 1
    assert finding_paths(proc) == ["alias.py", "model.py"]


def test_a_tracked_folder_turned_into_a_symlink_out_of_the_tree_is_not_read(tmp_path):
    """git lists `lnk/model.py` from its index after `lnk` became a link to elsewhere."""
    root = tree(tmp_path / "repo", use_git=True)
    (root / "lnk").mkdir()
    (root / "lnk" / "model.py").write_text(TRACE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.py").write_text(TRACE)
    (root / "lnk" / "model.py").unlink()
    (root / "lnk").rmdir()
    (root / "lnk").symlink_to(outside)
    proc = migrate(root, "scan", ".")
    target = os.path.realpath(outside / "model.py")
    assert proc.stderr == f"lnk/model.py: symlink to {target}, outside the tree; skipped\n"
    assert finding_paths(proc) == ["model.py"]


# --------------------------------------------------------------------------- the size cap


def test_a_file_over_the_configured_cap_is_skipped(tmp_path):
    root = tree(tmp_path / "repo", use_git=False)
    (root / "pyproject.toml").write_text('[tool.migrate]\nmax-file-size = "1 KiB"\n')
    (root / "big.py").write_text(TRACE + "# padding\n" * 200)
    proc = migrate(root, "scan", ".")
    size = (root / "big.py").stat().st_size
    assert proc.stderr == f"big.py: larger than max-file-size ({size} bytes > 1 KiB); skipped\n"
    assert finding_paths(proc) == ["model.py"]


def test_the_default_cap(tmp_path):
    from migrate.scan.discover import Skipped, read_checked

    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (8 * 1024 * 1024) + b"\n")
    with pytest.raises(Skipped, match=r"larger than max-file-size \(8388609 bytes > 8 MiB\)"):
        read_checked(big)
    assert len(read_checked(big, max_size=9 * 1024 * 1024)) == 8 * 1024 * 1024 + 1


# --------------------------------------------------------------------------- nothing to read


def test_a_named_file_no_rule_reads_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    proc = migrate(tmp_path, "scan", "blob.bin")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "blob.bin: not a file type migrate reads; skipped\n"
    if os.path.isfile("/bin/ls"):
        proc = migrate(tmp_path, "scan", "/bin/ls")
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == "/bin/ls: not a file type migrate reads; skipped\n"
    # requirements.txt is a type MIG3xx reads: only deselected, it is simply not scanned.
    (tmp_path / "requirements.txt").write_text("torch==2.7.0+cu128\n")
    proc = migrate(tmp_path, "scan", "--select", "MIG1", "requirements.txt")
    assert (proc.returncode, proc.stderr) == (0, "")
    (tmp_path / "pins").mkdir()
    (tmp_path / "pins" / "requirements.txt").write_text("torch==2.7.0+cu128\n")
    proc = migrate(tmp_path, "scan", "--select", "MIG1", "pins")
    assert (proc.returncode, proc.stderr) == (0, "")


def test_an_empty_folder_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = migrate(tmp_path, "scan", "empty")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "empty: no file in this folder that migrate reads; skipped\n"


def test_a_missing_path_is_exactly_one_line(tmp_path):
    proc = migrate(tmp_path, "scan", "nope.py")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "error: nope.py: no such file or directory\n"


def test_a_skipped_path_beside_a_read_one_keeps_the_report_and_its_exit_code(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\0\1")
    (tmp_path / "model.py").write_text(TRACE)
    (tmp_path / "empty").mkdir()
    proc = migrate(tmp_path, "scan", "blob.bin", "empty", "model.py")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "blob.bin: not a file type migrate reads; skipped",
        "empty: no file in this folder that migrate reads; skipped",
    ]
    assert finding_paths(proc) == ["model.py"]


def test_apply_says_what_it_skipped(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\0")
    proc = migrate(tmp_path, "apply", "--dry-run", "blob.bin")
    assert proc.returncode == 2
    assert proc.stderr == "blob.bin: not a file type migrate reads; skipped\n"


def test_the_hooks_pass_only_files_some_rule_reads():
    """pre-commit hands the hooks the staged files their `files` pattern matches: each such
    file is one migrate reads (else a lone one would be a skip note and exit 2): documents
    too (MIG501 reads their code examples), a picture or a licence never."""
    from migrate.scan.engine import _some_rule_reads

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    names = [
        "a.py", "b.pyi", "requirements-dev.txt", "constraints.in", "pyproject.toml",
        "Dockerfile", "Dockerfile.gpu", "x.dockerfile", ".github/workflows/ci.yml",
        ".gitlab-ci.yml", "ci/test.yaml", "azure-pipelines.yml", "environment-gpu.yml",
        "run.sh", "Makefile", "rules.mk", "CMakeLists.txt", "x.cmake", "x.cpp", "x.cu", "x.h",
        "x.mm", "X.java", "x.kt", "build.gradle", "Podfile", "x.podspec", "README.md",
        "docs/index.rst",
    ]  # fmt: skip
    not_matched = ["logo.png", "LICENSE", "setup.cfg"]
    for hook in hooks:
        pattern = re.compile(hook["files"])
        matched = [n for n in names + not_matched if pattern.search(n)]
        assert matched == names, hook["id"]
        assert [n for n in matched if not _some_rule_reads(Path(n))] == [], hook["id"]


def test_a_checked_read_of_a_plain_file_costs_one_lstat_and_one_read(tmp_path, monkeypatch):
    """Every file of a tree is read through here, twice on a large one: a regular file takes
    one lstat (no stat after it) and one read that comes back short at its end; a symlink
    inside the tree is followed with one stat more, and still read whole."""
    from migrate import safe_read

    (tmp_path / "big.py").write_bytes(b"x = 1\n" * 50_000)  # 300 kB, under one chunk
    (tmp_path / "link.py").symlink_to(tmp_path / "big.py")
    root = str(tmp_path.resolve())
    safe_read.read_checked(str(tmp_path / "big.py"), confine=root)  # the folder's realpath
    calls: list[str] = []
    for name in ("lstat", "stat", "read"):
        original = getattr(safe_read.os, name)

        def counting(*args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(safe_read.os, name, counting)
    data = safe_read.read_checked(str(tmp_path / "big.py"), confine=root)
    assert len(data) == 300_000 and calls == ["lstat", "read"]
    calls.clear()
    assert safe_read.read_checked(str(tmp_path / "link.py"), confine=root) == data
    assert calls.count("stat") == 1 and calls.count("read") == 1
