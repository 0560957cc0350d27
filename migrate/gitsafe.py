"""Run git read-only on a repository we were asked to scan: nothing it configures may execute.

A scanned tree may arrive with its `.git` (a tarball, a shared folder, a CI cache), and its
`.git/config` can name commands that `git ls-files` or `git status` would run: an fsmonitor
hook, filter drivers for the paths `.gitattributes` marks, a pager. Every git call of
discovery and apply goes through `run`, which overrides those settings for that one call
(issue 15).
"""

from __future__ import annotations

import functools
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
    if args[0] == "status":
        # The paths status gets are file names: `*`, `?` or a leading `:` are not patterns
        # (check-ignore refuses this switch, so it is status's alone).
        args = ["--literal-pathspecs", *args]
        # status may hash changed files through the clean filter their attributes name.
        for name in _filter_drivers(os.path.realpath(cwd)):
            overrides += [(f"filter.{name}.{key}", "") for key in FILTER_KEYS]
            overrides.append((f"filter.{name}.required", "false"))
    return _git(args, Path(cwd), _environment(overrides), timeout)
