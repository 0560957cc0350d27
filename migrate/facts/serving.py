"""Serving code outside Python (MIG4xx) joined to the repository around it (issue 17).

Runs once after a scan, over its findings:
- a C++/Java/Objective-C file that names an archive (`"model.pt"`) which the repository's
  Python code writes (MIG201/MIG204, same base name) is linked both ways: the native load names
  the Python writer, the writer names the serving files that must move with it;
- a CMake `find_package(Torch)` / `${TORCH_LIBRARIES}` (MIG404) is kept only when a C/C++/
  Objective-C source in its folder or below uses the TorchScript runtime, and names it.

Links are text in the messages (reports, JSON and SARIF carry them) plus finding data
(`written_by`, `served_by`) for `migrate report`.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING

from migrate.findings import Finding
from migrate.registry import code_with, codes_with

if TYPE_CHECKING:  # facts/__init__ is imported only when facts are built
    from migrate.facts import RepoFacts

NATIVE_RULES = codes_with("native-runtime")
SOURCE_RULES = codes_with("native-source")  # uses of the runtime a CMake project compiles
CMAKE_RULE = code_with("cmake-runtime")
PRODUCER_RULES = codes_with("archive-writer")

# A byte search before tokenizing a source the scan did not report on (a --select run).
_RUNTIME_BYTES = (b"jit", b"LibTorch", b"torch/script.h")


def link_serving(findings: list[Finding], facts: Callable[[], RepoFacts | None]) -> list[Finding]:
    """The findings with CMake candidates confirmed or dropped and native loads linked to
    their Python writers. `facts` builds the repository facts (only called when needed)."""
    if not any(f.rule in (*NATIVE_RULES, CMAKE_RULE) for f in findings):
        return findings
    findings = _confirm_cmake(findings)
    natives = [f for f in findings if f.rule in NATIVE_RULES and f.get("archives")]
    producers = [f for f in findings if f.rule in PRODUCER_RULES]
    if not natives or not producers:
        return findings
    repo = facts()
    if repo is None:
        return findings
    writers: dict[str, list[Finding]] = {}  # archive base name -> its Python writers
    for p in producers:
        site = repo.site_at(p.path, p.line, p.column)
        if site is not None and site.key is not None:
            writers.setdefault(posixpath.basename(site.key), []).append(p)
    by_file: dict[str, list[Finding]] = {}
    for f in natives:
        by_file.setdefault(f.path, []).append(f)
    notes: dict[int, list[str]] = {}
    served: dict[int, list[tuple[str, str, int, str]]] = {}
    written: dict[int, list[tuple[str, str, int, str]]] = {}
    index = {id(f): k for k, f in enumerate(findings)}
    for mine in by_file.values():
        targets = [f for f in mine if f.get("loads")] or mine[:1]
        for archive in mine[0].get("archives"):
            for p in writers.get(archive, ()):
                for t in targets:
                    notes.setdefault(index[id(t)], []).append(
                        f"`{archive}` is written by {p.path}:{p.line} ({p.rule}): move this "
                        "loader with it"
                    )
                    written.setdefault(index[id(t)], []).append((archive, p.path, p.line, p.rule))
                first = targets[0]
                served.setdefault(index[id(p)], []).append(
                    (archive, first.path, first.line, first.rule)
                )
    out = list(findings)
    for k, texts in notes.items():
        out[k] = _extend(out[k], texts, written_by=tuple(written[k]))
    for k, uses in served.items():
        archive = uses[0][0]
        where = ", ".join(f"{path}:{line} ({rule})" for _, path, line, rule in uses)
        text = (
            f"serving code outside Python loads `{archive}` too: {where} must move with this "
            f"writer (`migrate explain {uses[0][3]}`)"
        )
        out[k] = _extend(out[k], [text], served_by=tuple(uses))
    return out


def _extend(f: Finding, texts: list[str], **data: object) -> Finding:
    message = "; ".join([f.message, *dict.fromkeys(texts)])
    merged = dict(f.data)
    merged.update(data)
    return dataclasses.replace(f, message=message, data=tuple(sorted(merged.items())))


# --------------------------------------------------------------------------- CMake


def _confirm_cmake(findings: list[Finding]) -> list[Finding]:
    """MIG404 candidates: kept, naming a runtime use, when their project's sources have one."""
    if not any(f.rule == CMAKE_RULE for f in findings):
        return findings
    reported = [f for f in findings if f.rule in SOURCE_RULES]
    evidence: dict[str, tuple[str, int] | None] = {}
    out = []
    for f in findings:
        if f.rule != CMAKE_RULE:
            out.append(f)
            continue
        folder = posixpath.dirname(f.path)
        if folder not in evidence:
            evidence[folder] = _reported_use(folder, reported) or _source_use(folder)
        use = evidence[folder]
        if use is None:
            continue
        texts = [f"this project's sources load TorchScript ({use[0]}:{use[1]})"]
        if _moving_to_aoti(folder, reported):
            texts.append(AOTI_LINK)
        out.append(_extend(f, texts))
    return out


# Under intent drop the sources' loader may move to AOTInductor (MIG401's rewrite): the
# package loader is part of libtorch, so the build keeps its link.
AOTI_LINK = (
    "its sources move to AOTInductor's package loader (intent drop), which libtorch holds: the "
    "link stays as it is; build against the libtorch of the torch that compiled the package "
    "(CMAKE_PREFIX_PATH from `python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)'`)"
)


def _moving_to_aoti(folder: str, reported: list[Finding]) -> bool:
    """Every runtime use in the project's sources is rewritten to the package loader."""
    mine = [f for f in reported if _inside(f.path, folder)]
    return bool(mine) and all(
        f.rule == code_with("aoti-loader") and f.autofix is not None for f in mine
    )


def _inside(path: str, folder: str) -> bool:
    base = os.path.abspath(folder or ".")
    return os.path.abspath(path).startswith(base.rstrip(os.sep) + os.sep)


def _reported_use(folder: str, reported: list[Finding]) -> tuple[str, int] | None:
    for f in reported:
        if _inside(f.path, folder):
            return f.path, f.line
    return None


def _source_use(folder: str) -> tuple[str, int] | None:
    """The first TorchScript runtime use among the C-family sources under `folder`, read
    from disk (a scan that did not select MIG401/MIG403 has no findings to look at)."""
    from migrate.analysis import native_source
    from migrate.scan.discover import SKIP_DIRS, Skipped, decode_source, read_checked

    suffixes = native_source.C_SUFFIXES + native_source.OBJC_SUFFIXES
    known = native_source.unqualified_names()
    tree = os.path.realpath(folder or ".")
    for here, dirs, names in os.walk(folder or ".", followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if not name.lower().endswith(suffixes):
                continue
            path = os.path.join(here, name)
            try:
                data = read_checked(path, confine=tree)
                if not any(word in data for word in _RUNTIME_BYTES):
                    continue
                text = decode_source(data)
            except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError):
                continue
            uses = native_source.cpp_uses(native_source.tokenize(text, native_source.C), known)
            if uses:
                line = text.count("\n", 0, uses[0].start) + 1
                return posixpath.normpath(path.replace(os.sep, "/")), line
    return None
