"""The result cache: a repeated scan reuses results, and any change to the tree shows."""

from __future__ import annotations

import os

import pytest

from migrate.pipeline.scan import PlannedScanner as Scanner
from migrate.scan.engine import ScanOptions


@pytest.fixture
def cached(tmp_path, monkeypatch):
    monkeypatch.setenv("MIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "repo"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "compat.py").write_text("from torch.jit import script\n")
    (tree / "pkg" / "model.py").write_text("import torch\n\nm = torch.jit.trace(a, b)\n")
    (tree / "pkg" / "plain.py").write_text("x = 1\n")

    def scan():
        result = Scanner(ScanOptions(use_git=False)).scan([str(tree)])
        return sorted((os.path.basename(f.path), f.line, f.rule) for f in result.findings)

    return tree, scan


def bump(path, text):
    """Write and move mtime forward, as an editor would a second later."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_warm_scan_equals_cold_scan(cached, tmp_path):
    tree, scan = cached
    cold = scan()
    assert cold == [("model.py", 3, "MIG102")]
    assert list((tmp_path / "cache").rglob("scan-*.pickle")), "no cache was written"
    assert scan() == cold


def test_edit_adds_and_removes_findings(cached):
    tree, scan = cached
    scan()
    bump(tree / "pkg" / "plain.py", "import torch\n\nx = torch.jit.load('m.pt')\n")
    assert ("plain.py", 3, "MIG202") in scan()
    bump(tree / "pkg" / "model.py", "m = 1\n")
    assert [f for f in scan() if f[0] == "model.py"] == []


def test_reexport_change_reaches_importers(cached):
    """A consumer's findings depend on another file: the whole-tree outcome is not reused."""
    tree, scan = cached
    bump(tree / "pkg" / "user.py", "from .compat import script\n\nf = script(g)\n")
    assert ("user.py", 3, "MIG101") in scan()
    bump(tree / "pkg" / "compat.py", "def script(f):\n    return f\n")
    assert [f for f in scan() if f[0] == "user.py"] == []


def test_new_and_deleted_files(cached):
    tree, scan = cached
    scan()
    (tree / "pkg" / "new.py").write_text("import torch\ntorch.jit.freeze(m)\n")
    assert ("new.py", 2, "MIG116") in scan()
    (tree / "pkg" / "new.py").unlink()
    assert [f for f in scan() if f[0] == "new.py"] == []


def test_a_same_size_same_mtime_replacement_is_seen(cached):
    """`tar -x`, `cp -p` and rsync leave a replaced file its old size and mtime: the cache
    still sees the new content (the inode or the ctime moved), so no finding hides."""
    tree, scan = cached
    hostile = "import torch\ny = torch.jit.script(f)\n"
    benign = "#".ljust(len(hostile) - 1, "x") + "\n"
    late = tree / "pkg" / "late.py"
    late.write_text(benign)
    assert scan() == [("model.py", 3, "MIG102")]
    old = late.stat()

    def same_stamp(path):
        os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)

    new = late.with_name("late.new")
    new.write_text(hostile)
    same_stamp(new)
    os.replace(new, late)  # a new inode, as tar and rsync write it
    assert ("late.py", 2, "MIG101") in scan()
    # In place (the same inode), content and mtime put back: only the ctime moved.
    late.write_text(benign)
    same_stamp(late)
    assert [f for f in scan() if f[0] == "late.py"] == []
    late.write_text(hostile)
    same_stamp(late)
    assert ("late.py", 2, "MIG101") in scan()
