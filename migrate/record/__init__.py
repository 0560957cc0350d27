"""`migrate record -- CMD`: run a command once with a recorder loaded into each of its Python
processes, and keep what the run showed about every TorchScript call site (what was
captured, the inputs' structure, the calls of the result, the paths saved and loaded) in
`.migrate/evidence.json` for `scan` and `apply` (docs/evidence.md).

This package never imports torch: the recorder itself (boot/_migrate_recorder.py) runs in
the recorded processes only, and only once the program imports torch.
"""

import os
from pathlib import Path

EVIDENCE_NAME = ".migrate/evidence.json"
SCHEMA_VERSION = 1


def default_path(paths: list[str]) -> tuple[Path | None, str | None]:
    """The scanned tree's own `.migrate/evidence.json`, and a note when one is there but not
    read. The tree is the git work tree holding the first path (the path's folder or the
    closest folder above it holding one, up to the work tree's top), else the folder
    itself: never a folder above the tree, where anyone may have put one.

    Evidence is what this user's `migrate record` saw: a file committed to the repository
    came with the checkout, so it is read only when named (`--evidence FILE`)."""
    if not paths:
        return None, None
    start = Path(paths[0]).resolve()
    folder = start if start.is_dir() else start.parent
    above = (folder, *folder.parents)
    top = next((c for c in above if (c / ".git").exists()), None)
    tree = above[: above.index(top) + 1] if top is not None else (folder,)
    found = next((c / EVIDENCE_NAME for c in tree if (c / EVIDENCE_NAME).is_file()), None)
    if found is None or top is None:
        return found, None
    tracked = _tracked(found, top)
    if tracked is False:
        return found, None
    shown = os.path.relpath(found)
    shown = str(found) if shown.startswith("..") else shown
    why = (
        "is committed to the repository, so it is not read by default"
        if tracked
        else "may be committed to the repository (git cannot tell), so it is not read"
    )
    return None, f"note: {shown} {why}; pass `--evidence {shown}` to use it"


def _tracked(path: Path, top: Path) -> bool | None:
    """Whether git tracks `path` in the work tree `top` (None: git cannot tell)."""
    from migrate import gitsafe

    try:
        proc = gitsafe.run(["ls-files", "-z", "--", str(path.relative_to(top))], top)
    except gitsafe.GitUnavailable:
        return None
    if proc.returncode != 0:
        return None
    return bool(proc.stdout.strip(b"\0"))
