"""Dotted module names (discover.module_name): string operations, checked against the
pathlib version they replaced, on relative and absolute paths, in and out of packages."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.scan.discover import _package_prefix, module_name

_SEGMENTS = st.sampled_from(["pkg", "sub", "tools", "__init__", ".", "..", "a.b", "x"])


def _pathlib_module_name(path: Path, root: Path) -> str:
    """module_name as written with pathlib before it moved to string operations: the oracle."""
    stem = path.stem
    prefix = _package_prefix(os.path.dirname(os.path.abspath(path)))
    if prefix is not None:
        return ".".join(prefix if stem == "__init__" else (*prefix, stem))
    try:
        rel = path.with_suffix("").relative_to(root)
    except ValueError:
        return stem
    return ".".join(p for p in rel.parts if p != "__init__") or stem


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_SEGMENTS, max_size=4),
    st.sampled_from(["mod.py", "__init__.py", "a.b.py", ".hidden.py"]),
    st.lists(_SEGMENTS, max_size=3),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_module_names_agree_with_pathlib(
    tmp_path_factory, folders, name, root, absolute_path, absolute_root, pkg
):
    base = tmp_path_factory.getbasetemp() / "module-names"
    (base / "pkg").mkdir(parents=True, exist_ok=True)
    if pkg:  # one real package folder, so the package-chain branch is taken too
        (base / "pkg" / "__init__.py").touch()
    path = os.path.join(*folders, name)
    root_text = os.path.join(*root) if root else "."
    if absolute_path:
        path = str(base / path)
    if absolute_root:
        root_text = str(base / root_text)
    assert module_name(path, root_text) == _pathlib_module_name(Path(path), Path(root_text))
