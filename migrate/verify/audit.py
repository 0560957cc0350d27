"""Audit a TorchScript archive before ``torch.jit.load`` runs any of it.

``torch.jit.load`` compiles the archive's TorchScript source (``code/**/*.py``)
and calls each object's ``__setstate__``; ``verify``/``convert`` then run
``forward`` and every exported method. This module reads the zip without
executing anything and refuses archives whose code reaches outside the
process's tensors: files, storages mapped from files, serialization,
distributed/RPC, or operators of a library outside :data:`SAFE_NAMESPACES`.
No torch import: the audit is pure text.
"""

from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: Operator namespaces whose ops only compute on tensors (``torch.ops.<ns>.<op>``,
#: ``torch.classes.<ns>.<Class>``). Anything else may be a library doing I/O.
SAFE_NAMESPACES = frozenset(
    {
        "aten",
        "prim",
        "prims",
        "quantized",
        "_quantized",
        "quantized_decomposed",
        "xnnpack",
        "prepacked",
        "torchvision",  # nms, roi_align: compute only
    }
)

#: Functions and methods (any spelling: ``torch.X``, ``ops.aten.X``, ``value.X``)
#: that read or write files, map storage from files, or (de)serialize objects.
DENIED_NAMES = frozenset(
    {
        "from_file",
        "save",
        "load",
        "_load_for_mobile",
        "_save_for_lite_interpreter",
        "_save_parameters",
        "_load_parameters",
        "share_memory_",
        "_share_filename_",
        "_new_shared_filename",
        "_share_fd_",
        "_new_shared_fd",
        "untyped_storage",
        "storage",
        "set_",
        "open",
        "system",
        "popen",
    }
)

#: Modules of torch that talk to other processes or machines.
DENIED_PREFIXES = ("torch.distributed", "torch.multiprocessing", "torch.hub", "torch.cuda.memory")


@dataclass(frozen=True)
class Finding:
    """One refused call: what, where (method and file:line)."""

    op: str
    method: str
    file: str
    line: int
    why: str

    def message(self) -> str:
        return f"{self.op} in {self.method} ({self.file}:{self.line}): {self.why}"


class ArchiveRefused(Exception):
    """The audit found code that may touch files, processes or the network."""

    def __init__(self, path: Path, finding: Finding) -> None:
        self.path = path
        self.finding = finding
        super().__init__(
            f"{path}: refusing to load: {finding.message()}; the archive was not run "
            "(--trust-archive loads it anyway)"
        )


class ArchiveUnreadable(Exception):
    """The archive's code cannot be read or parsed, so it cannot be audited."""


def _dotted(node: ast.AST) -> str | None:
    """``torch.ops.aten.add`` for an attribute chain on a name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _check_name(name: str) -> str | None:
    """Why a called (or referenced) dotted name is refused, or None."""
    parts = name.split(".")
    for prefix in DENIED_PREFIXES:
        if name == prefix or name.startswith(prefix + "."):
            return "talks to other processes or machines"
    ns = None
    if parts[0] == "ops" and len(parts) > 2:
        ns = parts[1]
    elif parts[0] == "torch" and len(parts) > 3 and parts[1] in ("ops", "classes"):
        ns = parts[2]
    if ns is not None and ns not in SAFE_NAMESPACES:
        return f"operator namespace {ns!r} is not known to be compute-only"
    last = parts[-1]
    if last in DENIED_NAMES:
        return "reads or writes files or shared storage"
    if "Storage" in last:
        return "builds a storage (possibly file-backed)"
    return None


class _Auditor(ast.NodeVisitor):
    def __init__(self, file: str) -> None:
        self.file = file
        self.scope: list[str] = []
        self.found: list[Finding] = []

    def _where(self) -> str:
        return ".".join(self.scope) or "<module>"

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.scope.append(node.name)
        if node.name == "__setstate__":
            self._check_setstate(node)
        for stmt in node.body:
            self.visit(stmt)
        self.scope.pop()

    def _check_setstate(self, node: ast.FunctionDef) -> None:
        """``__setstate__`` runs inside ``torch.jit.load``: it may only assign fields."""
        for stmt in node.body:
            if isinstance(stmt, ast.Assign | ast.AnnAssign):
                continue
            if isinstance(stmt, ast.Return) and (
                stmt.value is None
                or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
            ):
                continue
            what = type(stmt).__name__.lower()
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                what = f"call {_dotted(stmt.value.func) or 'expression'}"
            self.found.append(
                Finding(
                    what,
                    self._where(),
                    self.file,
                    stmt.lineno,
                    "__setstate__ (run by torch.jit.load) may only assign fields",
                )
            )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = _dotted(func)
        if name is None and isinstance(func, ast.Attribute):
            name = f"<value>.{func.attr}"  # a method call on a computed value
        if name is not None:
            why = _check_name(name)
            if why:
                self.found.append(Finding(name, self._where(), self.file, node.lineno, why))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # A denied operator passed around without being called (``f = torch.from_file``).
        name = _dotted(node)
        if name is not None and name.split(".")[0] == "torch":
            why = _check_name(name)
            if why and not any(f.op == name and f.line == node.lineno for f in self.found):
                self.found.append(Finding(name, self._where(), self.file, node.lineno, why))
                return
        self.generic_visit(node)


def audit_source(text: str, file: str) -> list[Finding]:
    try:
        tree = ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise ArchiveUnreadable(
            f"{file}: its TorchScript source does not parse ({exc.msg})"
        ) from exc
    auditor = _Auditor(file)
    auditor.visit(tree)
    return auditor.found


def audit_archive(path: Path) -> list[str]:
    """Audit every code file of a ``torch.jit.save`` archive; raise on the first finding.

    Returns the names of the code files read.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if "/code/" in f"/{n}" and n.endswith(".py")]
            sources = {n: zf.read(n) for n in names}
    except (OSError, zipfile.BadZipFile, RuntimeError) as exc:
        raise ArchiveUnreadable(f"cannot read {path}: {exc}") from exc
    if not names:
        raise ArchiveUnreadable(f"{path} holds no TorchScript source (code/*.py) to audit")
    for name in sorted(names):
        try:
            text = sources[name].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArchiveUnreadable(f"{path}: {name} is not UTF-8 text") from exc
        short = name.split("/code/", 1)[-1] if "/code/" in name else name
        found = audit_source(text, "code/" + short.removeprefix("code/"))
        if found:
            raise ArchiveRefused(path, found[0])
    return names
