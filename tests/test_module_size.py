"""No module of the package is over 800 lines.

A module that long has grown to hold more than one concern: it is split by concern into
modules named by what they hold (docs/architecture.md, "Inside the larger packages"), not
trimmed to fit. Lines are counted as `wc -l` counts them.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "migrate"
MAX_LINES = 800


def oversized(root: Path, limit: int = MAX_LINES) -> list[str]:
    """`path: N lines` of each module under `root` longer than `limit`, by path."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_bytes().count(b"\n")
        if lines > limit:
            found.append(f"{path.relative_to(root.parent).as_posix()}: {lines} lines")
    return found


def test_no_module_of_the_package_is_over_800_lines():
    assert len(list(PACKAGE.rglob("*.py"))) > 100  # the real package, not an empty folder
    assert oversized(PACKAGE) == [], f"split these by concern (over {MAX_LINES} lines)"


def test_the_check_names_every_module_over_the_limit_and_only_those(tmp_path):
    root = tmp_path / "migrate"
    files = {
        "engine.py": 801,
        "fix/fixer.py": 900,
        "fix/edits.py": 800,  # at the limit: fine
        "fix/__init__.py": 0,
    }
    for name, lines in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * lines)
    (root / "notes.txt").write_text("\n" * 2000)  # not a module
    assert oversized(root) == ["migrate/engine.py: 801 lines", "migrate/fix/fixer.py: 900 lines"]
