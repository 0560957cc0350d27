"""`migrate record -- CMD`: run a command once with a recorder loaded into each of its Python
processes, and keep what the run showed about every TorchScript call site (what was
captured, the inputs' structure, the calls of the result, the paths saved and loaded) in
`.migrate/evidence.json` for `scan` and `apply` (docs/evidence.md).

This package never imports torch: the recorder itself (boot/_migrate_recorder.py) runs in
the recorded processes only, and only once the program imports torch.
"""

from pathlib import Path

EVIDENCE_NAME = ".migrate/evidence.json"
SCHEMA_VERSION = 1


def default_path(paths: list[str]) -> Path | None:
    """`.migrate/evidence.json` in the scanned root: the first path's folder or the closest
    folder above it holding one (up to the checkout's top, the folder with `.git`)."""
    if not paths:
        return None
    start = Path(paths[0]).resolve()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if (candidate / EVIDENCE_NAME).is_file():
            return candidate / EVIDENCE_NAME
        if (candidate / ".git").exists():
            break
    return None
