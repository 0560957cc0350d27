"""The pre-commit fix hook's report: each finding is listed by one hook only.

`migrate-fix` alone lists what it could not fix. With `migrate-scan` enabled too (in the
`.pre-commit-config.yaml` that pre-commit runs from the repository root, not skipped through
`SKIP`), the scan hook lists every finding, so the fix hook only says how many are left.
"""

from __future__ import annotations

import os
from pathlib import Path

SCAN_HOOK = "migrate-scan"


def scan_hook_enabled(root: Path | None = None) -> bool:
    import yaml

    path = (root or Path.cwd()) / ".pre-commit-config.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if SCAN_HOOK in {s.strip() for s in os.environ.get("SKIP", "").split(",")}:
        return False
    repos = doc.get("repos") if isinstance(doc, dict) else None
    return any(
        isinstance(hook, dict) and hook.get("id") == SCAN_HOOK
        for repo in (repos if isinstance(repos, list) else [])
        if isinstance(repo, dict)
        for hook in (repo.get("hooks") or [])
    )


def fix_hook_form(root: Path | None = None) -> str:
    """render_apply's `hook`: "with-scan" or "alone"."""
    return "with-scan" if scan_hook_enabled(root) else "alone"
