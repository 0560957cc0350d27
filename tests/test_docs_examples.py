"""MIG501 through the CLI: Markdown and reST code examples that show TorchScript are found by
a repository scan (discovery, excludes, rule selection, suppression), reported as manual in
every format, and never rewritten by apply (issue 27 item 8)."""

from __future__ import annotations

import json

from tests.scan_support import run_cli, write_tree

README = """\
# Model

Inline `torch.jit.trace` is prose.

```python
traced = torch.jit.trace(model, (x,))
```

<!-- migrate: ignore[MIG501] -->
```python
legacy = torch.jit.load("old.pt")
```

<!-- migrate: ignore[MIG1] -->
```python
other = torch.jit.load("old.pt")
```
"""
GUIDE = """\
Guide
=====

.. code-block:: python

   torch.jit.save(traced, "model.pt")

>>> loaded = torch.jit.load("model.pt")
"""
TREE = {"README.md": README, "docs/guide.rst": GUIDE, "docs/notes.txt": "torch.jit.trace(m)\n"}


def _findings(tmp_path, *args: str) -> list[tuple[str, int, int, str]]:
    run = run_cli(["scan", ".", "--no-cache", "--format", "json", *args], cwd=tmp_path)
    assert run.code in (0, 1), run.stderr
    return [(f["path"], f["line"], f["column"], f["rule"]) for f in run.json()["findings"]]


def test_scan_reports_each_construct_at_its_document_position(tmp_path):
    write_tree(tmp_path, TREE)
    assert _findings(tmp_path) == [
        ("README.md", 6, 10, "MIG501"),
        # ignore[MIG1] names other codes: this block is still reported.
        ("README.md", 16, 9, "MIG501"),
        ("docs/guide.rst", 6, 4, "MIG501"),
        ("docs/guide.rst", 8, 14, "MIG501"),
    ]


def test_select_ignore_exclude_and_per_file_ignores(tmp_path):
    write_tree(tmp_path, TREE)
    assert _findings(tmp_path, "--select", "MIG1") == []
    assert _findings(tmp_path, "--ignore", "MIG5") == []
    assert [f[0] for f in _findings(tmp_path, "--exclude", "docs")] == ["README.md"] * 2
    (tmp_path / "pyproject.toml").write_text(
        '[tool.migrate]\nper-file-ignores = { "docs/*" = ["MIG501"] }\n', encoding="utf-8"
    )
    assert {f[0] for f in _findings(tmp_path)} == {"README.md"}


def test_apply_reports_and_never_rewrites_documents(tmp_path):
    write_tree(tmp_path, TREE)
    before = {p: (tmp_path / p).read_bytes() for p in TREE}
    run = run_cli(["apply", ".", "--unsafe-fixes", "--allow-dirty", "--no-cache"], cwd=tmp_path)
    assert run.code == 1, run.stdout + run.stderr  # findings remain for a person
    assert "MIG501" in run.stdout
    assert {p: (tmp_path / p).read_bytes() for p in TREE} == before


def test_sarif_places_the_finding_in_the_document(tmp_path):
    write_tree(tmp_path, {"README.md": README})
    run = run_cli(["scan", "README.md", "--no-cache", "--format", "sarif"], cwd=tmp_path)
    assert run.code == 1, run.stderr
    results = json.loads(run.stdout)["runs"][0]["results"]
    regions = [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results
    ]
    assert regions == [("MIG501", 6), ("MIG501", 16)]


def test_documents_go_through_the_checked_reader(tmp_path):
    """A README that is a symlink out of the tree is skipped with a note, like a .py file."""
    outside = tmp_path / "outside.md"
    outside.write_text('```python\nx = torch.jit.load("m.pt")\n```\n', encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").symlink_to(outside)
    run = run_cli(["scan", ".", "--no-cache", "--format", "json"], cwd=repo)
    assert run.json()["findings"] == []
    assert "README.md: symlink to" in run.stderr and "outside the tree; skipped" in run.stderr
