"""Run git read-only on a repository we were asked to scan: nothing it configures may execute.

A scanned tree may arrive with its `.git` (a tarball, a shared folder, a CI cache), and its
`.git/config` can name commands that `git ls-files` or `git status` would run: an fsmonitor
hook, filter drivers for the paths `.gitattributes` marks, a pager. Every git call of
discovery and apply goes through `run`, which overrides those settings for that one call
(issue 15).
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from pathlib import Path

# Only commands that read the index or work tree: no diff (diff.external, textconv), no
# fetch (sshCommand, uploadpack), no commit (hooks). A new one must be checked before it
# joins the list.
READ_ONLY_COMMANDS = frozenset({"ls-files", "status", "check-ignore", "rev-parse", "config"})

# Settings that name a command git would run, set to values that run nothing. Passed as
# GIT_CONFIG_KEY_n/VALUE_n, which win over every config file and need no quoting.
NEUTRAL_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("protocol.allow", "never"),
)

FILTER_KEYS = ("clean", "smudge", "process")


class GitUnavailable(Exception):
    """git is missing, timed out, or is not allowed to run this command."""


def _environment(overrides: list[tuple[str, str]]) -> dict[str, str]:
    env = dict(os.environ)
    base = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    for i, (key, value) in enumerate(overrides, start=base):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_CONFIG_COUNT"] = str(base + len(overrides))
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_SSH_COMMAND="false",
        GIT_ASKPASS="false",
        # A racy index would otherwise be refreshed and rewritten by status.
        GIT_OPTIONAL_LOCKS="0",
    )
    return env


def _git(args: list[str], cwd: Path, env: dict[str, str], timeout: float):
    try:
        return subprocess.run(
            ["git", "--no-optional-locks", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(str(exc)) from None


@functools.lru_cache(maxsize=256)
def _filter_drivers(cwd: str) -> tuple[str, ...]:
    """Names of the filter drivers configured for the repository at `cwd` (reading the
    configuration runs nothing)."""
    proc = _git(
        ["config", "-z", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"],
        Path(cwd),
        _environment(list(NEUTRAL_CONFIG)),
        30,
    )
    names = []
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key = entry.split("\n", 1)[0]
        if key.startswith("filter.") and key.count(".") >= 2:
            names.append(key[len("filter.") : key.rindex(".")])
    return tuple(dict.fromkeys(names))


def run(args: list[str], cwd: str | Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """`git ARGS` in `cwd` with every command-running setting of the repository switched off."""
    if not args or args[0] not in READ_ONLY_COMMANDS:
        raise GitUnavailable(f"git {args[0] if args else ''} is not a read-only command")
    overrides = list(NEUTRAL_CONFIG)
    command = args[0]
    if command in ("status", "ls-files"):
        # The paths given are file names: `*`, `?` or a leading `:` are not patterns
        # (check-ignore refuses this switch).
        args = ["--literal-pathspecs", *args]
    if command == "status":
        # status may hash changed files through the clean filter their attributes name.
        for name in _filter_drivers(os.path.realpath(cwd)):
            overrides += [(f"filter.{name}.{key}", "") for key in FILTER_KEYS]
            overrides.append((f"filter.{name}.required", "false"))
    return _git(args, Path(cwd), _environment(overrides), timeout)


def inside_work_tree(folder: str | Path) -> bool | None:
    """Whether git counts `folder` as inside a work tree; None when it cannot say (git
    missing, or a work tree owned by another user, which git will not read for us)."""
    try:
        proc = run(["rev-parse", "--is-inside-work-tree"], folder, timeout=30)
    except GitUnavailable:
        return None
    if proc.returncode != 0 and b"dubious ownership" in proc.stderr:
        return None
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


# `git ls-files -v` tags: lowercase marks assume-unchanged, S (s with both) skip-worktree.
_HIDDEN_MARKS = {"h": "assume-unchanged", "S": "skip-worktree", "s": "assume-unchanged"}
_FILE_MODES = ("100644", "100755")


def hidden_changes(top: Path, paths: list[str]) -> dict[str, str]:
    """Files (relative to the work tree `top`) that `git status` does not look at because
    they are marked assume-unchanged or skip-worktree, and whose bytes are not the index's:
    path -> the mark. Hashed here as git names a blob (the bytes as they are: a file that
    git converts on checkout, autocrlf say, counts as changed)."""
    if not paths:
        return {}
    proc = run(["ls-files", "-v", "-s", "-z", "--", *paths], top)
    if proc.returncode != 0:
        raise GitUnavailable(proc.stderr.decode("utf-8", "replace").strip())
    changed = {}
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, name = entry.partition("\t")
        fields = meta.split()
        if len(fields) != 4 or fields[0] not in _HIDDEN_MARKS or fields[1] not in _FILE_MODES:
            continue  # a normal entry, a symlink or a submodule
        if _blob_id(top / name, len(fields[2])) != fields[2]:
            changed[name] = _HIDDEN_MARKS[fields[0]]
    return changed


def _blob_id(path: Path, length: int) -> str | None:
    """The object id git gives the file's bytes (SHA-1, or SHA-256 in such a repository), or
    None when it is gone or is not a regular file."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    h = hashlib.new("sha256" if length == 64 else "sha1")
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()
