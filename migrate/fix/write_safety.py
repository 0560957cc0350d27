"""What apply checks before it writes over a file: that git could restore it (no
uncommitted, untracked or ignored changes), and which temp files an interrupted write of
this tool left behind.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from migrate import gitsafe
from migrate.safe_write import TEMP_NAME, TEMP_SUFFIX


def stale_temp_files(folder: str, before: float) -> list[tuple[str, int]]:
    """(name, pid) of the temp files in `folder` that a write of this tool left behind (a
    `kill -9`, a power cut): named as write_atomic names them, this user's, older than
    `before`, and written by a process that is no longer running."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(TEMP_SUFFIX)]
    except OSError:
        return []
    stale = []
    for name in names:
        found = TEMP_NAME.fullmatch(name)
        if found is None:
            continue
        pid = int(found["pid"])
        try:
            st = os.lstat(os.path.join(folder, name))
        except OSError:
            continue
        mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
        if stat.S_ISREG(st.st_mode) and mine and st.st_mtime < before and not pid_alive(pid):
            stale.append((name, pid))
    return sorted(stale)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (one of another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as someone else
        return True
    return True


def dirty_files(paths: Iterable[Path]) -> dict[Path, str]:
    """Files inside a git work tree that git could not restore: modified, untracked or
    ignored, each with its porcelain status (`M`, `??`, `!!`)."""
    dirty: dict[Path, str] = {}
    by_dir: dict[Path, list[Path]] = {}
    for p in paths:
        # The folder of the entry itself, not of a symlink's target.
        by_dir.setdefault(Path(os.path.abspath(p)).parent.resolve(), []).append(p)
    tops: dict[Path, list[Path]] = {}
    for directory, files in by_dir.items():
        try:
            proc = gitsafe.run(["rev-parse", "--show-toplevel"], directory, timeout=30)
        except gitsafe.GitUnavailable:
            continue
        if proc.returncode != 0:
            if b"dubious ownership" in proc.stderr:
                # A work tree owned by someone else: git will not read it for us (and we do
                # not widen safe.directory), so nothing there is known to be committed.
                dirty.update((f, "?") for f in files)
            continue
        top = Path(proc.stdout.decode("utf-8", "surrogateescape").strip()).resolve()
        tops.setdefault(top, []).extend(files)
    for top, files in tops.items():
        rel = {
            os.path.relpath(Path(os.path.abspath(f)).parent.resolve() / f.name, top): f
            for f in files
        }
        # --ignored=traditional with --untracked-files=all names each ignored file, so a
        # file named on the command line inside an ignored folder is caught too.
        args = ["status", "--porcelain", "-z", "--untracked-files=all", "--ignored=traditional"]
        try:
            proc = gitsafe.run([*args, "--", *rel], top)
        except gitsafe.GitUnavailable:
            proc = None
        if proc is None or proc.returncode != 0:
            # git could not tell: treat every file as unsafe rather than overwrite blind.
            dirty.update((f, "?") for f in files)
            continue
        entries = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        for entry in entries:
            if len(entry) > 3 and entry[3:] in rel:
                dirty[rel[entry[3:]]] = entry[:2].strip()
        # status does not look at files marked assume-unchanged or skip-worktree.
        try:
            hidden = gitsafe.hidden_changes(top, [r for r in rel if rel[r] not in dirty])
        except gitsafe.GitUnavailable:
            hidden = {r: "?" for r in rel}
        for name, mark in hidden.items():
            dirty.setdefault(rel[name], mark)
    return dirty
