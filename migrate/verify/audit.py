"""Audit a TorchScript archive before ``torch.jit.load`` runs any of it.

``torch.jit.load`` compiles the archive's TorchScript source (``code/**/*.py``)
and calls each object's ``__setstate__``; ``verify``/``convert`` then run
``forward`` and every exported method. This module reads the zip without
executing anything and refuses archives whose code reaches outside the
process's tensors: files, storages mapped from files, serialization,
distributed/RPC, or operators of a library outside :data:`SAFE_NAMESPACES`.
No torch import: the audit is pure text.

The code is read the way TorchScript's lexer reads it
(:func:`migrate.verify.torchscript_lexer.torchscript_reading`), not the way Python's
tokenizer does, and the zip the way torch's reader does (:mod:`migrate.verify.archive_zip`):
see ``docs/security.md``. A ``.pt2`` archive has its own audit
(:mod:`migrate.verify.pt2_audit`).
"""

from __future__ import annotations

import ast
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from migrate.verify.archive_zip import ArchiveUnreadable, checked_entries, read_entry
from migrate.verify.torchscript_lexer import torchscript_reading

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
        "load_library",  # torch.ops.load_library: a shared library's code runs
        # TorchScript's RPC builtins: they send work to other machines.
        "rpc_async",
        "rpc_sync",
        "rpc_remote",
        "remote",
        # Dynamic attribute access by another name (TorchScript has none of these).
        "__getattr__",
        "__getattribute__",
        "__dict__",
        "__class__",
        "__import__",
    }
)

#: Names TorchScript's source importer binds to a module (``torch`` is aten's builtins,
#: ``ops`` is ``torch.ops``, ``__torch__`` the archive's classes): used anywhere but at the
#: head of an attribute chain, they are a way round the dotted-name checks.
MODULE_ROOTS = frozenset({"torch", "ops", "__torch__", "math", "CONSTANTS", "builtins"})

#: Modules of torch that talk to other processes or machines.
DENIED_PREFIXES = ("torch.distributed", "torch.multiprocessing", "torch.hub", "torch.cuda.memory")


@dataclass(frozen=True)
class AuditFinding:
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

    def __init__(self, path: Path, finding: AuditFinding) -> None:
        self.path = path
        self.finding = finding
        super().__init__(
            f"{path}: refusing to load: {finding.message()}; the archive was not run "
            "(--trust-archive loads it anyway)"
        )


def _dotted(node: ast.AST, aliases: dict[str, str] | None = None) -> str | None:
    """``torch.ops.aten.add`` for an attribute chain on a name; None for anything else.
    A name bound to a module (``t = torch.ops``) reads as what it names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append((aliases or {}).get(node.id, node.id))
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


_LITERAL_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _assignments(root: ast.AST, nested: bool) -> list[ast.Assign]:
    """The ``name = value`` statements of ``root``'s scope; ``nested``: those of the functions
    and classes inside it too (a nested scope's names count for its enclosing one)."""
    out, stack = [], list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) and not nested:
            continue
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def _module_aliases(
    root: ast.AST,
    constants: frozenset[str] = frozenset(),
    inherited: dict[str, str] | None = None,
    nested: bool = True,
) -> tuple[dict[str, str], list[tuple[str, int]]]:
    """Names assigned a module in ``root``'s scope (``t = torch``, ``o = ops.mylib``), on top
    of the ``inherited`` ones of the enclosing scopes, and the names assigned two different
    modules there (``(name, line)``: refused, since one reading per name is followed).

    TorchScript functions share no locals, so the aliases of one function are not those of
    another. A name assigned one of ``constants`` (the members of the archive's own enums,
    see :func:`enum_members`) holds a value, not a module: it is no alias.
    """
    aliases = dict(inherited or {})
    conflicts: list[tuple[str, int]] = []
    assigns = _assignments(root, nested)
    changed = True
    while changed:  # each name is set once at most: this ends
        changed = False
        for node in assigns:
            target = node.targets[0].id  # type: ignore[attr-defined]
            name = _dotted(node.value, aliases)
            if name in constants or target in MODULE_ROOTS:
                continue
            if not name or name.split(".")[0] not in MODULE_ROOTS:
                continue
            if target not in aliases:
                aliases[target] = name
                changed = True
            elif aliases[target] != name and (target, node.lineno) not in conflicts:
                conflicts.append((target, node.lineno))
    return aliases, conflicts


class _Auditor(ast.NodeVisitor):
    def __init__(self, file: str, constants: frozenset[str] = frozenset()) -> None:
        self.file = file
        self.constants = constants
        self.aliases: dict[str, str] = {}  # those of the scope being visited
        self.scope: list[str] = []
        self.found: list[AuditFinding] = []

    def audit(self, tree: ast.Module) -> list[AuditFinding]:
        self._in_scope(tree, nested=False, name=None)
        return self.found

    def _in_scope(self, node: ast.AST, nested: bool, name: str | None) -> None:
        """Visit ``node``'s body with the aliases of its scope."""
        outer = self.aliases
        self.aliases, conflicts = _module_aliases(node, self.constants, outer, nested)
        if name is not None:
            self.scope.append(name)
        for target, line in conflicts:
            self._add(target, line, "a name assigned two different modules")
        for stmt in node.body:  # type: ignore[attr-defined]
            self.visit(stmt)
        if name is not None:
            self.scope.pop()
        self.aliases = outer

    def _where(self) -> str:
        return ".".join(self.scope) or "<module>"

    def _add(self, op: str, line: int, why: str) -> None:
        self.found.append(AuditFinding(op, self._where(), self.file, line, why))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for part in [*node.bases, *node.keywords, *node.decorator_list]:
            self.visit(part)
        self._in_scope(node, nested=False, name=node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name == "__setstate__":
            self.scope.append(node.name)
            self._check_setstate(node)
            self.scope.pop()
        self._in_scope(node, nested=True, name=node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]  # not TorchScript

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
            self._add(
                what, stmt.lineno, "__setstate__ (run by torch.jit.load) may only assign fields"
            )

    def _check_getattr(self, node: ast.Call) -> None:
        """``getattr(obj, "literal")`` reads as ``obj.literal``; anything else is refused:
        a computed attribute name, or any getattr on a module (``getattr(torch, "save")``)."""
        args = node.args
        attr = args[1] if len(args) == 2 and not node.keywords else None
        if not (
            isinstance(attr, ast.Constant)
            and isinstance(attr.value, str)
            and _LITERAL_ATTR.fullmatch(attr.value)
        ):
            self._add("getattr", node.lineno, "dynamic attribute access (not a literal name)")
            return
        base = _dotted(args[0], self.aliases)
        shown = f"getattr({ast.unparse(args[0])}, {attr.value!r})"
        if base is not None and base.split(".")[0] in MODULE_ROOTS:
            self._add(shown, node.lineno, "dynamic attribute access on a module")
            return
        why = _check_name(f"{base or '<value>'}.{attr.value}")
        if why:
            self._add(shown, node.lineno, why)
        for arg in args[:1]:
            if not isinstance(arg, ast.Name):  # getattr(self, "x"): self is fine
                self.visit(arg)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":
            self._check_getattr(node)
            for kw in node.keywords:
                self.visit(kw.value)
            return
        name = _dotted(func, self.aliases)
        if name is None and isinstance(func, ast.Attribute):
            name = f"<value>.{func.attr}"  # a method call on a computed value
        if name is not None:
            why = _check_name(name)
            if why:
                self._add(name, node.lineno, why)
        if isinstance(func, ast.Name | ast.Attribute):
            self._visit_chain(func)
        else:
            self.visit(func)
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            self.visit(arg)

    def _visit_chain(self, node: ast.AST) -> None:
        """The head of a called attribute chain: only computed parts need a visit."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            self.visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # A denied operator passed around without being called (``f = torch.from_file``).
        name = _dotted(node, self.aliases)
        if name is not None:
            if name.split(".")[0] in MODULE_ROOTS:
                why = _check_name(name)
                if why:
                    self._add(name, node.lineno, why)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # A module or getattr as a value: `f(torch)`, `(torch, 1)`, `g = getattr`. The
        # aliases a plain `t = torch` makes are followed; anything else is refused.
        if node.id == "getattr":
            self._add("getattr", node.lineno, "getattr used as a value")
        elif node.id in MODULE_ROOTS or node.id in self.aliases:
            self._add(node.id, node.lineno, "a module used as a value")

    def visit_Assign(self, node: ast.Assign) -> None:
        is_alias = (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in self.aliases
            and _dotted(node.value, self.aliases) is not None
        )
        if not is_alias:
            self.generic_visit(node)
            return
        name = _dotted(node.value, self.aliases)
        why = _check_name(name) if name else None
        if why:
            self._add(name, node.lineno, why)


def _parse(text: str, file: str) -> ast.Module:
    """One ``code/`` file, read as TorchScript reads it."""
    code = torchscript_reading(text, file)
    try:
        return ast.parse(code, filename=file)
    except SyntaxError as exc:
        raise ArchiveUnreadable(
            f"{file}: its TorchScript source does not parse ({exc.msg})"
        ) from exc


def _qualifier(file: str) -> str | None:
    """``code/__torch__/a/b.py`` -> ``__torch__.a.b``: the name TorchScript's importer
    gives the classes of that file (None for a path it would not import so)."""
    if not (file.startswith("code/") and file.endswith(".py")):
        return None
    parts = file[len("code/") : -len(".py")].split("/")
    return ".".join(parts) if all(p.isidentifier() for p in parts) else None


def _enum_literals(node: ast.ClassDef) -> list[str] | None:
    """The members of ``class C(Enum):`` whose body only assigns literals (``A = "A"``)."""
    if node.decorator_list or node.keywords or [ast.unparse(b) for b in node.bases] != ["Enum"]:
        return None
    members = []
    for stmt in node.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and type(stmt.value.value) in (str, int, float)
        ):
            return None
        members.append(stmt.targets[0].id)
    return members


def enum_members(trees: list[tuple[str, ast.Module]]) -> frozenset[str]:
    """``__torch__.pkg.file.C.MEMBER`` for each member of the archive's own enums.

    ``torch.jit.save`` writes a scripted ``Enum`` as a top-level ``class C(Enum):`` of
    literal members and refers to a member by its qualified name (``_0 =
    __torch__.timm.layers.format.Format.NHWC``): such a name is a constant, not a module.
    Only a class whose name its file binds once, with literals only, counts, and only when
    no other code file of the archive maps to the same qualified name.
    """
    out: dict[str, list[str]] = {}
    seen: dict[str, int] = {}  # qualified class name -> how many files define it
    for file, tree in trees:
        qual = _qualifier(file)
        if qual is None:
            continue
        bound: dict[str, int] = {}
        for node in tree.body:
            names = (
                [node.name]
                if isinstance(node, ast.ClassDef | ast.FunctionDef)
                else [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
            )
            for name in names:
                bound[name] = bound.get(name, 0) + 1
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                cls = f"{qual}.{node.name}"
                seen[cls] = seen.get(cls, 0) + 1
                members = _enum_literals(node) if bound.get(node.name) == 1 else None
                out[cls] = [f"{cls}.{m}" for m in members or []]
    return frozenset(m for cls, members in out.items() if seen[cls] == 1 for m in members)


def _audit_tree(tree: ast.Module, file: str, constants: frozenset[str]) -> list[AuditFinding]:
    return _Auditor(file, constants).audit(tree)


def audit_source(
    text: str, file: str, constants: frozenset[str] = frozenset()
) -> list[AuditFinding]:
    """The refused calls of one ``code/`` file, read as TorchScript reads it; ``constants``:
    qualified names that hold values (:func:`enum_members`)."""
    return _audit_tree(_parse(text, file), file, constants)


def _is_code(name: str) -> bool:
    # Every .py entry under a code/ folder, in any case: torch looks code/<name>.py up
    # without case, so `CODE/__torch__.PY` is code too.
    low = name.lower()
    return low.endswith(".py") and "/code/" in f"/{low}"


def audit_archive(path: Path, code: bool = True) -> list[str]:
    """Check a ``torch.jit.save`` archive's zip (always) and audit every code file (unless
    ``code`` is False: ``--trust-archive``); raise on the first finding.

    Returns the names of the code files read.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            infos = checked_entries(path, zf)
            names = [i.filename for i in infos if _is_code(i.filename)]
            if not code:
                return names
            sources = {i.filename: read_entry(zf, i) for i in infos if _is_code(i.filename)}
    except (OSError, zipfile.BadZipFile, RuntimeError, EOFError, ValueError) as exc:
        raise ArchiveUnreadable(f"cannot read {path}: {exc}") from exc
    if not names:
        raise ArchiveUnreadable(f"{path} holds no TorchScript source (code/*.py) to audit")
    # (label, tree) per entry: two entries may share a label (`a/code/m.py`, `b/code/m.py`),
    # and every one of them is audited
    trees: list[tuple[str, ast.Module]] = []
    for name in sorted(names):
        try:
            text = sources[name].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArchiveUnreadable(f"{path}: {name} is not UTF-8 text") from exc
        low = name.lower()
        label = name[low.index("code/") :] if "code/" in low else name
        try:
            trees.append((label, _parse(text, label)))
        except ArchiveUnreadable as exc:
            raise ArchiveUnreadable(f"{path}: {exc}") from None
    constants = enum_members(trees)
    for label, tree in trees:
        found = _audit_tree(tree, label, constants)
        if found:
            raise ArchiveRefused(path, found[0])
    return names
