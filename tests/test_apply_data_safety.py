"""`migrate apply` writes only what it computed on the text it read, only inside the tree,
and only over that text (issue 29): the same file named twice, a file edited while apply
runs, two applies at once, a symlinked folder out of the tree, mixed line endings, form
feeds, files git hides from `git status`, hard links and temp files left by `kill -9`.

Each test runs the real command line (`python -m migrate apply ...`); where a run must be
caught at one moment (between reading and writing), a few lines of Python given to
`python -c` wrap one of apply's functions before the same entry point runs."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.scan_support import clean_env

ROOT = Path(__file__).resolve().parents[1]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

# Three fixes of one rule (MIG104 drops each decorator); each method must survive.
MODEL = """\
import torch


class Model(torch.nn.Module):
    @torch.jit.ignore
    def debug(self, x):
        print(x)

    @torch.jit.unused
    def legacy(self, x):
        return x

    @torch.jit.ignore
    def other(self, x):
        return x * 2

    def forward(self, x):
        return x
"""
METHODS = ("def debug", "def legacy", "def other", "def forward")

# Runs the command line after `{hook}`, a few lines that wrap one of apply's steps.
WRAPPED = """\
import sys
sys.argv = ["migrate", *sys.argv[1:]]
{hook}
from migrate.cli.entry import main
main()
"""


def env_for(tmp_path: Path) -> dict[str, str]:
    return clean_env(
        tmp_path,
        NO_COLOR="1",
        PYTHONPATH=str(ROOT),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )


def command(*args: str, hook: str | None = None) -> list[str]:
    if hook is None:
        return [sys.executable, "-m", "migrate", *args]
    return [sys.executable, "-c", WRAPPED.format(hook=textwrap.dedent(hook)), *args]


def migrate(cwd: Path, *args: str, hook: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(*args, hook=hook),
        cwd=cwd,
        env=env_for(cwd.parent),
        capture_output=True,
        text=True,
        timeout=120,
    )


_FIXED: dict[bytes, bytes] = {}


def fixed_once(tmp_path: Path, source: str | bytes, name: str = "model.py") -> bytes:
    """What one plain apply makes of `source`, in a folder of its own (once a session)."""
    data = source if isinstance(source, bytes) else source.encode()
    if data not in _FIXED:
        _FIXED[data] = _fixed(tmp_path, data, name)
    return _FIXED[data]


def _fixed(tmp_path: Path, source: bytes, name: str) -> bytes:
    folder = tmp_path / f"reference-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = folder / name
    path.write_bytes(source)
    run = migrate(folder, "apply", name)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return path.read_bytes()


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, env=env_for(cwd.parent), check=True, capture_output=True
    )


def committed_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


# --------------------------------------------------------------------------- one text


def test_the_same_file_named_twice_is_fixed_once_and_keeps_every_method(tmp_path):
    expected = fixed_once(tmp_path, MODEL)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(MODEL)
    run = migrate(repo, "apply", "model.py", "./../repo/model.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "error" not in run.stdout
    assert "Fixed 3 findings in 1 file." in run.stdout
    text = (repo / "model.py").read_bytes()
    assert text == expected
    assert all(m in text.decode() for m in METHODS)


EDIT_AFTER_FIX = """
import migrate.pipeline.apply as a
real = a.fix_source
def fix_source(display, *args, **kwargs):
    fix = real(display, *args, **kwargs)
    if display == "model.py":
        with open(display, "a") as handle:
            handle.write("USER_EDIT = 1\\n")
    return fix
a.fix_source = fix_source
"""

EDIT_AFTER_SCAN = """
import migrate.pipeline.apply as a
real = a.PlannedScanner.scan  # the scanner apply runs (planned for the whole tree)
def scan(self, paths):
    result = real(self, paths)
    with open("model.py") as handle:
        text = handle.read()
    with open("model.py", "w") as handle:
        handle.write("# edited by the user\\n" + text)
    return result
a.PlannedScanner.scan = scan
"""


@pytest.mark.parametrize(
    ("hook", "user_text"),
    [
        (EDIT_AFTER_FIX, MODEL + "USER_EDIT = 1\n"),
        (EDIT_AFTER_SCAN, "# edited by the user\n" + MODEL),
    ],
    ids=["between-read-and-write", "between-scan-and-read"],
)
def test_a_file_edited_while_apply_runs_is_left_as_the_user_wrote_it(tmp_path, hook, user_text):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(MODEL)
    (repo / "other.py").write_text(MODEL)
    run = migrate(repo, "apply", "model.py", "other.py", hook=hook)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "error: model.py: changed since it was read; left untouched" in run.stdout.splitlines()
    assert (repo / "model.py").read_text() == user_text
    # The file nobody touched is still migrated.
    assert (repo / "other.py").read_bytes() == fixed_once(tmp_path, MODEL)


# --------------------------------------------------------------------------- two runs

PAUSE = """
import os, time
import migrate.pipeline.apply as a
real = a.fix_source
def fix_source(*args, **kwargs):
    open("{started}", "w").close()
    deadline = time.time() + 60
    while not os.path.exists("{go}") and time.time() < deadline:
        time.sleep(0.05)
    return real(*args, **kwargs)
a.fix_source = fix_source
"""


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "the first apply never started fixing"
        time.sleep(0.05)


def test_two_applies_at_once_the_second_refuses_and_a_killed_runs_lock_is_taken_over(tmp_path):
    names = [f"m{i}.py" for i in range(6)]
    expected = fixed_once(tmp_path, MODEL)
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in names:
        (tree / name).write_text(MODEL)
    started, go = tmp_path / "started", tmp_path / "go"
    hook = PAUSE.format(started=started, go=go)
    env = env_for(tmp_path)
    first = subprocess.Popen(
        command("apply", ".", hook=hook),
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(started, first)
        second = migrate(tree, "apply", ".")
        assert second.returncode == 2, second.stdout + second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert re.fullmatch(
            rf"error: another `migrate apply` \(pid {first.pid}\) is rewriting "
            rf"{re.escape(str(tree.resolve()))}; run again once it has finished \(lock: .+\)",
            lines[0],
        ), lines[0]
        assert all((tree / n).read_text() == MODEL for n in names)  # the second wrote nothing
    finally:
        first.send_signal(signal.SIGKILL)  # killed while it holds the lock
        first.communicate()
    lock = Path(re.search(r"\(lock: (.+)\)$", lines[0]).group(1))
    assert lock.read_text().strip() == str(first.pid)  # left behind, naming a dead process
    third = migrate(tree, "apply", ".")
    assert third.returncode in (0, 1), third.stdout + third.stderr
    assert "error" not in third.stdout + third.stderr
    assert all((tree / n).read_bytes() == expected for n in names)


# --------------------------------------------------------------------------- the tree


@needs_git
@pytest.mark.parametrize(
    "args",
    [("apply", "lnk"), ("apply", "lnk/model.py"), ("apply", "--allow-dirty", ".")],
    ids=["folder", "file", "indexed-path"],
)
def test_a_symlinked_folder_never_lets_apply_write_outside_the_tree(tmp_path, args):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.py").write_text(MODEL)
    repo = committed_repo(tmp_path / "repo", {"a.py": "x = 1\n", "lnk/model.py": MODEL})
    # The index still lists lnk/model.py; the folder is now a symlink out of the tree.
    shutil.rmtree(repo / "lnk")
    (repo / "lnk").symlink_to(outside, target_is_directory=True)
    if args[-1] != ".":
        git(repo, "rm", "-q", "--cached", "lnk/model.py")
        git(repo, "add", "lnk")  # the symlink itself is what the repository holds
        git(repo, "commit", "-q", "-m", "link")
    run = migrate(repo, *args)
    real = (outside / "model.py").resolve()
    if args[-1] == ".":
        # Walking the tree, the scan's checked read already refuses to follow the link.
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"lnk/model.py: symlink to {real}, outside the tree; skipped" in run.stderr
    else:
        assert run.returncode == 2, run.stdout + run.stderr
        assert (
            f"error: lnk/model.py: resolves to {real}, outside the tree being migrated "
            f"({repo.resolve()}); not written" in run.stdout.splitlines()
        ), run.stdout
    assert (outside / "model.py").read_text() == MODEL


# --------------------------------------------------------------------------- line endings


def _lines(*pairs: tuple[str, str]) -> bytes:
    return "".join(text + ending for text, ending in pairs).encode()


def _endings(data: bytes) -> list[str]:
    return [m.decode() for m in re.findall(rb"\r\n|\n", data)]


@pytest.mark.parametrize(("few", "most"), [("\r\n", "\n"), ("\n", "\r\n")], ids=repr)
def test_mixed_line_endings_keep_each_untouched_line_and_new_lines_take_the_majority(
    tmp_path, few, most
):
    body = [
        "import torch",
        "",
        "",
        "@torch.jit.unused",
        "def helper(x):",
        "    return torch.relu(x)",
        "",
        "",
        "class M(torch.nn.Module):",
        "    scale: torch.jit.Final[float] = 2.0",
        "",
        "",
        "X0 = 0",
        "X1 = 1",
        "X2 = 2",
    ]
    minority = {"import torch", "X1 = 1"}  # two lines end otherwise; thirteen with `most`
    source = _lines(*((line, few if line in minority else most) for line in body))
    assert sorted(_endings(source)) == sorted([few] * 2 + [most] * 13)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "model.py").write_bytes(source)
    run = migrate(tree, "apply", "model.py")
    assert run.returncode == 0, run.stdout + run.stderr
    # The same fix on a file with one ending throughout, then each line's own ending.
    plain = fixed_once(tmp_path, "\n".join(body) + "\n").decode().split("\n")[:-1]
    assert "import typing" in plain  # MIG112 inserted lines, which take the majority
    expected = _lines(*((line, few if line in minority else most) for line in plain))
    assert (tree / "model.py").read_bytes() == expected


def test_form_feeds_and_other_legal_whitespace_round_trip_and_are_fixed(tmp_path):
    source = (
        "import torch\n"
        "\x0c\n"
        "# a vertical tab \x0b, a file separator \x1c and a line separator \u2028 here\n"
        'SEPARATORS = "\u2028\x85\x1c"\n'
        "\n"
        "\x0c\n"
        "@torch.jit.unused\n"
        "def helper(x):\n"
        "\x0c    return torch.relu(x)\t\n"
        "\n"
        "\n"
        "class M(torch.nn.Module):\n"
        "\x0c\n"
        "    @torch.jit.ignore\n"
        "    def f(self, x):\n"
        "\x0c        return (x,\x0c x)\n"
        "\n"
        "\x0c@torch.jit.unused\n"
        "def paged(x):\n"
        "    return x\n"
    )
    compile(source, "model.py", "exec")  # valid Python
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "model.py").write_text(source, encoding="utf-8")
    run = migrate(tree, "apply", "model.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Fixed 3 findings in 1 file." in run.stdout
    # Exactly the decorators go (a page break opening one's line stays); all else stays.
    expected = source.replace("@torch.jit.unused\n", "").replace("    @torch.jit.ignore\n", "")
    assert "\x0cdef paged(x):\n" in expected
    assert (tree / "model.py").read_text(encoding="utf-8") == expected


# --------------------------------------------------------------------------- git, links, temps


@needs_git
@pytest.mark.parametrize("mark", ["assume-unchanged", "skip-worktree"])
def test_files_git_status_hides_count_as_dirty(tmp_path, mark):
    repo = committed_repo(tmp_path / "repo", {"edited.py": MODEL, "clean.py": MODEL})
    git(repo, "update-index", f"--{mark}", "edited.py", "clean.py")
    user_text = MODEL + "USER_EDIT = 1\n"
    (repo / "edited.py").write_text(user_text)
    run = migrate(repo, "apply", ".")
    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        f"error: edited.py: is marked {mark} in git and differs from the index; not touched "
        "(commit first or pass --allow-dirty)" in run.stdout.splitlines()
    ), run.stdout
    assert (repo / "edited.py").read_text() == user_text
    # A marked file whose bytes are the index's is still git's to restore: it is migrated.
    assert (repo / "clean.py").read_bytes() == fixed_once(tmp_path, MODEL)
    assert migrate(repo, "apply", "--allow-dirty", ".").returncode in (0, 1)
    assert (repo / "edited.py").read_bytes() == fixed_once(tmp_path, user_text)


def test_a_hard_link_is_said_to_be_broken_and_its_other_name_keeps_the_old_text(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    backup = tmp_path / "backup"
    backup.mkdir()
    (tree / "model.py").write_text(MODEL)
    os.link(tree / "model.py", backup / "model.py")
    run = migrate(tree, "apply", "model.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert (
        "note: model.py: was a hard link; it is now a file of its own and the other name "
        "keeps the old text" in run.stdout.splitlines()
    ), run.stdout
    assert (tree / "model.py").read_bytes() == fixed_once(tmp_path, MODEL)
    assert (backup / "model.py").read_text() == MODEL
    assert (tree / "model.py").stat().st_nlink == 1


KILL_AT_RENAME = """
import os, signal
real = os.replace
def replace(src, dst, *args, **kwargs):
    if str(src).endswith(".migrate-tmp"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *args, **kwargs)
os.replace = replace
"""


def test_temp_files_left_by_a_killed_apply_are_removed_by_the_next(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "model.py").write_text(MODEL)
    killed = migrate(tree, "apply", "model.py", hook=KILL_AT_RENAME)
    assert killed.returncode == -signal.SIGKILL
    left = [p.name for p in tree.iterdir() if p.name.endswith(".migrate-tmp")]
    assert len(left) == 1 and (tree / "model.py").read_text() == MODEL
    # Not this tool's, or its writer still runs (this test's own pid): both stay.
    foreign = tree / ".notes.migrate-tmp"
    foreign.write_text("mine")
    running = tree / f".model.py.migrate-{os.getpid()}-abcdefgh.migrate-tmp"
    running.write_text("in progress")
    run = migrate(tree, "apply", "model.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(
        rf"note: {re.escape(left[0])}: removed: left by a `migrate apply` \(pid \d+\) that was "
        "killed",
        run.stdout,
    ), run.stdout
    assert sorted(p.name for p in tree.iterdir()) == sorted(
        ["model.py", foreign.name, running.name]
    )
    assert (tree / "model.py").read_bytes() == fixed_once(tmp_path, MODEL)
